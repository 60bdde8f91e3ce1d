"""Feature templates of the transition parser: conjunctions of atoms of a configuration.

An atom is ``<position>.<attribute>`` or a configuration-level value. Positions: stack items
``s0 s1 s2``, buffer items ``b0 b1 b2``, the leftmost/second-leftmost (``l``, ``l2``) and
rightmost/second-rightmost (``r``, ``r2``) dependents of ``s0`` and ``s1`` (``s0l``, ``s1r2``...),
``b0l``, and the outer grandchildren ``s0ll``, ``s1rr``. Attributes: ``w`` (normalized form),
``p`` (UPOS), ``x`` (XPOS), ``c`` (word cluster, from the POS tagger's k-means over GloVe),
``l`` (dependency label so far). Configuration values: ``d01`` and
``d0b`` (bucketed distances s0-s1 and s0-b0), ``s0vl s0vr s1vl s1vr`` (valencies, capped), and
``bias``. A template such as ``s0.w+s0.x+b0.x`` maps a configuration to one int64 key (mixed radix).

:class:`FeaturePlan` computes the atoms of all unfinished configurations as one matrix per round
and the keys of a block of templates with a handful of array operations, whatever the number of
templates, so that parsing and training do not loop over templates in Python.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from nlpipe.models.transition.system import Configurations

MAX_KEY = 1 << 62

POSITIONS = ("s0", "s1", "s2", "b0", "b1", "b2", "s0l", "s0l2", "s0r", "s0r2", "s1l", "s1l2", "s1r", "s1r2",
             "b0l", "s0ll", "s1rr")
TOKEN_ATTRIBUTES = ("w", "p", "x", "c")     # fixed per token (columns of the token matrix)
ATTRIBUTES = TOKEN_ATTRIBUTES + ("l",)
SCALARS = ("d01", "d0b", "s0vl", "s0vr", "s1vl", "s1vr")
DIST_BUCKETS = 8           # 0 = undefined, then 1, 2, 3, 4, 5-6, 7-9, 10+
VALENCY_CAP = 6            # values 0..5 and 6 = "6 or more"

# Hand order: the cheap, most telling templates first (dynamic feature selection adds them in order).
# Tried on en_ewt dev (3 epochs, min-count 6; this list: LAS 80.77): 39 more conjunctions in the style of
# Zhang & Nivre (2011) (word+tag pairs of s0/s1/b0, tag trigrams, distance and valency with words and
# tags, child labels and third-order tags): 80.60; the tag/label/distance/valency ones alone (91
# templates), ordered by mean score spread: 80.22 after 2 of 3 epochs (this list: 80.67).
DEFAULT_TEMPLATES: Tuple[str, ...] = (
    "bias", "s0.x+s1.x+b0.x", "s0.p+s1.p", "s0.w+s0.x", "s1.w+s1.x", "b0.w+b0.x", "s0.x+s1.x+d01",
    "s0.w+s1.w", "s0.x+b0.x", "s1.x+b0.x", "s0.w", "s1.w", "b0.w", "b1.w", "s2.x", "b1.x",
    "b0.x+b1.x", "s0.x+b0.x+b1.x", "b0.x+b1.x+b2.x", "s2.x+s1.x+s0.x", "s0.w+s1.x", "s0.x+s1.w",
    "s0.w+s0.x+s1.x", "s1.w+s1.x+s0.x", "s0.w+s0.x+s1.w+s1.x", "s0.w+b0.w", "s0.x+b0.w", "s0.w+b0.x",
    "s0.w+d01", "s1.w+d01", "s0.w+s1.w+d01", "s0.x+d0b", "s0.x+b0.x+d0b",
    "s0.x+s0vl", "s0.x+s0vr", "s1.x+s1vl", "s1.x+s1vr", "s0.w+s0vl", "s1.w+s1vr",
    "s0l.x", "s0l.l", "s0r.x", "s0r.l", "s1l.x", "s1l.l", "s1r.x", "s1r.l",
    "s0l.w", "s0r.w", "s1l.w", "s1r.w",
    "s0.x+s0l.l+s0l2.l", "s0.x+s0r.l+s0r2.l", "s1.x+s1l.l+s1l2.l", "s1.x+s1r.l+s1r2.l",
    "s0.x+s1.x+s0l.x", "s0.x+s1.x+s0r.x", "s0.x+s1.x+s1l.x", "s0.x+s1.x+s1r.x",
    "s0.x+s1.x+s1r.l", "s0.x+s1.x+s0l.l", "b0l.x+b0.x", "s0ll.x+s0.x", "s1rr.x+s1.x",
    "s0.p+s1.p+b0.p+b1.p", "s2.p+s1.p+s0.p+b0.p",
    "s0.c", "s1.c", "b0.c", "s0.c+s1.c", "s0.c+b0.c", "s0.c+s1.x", "s0.x+s1.c", "b0.c+b1.x",
)

Template = Tuple[str, ...]


def parse_template(spec: str) -> Template:
    """``"s0.w+b0.x"`` -> ``("s0.w", "b0.x")``; ValueError for unknown atoms."""
    if spec == "bias":
        return ()
    parts = tuple(spec.split("+"))
    for p in parts:
        if p in SCALARS:
            continue
        pos, _, attr = p.partition(".")
        if pos not in POSITIONS or attr not in ATTRIBUTES:
            raise ValueError(f"template '{spec}': unknown atom '{p}' (positions {' '.join(POSITIONS)}; "
                             f"attributes {' '.join(ATTRIBUTES)}; values {' '.join(SCALARS)})")
    return parts


def atom_sizes(num_words: int, num_upos: int, num_xpos: int, num_labels: int, num_clusters: int = 3
               ) -> Dict[str, int]:
    """Number of values of each kind of atom (``w``/``p``/``x``/``c`` ids include UNK, NULL and ROOT)."""
    sizes = {"w": num_words, "p": num_upos, "x": num_xpos, "c": num_clusters, "l": num_labels + 2,
             "d01": DIST_BUCKETS, "d0b": DIST_BUCKETS}
    for v in ("s0vl", "s0vr", "s1vl", "s1vr"):
        sizes[v] = VALENCY_CAP + 1
    return sizes


def atom_size(atom: str, sizes: Dict[str, int]) -> int:
    return sizes[atom] if atom in sizes else sizes[atom.partition(".")[2]]


def check_radix(template: Template, sizes: Dict[str, int]) -> int:
    """Number of possible keys; ValueError when they would not fit in an int64."""
    total = 1
    for a in template:
        total *= atom_size(a, sizes)
    if total >= MAX_KEY:
        raise ValueError(f"template '{'+'.join(template)}' has too many values to key in 64 bits")
    return total


_BUCKET_EDGES = np.array([1, 2, 3, 4, 5, 7, 10])
_DEPTH = np.array([1, 2, 3])          # s0..s2 / b0..b2 lie 1..3 slots below the stack / buffer pointer
POSITION_INDEX = {p: i for i, p in enumerate(POSITIONS)}
SCALAR_INDEX = {v: i for i, v in enumerate(SCALARS)}


def _bucket(d: np.ndarray) -> np.ndarray:
    return np.searchsorted(_BUCKET_EDGES, d, side="right")


def positions(cfg: Configurations, c: np.ndarray) -> np.ndarray:
    """Flat token index [len(c), len(POSITIONS)] of every position (0 = NULL) for configurations ``c``."""
    cc = c[:, None]
    out = np.empty((len(c), len(POSITIONS)), dtype=np.int64)
    out[:, 0:3] = cfg.stack[cc, cfg.sp[cc] - _DEPTH]
    out[:, 3:6] = cfg.buf[cc, cfg.bp[cc] - _DEPTH]
    kids = cfg.kids[:, out[:, 0:2]]                 # [l l2 r r2, configurations, s0 s1]
    out[:, 6:10] = kids[:, :, 0].T
    out[:, 10:14] = kids[:, :, 1].T
    out[:, 14] = cfg.lc1[out[:, 3]]
    out[:, 15] = cfg.lc1[out[:, 6]]
    out[:, 16] = cfg.rc1[out[:, 12]]
    return out


def scalars(cfg: Configurations, pos: np.ndarray) -> np.ndarray:
    """Values [len(pos), len(SCALARS)] of the configuration-level atoms, from :func:`positions`."""
    out = np.empty((len(pos), len(SCALARS)), dtype=np.int64)
    s0, s1, b0 = pos[:, 0], pos[:, 1], pos[:, 3]
    o = cfg.ordinal
    out[:, 0] = np.where((s0 > 0) & (s1 > 0), _bucket(np.abs(o[s0] - o[s1])), 0)
    out[:, 1] = np.where((s0 > 0) & (b0 > 0), _bucket(np.abs(o[s0] - o[b0])), 0)
    np.minimum(cfg.nl[pos[:, 0:2]], VALENCY_CAP, out=out[:, 2:6:2])
    np.minimum(cfg.nr[pos[:, 0:2]], VALENCY_CAP, out=out[:, 3:6:2])
    return out


class FeaturePlan:
    """Computes the keys of a block of templates for many configurations with a number of numpy
    operations that does not grow with the templates or atoms of the block: the positions and the
    configuration-level values of a round come first (:meth:`state`), then a block's token
    attributes, labels and values are three gathers and its mixed-radix keys a few whole-matrix
    steps. Margin inference computes only the blocks a configuration reaches.
    """

    def __init__(self, templates: Sequence[Template], sizes: Dict[str, int]):
        self.templates = list(templates)
        self.atoms = sorted({a for t in templates for a in t}) + ["0"]   # "0": zero padding, radix 1
        index = {a: i for i, a in enumerate(self.atoms)}
        width = max([len(t) for t in templates] + [1])
        self.parts = np.full((len(templates), width), len(self.atoms) - 1, dtype=np.int64)
        self.radix = np.ones((len(templates), width), dtype=np.int64)
        for j, t in enumerate(templates):
            for i, a in enumerate(t):
                self.parts[j, i] = index[a]
                self.radix[j, i] = atom_size(a, sizes)
        self._blocks: Dict[Tuple[int, int, int], Tuple[np.ndarray, ...]] = {}

    def block(self, templates: slice) -> Tuple[np.ndarray, ...]:
        """How to read the templates in the slice: (token positions, token attribute columns, label
        positions, scalar columns, parts as columns of the block's value matrix, radix), the value
        matrix being token values, then labels, then scalars, then one zero column."""
        key = templates.indices(len(self.templates))
        b = self._blocks.get(key)
        if b is None:
            parts = self.parts[templates]
            tok: List[Tuple[int, int]] = []
            lab: List[int] = []
            sca: List[int] = []
            kinds: List[Tuple[int, int]] = []     # per atom of the block: (kind, index in its list)
            atoms = [int(a) for a in np.unique(parts)]
            for a in atoms:
                name = self.atoms[a]
                if name == "0":
                    kinds.append((3, 0))
                elif name in SCALARS:
                    kinds.append((2, len(sca)))
                    sca.append(SCALAR_INDEX[name])
                else:
                    p, _, attr = name.partition(".")
                    if attr == "l":
                        kinds.append((1, len(lab)))
                        lab.append(POSITION_INDEX[p])
                    else:
                        kinds.append((0, len(tok)))
                        tok.append((POSITION_INDEX[p], TOKEN_ATTRIBUTES.index(attr)))
            start = [0, len(tok), len(tok) + len(lab), len(tok) + len(lab) + len(sca)]
            column = {a: start[k] + i for a, (k, i) in zip(atoms, kinds)}
            cols = np.vectorize(column.__getitem__, otypes=[np.int64])(parts) if parts.size else parts
            b = (np.array([t[0] for t in tok], dtype=np.int64), np.array([t[1] for t in tok], dtype=np.int64),
                 np.array(lab, dtype=np.int64), np.array(sca, dtype=np.int64), cols,
                 self.radix[templates])
            self._blocks[key] = b
        return b

    @staticmethod
    def state(cfg: Configurations, c: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(positions, scalar values) of configurations ``c``: what every block of a round reads."""
        pos = positions(cfg, c)
        return pos, scalars(cfg, pos)

    def block_keys(self, cfg: Configurations, tokens: np.ndarray, state: Tuple[np.ndarray, np.ndarray],
                   templates: slice = slice(None)) -> np.ndarray:
        """Keys [n, templates] of the templates in the slice for the n configurations of ``state``;
        ``tokens`` is the int64 matrix [cfg.size, len(TOKEN_ATTRIBUTES)] of token attribute ids."""
        pos, sca = state
        tok_pos, tok_attr, lab_pos, sca_cols, cols, radix = self.block(templates)
        values = np.zeros((len(pos), len(tok_pos) + len(lab_pos) + len(sca_cols) + 1), dtype=np.int64)
        a, b = len(tok_pos), len(tok_pos) + len(lab_pos)
        if a:
            values[:, :a] = tokens[pos[:, tok_pos], tok_attr]
        if b > a:
            values[:, a:b] = cfg.label[pos[:, lab_pos]]
        if len(sca_cols):
            values[:, b:-1] = sca[:, sca_cols]
        key = values[:, cols[:, 0]]
        for i in range(1, cols.shape[1]):
            key *= radix[:, i]
            key += values[:, cols[:, i]]
        return key

    def keys(self, cfg: Configurations, tokens: np.ndarray, c: np.ndarray, templates: slice = slice(None)
             ) -> np.ndarray:
        """Keys [len(c), templates] of the templates in the slice for configurations ``c``."""
        return self.block_keys(cfg, tokens, self.state(cfg, c), templates)
