"""Space joins: how often a space between two given units lies inside a token, learned from a treebank.

Where training tokens contain spaces (Vietnamese writes each syllable apart, and a word of two
syllables is one token with a space inside), whether a space ends a token depends mostly on the two
units around it, which a character network with a few thousand weights cannot store. This module
keeps the counts instead, and gives the segmenter one categorical input per character (:meth:`values`).

A *unit* is a maximal run of non-whitespace characters, lowercased; a *pair* is two units with exactly
one plain space (U+0020) between them. For each pair seen in training the counts are (joined: the
space was inside a token, split: a token ended before it), and the same for each unit as the left and
as the right part of a pair (the back-off for unseen pairs). The input values:

- on the last character of a pair's left unit: ``1 + `` the pair's bucket (:func:`pair_bucket`: unseen,
  never joined once or more, sometimes, mostly, always joined once or more);
- on the space: ``1 + PAIR_BUCKETS + 4 * left + right``, the two units' buckets (:func:`unit_bucket`);
- 0 everywhere else.

Training features come from counts without the sentence's own fold (:func:`jackknifed`), so that the
network learns how far to trust counts that do not include the text at hand, as at inference.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

PAIR_BUCKETS = 7
UNIT_BUCKETS = 4
N_VALUES = 1 + PAIR_BUCKETS + UNIT_BUCKETS * UNIT_BUCKETS
FOLDS = 5
_UNIT = re.compile(r"\S+")

Counts = Dict[Any, List[int]]   # key -> [joined, split]


def pair_bucket(joined: int, split: int) -> int:
    """0 unseen; 1 never joined, seen once; 2 never joined, seen more; 3 joined in under half;
    4 joined in half or more, not always; 5 always joined, seen once; 6 always joined, seen more."""
    n = joined + split
    if n == 0:
        return 0
    if joined == 0:
        return 1 if n == 1 else 2
    if joined == n:
        return 5 if n == 1 else 6
    return 3 if 2 * joined < n else 4


def unit_bucket(joined: int, split: int) -> int:
    """0 unseen; 1 never joined; 2 joined in under half; 3 joined in half or more."""
    n = joined + split
    if n == 0:
        return 0
    if joined == 0:
        return 1
    return 2 if 2 * joined < n else 3


def pairs_of(text: str) -> List[Tuple[int, int, str, str]]:
    """(index of the left unit's last character, index of the space, left unit, right unit) of each
    pair in ``text``, units lowercased."""
    units = [(m.start(), m.end(), m.group().lower()) for m in _UNIT.finditer(text)]
    out = []
    for (_, end, left), (start, _, right) in zip(units, units[1:]):
        if start == end + 1 and text[end] == " ":
            out.append((end - 1, end, left, right))
    return out


class SpaceJoins:
    """Counts of joined and split spaces by pair and by unit (see the module's docstring)."""

    def __init__(self, pairs: Counts, left: Counts, right: Counts):
        self.pairs, self.left, self.right = pairs, left, right

    @classmethod
    def count(cls, paragraphs: Sequence[Tuple[str, np.ndarray]], inside: int) -> "SpaceJoins":
        """Counts from (text, labels per character) where label ``inside`` on a pair's left character
        means that the space after it lies inside a token."""
        pairs: Counter = Counter()
        left: Counter = Counter()
        right: Counter = Counter()
        for text, labels in paragraphs:
            for last, _, a, b in pairs_of(text):
                k = 0 if labels[last] == inside else 1
                pairs[(a, b, k)] += 1
                left[(a, k)] += 1
                right[(b, k)] += 1
        return cls(_table(pairs), _table(left), _table(right))

    def minus(self, other: "SpaceJoins") -> "SpaceJoins":
        """These counts without ``other``'s (a subset of the text these were counted on)."""
        return SpaceJoins(*(_subtract(a, b) for a, b in ((self.pairs, other.pairs), (self.left, other.left),
                                                           (self.right, other.right))))

    def values(self, text: str) -> np.ndarray:
        """The input value [len(text)] of each character (int32, 0 where there is no pair)."""
        out = np.zeros(len(text), dtype=np.int32)
        none = (0, 0)
        for last, space, a, b in pairs_of(text):
            out[last] = 1 + pair_bucket(*self.pairs.get((a, b), none))
            out[space] = 1 + PAIR_BUCKETS + UNIT_BUCKETS * unit_bucket(*self.left.get(a, none)) \
                + unit_bucket(*self.right.get(b, none))
        return out

    def to_json(self) -> Dict[str, Any]:
        return {"pairs": [[a, b, j, s] for (a, b), (j, s) in sorted(self.pairs.items())],
                "left": [[a, j, s] for a, (j, s) in sorted(self.left.items())],
                "right": [[a, j, s] for a, (j, s) in sorted(self.right.items())]}

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "SpaceJoins":
        """The inverse of :meth:`to_json`; ValueError or TypeError on a malformed object."""
        return cls({(str(a), str(b)): [int(j), int(s)] for a, b, j, s in data["pairs"]},
                   {str(a): [int(j), int(s)] for a, j, s in data["left"]},
                   {str(a): [int(j), int(s)] for a, j, s in data["right"]})


def _table(counter: Counter) -> Counts:
    out: Counts = {}
    for key, n in counter.items():
        *name, k = key
        out.setdefault(name[0] if len(name) == 1 else tuple(name), [0, 0])[k] += n
    return out


def _subtract(a: Counts, b: Counts) -> Counts:
    out = {}
    for key, (j, s) in a.items():
        bj, bs = b.get(key, (0, 0))
        if j - bj or s - bs:
            out[key] = [j - bj, s - bs]
    return out


def jackknifed(paragraphs: Sequence[Tuple[str, np.ndarray]], inside: int,
               folds: int = FOLDS) -> Tuple[SpaceJoins, List[np.ndarray]]:
    """(the counts of all ``paragraphs``, each paragraph's input values from the counts of the other
    folds); paragraph ``i`` is in fold ``i % folds``."""
    whole = SpaceJoins.count(paragraphs, inside)
    values: List[np.ndarray] = [np.zeros(0, np.int32)] * len(paragraphs)
    for f in range(folds):
        members = range(f, len(paragraphs), folds)
        rest = whole.minus(SpaceJoins.count([paragraphs[i] for i in members], inside))
        for i in members:
            values[i] = rest.values(paragraphs[i][0])
    return whole, values
