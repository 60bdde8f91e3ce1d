"""Semirings over log-potentials: ``zero``, ``one``, ``sum`` (a reduction over one axis), ``mul``.

``LogSemiring.sum`` is log-sum-exp (inside scores, log Z); ``MaxSemiring.sum`` is max (Viterbi), and
``MaxSemiring.argsum`` also gives the index of the max (back-pointers). Each works on a numpy array or
a torch tensor alike (the chain DP runs on both: numpy for inference, torch for training), and this
module never imports torch itself, so numpy-only stages start without it. The tree charts take
argmax and marginals as gradients of their result (torch); the numpy chain keeps back-pointers and an
explicit outside pass instead.
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

# The semirings' zero: large negative but finite, so that a cell built only from "zero" still has a
# finite gradient (torch) and no -inf - -inf arithmetic happens (numpy). Forbidden transitions
# (BIO constraints) and impossible tree arcs are set to it.
NEG = -1e9

Array = Any  # np.ndarray or torch.Tensor


def _np_logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


class LogSemiring:
    """Sum-product in log space: ``sum`` is log-sum-exp, ``mul`` is ``+``."""

    zero = NEG
    one = 0.0

    @staticmethod
    def sum(x: Array, dim: int) -> Array:
        if isinstance(x, np.ndarray):
            return _np_logsumexp(x, dim)
        return x.logsumexp(dim)

    @staticmethod
    def mul(x: Array, y: Array) -> Array:
        return x + y


class MaxSemiring(LogSemiring):
    """Max-product in log space: ``sum`` is max; ``argsum`` gives ``(max, argmax)``, first index on ties."""

    @staticmethod
    def sum(x: Array, dim: int) -> Array:
        if isinstance(x, np.ndarray):
            return x.max(dim)
        return x.max(dim).values

    @staticmethod
    def argsum(x: Array, dim: int) -> Tuple[Array, Array]:
        best = x.argmax(dim)
        if isinstance(x, np.ndarray):
            return np.take_along_axis(x, np.expand_dims(best, dim), dim).squeeze(dim), best
        return x.gather(dim, best.unsqueeze(dim)).squeeze(dim), best
