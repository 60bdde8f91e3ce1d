"""Linear-chain CRF over BIO tags (torch): batched log-likelihood, Viterbi and marginals.

The forward algorithm here is differentiable (training); decoding and forward-backward marginals go
through :mod:`nlpipe.decode.chain` (the project's one Viterbi), on the same batch in one call.
Shapes: ``emissions [batch, time, tags]``, ``tags [batch, time]``, ``mask [batch, time]`` (bool).
"""
from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np
import torch
from torch import nn

from nlpipe.decode import chain


class CRF(nn.Module):
    """Transition, start and end scores; BIO-forbidden transitions are fixed at a large negative value."""

    FORBID = -1e4

    def __init__(self, labels: Sequence[str]):
        super().__init__()
        k = len(labels)
        self.labels = list(labels)
        self.trans = nn.Parameter(torch.zeros(k, k))
        self.start = nn.Parameter(torch.zeros(k))
        self.end = nn.Parameter(torch.zeros(k))
        allowed, start_ok = chain.bio_constraints(labels)
        self.register_buffer("trans_ok", torch.as_tensor(allowed))
        self.register_buffer("start_ok", torch.as_tensor(start_ok))

    def potentials(self) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Constrained ``(trans [K, K], start [K], end [K])``."""
        trans = torch.where(self.trans_ok, self.trans, torch.full_like(self.trans, self.FORBID))
        start = torch.where(self.start_ok, self.start, torch.full_like(self.start, self.FORBID))
        return trans, start, self.end

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``[batch]`` log Z by the forward algorithm (vectorised over batch and tags)."""
        trans, start, end = self.potentials()
        alpha = emissions[:, 0] + start
        for t in range(1, emissions.shape[1]):
            new = torch.logsumexp(alpha.unsqueeze(2) + trans, dim=1) + emissions[:, t]
            alpha = torch.where(mask[:, t].unsqueeze(1), new, alpha)
        return torch.logsumexp(alpha + end, dim=1)

    def score(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``[batch]`` score of the gold tag sequences."""
        trans, start, end = self.potentials()
        maskf = mask.to(emissions.dtype)
        emit = emissions.gather(2, tags.unsqueeze(2)).squeeze(2)
        s = (emit * maskf).sum(1) + start[tags[:, 0]]
        pair = trans[tags[:, :-1], tags[:, 1:]] * maskf[:, 1:]
        s = s + pair.sum(1)
        last = tags.gather(1, (mask.long().sum(1) - 1).clamp(min=0).unsqueeze(1)).squeeze(1)
        return s + end[last]

    def nll(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood per token of the gold sequences."""
        total = (self.log_partition(emissions, mask) - self.score(emissions, tags, mask)).sum()
        return total / mask.sum().clamp(min=1)

    def decode(self, emissions: torch.Tensor, lengths: np.ndarray) -> np.ndarray:
        """Best valid BIO sequences ``[batch, time]`` via :func:`nlpipe.decode.chain.viterbi`."""
        return self.chain().viterbi(emissions.detach().float().cpu().numpy(), lengths)

    def chain(self) -> chain.ConstrainedChain:
        """The current potentials as a numpy :class:`~nlpipe.decode.chain.ConstrainedChain`."""
        return chain.ConstrainedChain(self.labels, *(p.detach().cpu().numpy()
                                                     for p in (self.trans, self.start, self.end)))
