"""Distributional word clusters for tagger features: hierarchical k-means over word vectors.

Each granularity of :data:`SIZES` is a separate spherical k-means over the centred, unit-length
word vectors (several granularities let the model back off from fine to coarse classes). The table maps lower-cased words to one cluster id per level
and is stored as ``clusters.npz`` in the model directory (words as UTF-8 bytes, ids as uint16).
Building needs vectors (training time only); looking up needs nothing but numpy.
"""
from __future__ import annotations

from bisect import bisect_left
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

import numpy as np

from nlpipe.io.model_dir import read_arrays, write_arrays

SIZES = (64, 256, 1024)
CLUSTERS_FILE = "clusters.npz"


class Clusters:
    """Lower-cased word -> cluster id at each of the :data:`SIZES` granularities."""

    def __init__(self, words: Sequence[str], ids: np.ndarray, presorted: bool = False):
        ids = np.asarray(ids)
        if ids.shape != (len(words), len(SIZES)):
            raise ValueError(f"cluster ids {ids.shape}, expected {(len(words), len(SIZES))}")
        if len(ids) and (ids.min() < 0 or np.any(ids.max(axis=0) >= np.array(SIZES))):
            raise ValueError("cluster id out of range")
        # kept sorted so that a lookup is a binary search (no dictionary to build at load time);
        # saved tables are sorted already (``presorted``: trusted, a damaged order only loses hits)
        if presorted:
            self.words, self.ids = list(words), ids.astype(np.uint16)
        else:
            order = sorted(range(len(words)), key=words.__getitem__)
            self.words = [words[i] for i in order]
            self.ids = ids[order].astype(np.uint16) if len(order) else ids.astype(np.uint16)
            if any(a >= b for a, b in zip(self.words, self.words[1:])):
                raise ValueError("cluster table has repeated words")

    def _row(self, word: str) -> int:
        """The table row of ``word`` (lower-cased here), -1 when it is not in the table."""
        low = word.lower()
        i = bisect_left(self.words, low)
        return i if i < len(self.words) and self.words[i] == low else -1

    def lookup(self, word: str) -> Optional[List[int]]:
        """Cluster ids of ``word`` (lower-cased here) at every level, or None when not in the table."""
        i = self._row(word)
        return self.ids[i].tolist() if i >= 0 else None

    def ids_of(self, words: Sequence[str]) -> np.ndarray:
        """Cluster ids [len(words), len(SIZES)] (int64) of many words at once, as :meth:`lookup`
        gives them one by one; -1 in every column of a word not in the table."""
        at = np.fromiter(map(self._row, words), dtype=np.int64, count=len(words))
        out = self.ids[at].astype(np.int64) if len(self.words) else np.zeros((len(at), len(SIZES)), dtype=np.int64)
        out[at < 0] = -1
        return out

    def save(self, path: Path) -> None:
        blob = "\n".join(self.words).encode("utf-8")
        write_arrays(path, {"words": np.frombuffer(blob, dtype=np.uint8), "ids": self.ids})

    @classmethod
    def load(cls, path: Path) -> "Clusters":
        """Read a table written by :meth:`save` (ModelError for an unreadable file, ValueError or
        KeyError for wrong content)."""
        z = read_arrays(path)
        blob, ids = z["words"], z["ids"]
        if blob.dtype != np.uint8 or ids.dtype != np.uint16:
            raise ValueError("cluster table has wrong types")
        words = blob.tobytes().decode("utf-8").split("\n") if len(blob) else []
        return cls(words, ids, presorted=True)


def kmeans(x: np.ndarray, k: int, iters: int = 15, weights: Optional[np.ndarray] = None,
           seed: int = 0) -> np.ndarray:
    """Spherical k-means (cosine) of the rows of ``x``; returns the assignment of each row."""
    rng = np.random.default_rng(seed)
    n = len(x)
    k = min(k, n)
    w = np.ones(n, dtype=np.float32) if weights is None else weights.astype(np.float32)
    centres = x[rng.choice(n, size=k, replace=False)].copy()
    assign = np.zeros(n, dtype=np.int64)
    for _ in range(iters):
        assign = np.empty(n, dtype=np.int64)
        for s in range(0, n, 32768):   # bounded memory for the [chunk, k] similarity matrix
            assign[s:s + 32768] = (x[s:s + 32768] @ centres.T).argmax(axis=1)
        sums = np.zeros_like(centres)
        np.add.at(sums, assign, x * w[:, None])
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        empty = norms[:, 0] == 0
        if empty.any():   # re-seed empty clusters with random points
            sums[empty] = x[rng.choice(n, size=int(empty.sum()), replace=False)]
            norms[empty] = np.linalg.norm(sums[empty], axis=1, keepdims=True)
        centres = (sums / np.maximum(norms, 1e-12)).astype(np.float32)
    return assign


def build_clusters(words: Sequence[str], vectors: np.ndarray, extra: Iterable[str] = (), top: int = 100000,
                   seed: int = 0) -> Clusters:
    """Cluster the ``top`` first (most frequent) ``words`` plus any of ``extra`` (lower-cased) they hold."""
    index: Dict[str, int] = {}
    for i, w in enumerate(words):
        if w and "\n" not in w and w not in index:
            index[w] = i
    chosen = {w for w in words[:top] if w in index}
    chosen.update(w.lower() for w in extra if w.lower() in index)
    table = sorted(chosen, key=lambda w: index[w])
    x = np.asarray(vectors[[index[w] for w in table]], dtype=np.float32)
    x -= x.mean(axis=0)   # GloVe vectors share a common direction; without this cosine sees it first
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    ids = np.stack([kmeans(x, k, seed=seed + lvl) for lvl, k in enumerate(SIZES)], axis=1)
    return Clusters(table, ids)
