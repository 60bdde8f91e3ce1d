"""Arc marginals of non-projective dependency trees with one root dependent, by the matrix-tree
theorem, in numpy: the CPU inference twin of :func:`nlpipe.decode.tree_marginals.marginals` (torch).

Shapes as there: ``scores [batch, N, N]`` log-potentials ``scores[b, dep, head]``, position 0 the
root; ``mask [batch, N]`` true at the root and the words (at least one word per row).
"""
from __future__ import annotations

import numpy as np


def nonprojective_marginals(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Arc marginals ``[batch, N, N]`` (float64): each word's row sums to 1 over its heads.

    With ``A[h, d] = exp(scores[d, h])`` over the words, ``L`` its Laplacian and ``L'`` that matrix
    with its first row replaced by the root potentials ``r``, Z = det L' (Koo et al. 2007) and the
    marginals are the potentials times d log Z / d potential:
    ``mu[h, d] = A[h, d] ([d > 0] inv(L')[d, d] - [h > 0] inv(L')[d, h])``, ``mu[root, d] = r[d] inv(L')[d, 0]``
    (word indices 0-based here).
    """
    s = np.asarray(scores, dtype=np.float64)
    b, big_n = mask.shape
    n = big_n - 1
    words = mask[:, 1:]                                                   # [b, n]
    valid = words[:, :, None] & words[:, None, :] & ~np.eye(n, dtype=bool)  # [b, dep, head]
    arcs = np.where(valid, s[:, 1:, 1:], -np.inf)
    roots = np.where(words, s[:, 1:, 0], -np.inf)
    # one shift per dependent keeps exp() in range (every tree has one arc per dependent, so the
    # marginals do not depend on it) and keeps each dependent's best head at exp(0) = 1: no column
    # of the Laplacian underflows to zero, however far apart the words' scores are
    shift = np.maximum(arcs.max(2), roots)                                # [b, dep]
    shift = np.where(np.isfinite(shift), shift, 0.0)
    a = np.exp(arcs - shift[:, :, None]).transpose(0, 2, 1)              # [b, head, dep]
    r = np.exp(roots - shift)                                             # [b, dep]
    lap = -a
    idx = np.arange(n)
    lap[:, idx, idx] = a.sum(1) + ~words                                  # padding: identity rows
    lap[:, 0, :] = r
    inv = np.linalg.inv(lap)                                              # [b, n, n]
    not_first = (idx > 0).astype(np.float64)
    diag = np.diagonal(inv, axis1=1, axis2=2)                             # inv[d, d]
    mu = a * ((diag * not_first)[:, None, :] - inv.transpose(0, 2, 1) * not_first[None, :, None])
    out = np.zeros((b, big_n, big_n))
    out[:, 1:, 1:] = mu.transpose(0, 2, 1)
    out[:, 1:, 0] = r * inv[:, :, 0]
    return out
