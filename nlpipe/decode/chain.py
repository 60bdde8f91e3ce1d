"""Linear-chain dynamic programs over BIO tags: one forward algorithm written against a semiring.

:func:`forward` is the DP; under :class:`~nlpipe.decode.semiring.LogSemiring` it gives log Z
(:func:`log_partition`), under :class:`~nlpipe.decode.semiring.MaxSemiring` the best score, and with
back-pointers the best sequence (:func:`viterbi`). :func:`marginals` adds an explicit outside pass on
numpy and is the gradient of log Z on torch. The same code runs on numpy arrays (inference: NER, SRL)
and torch tensors (the CRF's training loss), batched and vectorised over the batch and the tag set
(the only loop is over time steps). Shapes: ``scores`` is ``[batch, time, tags]`` (emission
log-potentials), ``lengths`` is ``[batch]``, ``trans`` is ``[tags, tags]`` (from, to),
``start``/``end`` are ``[tags]``. Forbidden transitions are entries at the semiring's zero
(:func:`constrain` with :func:`nlpipe.tags.bio_constraints`; the tags module also holds the repair
that greedy decoding uses).
"""
from __future__ import annotations

import sys
from typing import Any, List, Optional, Sequence, Tuple, Type

import numpy as np

from nlpipe.decode.semiring import Array, LogSemiring, MaxSemiring
from nlpipe.tags import bio_constraints, repair_ids


def constrain(allowed: Array, allowed_start: Array, trans: Optional[Array] = None,
              start: Optional[Array] = None) -> Tuple[Array, Array]:
    """``(trans [K, K], start [K])`` with the entries not ``allowed`` set to the semiring zero.

    ``allowed``/``allowed_start`` come from :func:`bio_constraints`; ``trans``/``start`` default to
    numpy zeros (pure constraints: every allowed transition scores 0).
    """
    if trans is None:
        trans = np.zeros(np.shape(allowed))
    if start is None:
        start = np.zeros(np.shape(allowed_start))
    xp = _xp(trans)
    return xp.where(allowed, trans, LogSemiring.zero), xp.where(allowed_start, start, LogSemiring.zero)


def _xp(x: Array) -> Any:
    """The array namespace of ``x``: the torch module for a tensor (never imported here), else numpy."""
    torch = sys.modules.get("torch")
    return torch if torch is not None and isinstance(x, torch.Tensor) else np


def _arange(xp: Any, n: int, like: Array) -> Array:
    return np.arange(n) if xp is np else xp.arange(n, device=like.device)


def _inputs(scores: Array, lengths: Array, trans: Array, start: Optional[Array], end: Optional[Array]
            ) -> Tuple[Any, Array, Array, Array, Array, Array]:
    """``(xp, scores, lengths, trans, start, end)``: numpy inputs as float64, missing start/end as one."""
    xp = _xp(scores)
    k = scores.shape[2]
    if xp is np:
        scores = np.asarray(scores, dtype=np.float64)
        trans = np.asarray(trans, dtype=np.float64)
        start = np.zeros(k) if start is None else np.asarray(start, dtype=np.float64)
        end = np.zeros(k) if end is None else np.asarray(end, dtype=np.float64)
        return xp, scores, np.asarray(lengths), trans, start, end
    start = scores.new_zeros(k) if start is None else start
    end = scores.new_zeros(k) if end is None else end
    return xp, scores, xp.as_tensor(lengths, device=scores.device), trans, start, end


def _forward(sr: Type[LogSemiring], xp: Any, scores: Array, lengths: Array, trans: Array, start: Array,
             chart: bool = False, back: bool = False) -> Tuple[Array, List[Array], List[Array]]:
    """The forward algorithm: ``(alpha [batch, K] at each row's last position, the alphas of every step
    if ``chart``, the back-pointers ``[batch, K]`` of steps 1.. if ``back`` (Max only))``.

    Positions at or beyond a row's length carry alpha through unchanged (and point back to the same
    tag), so rows of different lengths run in one pass.
    """
    alpha = sr.mul(scores[:, 0], start)
    alphas, ptrs = [alpha], []
    ident = _arange(xp, trans.shape[1], scores)
    for t in range(1, scores.shape[1]):
        cand = sr.mul(alpha[:, :, None], trans)  # [batch, from, to]
        if back:
            summed, best = sr.argsum(cand, 1)
        else:
            summed = sr.sum(cand, 1)
        live = lengths[:, None] > t
        alpha = xp.where(live, sr.mul(summed, scores[:, t]), alpha)
        if back:
            ptrs.append(xp.where(live, best, ident))
        if chart:
            alphas.append(alpha)
    return alpha, alphas, ptrs


