"""Parser input features and encoder: words (GloVe-initialised) + shape + affixes + POS tags -> BiLSTM.

Position 0 of every sentence is the artificial root (word id :data:`ROOT_ID`, tag id :data:`ROOT_ID`).
Shapes: ``words, shapes, upos, xpos [batch, N]``, ``affixes [batch, N, n_affixes]`` (0 = none),
``mask [batch, N]`` (root and words true); output ``[batch, N, 2 * hidden]``.
The feature extraction lives, torch-free, in :mod:`nlpipe.nn.features` (:func:`~nlpipe.nn.features.sentence_features`).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from nlpipe.nn.embeddings import TokenEmbedding
from nlpipe.nn.features import ROOT_ID


def dropout(x: torch.Tensor, p: float, training: bool, shared: bool = False) -> torch.Tensor:
    """Dropout; with ``shared``, one mask per sequence of ``x [batch, time, dim]`` drops the same units
    at every time step (Dozat & Manning's recurrent dropout). It also draws ``time`` times fewer random
    numbers (drawing the masks took about 10% of a biaffine training step in a CPU profile)."""
    if not training or p <= 0:
        return x
    if not shared or x.dim() != 3:
        return F.dropout(x, p, True)
    return x * (x.new_empty(x.shape[0], 1, x.shape[2]).bernoulli_(1 - p) / (1 - p))


def reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each sequence of ``x [batch, time, dim]`` within its length (padding stays put)."""
    t = torch.arange(x.shape[1], device=x.device)[None, :]
    idx = torch.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)
    return x.gather(1, idx[..., None].expand_as(x))


class BiLSTMStack(nn.Module):
    """Stacked BiLSTM over padded batches without packing (packed sequences are slow on CPU).

    The forward direction is unaffected by padding at the end; the backward one runs forward over
    each sequence reversed within its length. Dropout between layers (one mask per sequence with
    ``shared``). With ``rank``, each layer after the first reads the one below through a projection
    to ``rank`` dimensions (``proj.<layer>``, no bias), shared by its two directions: fewer
    multiply-adds than the ``2 * hidden`` inputs' gates.
    """

    def __init__(self, in_dim: int, hidden: int, layers: int, dropout: float, shared: bool = False, rank: int = 0):
        super().__init__()
        dims = [in_dim] + [rank or 2 * hidden] * (layers - 1)
        self.fwd = nn.ModuleList(nn.LSTM(d, hidden, batch_first=True) for d in dims)
        self.bwd = nn.ModuleList(nn.LSTM(d, hidden, batch_first=True) for d in dims)
        self.proj = nn.ModuleDict({str(k): nn.Linear(2 * hidden, rank, bias=False) for k in range(1, layers)}) \
            if rank else None
        self.dropout = dropout
        self.shared = shared

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """``[batch, time, in_dim] -> [batch, time, 2 * hidden]``."""
        for k, (f, b) in enumerate(zip(self.fwd, self.bwd)):
            if k:
                x = dropout(x, self.dropout, self.training, self.shared)
                if self.proj is not None:
                    x = self.proj[str(k)](x)
            hf, _ = f(x)
            hb, _ = b(reverse_padded(x, lengths))
            x = torch.cat([hf, reverse_padded(hb, lengths)], -1)
        return x


class ParserEncoder(nn.Module):
    """Embeddings of words, shapes, affixes and tags, concatenated, through a multi-layer BiLSTM.

    ``shared_dropout`` uses one dropout mask per sentence inside and after the BiLSTM; the embeddings
    are always dropped word by word."""

    def __init__(self, n_words: int, n_affixes: int, n_upos: int, n_xpos: int, word_dim: int = 50,
                 shape_dim: int = 8, affix_dim: int = 50, tag_dim: int = 32, hidden: int = 200,
                 layers: int = 3, dropout: float = 0.33, word_dropout: float = 0.2,
                 tag_dropout: float = 0.2, shared_dropout: bool = False):
        super().__init__()
        self.tokens = TokenEmbedding(n_words, word_dim, shape_dim, word_dropout)
        self.affixes = nn.EmbeddingBag(n_affixes, affix_dim, mode="sum", padding_idx=0)
        self.upos = nn.Embedding(n_upos, tag_dim, padding_idx=0)
        self.xpos = nn.Embedding(n_xpos, tag_dim, padding_idx=0)
        in_dim = self.tokens.dim + affix_dim + 2 * tag_dim
        self.lstm = BiLSTMStack(in_dim, hidden, layers, dropout, shared_dropout)
        self.shared_dropout = shared_dropout
        self.dropout = dropout
        self.tag_dropout = tag_dropout
        self.out_dim = 2 * hidden

    def forward(self, words: torch.Tensor, shapes: torch.Tensor, affixes: torch.Tensor,
                upos: torch.Tensor, xpos: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``[batch, N]`` ids (``affixes [batch, N, k]``) -> ``[batch, N, 2 * hidden]``."""
        if self.training and self.tag_dropout > 0:
            # predicted tags are sometimes wrong: make the model not trust them blindly
            drop = (torch.rand(upos.shape, device=upos.device) < self.tag_dropout) & (upos > ROOT_ID)
            upos = upos.masked_fill(drop, 1)
            xpos = xpos.masked_fill(drop, 1)
        b, n, k = affixes.shape
        aff = self.affixes(affixes.reshape(b * n, k)).reshape(b, n, -1)
        x = torch.cat([self.tokens(words, shapes), aff, self.upos(upos), self.xpos(xpos)], dim=-1)
        x = F.dropout(x, self.dropout, self.training)
        h = self.lstm(x, mask.sum(1))
        return dropout(h, self.dropout, self.training, self.shared_dropout)
