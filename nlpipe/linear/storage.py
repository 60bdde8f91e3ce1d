"""Plain-file storage of per-template weight tables (sorted int64 keys + one weight matrix each).

Template ``j`` owns keys ``keys[j]`` and weights ``weights[j]`` of shape [len(keys[j]) + 1, L];
row 0 scores unknown keys. On disk one ``.npz`` holds all templates concatenated, sparse, as
float16: per weight row its count of non-zero entries, then their columns and values. Every
templated linear model (the POS tagger, the transition parser) stores its tables this way.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Sequence, Tuple

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


def load_block(path: Path, num_templates: int, num_labels: int) -> Tuple[List[np.ndarray], np.ndarray, np.ndarray]:
    """Read tables written by :func:`save_tables` as (keys per template, one weight block with all
    templates' rows stacked, first block row of each template). A file that cannot be read is a
    ModelError; ValueError (or KeyError) when the arrays do not fit together or with
    ``num_templates`` and ``num_labels``."""
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
    block = np.zeros((int(nrows.sum()), L), dtype=np.float32)
    r = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    block.ravel()[r * L + col] = val
    row_start = np.concatenate([[0], np.cumsum(nrows)[:-1]]).astype(np.int64)
    keys = [all_keys[koff[j]:koff[j + 1]] for j in range(k)]
    return keys, block, row_start


def load_tables(path: Path, num_templates: int, num_labels: int) -> Tuple[List[np.ndarray], List[np.ndarray]]:
    """Read tables written by :func:`save_tables` as (keys, weights) per template; the weight
    matrices are views of one block (see :func:`load_block`)."""
    keys, block, start = load_block(path, num_templates, num_labels)
    return keys, [block[s:s + len(kj) + 1] for s, kj in zip(start.tolist(), keys)]
