"""A hard tree inside a network (torch): the forward pass takes the highest-scoring tree, the
backward pass a surrogate gradient, straight-through or SPIGOT (Peng, Thomson & Smith 2018).

Shapes in LISA's convention: ``scores [batch, T, T]`` arc scores ``scores[b, dep, head]`` over the
words, the diagonal the score of being the root; ``mask [batch, T]`` true on words. The tree is a
one-hot ``[batch, T, T]`` (each word's row marks its head, the root word its own position).

SPIGOT's surrogate for the gradient of the scores is ``z - P(z - eta * dL/dz)``: the tree minus the
projection of a step against the downstream gradient. The projection here is the relaxed one the
issue allows: each word's row onto the probability simplex over its possible heads (the tree
constraints across words are dropped). Where the step stays inside, the surrogate is ``eta * dL/dz``.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import torch
import torch.nn.functional as F

from nlpipe.decode.mst import diagonal_root_trees


def project_simplex(v: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Euclidean projection of each row of ``v [..., K]`` onto the probability simplex over its
    ``valid [..., K]`` entries (0 elsewhere; a row with none stays 0). Sort-based (Duchi et al. 2008)."""
    k = v.shape[-1]
    u = v.masked_fill(~valid, float("-inf")).sort(-1, descending=True).values
    u = torch.where(torch.isfinite(u), u, torch.zeros_like(u))      # sorted valid first, then zeros
    excess = u.cumsum(-1) - 1                                         # sum of the j largest, minus 1
    j = torch.arange(1, k + 1, device=v.device, dtype=v.dtype)
    # the support is the prefix where u_j > excess_j / j (it is a prefix of the sorted values)
    keep = (u * j > excess) & (j <= valid.sum(-1, keepdim=True))
    rho = keep.sum(-1, keepdim=True).clamp(min=1)
    theta = excess.gather(-1, rho - 1) / rho.to(v.dtype)
    return (v - theta).clamp(min=0) * valid


def best_trees(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Heads ``[batch, T]`` of each sentence's highest-scoring tree (Chu-Liu-Edmonds, one root word)."""
    heads = diagonal_root_trees(scores.detach().cpu().double().numpy(), mask.sum(1).cpu().numpy())
    return torch.from_numpy(heads).to(scores.device)


class _HardTree(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, scores: torch.Tensor, mask: torch.Tensor, eta: Optional[float]) -> torch.Tensor:
        tree = F.one_hot(best_trees(scores, mask), scores.shape[-1]).to(scores.dtype) * mask[..., None]
        ctx.save_for_backward(tree, mask)
        ctx.eta = eta
        return tree

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None, None]:
        tree, mask = ctx.saved_tensors
        valid = mask[:, :, None] & mask[:, None, :]
        if ctx.eta is None:                                  # straight-through
            return grad * valid, None, None
        return tree - project_simplex(tree - ctx.eta * grad, valid), None, None


def hard_tree(scores: torch.Tensor, mask: torch.Tensor, eta: Optional[float] = None) -> torch.Tensor:
    """The best tree as one-hot attention ``[batch, T, T]``; its backward is straight-through
    (``eta`` None) or SPIGOT's surrogate with step size ``eta``."""
    return _HardTree.apply(scores.float(), mask, eta)   # float32 at least: the projection's step is small
