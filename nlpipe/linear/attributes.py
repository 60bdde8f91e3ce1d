"""Word-type attributes (form, affixes, shape, flags, ambiguity class) mapped to small integer ids.

Every attribute has a string vocabulary built from training data. Id 0 means "not in the vocabulary"
and id 1 is the padding outside a sentence, so templates that look at words -2..+2 need no special
cases at the edges. Attributes are computed once per word type and cached.
"""
from __future__ import annotations

import re
import string
import threading
from collections import Counter, defaultdict
from itertools import repeat
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.linear.clusters import SIZES, Clusters
from nlpipe.vocab import Vocab

UNK, PAD = 0, 1
SPECIALS = ("<unk>", "<pad>")   # the reserved ids UNK and PAD of every attribute vocabulary

# Order matters: it is the column order of the attribute matrix. The string attributes come first
# (see type_strings), then the word-cluster ids at each granularity of clusters.SIZES ("c64": the
# coarsest), then "amb" (the ambiguity class: the tags a word was seen with in training), which
# must stay last; both are looked up from the lower-cased form.
STRING_ATTRS: Tuple[str, ...] = ("form", "lower", "p1", "p2", "p3", "p4", "s1", "s2", "s3", "s4",
                                 "shape", "flags")
CLUSTER_ATTRS: Tuple[str, ...] = tuple(f"c{k}" for k in SIZES)
ATTRS: Tuple[str, ...] = STRING_ATTRS + CLUSTER_ATTRS + ("amb",)
ATTR_INDEX: Dict[str, int] = {a: i for i, a in enumerate(ATTRS)}
# Models saved before word clusters existed list these attributes (their cluster columns are empty).
_ATTRS_V1: Tuple[str, ...] = STRING_ATTRS + ("amb",)


_ASCII_SHAPE = str.maketrans(string.ascii_uppercase + string.ascii_lowercase + string.digits,
                             "X" * 26 + "x" * 26 + "d" * 10)
_RUNS = re.compile(r"(.)\1\1+")


def normalize(form: str) -> str:
    """Lower-case and map every digit to 0 (so all 4-digit years share one feature)."""
    low = form.lower()
    if not low.isalpha() and any(map(str.isdigit, low)):     # letters only: no digit to look for
        low = "".join("0" if c.isdigit() else c for c in low)
    return low


def _first_two(run: "re.Match[str]") -> str:
    return run.group(0)[:2]     # a function: 3x faster than the template r"\1\1", expanded per match


_COLLAPSED: Dict[str, str] = {}   # ASCII shape before -> after collapsing runs (few distinct ones)


def shape(form: str) -> str:
    """Word shape with runs longer than two collapsed: "Hello" -> "Xxx", "1990s" -> "ddx"."""
    if form.isascii():
        full = form.translate(_ASCII_SHAPE)
        if len(full) < 3:
            return full
        short = _COLLAPSED.get(full)
        if short is None:
            short = _RUNS.sub(_first_two, full)
            if len(_COLLAPSED) < 100_000:
                _COLLAPSED[full] = short
        return short
    out: List[str] = []
    run = 0
    for c in form:
        s = "X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c
        if out and out[-1] == s:
            run += 1
            if run > 2:
                continue
        else:
            run = 1
        out.append(s)
    return "".join(out)


def flags(form: str) -> str:
    """Orthographic flags: C capitalised, A all caps, D has digit, N only digits, H hyphen, P no letter/digit."""
    if form.isalpha():      # most words: no digit, no hyphen, a letter
        if form.isupper() and len(form) > 1:
            return "CA" if form[0].isupper() else "A"
        return "C" if form[0].isupper() else "-"
    f = []
    if form[:1].isupper():
        f.append("C")
    if form.isupper() and len(form) > 1:
        f.append("A")
    if any(map(str.isdigit, form)):
        f.append("D")
        if form.replace(",", "").replace(".", "").isdigit():
            f.append("N")
    if "-" in form:
        f.append("H")
    if not any(map(str.isalnum, form)):
        f.append("P")
    return "".join(f) or "-"


def type_strings(form: str) -> Tuple[str, ...]:
    """The string value of every attribute except "amb" for one word form."""
    low = normalize(form)
    return (form, low, low[:1], low[:2], low[:3], low[:4], low[-1:], low[-2:], low[-3:], low[-4:],
            shape(form), flags(form))


def ambiguity_classes(pairs: Iterable[Tuple[str, str]], min_count: int = 2,
                      min_share: float = 0.05) -> Dict[str, str]:
    """Map normalized forms seen ``min_count`` times to their tags (share >= ``min_share``), "|"-joined."""
    counts: Dict[str, Counter] = defaultdict(Counter)
    for form, tag in pairs:
        counts[normalize(form)][tag] += 1
    out = {}
    for w, c in counts.items():
        n = sum(c.values())
        if n >= min_count:
            out[w] = "|".join(sorted(t for t, k in c.items() if k >= min_share * n))
    return out


def _cluster_vocab(clusters: Optional[Clusters], k: int) -> List[str]:
    """Cluster attribute values: cluster ``c`` has id ``c + 2``; no values without a table."""
    return [] if clusters is None else [str(c) for c in range(k)]


