"""Maximum spanning arborescences (Chu-Liu-Edmonds) for non-projective dependency decoding (numpy).

Shapes: ``scores`` is ``[n + 1, n + 1]`` indexed ``scores[dep, head]``; position 0 is the artificial
root, row 0 is ignored. The result ``heads`` is ``[n + 1]`` with ``heads[0] == 0``.
Also the tree checks shared by every parser: :func:`is_tree` and the batched :func:`tree_mask` and
:func:`projective_mask`.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

NEG_INF = -np.inf


def _find_cycle(heads: np.ndarray) -> Optional[List[int]]:
    """Nodes of one cycle of the head graph (root 0 excluded), or ``None`` if there is none."""
    head = heads.tolist()                 # Python lists: this walk is all scalar steps
    state = [0] * len(head)               # 0 unvisited, 1 on the current path, 2 done
    state[0] = 2
    for start in range(1, len(head)):
        path = []
        v = start
        while state[v] == 0:
            state[v] = 1
            path.append(v)
            v = head[v]
        if state[v] == 1:  # came back to the current path: a cycle starting at v
            return path[path.index(v):]
        for u in path:
            state[u] = 2
    return None


def _cle(s: np.ndarray) -> np.ndarray:
    """Chu-Liu-Edmonds on ``s [N, N]`` (dep, head) with self-loops and row 0 already ``-inf``."""
    heads = s.argmax(1)
    heads[0] = 0
    cycle = _find_cycle(heads)
    if cycle is None:
        return heads
    in_cycle = np.zeros(len(s), dtype=bool)
    in_cycle[cycle] = True
    rest = np.flatnonzero(~in_cycle)  # includes the root 0, at index 0
    cyc = np.array(cycle)
    r = len(rest)
    t = np.full((r + 1, r + 1), NEG_INF)
    t[:r, :r] = s[np.ix_(rest, rest)]
    # outside dependents of the contracted node: best head inside the cycle
    out_arcs = s[np.ix_(rest, cyc)]
    best_head = out_arcs.argmax(1)
    t[:r, r] = out_arcs.max(1)
    # the contracted node's head: outside head h, breaking the cycle arc at the best dependent
    in_arcs = s[np.ix_(cyc, rest)] - s[cyc, heads[cyc]][:, None]
    best_dep = in_arcs.argmax(0)
    t[r, :r] = in_arcs.max(0)
    t[0, :] = NEG_INF
    sub = _cle(t)
    out = heads.copy()
    h = sub[1:r]
    out[rest[1:]] = np.where(h < r, rest[np.minimum(h, r - 1)], cyc[best_head[1:]])
    h = sub[r]
    out[cyc[best_dep[h]]] = rest[h]
    return out


def chu_liu_edmonds(scores: np.ndarray, single_root: bool = True) -> np.ndarray:
    """Highest-scoring dependency tree under ``scores [n + 1, n + 1]`` (dep, head): ``heads [n + 1]``.

    With ``single_root`` the root has exactly one dependent. That is exact: every root arc gets the
    same penalty, larger than any difference between two trees' scores, so the best tree has the
    fewest root arcs (one) and, among those, the highest score.
    """
    s = np.array(scores, dtype=np.float64)
    n = len(s)
    if n <= 1:
        return np.zeros(n, dtype=np.int64)
    if not np.isfinite(s[1:]).any(axis=1).all():
        raise ValueError("every word needs at least one finite head score")
    if single_root:
        finite = s[1:][np.isfinite(s[1:])]
        s[:, 0] -= 1.0 + n * (finite.max() - finite.min()) if finite.size else 1.0
    np.fill_diagonal(s, NEG_INF)
    s[0, :] = NEG_INF
    return _cle(s).astype(np.int64)


def is_tree(heads: np.ndarray) -> bool:
    """Whether ``heads [n + 1]`` (``heads[0]`` ignored) is a tree with exactly one root dependent."""
    heads = np.asarray(heads)
    n = len(heads) - 1
    if n == 0:
        return True
    if heads[1:].min() < 0 or heads[1:].max() > n or int((heads[1:] == 0).sum()) != 1:
        return False
    return bool(tree_mask(heads[None, :], np.array([n]))[0])


def tree_mask(heads: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[batch]`` bools: which rows of ``heads [batch, N]`` are trees with one root dependent.

    Heads must lie in ``0..N-1``; positions beyond each length are ignored. Acyclicity by pointer
    doubling: after ``log2 N`` squarings every word of an acyclic graph points at the root.
    """
    b, n = heads.shape
    pos = np.arange(n)[None, :]
    valid = (pos >= 1) & (pos <= lengths[:, None])
    h = np.where(valid, heads, 0)
    in_range = (h <= lengths[:, None]).all(1)
    h = np.where(in_range[:, None], h, 0)
    one_root = ((h == 0) & valid).sum(1) == 1
    rows = np.arange(b)[:, None]
    up = h.copy()
    for _ in range(max(1, int(np.ceil(np.log2(n + 1))) + 1)):
        up = up[rows, up]
    return in_range & one_root & (up == 0).all(1)


def projective_mask(heads: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``[batch]`` bools: which rows of ``heads [batch, N]`` have no two crossing arcs (padding ignored)."""
    n = heads.shape[1]
    pos = np.arange(n)[None, :]
    valid = (pos >= 1) & (pos <= lengths[:, None])
    left = np.minimum(heads, pos)
    right = np.maximum(heads, pos)
    li, ri = left[:, :, None], right[:, :, None]
    lj, rj = left[:, None, :], right[:, None, :]
    cross = (li < lj) & (lj < ri) & (ri < rj)
    both = valid[:, :, None] & valid[:, None, :]
    return ~(cross & both).any((1, 2))


def diagonal_root_trees(scores: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Highest-scoring trees (one root word) of a batch in the self-loop convention of LISA:
    ``scores [b, T, T]`` (dep, head) over the words, ``scores[b, d, d]`` the score of ``d`` being
    the root. Returns ``heads [b, T]``: 0-based parents, the root pointing to itself, padding 0.

    Rows whose per-word argmax is already such a tree keep it (Chu-Liu-Edmonds would return it too).
    """
    b, n = scores.shape[:2]
    pos = np.arange(n)
    argmax = scores.argmax(-1)
    rooted = np.zeros((b, n + 1), dtype=np.int64)      # HEAD numbers, root 0
    rooted[:, 1:] = np.where(argmax == pos, 0, argmax + 1)
    rooted[:, 1:][pos[None] >= lengths[:, None]] = 0
    ok = tree_mask(rooted, lengths)
    for i in np.flatnonzero(~ok):
        m = int(lengths[i])
        w = scores[i, :m, :m].astype(np.float64)
        s = np.full((m + 1, m + 1), NEG_INF)
        s[1:, 1:] = w
        s[1:, 0] = np.diagonal(w)
        rooted[i, :m + 1] = chu_liu_edmonds(s)
    heads = rooted[:, 1:] - 1
    heads = np.where(heads < 0, pos[None], heads)
    return np.where(pos[None] < lengths[:, None], heads, 0)
