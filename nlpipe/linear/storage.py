"""Plain-file storage of per-template weight tables (sorted int64 keys + one weight matrix each).

Template ``j`` owns keys ``keys[j]`` and weights ``weights[j]`` of shape [len(keys[j]) + 1, L];
row 0 scores unknown keys. On disk one ``.npz`` holds all templates concatenated, sparse, as
float16: per weight row its count of non-zero entries, then their columns and values. Every
templated linear model (the POS tagger, the transition parser) stores its tables this way; the
tagger's passes load them as :class:`SparseRows`, the transition parser as one dense block.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.io.model_dir import read_arrays, write_arrays


def compact_tables(keys: List[np.ndarray], weights: List[np.ndarray], threshold: float = 1e-3) -> None:
    """In place: round weights to float16, zero those below ``threshold`` and drop all-zero rows."""
    for j, w in enumerate(weights):
        w = w.astype(np.float16).astype(np.float32)
        w[np.abs(w) < threshold] = 0.0
        keep = np.flatnonzero(np.any(w[1:] != 0, axis=1))
        keys[j] = keys[j][keep]
        weights[j] = np.concatenate([w[:1], w[1:][keep]])


def save_tables(path: Path, keys: Sequence[np.ndarray], weights: Sequence[np.ndarray], num_labels: int) -> None:
    """Write the tables to ``path`` (an ``.npz`` file)."""
    L = num_labels
    count_type = np.uint8 if L < 256 else np.uint16
    col_type = np.uint8 if L <= 256 else np.uint16
    counts, cols, vals = [], [], []
    for w in weights:
        r, c = np.nonzero(w)
        counts.append(np.bincount(r, minlength=len(w)).astype(count_type))
        cols.append(c.astype(col_type))
        vals.append(w[r, c].astype(np.float16))
    write_arrays(path, {
        "keys": np.concatenate(keys).astype(np.int64) if len(keys) else np.zeros(0, np.int64),
        "key_offsets": np.cumsum([0] + [len(k) for k in keys]).astype(np.int64),
        "row_counts": np.concatenate(counts) if counts else np.zeros(0, count_type),
        "col": np.concatenate(cols) if cols else np.zeros(0, col_type),
        "val": np.concatenate(vals) if vals else np.zeros(0, np.float16)})


def key_rows(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Rows (1-based; 0 = not in ``table``) of ``keys`` in a sorted key table."""
    if len(table) == 0:
        return np.zeros(len(keys), dtype=np.int32)
    pos = np.minimum(np.searchsorted(table, keys), len(table) - 1)
    return np.where(table[pos] == keys, pos + 1, 0).astype(np.int32)