class Attributes:
    """Vocabularies of every attribute, the ambiguity dictionary and the optional word-cluster table;
    maps forms to id rows."""

    type_cache_limit = 500_000    # word types whose rows are kept (the cache starts over beyond)

    def __init__(self, vocabs: Sequence[Sequence[str]], amb: Dict[str, str], clusters: Optional[Clusters] = None):
        if len(vocabs) != len(ATTRS):
            raise ValueError(f"expected {len(ATTRS)} attribute vocabularies, got {len(vocabs)}")
        self.vocabs = [list(v) for v in vocabs]
        for a, k in zip(CLUSTER_ATTRS, SIZES):
            if self.vocabs[ATTR_INDEX[a]] != _cluster_vocab(clusters, k):
                raise ValueError(f"attribute {a} does not match the cluster table")
        tables = [Vocab(v, SPECIALS, UNK, filter=False) for v in self.vocabs]
        self.index = [t.index for t in tables]
        self.amb = dict(amb)
        self.clusters = clusters
        self.sizes = [len(t) for t in tables]
        self._type_index: Dict[str, int] = {}     # form -> row of _type_table (see matrix)
        self._type_table = np.empty((0, len(ATTRS)), dtype=np.int64)
        self._type_count = 0
        self._type_lock = threading.Lock()

    @classmethod
    def build(cls, forms: Iterable[str], amb: Dict[str, str], clusters: Optional[Clusters] = None) -> "Attributes":
        """Vocabularies of all attribute values of ``forms`` (sorted, for reproducible ids)."""
        values: List[list] = [[] for _ in ATTRS]
        strings: List[set] = [set() for _ in STRING_ATTRS]
        for form in set(forms):
            for k, s in enumerate(type_strings(form)):
                strings[k].add(s)
        for k, v in enumerate(strings):
            values[k] = sorted(v)
        for a, k in zip(CLUSTER_ATTRS, SIZES):
            values[ATTR_INDEX[a]] = _cluster_vocab(clusters, k)
        values[-1] = sorted(set(amb.values()))
        return cls(values, amb, clusters)

    def ids(self, form: str) -> Tuple[int, ...]:
        """Attribute ids of one form."""
        return tuple(self._rows([form])[0].tolist())

    def _rows(self, forms: Sequence[str]) -> np.ndarray:
        """Attribute ids [len(forms), len(ATTRS)] of forms, computed a column at a time."""
        n = len(forms)
        out = np.empty((n, len(ATTRS)), dtype=np.int64)
        columns = list(zip(*map(type_strings, forms))) if forms else [()] * len(STRING_ATTRS)
        for k, column in enumerate(columns):
            out[:, k] = np.fromiter(map(self.index[k].get, column, repeat(UNK)), dtype=np.int64, count=n)
        c0 = len(STRING_ATTRS)
        if self.clusters is None:
            out[:, c0:c0 + len(CLUSTER_ATTRS)] = UNK
        else:   # cluster c has id c + 2; a word without a cluster gets UNK
            ids = self.clusters.ids_of(forms)
            out[:, c0:c0 + len(CLUSTER_ATTRS)] = np.where(ids < 0, UNK, ids + 2)
        amb, get = self.amb.get, self.index[-1].get
        out[:, -1] = [UNK if a is None else get(a, UNK) for a in map(amb, columns[1])] if forms else []
        return out

    def type_matrix(self, forms: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
        """(attribute ids of each distinct form [n_types, len(ATTRS)], index of each form's row [len(forms)]).

        Rows are cached per word type in one array, so a batch costs a dictionary lookup per
        token and one gather; new types are computed with :meth:`ids` and appended.
        """
        with self._type_lock:     # stages share a model's attributes between threads
            return self._type_matrix(forms)

    def _type_matrix(self, forms: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
        index = self._type_index
        n = len(forms)
        rows = np.fromiter(map(index.get, forms, repeat(-1)), dtype=np.int64, count=n)
        if n and rows.min() < 0:
            if len(index) > self.type_cache_limit:  # bound memory on endless streams
                index.clear()
                self._type_count = 0
            new = [f for f in dict.fromkeys(forms) if f not in index]
            start = self._type_count
            need = start + len(new)
            if need > len(self._type_table):
                grown = np.empty((max(need, 2 * len(self._type_table)), len(ATTRS)), dtype=np.int64)
                grown[:start] = self._type_table[:start]
                self._type_table = grown
            self._type_table[start:need] = self._rows(new)
            index.update(zip(new, range(start, need)))
            self._type_count = need
            rows = np.fromiter(map(index.__getitem__, forms), dtype=np.int64, count=n)
        uniq, inverse = np.unique(rows, return_inverse=True)
        return self._type_table[uniq].reshape(len(uniq), len(ATTRS)), inverse.reshape(n)

    def matrix(self, forms: Sequence[str]) -> np.ndarray:
        """Attribute ids of a sequence of forms as an int64 array [len(forms), len(ATTRS)]."""
        table, inverse = self.type_matrix(forms)
        return table[inverse]

    def to_json(self) -> Dict[str, object]:
        return {"attrs": list(ATTRS), "vocabs": self.vocabs,
                "amb_words": list(self.amb.keys()), "amb_classes": list(self.amb.values())}

    @classmethod
    def from_json(cls, data: Dict[str, object], clusters: Optional[Clusters] = None) -> "Attributes":
        """Inverse of :meth:`to_json`; ``clusters`` is the model's cluster table (stored apart)."""
        vocabs = data.get("vocabs")
        if not isinstance(vocabs, list):
            raise ValueError("attribute vocabularies missing")
        if data.get("attrs") == list(_ATTRS_V1) and len(vocabs) == len(_ATTRS_V1):
            vocabs = vocabs[:-1] + [[] for _ in CLUSTER_ATTRS] + vocabs[-1:]
        elif data.get("attrs") != list(ATTRS):
            raise ValueError("attribute list differs from this nlpipe version")
        words, classes = data["amb_words"], data["amb_classes"]
        if len(words) != len(classes):  # type: ignore[arg-type]
            raise ValueError("ambiguity dictionary is inconsistent")
        return cls(vocabs, dict(zip(words, classes)), clusters)  # type: ignore[arg-type]
