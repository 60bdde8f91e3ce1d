"""The Adam optimiser every neural stage trains with."""
from __future__ import annotations

from typing import Any, Iterable, Tuple


def adam(params: Iterable[Any], lr: float, betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> Any:
    """``torch.optim.Adam``, fused into one kernel per step where this torch has it for CPU (2.4 on).

    In a profile of biaffine training on CPU the default step took about 8% of each training step;
    the fused one does the same update in fewer passes over the weights. Older torch versions get
    the default implementation.
    """
    import torch

    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, betas=betas, eps=eps, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.Adam(params, lr=lr, betas=betas, eps=eps)
