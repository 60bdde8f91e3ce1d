"""Token input layer: word vectors + word-shape embedding (+ affixes) + word dropout (torch).

The initial word vectors come from :mod:`nlpipe.train.vectors`."""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch
from torch import nn

from nlpipe.nn.features import SHAPES


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
