"""The accurate POS tagger's network (torch): word, word-vector, shape and affix embeddings through a
stacked BiLSTM, and one linear head per output (the joint ``UPOS<TAB>XPOS`` label, the whole FEATS string).

Shapes: ``words, vectors, shapes [batch, N]`` ids (0 padding), ``affixes [batch, N, N_AFFIXES]``
(0: none), ``chars [batch, N, L]`` (0: padding; only with ``char_dim`` > 0), ``mask [batch, N]``
true at the words; the heads give ``[batch, N, n_labels]`` scores.
The frozen ``vectors`` table holds pre-trained word vectors (absent, dimension 0, without them): the
trained ``words`` table knows the training words, the vectors also the words training never saw.
The numpy twin of this network, and the shapes of its saved arrays, are in
:mod:`nlpipe.models.bilstm_tagger_numpy`.
"""
from __future__ import annotations

from typing import Any, Dict

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from nlpipe.nn.features import SHAPES
from nlpipe.nn.parser_encoder import BiLSTMStack, dropout

IGNORE = -100   # a gold label id that no head's loss counts


class CharCNN(nn.Module):
    """A word's characters, embedded, through one convolution of ``width`` characters (zero padding),
    max-pooled over the word: ``chars [batch, N, L]`` ids (0 padding) -> ``[batch, N, filters]``."""

    def __init__(self, n_chars: int, dim: int, filters: int, width: int):
        super().__init__()
        self.embed = nn.Embedding(n_chars, dim, padding_idx=0)
        self.conv = nn.Conv1d(dim, filters, width, padding=width // 2)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        b, n, length = chars.shape
        c = chars.reshape(b * n, length)
        y = self.conv(self.embed(c).transpose(1, 2))                            # [b * n, filters, L]
        real = c > 0
        real[:, 0] = True                                                      # an empty (padding) word
        y = y.masked_fill(~real[:, None, :], float("-inf"))
        return y.max(-1).values.reshape(b, n, -1)


class BiLSTMTagger(nn.Module):
    """Embeddings concatenated, dropped (words also replaced by the unknown id 1 with probability
    ``word_dropout`` in training), a ``layers``-layer BiLSTM of ``hidden`` units a direction, and a
    linear head for each of ``sizes`` (output name -> number of labels; 0 or missing: no head)."""

    def __init__(self, hp: Dict[str, Any], n_words: int, n_vectors: int, n_affixes: int, sizes: Dict[str, int],
                 n_chars: int = 0):
        super().__init__()
        self.hp = hp
        self.words = nn.Embedding(n_words, hp["word_dim"], padding_idx=0)
        self.vectors = nn.Embedding(n_vectors, hp["vector_dim"], padding_idx=0) if hp["vector_dim"] else None
        if self.vectors is not None:
            self.vectors.weight.requires_grad_(False)
        self.shapes = nn.Embedding(len(SHAPES), hp["shape_dim"], padding_idx=0)
        self.affixes = nn.EmbeddingBag(n_affixes, hp["affix_dim"], mode="sum", padding_idx=0)
        self.chars = CharCNN(n_chars, hp["char_dim"], hp["char_filters"], hp["char_width"]) \
            if hp.get("char_dim") else None
        in_dim = hp["word_dim"] + hp["vector_dim"] + hp["shape_dim"] + hp["affix_dim"] + \
            (hp["char_filters"] if self.chars is not None else 0)
        self.lstm = BiLSTMStack(in_dim, hp["hidden"], hp["layers"], hp["dropout"], shared=True, rank=hp.get("rank", 0))
        self.heads = nn.ModuleDict({k: nn.Linear(2 * hp["hidden"], n) for k, n in sizes.items() if n})

    def set_vectors(self, matrix: np.ndarray) -> None:
        """Copy the pre-trained ``matrix [n_vectors, vector_dim]`` into the frozen table."""
        if self.vectors is not None:
            with torch.no_grad():
                self.vectors.weight.copy_(torch.as_tensor(matrix, dtype=torch.float32))

    def forward(self, t: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Scores ``[batch, N, n_labels]`` of every head from the id tensors ``t`` (see the module docstring)."""
        words, mask = t["words"], t["mask"]
        if self.training and self.hp["word_dropout"] > 0:
            drop = (torch.rand(words.shape, device=words.device) < self.hp["word_dropout"]) & (words > 1)
            words = words.masked_fill(drop, 1)
        b, n, k = t["affixes"].shape
        parts = [self.words(words)]
        if self.vectors is not None:
            parts.append(self.vectors(t["vectors"]))
        parts += [self.shapes(t["shapes"]), self.affixes(t["affixes"].reshape(b * n, k)).reshape(b, n, -1)]
        if self.chars is not None:
            parts.append(self.chars(t["chars"]))
        x = F.dropout(torch.cat(parts, -1), self.hp["dropout"], self.training)
        h = dropout(self.lstm(x, mask.sum(1)), self.hp["dropout"], self.training, shared=True)
        return {k: head(h) for k, head in self.heads.items()}

    def loss(self, scores: Dict[str, torch.Tensor], gold: Dict[str, torch.Tensor], mask: torch.Tensor) -> Any:
        """Sum over heads of the mean token cross-entropy (``gold[name] [batch, N]`` label ids,
        :data:`IGNORE` where a word's label is not one of the head's), with each head's part for the log."""
        parts = {k: F.cross_entropy(s[mask], gold[k][mask], ignore_index=IGNORE) for k, s in scores.items()}
        return sum(parts.values()), {k: float(v.detach()) for k, v in parts.items()}