def _read_checked(path: Path, num_templates: int, num_labels: int) -> Tuple[List[np.ndarray], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(keys per template, rows per template, non-zero count per row, their columns, their
    values) of tables written by :func:`save_tables`. A file that cannot be read is a ModelError;
    ValueError (or KeyError) when the arrays do not fit together or with ``num_templates`` and
    ``num_labels``."""
    L, k = num_labels, num_templates
    z = read_arrays(path)
    all_keys, koff = z["keys"], z["key_offsets"]
    counts, col, val = z["row_counts"], z["col"], z["val"]
    nrows = np.diff(koff) + 1
    if all_keys.dtype != np.int64 or koff.shape != (k + 1,) or koff[0] != 0 \
            or koff[-1] != len(all_keys) or np.any(nrows < 1) or len(counts) != nrows.sum() \
            or counts.dtype.kind != "u" or col.dtype.kind != "u" or val.dtype != np.float16 \
            or not (len(col) == len(val) == int(counts.sum(dtype=np.int64))):
        raise ValueError("inconsistent arrays")
    if len(col) and int(col.max()) >= L:
        raise ValueError("entry out of range")
    keys = [all_keys[koff[j]:koff[j + 1]] for j in range(k)]
    return keys, nrows, counts, col, val


DENSE_MIN = 8   # rows with more non-zero entries than this are kept dense (see SparseRows)
GATHER_ROWS = 1024  # weight rows gathered at a time before they are added (400 KB at 100 labels)


def _gather_add(table: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
    """``out += table[rows]``, ``rows`` being valid row numbers, :data:`GATHER_ROWS` rows at a time:
    the gathered rows are added while still in the cache, where one temporary of all of them
    would go out to memory and back (en_ewt test: ~7% less tagging time)."""
    n = len(rows)
    if n <= GATHER_ROWS:
        out += np.take(table, rows, axis=0)
        return
    buf = np.empty((GATHER_ROWS, table.shape[1]), dtype=table.dtype)
    for a in range(0, n, GATHER_ROWS):
        part = buf[:min(GATHER_ROWS, n - a)]
        np.take(table, rows[a:a + GATHER_ROWS], axis=0, out=part, mode="clip")   # clip: no bounds-check copy
        out[a:a + len(part)] += part


class SparseRows:
    """The weight rows of all templates of a model as loaded for inference: the rows with many
    non-zero entries dense, the others as compressed sparse rows.

    The tables are 2-7% non-zero: dense, a two-pass tagger with its FEATS pass filled ~260 MB,
    whose allocation and page faults cost a tagging command much of its time. The rows with more
    than :data:`DENSE_MIN` entries (a tenth of the memory) take 85% of a text's lookups; the
    rest add their few entries one by one. Templates marked ``whole`` keep all their rows dense
    (those scored in many small rounds, where the fixed cost of each lookup counts). Training
    works on dense matrices (:meth:`dense`).
    """

    def __init__(self, nrows: np.ndarray, counts: np.ndarray, col: np.ndarray, val: np.ndarray,
                 num_labels: int, whole: Optional[Sequence[bool]] = None, dense_min: int = DENSE_MIN):
        """``nrows``: rows per template; ``counts``: non-zero entries per row (all templates' rows
        in order); ``col``/``val``: the entries' columns and values, row after row (as stored);
        ``whole``: per template, whether all its rows stay dense."""
        L = self.num_labels = int(num_labels)
        self.nrows = np.asarray(nrows, dtype=np.int64)
        self.row_start = np.concatenate([[0], np.cumsum(self.nrows)]).astype(np.int64)
        self._stored = (counts, col, val)
        dense = counts > dense_min
        whole = [False] * len(self.nrows) if whole is None else list(whole)
        for j in np.flatnonzero(whole):
            dense[self.row_start[j]:self.row_start[j + 1]] = True
        # dense rows get a slot in ``block``, in row order; slot 0 is all zeros, for the sparse rows
        self.slot = np.zeros(len(counts), dtype=np.int32)
        n_dense = int(np.count_nonzero(dense))
        self.slot[dense] = np.arange(1, n_dense + 1, dtype=np.int32)
        self.block = np.zeros((n_dense + 1, L), dtype=np.float32)
        slot_e = np.repeat(self.slot, counts)             # per entry: its row's slot
        # every entry is written to its slot's row (those of sparse rows to slot 0, zeroed again
        # after): one pass over the entries instead of selecting the dense rows' first
        at = np.multiply(slot_e, L, dtype=np.int64)
        at += col
        self.block.ravel()[at] = val
        self.block[0] = 0.0
        self._whole: List[Optional[np.ndarray]] = [None] * len(self.nrows)
        for j in np.flatnonzero(whole):
            base = int(self.slot[self.row_start[j]])
            self._whole[j] = self.block[base:base + int(self.nrows[j])]
        # sparse rows: their entries, and per row where they start (dense rows have none)
        sparse = slot_e == 0
        self.s_col, self.s_val = col[sparse], val[sparse].astype(np.float32)
        self.s_offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(np.where(dense, 0, counts), out=self.s_offsets[1:])

    @property
    def num_entries(self) -> int:
        """Non-zero weights of all templates."""
        return int(np.count_nonzero(self._stored[2]))

    def add(self, j: int, rows: np.ndarray, out: np.ndarray) -> None:
        """``out[i] += W_j[rows[i]]`` for every i, in place; ``out``: C-contiguous [len(rows), L]."""
        if not out.flags.c_contiguous:
            raise ValueError("the scores to add to must be C-contiguous")
        whole = self._whole[j]
        if whole is not None:
            _gather_add(whole, rows, out)
            return
        r = rows + self.row_start[j]
        _gather_add(self.block, self.slot[r], out)
        self._add_sparse(r, out)

    def take(self, j: int, rows: np.ndarray) -> np.ndarray:
        """Rows ``rows`` of template ``j``'s weights as a new array [len(rows), L]."""
        whole = self._whole[j]
        if whole is not None:
            return np.take(whole, rows, axis=0)
        r = rows + self.row_start[j]
        out = np.take(self.block, self.slot[r], axis=0)
        self._add_sparse(r, out)
        return out

    def _add_sparse(self, r: np.ndarray, out: np.ndarray) -> None:
        """Add the entries of the sparse rows among the rows ``r`` (all templates' numbering)."""
        first = self.s_offsets[r]
        count = self.s_offsets[r + 1] - first
        some = np.flatnonzero(count)
        if len(some) == 0:
            return
        first, count = first[some], count[some]
        ends = np.cumsum(count)
        # entry e of the k-th such token sits at first[k] + (e - entries before it)
        entry = np.arange(int(ends[-1]), dtype=np.int64) + np.repeat(first - (ends - count), count)
        pos = np.repeat(some * self.num_labels, count) + self.s_col[entry]
        np.add.at(out.reshape(-1), pos, self.s_val[entry])   # faster than ``[pos] +=`` (no position repeats)

    def dense_block(self) -> np.ndarray:
        """All templates' rows as one dense block [rows, L] (template j's from ``row_start[j]``)."""
        counts, col, val = self._stored
        L = self.num_labels
        block = np.zeros((int(self.row_start[-1]), L), dtype=np.float32)
        r = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        block.ravel()[r * L + col] = val
        return block

    def dense(self) -> List[np.ndarray]:
        """Every template's dense weight matrix [rows, L] (views of one block)."""
        block = self.dense_block()
        return [block[a:b] for a, b in zip(self.row_start[:-1].tolist(), self.row_start[1:].tolist())]


def load_sparse(path: Path, num_templates: int, num_labels: int, whole: Optional[Sequence[bool]] = None
                ) -> Tuple[List[np.ndarray], SparseRows]:
    """Read tables written by :func:`save_tables` as (keys per template, their sparse rows, all
    rows dense for the templates marked ``whole``); errors as :func:`_read_checked`."""
    keys, nrows, counts, col, val = _read_checked(path, num_templates, num_labels)
    return keys, SparseRows(nrows, counts, col, val, num_labels, whole)


def load_block(path: Path, num_templates: int, num_labels: int) -> Tuple[List[np.ndarray], np.ndarray, np.ndarray]:
    """Read tables written by :func:`save_tables` as (keys per template, one dense weight block with
    all templates' rows stacked, first block row of each template); errors as :func:`_read_checked`."""
    keys, rows = load_sparse(path, num_templates, num_labels)
    return keys, rows.dense_block(), rows.row_start[:-1]
