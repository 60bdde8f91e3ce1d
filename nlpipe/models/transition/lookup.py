"""Key -> weight-row lookup for many templates at once, in numpy.

All templates' weight matrices are stacked into one block; template ``j``'s rows start at
``offsets[j]`` (its unknown row) followed by one row per known key. Templates with few possible keys
use a direct table (key -> block row); the others share one open-addressing hash table over
``key * num_templates + j``, so a block of templates costs a fixed number of array operations.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

DENSE_LIMIT = 1 << 20     # templates with fewer possible keys get a direct table (int32 rows)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
PROBES = 3                # hash probes per lookup before the binary-search fallback


class KeyHash:
    """An int64 -> int64 map with linear probing (keys must be >= 0; -1 marks an empty slot)."""

    def __init__(self, keys: np.ndarray, values: np.ndarray):
        n = len(keys)
        # at most a quarter of the slots used: absent keys (most lookups) stop at an empty slot
        # after few probes, and each probe round is a pass of numpy operations
        bits = max(4, int(np.ceil(np.log2(max(4 * n, 2)))))
        self.bits = bits
        self.mask = (1 << bits) - 1
        self.slots = np.full(1 << bits, -1, dtype=np.int64)
        self.values = np.zeros(1 << bits, dtype=np.int64)
        pos = self._home(keys)
        pending = np.arange(n)
        while len(pending):
            p = pos[pending]
            free = self.slots[p] == -1
            cand, cp = pending[free], p[free]
            slot, first = np.unique(cp, return_index=True)
            won = cand[first]
            self.slots[slot] = keys[won]
            self.values[slot] = values[won]
            placed = np.zeros(n, dtype=bool)
            placed[won] = True
            pending = pending[~placed[pending]]
            pos[pending] = (pos[pending] + 1) & self.mask
        # the keys sorted, for the few lookups still unresolved after PROBES probes
        order = np.argsort(keys, kind="stable")
        self.sorted_keys = np.asarray(keys, dtype=np.int64)[order]
        self.sorted_values = np.asarray(values, dtype=np.int64)[order]

    def _home(self, keys: np.ndarray) -> np.ndarray:
        h = keys.astype(np.uint64) * _GOLDEN      # wraps modulo 2**64 (array ops do not warn)
        return (h >> np.uint64(64 - self.bits)).astype(np.int64)

    def get(self, keys: np.ndarray, default: np.ndarray) -> np.ndarray:
        """Values of ``keys`` (any shape); ``default`` (same shape) where a key is absent."""
        flat = keys.ravel()
        out = default.ravel().copy()
        pos = self._home(flat)
        idx = np.arange(len(flat))
        for _ in range(PROBES):
            s = self.slots[pos]
            hit = s == flat[idx]
            out[idx[hit]] = self.values[pos[hit]]
            more = ~hit & (s != -1)
            idx, pos = idx[more], (pos[more] + 1) & self.mask
            if not len(idx):
                return out.reshape(keys.shape)
        # long probe runs are rare but each round costs a pass of numpy calls: finish by binary search
        rest = flat[idx]
        at = np.minimum(np.searchsorted(self.sorted_keys, rest), max(len(self.sorted_keys) - 1, 0))
        if len(self.sorted_keys):
            found = self.sorted_keys[at] == rest
            out[idx[found]] = self.sorted_values[at[found]]
        return out.reshape(keys.shape)


class RowTable:
    """Block rows of (template, key) pairs for templates with key tables ``keys`` and key counts
    ``radix``."""

    def __init__(self, keys: Sequence[np.ndarray], radix: Sequence[int]):
        k = len(keys)
        sizes = np.array([len(t) + 1 for t in keys], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.num_rows = int(sizes.sum())
        self.dense = np.array([r <= DENSE_LIMIT for r in radix], dtype=bool)
        dense_size = np.array([r if d else 0 for r, d in zip(radix, self.dense)], dtype=np.int64)
        self.dense_offsets = np.concatenate([[0], np.cumsum(dense_size)[:-1]]).astype(np.int64)
        self.direct = np.repeat(self.offsets, dense_size).astype(np.int32)     # unknown keys -> row 0
        hashed_keys: List[np.ndarray] = []
        hashed_rows: List[np.ndarray] = []
        for j, t in enumerate(keys):
            rows = self.offsets[j] + 1 + np.arange(len(t), dtype=np.int64)
            if self.dense[j]:
                self.direct[self.dense_offsets[j] + t] = rows
            else:
                if len(t) and int(t[-1]) > (np.iinfo(np.int64).max - k) // k:
                    raise ValueError(f"template {j}: keys too large to hash")
                hashed_keys.append(t * k + j)
                hashed_rows.append(rows)
        self.k = k
        self._splits: Dict[Tuple[int, int, int], Tuple[np.ndarray, ...]] = {}
        self.hash = KeyHash(np.concatenate(hashed_keys) if hashed_keys else np.zeros(0, np.int64),
                            np.concatenate(hashed_rows) if hashed_rows else np.zeros(0, np.int64))

    def _split(self, templates: slice) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        key = templates.indices(self.k)
        sp = self._splits.get(key)
        if sp is None:
            js = np.arange(self.k)[templates]
            dense = np.flatnonzero(self.dense[js])
            hashed = np.flatnonzero(~self.dense[js])
            sp = (dense, self.dense_offsets[js[dense]], hashed, js[hashed], self.offsets[js[hashed]])
            self._splits[key] = sp
        return sp

    def rows(self, keys: np.ndarray, templates: slice) -> np.ndarray:
        """Block rows [n, m] for keys [n, m] of the templates in slice ``templates``."""
        dense, dense_off, hashed, hashed_js, unknown = self._split(templates)
        if not len(hashed):
            return self.direct[keys + dense_off]
        out = np.empty(keys.shape, dtype=np.int64)
        if len(dense):
            out[:, dense] = self.direct[keys[:, dense] + dense_off]
        kk = keys[:, hashed]
        kk *= self.k
        kk += hashed_js
        out[:, hashed] = self.hash.get(kk, np.broadcast_to(unknown, kk.shape))
        return out
