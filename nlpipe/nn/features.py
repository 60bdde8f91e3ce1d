"""Token features for the neural taggers: word keys, word shapes and the id vocabulary (no torch).

Kept torch-free so that inference with the numpy ID-CNN starts fast.
"""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Sequence

import numpy as np

PAD, UNK = "<pad>", "<unk>"
_DIGIT = re.compile(r"\d")

PREFIXES = (1, 2, 3)
SUFFIXES = (1, 2, 3, 4)
N_AFFIXES = len(PREFIXES) + len(SUFFIXES)

# Word shapes (the case information the lower-cased GloVe lookup drops).
SHAPES = ("pad", "no-letter", "no-caps", "all-caps", "first-cap", "has-cap")


def word_key(form: str) -> str:
    """Lookup key of a word: digits mapped to 0, lower-cased (GloVe 6B is uncased)."""
    return _DIGIT.sub("0", form).lower()


def word_shape(form: str) -> int:
    """Index in :data:`SHAPES` of a word's capitalisation pattern."""
    if not any(c.isalpha() for c in form):
        return 1
    if form.islower() or not any(c.isupper() for c in form):
        return 2
    letters = [c for c in form if c.isalpha()]
    if all(c.isupper() for c in letters):
        return 3
    if form[0].isupper():
        return 4
    return 5


class Vocab:
    """A fixed word list: index 0 is padding, 1 the unknown word."""

    def __init__(self, words: Sequence[str]):
        self.words: List[str] = [PAD, UNK] + [w for w in words if w not in (PAD, UNK)]
        self.index: Dict[str, int] = {w: i for i, w in enumerate(self.words)}
        self._cache: Dict[str, int] = {}  # form -> id; bounded, most text reuses few forms

    def __len__(self) -> int:
        return len(self.words)

    def ids(self, forms: Iterable[str]) -> np.ndarray:
        """Ids of ``forms`` (unknown words map to 1)."""
        cache = self._cache
        out = []
        for f in forms:
            i = cache.get(f)
            if i is None:
                i = self.index.get(word_key(f), 1)
                if len(cache) < 200000:
                    cache[f] = i
            out.append(i)
        return np.array(out, dtype=np.int64)


_SHAPE_CACHE: Dict[str, int] = {}


def shape_ids(forms: Iterable[str]) -> np.ndarray:
    """Shape ids of ``forms`` (see :data:`SHAPES`)."""
    out = []
    for f in forms:
        i = _SHAPE_CACHE.get(f)
        if i is None:
            i = word_shape(f)
            if len(_SHAPE_CACHE) < 200000:
                _SHAPE_CACHE[f] = i
        out.append(i)
    return np.array(out, dtype=np.int64)


def affix_keys(form: str, digits_as_zero: bool = True) -> List[str]:
    """Prefix and suffix keys of a word (lower-cased, digits as 0 unless told otherwise),
    e.g. ``"p2:wa"``, ``"s3:ked"``. The parser's shipped model was trained with digits kept."""
    w = (_DIGIT.sub("0", form) if digits_as_zero else form).lower()
    return [f"p{k}:{w[:k]}" for k in PREFIXES] + [f"s{k}:{w[-k:]}" for k in SUFFIXES]


class AffixVocab:
    """Affix key -> id (0 padding, 1 unknown affix); :meth:`ids` gives ``[n, N_AFFIXES]`` per word."""

    def __init__(self, keys: Sequence[str]):
        self.keys: List[str] = [PAD, UNK] + [k for k in keys if k not in (PAD, UNK)]
        self.index: Dict[str, int] = {k: i for i, k in enumerate(self.keys)}
        self._cache: Dict[str, List[int]] = {}

    def __len__(self) -> int:
        return len(self.keys)

    def ids(self, forms: Iterable[str]) -> np.ndarray:
        """Affix ids ``[len(forms), N_AFFIXES]`` (unknown affixes map to 1)."""
        cache, get = self._cache, self.index.get
        out = []
        for f in forms:
            row = cache.get(f)
            if row is None:
                row = [get(k, 1) for k in affix_keys(f)]
                if len(cache) < 200000:
                    cache[f] = row
            out.append(row)
        return np.array(out, dtype=np.int64).reshape(-1, N_AFFIXES)
