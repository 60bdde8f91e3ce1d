"""Bi-LSTM encoder (the baseline of the NER comparison), torch with the fused cuDNN/MKL LSTM kernels.

Shapes: inputs ``[batch, time, dim]``, ``mask [batch, time]``; output a one-element list of scores
``[batch, time, n_labels]`` (the same interface as :class:`nlpipe.nn.idcnn.IDCNN`).
"""
from __future__ import annotations

from typing import List

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class BiLSTM(nn.Module):
    def __init__(self, in_dim: int, hidden: int, n_labels: int, dropout: float = 0.5):
        super().__init__()
        self.lstm = nn.LSTM(in_dim, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, n_labels)
        self.dropout = dropout

    def forward(self, x: torch.Tensor, mask: torch.Tensor, drop: bool = True) -> List[torch.Tensor]:
        lengths = mask.sum(1).cpu()
        x = F.dropout(x, self.dropout, self.training and drop)
        packed = pack_padded_sequence(x, lengths.clamp(min=1), batch_first=True, enforce_sorted=False)
        h, _ = self.lstm(packed)
        h, _ = pad_packed_sequence(h, batch_first=True, total_length=x.shape[1])
        h = F.dropout(h, self.dropout, self.training and drop)
        return [self.out(h)]
