"""Iterated dilated CNN encoder (Strubell et al. 2017; Strubell 2019 ch. 3), torch.

``i = D_1^(0) x``; a block is width-3 convolutions with dilations ``dilations`` (e.g. 1, 2, 4, then a
final 1), ReLU after each; the same block (shared weights) is applied ``n_blocks`` times and every
application is scored: ``h^(k) = W_o b^(k)``. Shapes: inputs ``[batch, time, dim]``, ``mask [batch, time]``,
outputs a list of ``n_blocks`` score tensors ``[batch, time, n_labels]``. Positions outside ``mask`` are
zeroed after every layer, so padding and neighbouring sequences never leak into a sequence.
"""
from __future__ import annotations

from typing import List, Sequence

import torch
import torch.nn.functional as F
from torch import nn


class IDCNN(nn.Module):
    def __init__(self, in_dim: int, width: int, n_labels: int, dilations: Sequence[int] = (1, 2, 4, 1),
                 n_blocks: int = 2, dropout_in: float = 0.5, dropout_block: float = 0.3):
        super().__init__()
        self.first = nn.Conv1d(in_dim, width, 3, padding=1)
        self.block = nn.ModuleList(nn.Conv1d(width, width, 3, dilation=d, padding=d) for d in dilations)
        self.out = nn.Linear(width, n_labels)
        self.dilations = list(dilations)
        self.n_blocks = n_blocks
        self.dropout_in = dropout_in
        self.dropout_block = dropout_block
        for conv in self.block:  # identity initialisation: centre tap = I, other taps 0
            with torch.no_grad():
                conv.weight.zero_()
                conv.weight[:, :, 1].copy_(torch.eye(width))
                conv.bias.zero_()

    def forward(self, x: torch.Tensor, mask: torch.Tensor, drop: bool = True) -> List[torch.Tensor]:
        m = mask.unsqueeze(1).to(x.dtype)                                 # [b, 1, t]
        h = F.dropout(x, self.dropout_in, self.training and drop).transpose(1, 2)
        h = F.relu(self.first(h)) * m
        scores = []
        for _ in range(self.n_blocks):
            for conv in self.block:
                h = F.relu(conv(h)) * m
            h = F.dropout(h, self.dropout_block, self.training and drop) * m
            scores.append(self.out(h.transpose(1, 2)))
        return scores

