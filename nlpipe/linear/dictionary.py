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
        self.entries = {w: sorted(set(ls)) for w, ls in entries.items()}
        self.min_count = min_count
        sets: Dict[Tuple[int, ...], int] = {}
        index = attributes.index[LOWER]
        self.set_of = np.zeros(attributes.sizes[LOWER], dtype=np.int32)     # lower id -> set id (0: none)
        for w in sorted(self.entries):
            ids = tuple(sorted(label_id[l] for l in self.entries[w]))
            if not ids:
                raise ValueError(f"dictionary entry {w!r} allows no label")
            k = sets.setdefault(ids, len(sets) + 1)
            i = index.get(w)
            if i is not None:
                self.set_of[i] = k
        self.masks = np.full((len(sets) + 1, len(labels)), RULED_OUT, dtype=np.float32)
        self.masks[0] = 0.0
        for ids, k in sets.items():
            self.masks[k, list(ids)] = 0.0

    @property
    def num_sets(self) -> int:
        """Number of mask rows (the distinct label sets plus the unrestricted row 0)."""
        return len(self.masks)

    def sets(self, lower: np.ndarray) -> np.ndarray:
        """Set ids of words given by their ``lower`` attribute ids (0, i.e. row 0 of
        :attr:`masks`, for a word without an entry)."""
        return self.set_of[lower]

    def to_json(self) -> Dict[str, object]:
        words = sorted(self.entries)
        return {"attribute": "lower", "min_count": self.min_count, "words": words,
                "labels": [self.entries[w] for w in words]}

    @classmethod
    def from_json(cls, data: Dict[str, object], labels: Sequence[str], attributes: Attributes
                  ) -> "LabelDictionary":
        """Inverse of :meth:`to_json` (ValueError or KeyError on damage)."""
        words, entries = data["words"], data["labels"]
        if data.get("attribute") != "lower" or len(words) != len(entries):  # type: ignore[arg-type]
            raise ValueError("label dictionary is inconsistent")
        known = set(labels)
        out = dict(zip(words, entries))  # type: ignore[arg-type]
        if any(l not in known for ls in out.values() for l in ls):
            raise ValueError("label dictionary names a label the model lacks")
        return cls(out, labels, attributes, int(data.get("min_count", 1)))  # type: ignore[arg-type]

