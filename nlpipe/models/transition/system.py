"""Arc-standard transitions with SWAP (Nivre 2009), for many sentences advancing in lockstep.

Actions: SHIFT (0), SWAP (1), LEFT-ARC(l) (2 + l: s1 <- s0) and RIGHT-ARC(l) (2 + R + l: s1 -> s0)
for R dependency labels. SWAP moves s1 back to the buffer when it precedes s0 in the sentence, which
lets the system build non-projective trees. Legality keeps every result a tree with one root: the
artificial root sits at the stack bottom, takes exactly one dependent (labelled ``root``, and only
once the buffer is empty) and no other arc may carry that label.

All sentences of a batch share flat token arrays: index 0 is a NULL token (what an empty stack or
buffer slot, or a missing child, points at), then each sentence's root followed by its words. The
stack and the buffer are int arrays per sentence with three NULL slots below their bottom, so
s0..s2 and b0..b2 are plain fancy indexing.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

SHIFT, SWAP = 0, 1
PAD = 3                     # NULL slots below the bottom of every stack and buffer
MAX_SWAP_FACTOR = 4         # after this many SWAPs per word a sentence may no longer swap


def num_actions(num_labels: int) -> int:
    return 2 + 2 * num_labels


def projective_order(heads: Sequence[int]) -> List[int]:
    """Rank of every word (1-based heads; index 0 of the result is the root) in the in-order
    traversal of the tree: left dependents, the head, right dependents."""
    n = len(heads)
    kids: List[List[int]] = [[] for _ in range(n + 1)]
    for d, h in enumerate(heads, start=1):
        kids[h].append(d)
    rank = [0] * (n + 1)
    counter = 0
    stack: List[Tuple[int, bool]] = [(0, False)]
    while stack:                               # iterative in-order walk (trees can be deep)
        node, expanded = stack.pop()
        if expanded:
            rank[node] = counter
            counter += 1
            continue
        left = [k for k in kids[node] if k < node]
        right = [k for k in kids[node] if k > node]
        for k in reversed(right):
            stack.append((k, False))
        stack.append((node, True))
        for k in reversed(left):
            stack.append((k, False))
    return rank


class Configurations:
    """The parser states of a batch of sentences (lengths >= 1) and their partial trees."""

    def __init__(self, lengths: Sequence[int], num_labels: int, root_label: int):
        n = np.asarray(lengths, dtype=np.int64)
        if len(n) and n.min() < 1:
            raise ValueError("every sentence needs at least one word")
        B = len(n)
        self.lengths = n
        self.R = num_labels
        self.root_label = root_label
        self.base = 1 + np.concatenate([[0], np.cumsum(n + 1)[:-1]]).astype(np.int64)   # flat index of each root
        T = 1 + int((n + 1).sum())
        self.size = T
        sent = np.repeat(np.arange(B), n + 1)
        self.sentence_of = np.concatenate([[-1], sent]).astype(np.int64)
        self.ordinal = np.concatenate([[-1], np.arange(T - 1) - np.repeat(self.base - 1, n + 1)]).astype(np.int64)
        width = PAD + int(n.max() if B else 0) + 1
        self.stack = np.zeros((B, width), dtype=np.int64)
        self.stack[:, PAD] = self.base
        self.sp = np.full(B, PAD + 1, dtype=np.int64)
        self.buf = np.zeros((B, width), dtype=np.int64)
        rows = np.repeat(np.arange(B), n)
        i = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        self.buf[rows, PAD + i] = self.base[rows] + n[rows] - i       # b0 (the first word) on top
        self.bp = PAD + n.copy()
        self.swaps = np.zeros(B, dtype=np.int64)
        self.head = np.full(T, -1, dtype=np.int64)
        self.label = np.full(T, num_labels, dtype=np.int64)           # R: no label yet
        self.label[0] = num_labels + 1                               # R + 1: the NULL token
        # leftmost, second-leftmost, rightmost, second-rightmost dependent (0: none); rows of one
        # matrix so that features read all four of several heads with one gather
        self.kids = np.zeros((4, T), dtype=np.int64)
        self.lc1, self.lc2, self.rc1, self.rc2 = self.kids
        self.nl = np.zeros(T, dtype=np.int64)
        self.nr = np.zeros(T, dtype=np.int64)
        # action classes by kind, for the legality mask
        C = num_actions(num_labels)
        kind = np.zeros(C, dtype=np.int64)
        kind[SWAP] = 1
        kind[2:2 + num_labels] = 2
        kind[2 + num_labels:] = 3
        self._kind = kind
        self._is_root = np.zeros(C, dtype=bool)
        self._is_root[2 + root_label] = True
        self._is_root[2 + num_labels + root_label] = True
        # legal actions per legal_code: bit 0 SHIFT, bit 1 SWAP, bit 2 non-root arcs, bit 3 the root arc
        bits = np.arange(16)[:, None]
        self.legal_table = (((bits & 1) > 0) & (kind == 0)) | (((bits & 2) > 0) & (kind == 1)) | \
            (((bits & 4) > 0) & (kind >= 2) & ~self._is_root) | (((bits & 8) > 0) & (kind == 3) & self._is_root)

    # -- reading the state -----------------------------------------------------------------

    def active(self) -> np.ndarray:
        """Indices of the sentences not yet finished."""
        return np.flatnonzero((self.sp > PAD + 1) | (self.bp > PAD))

    def unfinished(self, c: np.ndarray) -> np.ndarray:
        """The configurations of ``c`` not yet finished (only the root on the stack, buffer empty)."""
        return c[(self.sp[c] > PAD + 1) | (self.bp[c] > PAD)]

    def stack_item(self, c: np.ndarray, i: int) -> np.ndarray:
        """Flat index of s_i (0 = NULL) for configurations ``c``."""
        return self.stack[c, self.sp[c] - 1 - i]

    def buffer_item(self, c: np.ndarray, i: int) -> np.ndarray:
        """Flat index of b_i (0 = NULL) for configurations ``c``."""
        return self.buf[c, self.bp[c] - 1 - i]

    def legal_code(self, c: np.ndarray) -> np.ndarray:
        """Per configuration of ``c``, which of SHIFT, SWAP, non-root arcs and the root arc it may
        take, as a 4-bit code: the row of :attr:`legal_table` (one gather instead of whole-matrix
        steps per round)."""
        sp = self.sp[c]
        ns = sp - PAD                    # stack size, root included
        nb = self.bp[c] - PAD
        s0, s1 = self.stack[c, sp - 1], self.stack[c, sp - 2]
        arcs = ns >= 3                   # both s0 and s1 are words
        code = (nb > 0).astype(np.int64)
        code |= (arcs & (self.ordinal[s1] < self.ordinal[s0]) &
                 (self.swaps[c] < MAX_SWAP_FACTOR * self.lengths[c])) << 1
        code |= arcs << 2
        code |= ((ns == 2) & (nb == 0)) << 3
        return code

    def legal(self, c: np.ndarray) -> np.ndarray:
        """Bool [len(c), num_actions]: which actions each configuration may take."""
        return self.legal_table[self.legal_code(c)]

    # -- changing it -------------------------------------------------------------------------

    def apply(self, c: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Apply one (legal) action per configuration in ``c``; returns the words (flat indices) that
        got their head."""
        R = self.R
        sp, bp = self.sp[c], self.bp[c]
        s0, s1 = self.stack[c, sp - 1], self.stack[c, sp - 2]
        shift = actions == SHIFT
        if shift.any():
            cs = c[shift]
            self.stack[cs, self.sp[cs]] = self.buf[cs, self.bp[cs] - 1]
            self.sp[cs] += 1
            self.bp[cs] -= 1
        swap = actions == SWAP
        if swap.any():
            cs = c[swap]
            self.buf[cs, self.bp[cs]] = s1[swap]
            self.bp[cs] += 1
            self.stack[cs, self.sp[cs] - 2] = s0[swap]
            self.sp[cs] -= 1
            self.swaps[cs] += 1
        left = (actions >= 2) & (actions < 2 + R)
        if left.any():
            cs = c[left]
            self._attach(s0[left], s1[left], actions[left] - 2)
            self.stack[cs, self.sp[cs] - 2] = s0[left]
            self.sp[cs] -= 1
        right = actions >= 2 + R
        if right.any():
            cs = c[right]
            self._attach(s1[right], s0[right], actions[right] - 2 - R)
            self.sp[cs] -= 1
        return np.concatenate([s1[left], s0[right]])

    def _attach(self, h: np.ndarray, d: np.ndarray, labels: np.ndarray) -> None:
        # one arc per configuration, so the heads in ``h`` are distinct and plain assignment is safe
        self.head[d] = h
        self.label[d] = labels
        o = self.ordinal
        left = o[d] < o[h]
        hl, dl = h[left], d[left]
        self.nl[hl] += 1
        l1 = self.lc1[hl]
        new1 = (l1 == 0) | (o[dl] < o[l1])
        self.lc2[hl[new1]] = l1[new1]
        self.lc1[hl[new1]] = dl[new1]
        l2 = self.lc2[hl]
        new2 = ~new1 & ((l2 == 0) | (o[dl] < o[l2]))
        self.lc2[hl[new2]] = dl[new2]
        hr, dr = h[~left], d[~left]
        self.nr[hr] += 1
        r1 = self.rc1[hr]
        new1 = (r1 == 0) | (o[dr] > o[r1])
        self.rc2[hr[new1]] = r1[new1]
        self.rc1[hr[new1]] = dr[new1]
        r2 = self.rc2[hr]
        new2 = ~new1 & ((r2 == 0) | (o[dr] > o[r2]))
        self.rc2[hr[new2]] = dr[new2]

    # -- results -------------------------------------------------------------------------------

    def trees(self) -> List[Tuple[List[int], List[int]]]:
        """(heads as word numbers, label ids) per sentence."""
        out = []
        heads = np.where(self.head > 0, self.ordinal[np.maximum(self.head, 0)], -1)
        for b, (base, n) in enumerate(zip(self.base.tolist(), self.lengths.tolist())):
            out.append((heads[base + 1:base + 1 + n].tolist(), self.label[base + 1:base + 1 + n].tolist()))
        return out


