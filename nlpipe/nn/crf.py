"""Linear-chain CRF over BIO tags (torch): batched log-likelihood and Viterbi.

log Z and decoding are the project's one chain DP (:mod:`nlpipe.decode.chain`) run on torch tensors:
differentiable for training, with back-pointers for decoding; :meth:`CRF.chain` gives the numpy
potentials that inference decodes (and takes marginals) with.
Shapes: ``emissions [batch, time, tags]``, ``tags [batch, time]``, ``mask [batch, time]`` (bool, true
on each row's first ``length`` positions).
"""
from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np
import torch
from torch import nn

from nlpipe.decode import chain


class CRF(nn.Module):
    """Transition, start and end scores; BIO-forbidden transitions are fixed at the semiring zero."""

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
        trans, start = chain.constrain(self.trans_ok, self.start_ok, self.trans, self.start)
        return trans, start, self.end

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``[batch]`` log Z (:func:`nlpipe.decode.chain.log_partition`, differentiable)."""
        return chain.log_partition(emissions, mask.sum(1), *self.potentials())

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
        """Mean negative log-likelihood per token of the gold sequences (in float32 at least)."""
        emissions = emissions.float()   # bf16 training: the sums over a sentence need float32
        total = (self.log_partition(emissions, mask) - self.score(emissions, tags, mask)).sum()
        return total / mask.sum().clamp(min=1)

    def decode(self, emissions: torch.Tensor, lengths: np.ndarray) -> np.ndarray:
        """Best valid BIO sequences ``[batch, time]`` via :func:`nlpipe.decode.chain.viterbi` (float64,
        on the emissions' device)."""
        trans, start, end = (p.detach().double() for p in self.potentials())
        return chain.viterbi(emissions.detach().double(), lengths, trans, start, end).cpu().numpy()

    def chain(self) -> chain.ConstrainedChain:
        """The current potentials as a numpy :class:`~nlpipe.decode.chain.ConstrainedChain`."""
        return chain.ConstrainedChain(self.labels, *(p.detach().cpu().numpy()
                                                     for p in (self.trans, self.start, self.end)))
