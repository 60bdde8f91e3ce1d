"""Semirings over torch log-potentials for the tree charts: ``zero``, ``one``, ``sum`` (a reduction), ``mul``.

``LogSemiring.sum`` is log-sum-exp (inside scores, log-partition); ``MaxSemiring.sum`` is max
(Viterbi). Argmax and marginals are both gradients of the chart's result with respect to the arc
scores (a max picks one index, so its gradient is the indicator of the best structure).
"""
from __future__ import annotations

import torch

# Large negative but finite: a chart cell built only from "zero" then still has a finite gradient.
NEG = -1e9


class LogSemiring:
    zero = NEG
    one = 0.0

    @staticmethod
    def sum(x: torch.Tensor, dim: int) -> torch.Tensor:
        return torch.logsumexp(x, dim)

    @staticmethod
    def mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


class MaxSemiring(LogSemiring):
    @staticmethod
    def sum(x: torch.Tensor, dim: int) -> torch.Tensor:
        return x.max(dim).values