class Oracle:
    """Oracle for arc-standard with eager SWAP: LEFT or RIGHT when the dependent has all its
    dependents, SWAP when s0 precedes s1 in the projective order, else SHIFT.

    On the gold path this is the static oracle. It also answers in configurations that earlier
    wrong actions reached (training with exploration), aiming at the best tree still reachable:
    each word keeps a *target* head, its gold head while that word is still unattached; a word whose
    target got attached (so can take no more dependents) aims at that word's own target instead, its
    nearest gold ancestor still there. A word is ready to attach once no unattached word aims at it.
    Call :meth:`attached` after every step so that the targets follow. Where the rule picks an
    action the configuration may not take, :meth:`actions` with ``legal`` picks the legal action
    that loses the fewest target arcs. Off the gold path this is an approximation: a word shifted
    too early is not moved back with SWAPs, so the oracle then loses what arc-standard without SWAP
    would lose.
    """

    def __init__(self, cfg: Configurations, heads: Sequence[Sequence[int]], labels: Sequence[Sequence[int]]):
        T = cfg.size
        self.cfg = cfg
        self.target = np.zeros(T, dtype=np.int64)       # 0 (NULL) for NULL and the roots
        self.glabel = np.zeros(T, dtype=np.int64)
        self.proj = np.zeros(T, dtype=np.int64)
        for b, (h, l) in enumerate(zip(heads, labels)):
            base = int(cfg.base[b])
            n = len(h)
            idx = np.arange(base + 1, base + 1 + n)
            self.target[idx] = base + np.asarray(h, dtype=np.int64)
            self.glabel[idx] = l
            self.proj[base:base + n + 1] = projective_order(h)
        self.waiting = np.bincount(self.target, minlength=T)    # unattached words aiming at each word
        self.waiting[0] = 0
        self._gone = np.zeros(T, dtype=bool)

    def actions(self, c: np.ndarray, legal: Optional[np.ndarray] = None) -> np.ndarray:
        """The oracle action of each configuration in ``c``; with ``legal`` (:meth:`Configurations.legal`
        of ``c``) every answer is legal."""
        cfg, R = self.cfg, self.cfg.R
        ns = cfg.sp[c] - PAD
        s0, s1 = cfg.stack_item(c, 0), cfg.stack_item(c, 1)
        target, waiting = self.target, self.waiting
        out = np.full(len(c), SHIFT, dtype=np.int64)
        swap = (ns >= 3) & (self.proj[s0] < self.proj[s1])
        out[swap] = SWAP
        right = (ns >= 2) & (target[s0] == s1) & (waiting[s0] == 0)
        out[right] = 2 + R + self.glabel[s0[right]]
        left = (ns >= 3) & (target[s1] == s0) & (waiting[s1] == 0)
        out[left] = 2 + self.glabel[s1[left]]
        if legal is not None:
            bad = np.flatnonzero(~legal[np.arange(len(c)), out])
            if len(bad):
                out[bad] = self._repair(s0[bad], s1[bad], legal[bad])
        return out

    def _repair(self, s0: np.ndarray, s1: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Legal actions for configurations whose rule action is illegal: SHIFT when it may, else the
        arc that loses the fewest target arcs (with the dependent's gold label where that is legal),
        else the first legal action."""
        R = self.cfg.R
        target, waiting = self.target, self.waiting
        rows = np.arange(len(s0))
        out = legal.argmax(axis=1)
        arcs = []
        for base, dep, head in ((2, s1, s0), (2 + R, s0, s1)):
            cost = (target[dep] != head).astype(np.int64) + waiting[dep]
            a = base + self.glabel[dep]
            ok = legal[rows, a]
            # the gold label may be ruled out (root vs. not root): any legal label of that direction
            block = legal[:, base:base + R]
            a = np.where(ok, a, base + block.argmax(axis=1))
            arcs.append((np.where(block.any(axis=1), cost, np.iinfo(np.int64).max), a))
        (cl, al), (cr, ar) = arcs
        has_arc = np.minimum(cl, cr) < np.iinfo(np.int64).max
        out[has_arc] = np.where(cl <= cr, al, ar)[has_arc]
        shift = legal[:, SHIFT]
        out[shift] = SHIFT
        return out

    def attached(self, deps: np.ndarray) -> None:
        """Update the targets after arcs gave the (flat) words ``deps`` their heads."""
        if not len(deps):
            return
        target, waiting, gone = self.target, self.waiting, self._gone
        t = target[deps]
        np.subtract.at(waiting, t, 1)
        orphans = np.flatnonzero(waiting[deps] > 0)
        if len(orphans):
            # words that aimed at a word now attached aim at that word's own target
            gone[deps[orphans]] = True
            moved = np.flatnonzero(gone[target] & (self.cfg.head == -1))
            gone[deps[orphans]] = False
            target[moved] = target[target[moved]]
            np.add.at(waiting, target[moved], 1)
            waiting[deps[orphans]] = 0