def forward(scores: Array, lengths: Array, trans: Array, start: Optional[Array] = None,
            end: Optional[Array] = None, semiring: Type[LogSemiring] = LogSemiring) -> Array:
    """The semiring sum over every tag sequence of each row, ``[batch]``: log Z under Log, the best
    sequence's score under Max."""
    xp, scores, lengths, trans, start, end = _inputs(scores, lengths, trans, start, end)
    if scores.shape[1] == 0:
        return scores.sum((1, 2))  # no positions: the empty product, the semirings' one (0)
    alpha, _, _ = _forward(semiring, xp, scores, lengths, trans, start)
    return semiring.sum(semiring.mul(alpha, end), 1)


def log_partition(scores: Array, lengths: Array, trans: Array, start: Optional[Array] = None,
                  end: Optional[Array] = None) -> Array:
    """log Z ``[batch]`` (:func:`forward` under the Log semiring)."""
    return forward(scores, lengths, trans, start, end, LogSemiring)


def viterbi(scores: Array, lengths: Array, trans: Array, start: Optional[Array] = None,
            end: Optional[Array] = None) -> Array:
    """Best tag sequence per row: ``[batch, time]`` int64 (padding positions are 0; numpy or torch as
    ``scores``), by the forward algorithm under the Max semiring with back-pointers. Ties go to the
    lowest tag index, at the last position and at each back-pointer."""
    xp, scores, lengths, trans, start, end = _inputs(scores, lengths, trans, start, end)
    b, n, _ = scores.shape
    if n == 0 or b == 0:
        return np.zeros((b, n), dtype=np.int64) if xp is np else scores.new_zeros((b, n), dtype=xp.int64)
    sr = MaxSemiring
    alpha, _, back = _forward(sr, xp, scores, lengths, trans, start, back=True)
    _, last = sr.argsum(sr.mul(alpha, end), 1)
    return _backtrace(xp, last, back, lengths, scores)


def _backtrace(xp: Any, last: Array, back: List[Array], lengths: Array, like: Array) -> Array:
    """The best sequences ``[batch, time]`` from the best last tags and the back-pointers of steps
    1.. (padding positions set to 0)."""
    rows = _arange(xp, last.shape[0], like)
    cols = [last]
    for ptr in reversed(back):
        last = ptr[rows, last]
        cols.append(last)
    out = xp.stack(cols[::-1], 1)
    out[_arange(xp, out.shape[1], like)[None, :] >= lengths[:, None]] = 0
    return out


class Constraints:
    """Pure BIO constraints (every allowed transition scores 0), kept sparse for :meth:`viterbi`.

    A tag that may follow every tag (``O``, ``B-X``) takes the best predecessor of all; each other tag
    (``I-X``) has a short list of allowed predecessors (``B-X``, ``I-X``). A step then costs
    ``O(batch * K * m)`` with ``m`` the longest list, where the dense DP costs ``O(batch * K * K)``.
    """

    def __init__(self, allowed: np.ndarray, allowed_start: np.ndarray):
        allowed = np.asarray(allowed, dtype=bool)
        k = allowed.shape[0]
        self.allowed, self.allowed_start = allowed, np.asarray(allowed_start, dtype=bool)
        self.restricted = np.flatnonzero(~allowed.all(0))              # [R] tags with a predecessor list
        lists = [np.flatnonzero(allowed[:, j]) for j in self.restricted]
        m = max([len(p) for p in lists], default=1) or 1
        self.preds = np.full((len(lists), m), k, dtype=np.int64)      # [R, m], padded with column K
        for r, p in enumerate(lists):
            self.preds[r, :len(p)] = p                                  # ascending: ties go low
        self.start = np.where(self.allowed_start, LogSemiring.one, LogSemiring.zero)

    def viterbi(self, scores: Array, lengths: Array) -> Array:
        """:func:`viterbi` under ``constrain(allowed, allowed_start)``, the same paths and ties, with
        no loop over rows or tags: ``scores [batch, time, K]`` (numpy or torch) -> ``[batch, time]``.

        The paths equal the dense DP's because every tag on the best path has a finite score, so its
        best predecessor is an allowed one (a forbidden one scores the semiring zero lower).
        """
        xp = _xp(scores)
        if xp is np:
            scores, lengths = np.asarray(scores, dtype=np.float64), np.asarray(lengths)
            start, preds, restricted = self.start, self.preds, self.restricted
        else:
            device = scores.device
            lengths = xp.as_tensor(lengths, device=device)
            start = xp.as_tensor(self.start, dtype=scores.dtype, device=device)
            preds, restricted = xp.as_tensor(self.preds, device=device), xp.as_tensor(self.restricted, device=device)
        b, n, k = scores.shape
        if n == 0 or b == 0:
            return np.zeros((b, n), dtype=np.int64) if xp is np else scores.new_zeros((b, n), dtype=xp.int64)
        ident = _arange(xp, k, scores)
        lists = _arange(xp, len(self.restricted), scores)[None, :]     # [1, R]
        pad = scores[:, 0, :1] * 0 - np.inf                             # [b, 1] the padding column
        alpha = scores[:, 0] + start
        back = []
        for t in range(1, n):
            ptr = alpha.argmax(1)[:, None] + ident[None, :] * 0         # [b, K] the best of all tags
            pick = _cat(xp, alpha, pad)[:, preds].argmax(2)             # [b, R] best allowed one
            ptr[:, restricted] = preds[lists, pick]
            live = lengths[:, None] > t
            alpha = xp.where(live, _take(xp, alpha, ptr) + scores[:, t], alpha)
            back.append(xp.where(live, ptr, ident))
        return _backtrace(xp, alpha.argmax(1), back, lengths, scores)


