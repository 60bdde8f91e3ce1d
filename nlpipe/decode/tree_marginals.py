"""Arc marginals of dependency trees with one root dependent: inside-outside (projective) and the
matrix-tree theorem (non-projective), both as gradients of log Z (torch autograd).

Shapes: ``scores [batch, N, N]`` log-potentials ``scores[b, dep, head]``, position 0 the root;
``mask [batch, N]`` true at the root and the words. Marginals ``[batch, N, N]``: each word's row sums
to 1 over its possible heads; the root's row and padding are 0.
"""
from __future__ import annotations

import torch

from nlpipe.decode.eisner import inside
from nlpipe.decode.semiring import LogSemiring, NEG


def projective_log_partition(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log Z over projective trees: ``[batch]``."""
    return inside(scores.clamp(min=NEG), mask, LogSemiring)


def nonprojective_log_partition(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log Z over all trees with one root dependent, by the matrix-tree theorem (Koo et al. 2007): ``[batch]``.

    With ``A[h, d] = exp(scores[d, h])`` over the words and ``L`` its Laplacian (in-degrees on the
    diagonal), Z is the determinant of ``L`` with its first row replaced by the root scores.
    Padding becomes identity rows, which leave the determinant unchanged.
    """
    s = scores.double()
    words = mask.clone()
    words[:, 0] = False
    n = mask.shape[1] - 1
    pair = words[:, 1:, None] & words[:, None, 1:]  # [batch, dep, head] over the words
    off = ~torch.eye(n, dtype=torch.bool, device=s.device)
    valid = pair & off
    # shift by a per-sentence constant (added back below) so exp() stays in range
    shift = s[:, 1:, :].masked_fill(~words[:, 1:, None] | ~mask[:, None, :], float("-inf")).amax((1, 2))
    shift = torch.where(torch.isfinite(shift), shift, torch.zeros_like(shift))
    a = torch.exp(s[:, 1:, 1:] - shift[:, None, None]).masked_fill(~valid, 0.0).transpose(1, 2)  # [h, d]
    root = torch.exp(s[:, 1:, 0] - shift[:, None]).masked_fill(~words[:, 1:], 0.0)  # [batch, d]
    lap = torch.diag_embed(a.sum(1)) - a
    lap = lap + torch.diag_embed((~words[:, 1:]).double())
    lap = torch.cat([root[:, None, :], lap[:, 1:]], 1)
    lengths = words.sum(1)
    return torch.linalg.slogdet(lap)[1] + lengths * shift


def marginals(scores: torch.Tensor, mask: torch.Tensor, projective: bool = False,
              differentiable: bool = False) -> torch.Tensor:
    """Arc marginals ``[batch, N, N]`` (``[b, dep, head]``), in the dtype of ``scores``.

    ``differentiable``: the marginals keep their graph back to ``scores`` (structured attention
    trains through them: a second derivative of log Z)."""
    with torch.enable_grad():
        s = (scores if differentiable else scores.detach()).double()
        if not s.requires_grad:
            s = s.requires_grad_()
        log_z = projective_log_partition(s, mask) if projective else nonprojective_log_partition(s, mask)
        (grad,) = torch.autograd.grad(log_z.sum(), s, create_graph=differentiable)
    return grad.to(scores.dtype)
