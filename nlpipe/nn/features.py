"""Token features for the neural taggers: word keys, word shapes, the word and affix vocabularies (no torch).

Kept torch-free so that inference with the numpy ID-CNN starts fast.
"""
from __future__ import annotations

import re
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, TypeVar

import numpy as np

from nlpipe.vocab import PAD_UNK, PAD_UNK_ROOT, Vocab
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


def word_vocab(words: Iterable[str]) -> Vocab:
    """The neural models' word vocabulary: ``<pad>`` 0, ``<unk>`` 1, then ``words``, looked up by
    :func:`word_key`."""
    return Vocab(words, PAD_UNK, 1, word_key)


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


class AffixVocab(Vocab):
    """Affix key -> id (0 padding, 1 unknown affix); :meth:`affix_ids` gives ``[n, N_AFFIXES]`` per word."""

    def __init__(self, keys: Iterable[str], specials: Sequence[str] = PAD_UNK, unknown: int = 1,
                 key: Optional[Callable[[str], str]] = None, filter: bool = True):
        super().__init__(keys, specials, unknown, key, filter)
        self._rows: Dict[str, List[int]] = {}

    def affix_ids(self, forms: Iterable[str]) -> np.ndarray:
        """Affix ids ``[len(forms), N_AFFIXES]`` (unknown affixes map to 1)."""
        cache, get, unknown = self._rows, self.index.get, self.unknown
        out = []
        for f in forms:
            row = cache.get(f)
            if row is None:
                row = [get(k, unknown) for k in affix_keys(f)]
                if len(cache) < 200000:
                    cache[f] = row
            out.append(row)
        return np.array(out, dtype=np.int64).reshape(-1, N_AFFIXES)


# ---------------------------------------------------------------------------------------------
# The biaffine parser's features (position 0 is the artificial root)

ROOT_ID = 2  # index of ROOT in every vocabulary built by :func:`make_vocab`


def make_vocab(items: Sequence[str], key: Optional[Callable[[str], str]] = None) -> Vocab:
    """A :class:`~nlpipe.vocab.Vocab` with ``<pad>``, ``<unk>``, ``<root>`` first (ids 0, 1, 2),
    unknown 1, looked up by ``key`` (words: :func:`~nlpipe.nn.features.word_key`)."""
    return Vocab(items, PAD_UNK_ROOT, 1, key)


def parser_affix_keys(form: str) -> List[str]:
    """The parser's affix keys: :func:`affix_keys` with digits kept."""
    return affix_keys(form, digits_as_zero=False)


FORM_CACHE = 100_000  # distinct forms whose ids a model keeps (then it starts again)


R = TypeVar("R")


def cached_rows(forms: Sequence[str], cache: Dict[str, R], make: Callable[[str], R]) -> List[R]:
    """``make(form)`` of each form, made once per distinct form and kept in ``cache`` (emptied when it
    holds more than :data:`FORM_CACHE` forms): most tokens of a text are forms it has seen."""
    if len(cache) > FORM_CACHE:
        cache.clear()
    rows = []
    for f in forms:
        row = cache.get(f)
        if row is None:
            row = cache[f] = make(f)
        rows.append(row)
    return rows


def sentence_features(forms: Sequence[str], upos: Sequence[str], xpos: Sequence[str], words: Vocab,
                      affixes: Vocab, tags: Vocab, xtags: Vocab,
                      cache: Optional[Dict[str, Tuple[int, ...]]] = None) -> Dict[str, np.ndarray]:
    """Id arrays of one sentence with the root prepended: ``words, shapes, upos, xpos [n + 1]``,
    ``affixes [n + 1, N_AFFIXES]``. ``cache``: the ids of forms seen before (word, shape, affixes),
    filled as it goes, since most tokens of a text are forms it has seen."""
    n = len(forms)
    rows = cached_rows(forms, {} if cache is None else cache,
                       lambda f: (words.id(f), word_shape(f), *(affixes.id(k) for k in parser_affix_keys(f))))
    ids = np.array(rows, dtype=np.int64).reshape(n, 2 + N_AFFIXES)
    wid = np.empty(n + 1, dtype=np.int64)
    wid[0] = ROOT_ID
    wid[1:] = ids[:, 0]
    shp = np.zeros(n + 1, dtype=np.int64)
    shp[1:] = ids[:, 1]
    aff = np.zeros((n + 1, N_AFFIXES), dtype=np.int64)
    aff[1:] = ids[:, 2:]
    up = np.empty(n + 1, dtype=np.int64)
    up[0] = ROOT_ID
    up[1:] = [tags.id(t) for t in upos]
    xp = np.empty(n + 1, dtype=np.int64)
    xp[0] = ROOT_ID
    xp[1:] = [xtags.id(t) for t in xpos]
    return {"words": wid, "shapes": shp, "affixes": aff, "upos": up, "xpos": xp}