def _cat(xp: Any, a: Array, b: Array) -> Array:
    return np.concatenate([a, b], 1) if xp is np else xp.cat([a, b], 1)


def _take(xp: Any, a: Array, idx: Array) -> Array:
    return np.take_along_axis(a, idx, 1) if xp is np else a.gather(1, idx)


def marginals(scores: Array, lengths: Array, trans: Array, start: Optional[Array] = None,
              end: Optional[Array] = None) -> Tuple[Array, Array]:
    """Posterior tag marginals ``[batch, time, tags]`` (0 at padding) and log Z ``[batch]``.

    numpy: forward chart plus an explicit outside (backward) pass; torch: the gradient of log Z.
    """
    xp, scores, lengths, trans, start, end = _inputs(scores, lengths, trans, start, end)
    b, n, k = scores.shape
    if xp is not np:
        with xp.enable_grad():
            s = scores.detach().requires_grad_()
            log_z = log_partition(s, lengths, trans.detach(), start.detach(), end.detach())
            if n == 0:
                return scores.new_zeros((b, n, k)), log_z.detach()
            (grad,) = xp.autograd.grad(log_z.sum(), s)
        return grad, log_z.detach()
    if n == 0:
        return np.zeros((b, n, k)), np.zeros(b)
    sr = LogSemiring
    last, alphas, _ = _forward(sr, np, scores, lengths, trans, start, chart=True)
    alpha = np.stack(alphas, 1)
    beta = np.empty((b, n, k))
    # beta at each row's last real position is `end`; padding carries it back unchanged.
    beta[:, n - 1] = end
    for t in range(n - 2, -1, -1):
        new = sr.sum(sr.mul(trans[None], sr.mul(scores[:, t + 1], beta[:, t + 1])[:, None, :]), 2)
        beta[:, t] = np.where((lengths > t + 1)[:, None], new, beta[:, t + 1])
    log_z = sr.sum(sr.mul(last, end), 1)
    with np.errstate(invalid="ignore"):
        marg = np.exp(alpha + beta - log_z[:, None, None])
    marg = np.nan_to_num(marg)
    marg[np.arange(n)[None, :] >= lengths[:, None]] = 0.0
    return marg, log_z


class ConstrainedChain:
    """Learned chain potentials with the BIO constraints applied (what a CRF model decodes with)."""

    def __init__(self, labels: Sequence[str], trans: np.ndarray, start: np.ndarray, end: np.ndarray):
        allowed, allowed_start = bio_constraints(labels)
        self.trans, self.start = constrain(allowed, allowed_start, np.asarray(trans, dtype=np.float64),
                                           np.asarray(start, dtype=np.float64))
        self.end = np.asarray(end, dtype=np.float64)

    def viterbi(self, scores: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Best valid sequences ``[batch, time]``."""
        return viterbi(scores, lengths, self.trans, self.start, self.end)

    def marginals(self, scores: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Posterior marginals ``[batch, time, tags]``."""
        return marginals(scores, lengths, self.trans, self.start, self.end)[0]


def decode(scores: np.ndarray, lengths: np.ndarray, labels: Sequence[str],
           crf: Optional[ConstrainedChain] = None) -> np.ndarray:
    """Tag ids ``[batch, time]`` from scores: CRF Viterbi when ``crf`` is given, else greedy + repair."""
    if crf is not None:
        return crf.viterbi(scores, lengths)
    return repair_ids(np.asarray(scores).argmax(-1), lengths, labels)
