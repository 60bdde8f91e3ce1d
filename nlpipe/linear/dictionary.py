"""A label dictionary: for word forms seen often enough in training, the only labels a model may give.

UDPipe 1's morphological dictionary in the form of a score mask. Every word form (normalized, as the
``lower`` attribute) with an entry is allowed the labels of its entry; a form without one is allowed
every label. The entries share a few distinct label sets, so a batch costs one look-up per word and
one row per set: set 0 allows everything (a zero row), set ``k`` adds a large negative score
(:data:`RULED_OUT`) to every label outside it, which :func:`nlpipe.linear.margin.margin_stops`
never counts as a competitor.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy as np

from nlpipe.linear.attributes import ATTR_INDEX, Attributes, normalize

RULED_OUT = -1e4        # the score added to a label outside a word's set (outweighs any sum of weights)
LOWER = ATTR_INDEX["lower"]


def dictionary_entries(pairs: Iterable[Tuple[str, str]], min_count: int) -> Dict[str, List[str]]:
    """Normalized form -> the sorted labels it had, for forms seen ``min_count`` times or more."""
    counts: Dict[str, Counter] = defaultdict(Counter)
    for form, label in pairs:
        counts[normalize(form)][label] += 1
    return {w: sorted(c) for w, c in counts.items() if sum(c.values()) >= min_count}


class LabelDictionary:
    """Allowed labels per normalized form, as set ids over the ``lower`` attribute's vocabulary."""

    def __init__(self, entries: Dict[str, Sequence[str]], labels: Sequence[str], attributes: Attributes,
                 min_count: int = 1):
        """``entries``: normalized form -> its labels (each one of ``labels``); forms outside the
        attributes' ``lower`` vocabulary are kept (saved) but cannot match. ``min_count``: the
        training count the entries were chosen with (recorded only)."""
        label_id = {l: i for i, l in enumerate(labels)}
        sets: Dict[Tuple[int, ...], int] = {}
        self.words = sorted(entries)
        word_sets = []
        for w in self.words:
            ids = tuple(sorted({label_id[l] for l in entries[w]}))
            if not ids:
                raise ValueError(f"dictionary entry {w!r} allows no label")
            word_sets.append(sets.setdefault(ids, len(sets) + 1))
        self._init(labels, attributes, list(sets), word_sets, min_count)

    def _init(self, labels: Sequence[str], attributes: Attributes, sets: List[Tuple[int, ...]],
              word_sets: List[int], min_count: int) -> None:
        """Masks and the word -> set table from the distinct sets (label ids; set ``k`` is
        ``sets[k - 1]``) and each word's set."""
        self.labels = list(labels)
        self.min_count = min_count
        self.label_sets = [tuple(s) for s in sets]
        self.word_sets = list(word_sets)
        self.masks = np.full((len(sets) + 1, len(labels)), RULED_OUT, dtype=np.float32)
        self.masks[0] = 0.0
        for k, ids in enumerate(self.label_sets, 1):
            self.masks[k, list(ids)] = 0.0
        index = attributes.index[LOWER]
        rows = np.array([index.get(w, -1) for w in self.words], dtype=np.int64)
        self.set_of = np.zeros(attributes.sizes[LOWER], dtype=np.int32)     # lower id -> set id (0: none)
        known = rows >= 0
        self.set_of[rows[known]] = np.asarray(self.word_sets, dtype=np.int32)[known]

    @property
    def entries(self) -> Dict[str, List[str]]:
        """Normalized form -> its allowed labels (sorted by label id)."""
        return {w: [self.labels[i] for i in self.label_sets[k - 1]] for w, k in zip(self.words, self.word_sets)}

    @property
    def num_sets(self) -> int:
        """Number of mask rows (the distinct label sets plus the unrestricted row 0)."""
        return len(self.masks)

    def sets(self, lower: np.ndarray) -> np.ndarray:
        """Set ids of words given by their ``lower`` attribute ids (0, i.e. row 0 of
        :attr:`masks`, for a word without an entry)."""
        return self.set_of[lower]

    def to_json(self) -> Dict[str, object]:
        return {"attribute": "lower", "min_count": self.min_count, "sets": [list(s) for s in self.label_sets],
                "words": self.words, "word_sets": self.word_sets}

    @classmethod
    def from_json(cls, data: Dict[str, object], labels: Sequence[str], attributes: Attributes
                  ) -> "LabelDictionary":
        """Inverse of :meth:`to_json` (ValueError, KeyError or TypeError on damage)."""
        sets, words, word_sets = data["sets"], data["words"], data["word_sets"]
        if data.get("attribute") != "lower" or len(words) != len(word_sets) \
                or any(not s or min(s) < 0 or max(s) >= len(labels) for s in sets) \
                or any(not 1 <= k <= len(sets) for k in word_sets):  # type: ignore
            raise ValueError("label dictionary is inconsistent")
        out = cls.__new__(cls)
        out.words = list(words)  # type: ignore[call-overload]
        out._init(labels, attributes, sets, word_sets, int(data.get("min_count", 1)))  # type: ignore
        return out
