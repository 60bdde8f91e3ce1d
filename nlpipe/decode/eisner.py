"""Eisner's algorithm for projective dependency trees with exactly one root dependent (torch).

One inside chart serves every semiring: :func:`inside` under :class:`LogSemiring` is log Z, under
:class:`MaxSemiring` the best tree's score; :func:`eisner` (the argmax) is the gradient of the
latter, and the marginals (:mod:`nlpipe.decode.tree_marginals`) the gradient of the former.
Shapes: ``scores [batch, N, N]`` indexed ``scores[b, dep, head]`` with position 0 the root;
``mask [batch, N]`` true at the root and the words (a sentence of length n has ``N >= n + 1``).
"""
from __future__ import annotations

from typing import Tuple, Type

import torch

from nlpipe.decode.semiring import LogSemiring, MaxSemiring, NEG


def _stripe(x: torch.Tensor, n: int, w: int, offset: Tuple[int, int] = (0, 0), across: bool = True
            ) -> torch.Tensor:
    """``[n, w, B]`` view of chart ``x [N, N, B]``: ``x[o0 + i, o1 + i + k]`` (``across``) or
    ``x[o0 + i + k, o1 + i]``."""
    s0, s1, s2 = x.stride()
    strides = (s0 + s1, s1 if across else s0, s2)
    return x.as_strided((n, w, x.shape[2]), strides, x.storage_offset() + offset[0] * s0 + offset[1] * s1)


def inside(scores: torch.Tensor, mask: torch.Tensor, semiring: Type[LogSemiring] = LogSemiring
           ) -> torch.Tensor:
    """Semiring sum over all projective trees with one root dependent: ``[batch]``.

    ``C[i, j]`` is a complete span headed by ``i`` reaching ``j``; ``I[i, j]`` an incomplete one
    (arc ``i -> j`` made). Root arcs are left out of the chart and added at the end, once.
    """
    sr = semiring
    b, n_pos, _ = scores.shape
    lengths = mask.sum(1) - 1
    arcs = scores.permute(2, 1, 0)  # [head, dep, batch]
    root = arcs[0, 1:]  # [N - 1, batch]: root -> word r
    arcs = torch.cat([torch.full_like(arcs[:1], sr.zero), arcs[1:]], 0)
    c = scores.new_full((n_pos, n_pos, b), sr.zero)
    i_ = scores.new_full((n_pos, n_pos, b), sr.zero)
    c.diagonal().fill_(sr.one)
    for w in range(1, n_pos):
        n = n_pos - w
        split = sr.sum(sr.mul(_stripe(c, n, w), _stripe(c, n, w, (w, 1))), 1)  # [n, B]
        i_.diagonal(-w).copy_(sr.mul(split, arcs.diagonal(-w).T).T)
        i_.diagonal(w).copy_(sr.mul(split, arcs.diagonal(w).T).T)
        left = sr.sum(sr.mul(_stripe(c, n, w, (0, 0), False), _stripe(i_, n, w, (w, 0))), 1)
        c.diagonal(-w).copy_(left.T)
        right = sr.sum(sr.mul(_stripe(i_, n, w, (0, 1)), _stripe(c, n, w, (1, w), False)), 1)
        c.diagonal(w).copy_(right.T)
    left_of_r = c[1:, 1]  # word r heads 1..r
    right_of_r = c[1:].gather(1, lengths.view(1, 1, b).expand(n_pos - 1, 1, b)).squeeze(1)  # r..n
    r = torch.arange(1, n_pos, device=scores.device)[:, None]
    total = sr.mul(sr.mul(root, left_of_r), right_of_r).masked_fill(r > lengths[None, :], sr.zero)
    return sr.sum(total, 0)


def eisner(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Best projective tree with one root dependent: ``heads [batch, N]`` (0 at the root and padding)."""
    with torch.enable_grad():
        s = scores.detach().float().clamp(min=NEG).requires_grad_()
        best = inside(s, mask, MaxSemiring)
        (grad,) = torch.autograd.grad(best.sum(), s)
    heads = grad.argmax(-1)
    heads[:, 0] = 0
    return heads.masked_fill(~mask, 0)
