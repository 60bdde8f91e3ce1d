"""Linear-chain decoding over BIO tags: constraint masks, repair, Viterbi and forward-backward.

The one Viterbi of the project (NER, later SRL). Everything is batched and vectorised over the batch
and the tag set (numpy; the only loop is over time steps), so it runs the same way for one sentence or
thousands. Shapes: ``scores`` is ``[batch, time, tags]`` (emission log-potentials), ``lengths`` is
``[batch]``, ``trans`` is ``[tags, tags]`` (from, to), ``start``/``end`` are ``[tags]``.
Forbidden transitions are ``-inf`` entries of ``trans``/``start`` (see :func:`bio_constraints`).
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

NEG_INF = -np.inf


def split_tag(tag: str) -> Tuple[str, str]:
    """``"B-PER" -> ("B", "PER")``, ``"O" -> ("O", "")``."""
    if tag == "O" or len(tag) < 2 or tag[1] != "-":
        return "O", ""
    return tag[0], tag[2:]


def bio_constraints(labels: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """Allowed transitions of BIO: ``(allowed [K, K] from->to, allowed_start [K])``.

    ``I-X`` may follow only ``B-X`` or ``I-X`` and may not start a sequence; everything else is free.
    """
    parts = [split_tag(t) for t in labels]
    k = len(labels)
    allowed = np.ones((k, k), dtype=bool)
    start = np.ones(k, dtype=bool)
    for j, (pj, tj) in enumerate(parts):
        if pj != "I":
            continue
        start[j] = False
        for i, (pi, ti) in enumerate(parts):
            allowed[i, j] = pi in ("B", "I") and ti == tj
    return allowed, start


def constraint_penalties(labels: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """The BIO masks as additive log-potentials: 0 where allowed, ``-inf`` where not."""
    allowed, start = bio_constraints(labels)
    return np.where(allowed, 0.0, NEG_INF), np.where(start, 0.0, NEG_INF)


def repair_table(labels: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """``(allowed [K, K], to_begin [K])``: for an ``I-X`` tag, the index of ``B-X`` (else itself)."""
    allowed, start = bio_constraints(labels)
    index = {t: i for i, t in enumerate(labels)}
    to_begin = np.arange(len(labels))
    for j, t in enumerate(labels):
        p, typ = split_tag(t)
        if p == "I" and f"B-{typ}" in index:
            to_begin[j] = index[f"B-{typ}"]
    # Treat "start of sequence" as a virtual previous tag: row K of the extended table.
    allowed = np.vstack([allowed, start[None, :]])
    return allowed, to_begin


def repair_bio(tags: np.ndarray, lengths: np.ndarray, labels: Sequence[str]) -> np.ndarray:
    """Make greedy tag ids valid BIO: an ``I-X`` that may not follow its predecessor becomes ``B-X``.

    Vectorised: repairing changes only the B/I prefix, never the type, so each position's fate depends
    on its predecessor's original type alone. ``tags`` is ``[batch, time]``; padding is left alone.
    """
    allowed, to_begin = repair_table(labels)
    k = len(labels)
    tags = np.asarray(tags)
    prev = np.empty_like(tags)
    prev[:, 0] = k
    prev[:, 1:] = tags[:, :-1]
    bad = ~allowed[prev, tags]
    out = np.where(bad, to_begin[tags], tags)
    # to_begin of B/I/O tags of the same type keeps the type, so a repaired B-X after I-Y stays legal.
    return out


def is_valid_bio(tags: Sequence[str]) -> bool:
    """True when no ``I-X`` starts a sequence or follows anything but ``B-X``/``I-X``."""
    prev_p, prev_t = "O", ""
    for tag in tags:
        p, t = split_tag(tag)
        if p == "I" and not (prev_p in ("B", "I") and prev_t == t):
            return False
        prev_p, prev_t = p, t
    return True


def _step_mask(lengths: np.ndarray, t: int) -> np.ndarray:
    return (np.asarray(lengths) > t)[:, None]


def viterbi(scores: np.ndarray, lengths: np.ndarray, trans: np.ndarray,
            start: Optional[np.ndarray] = None, end: Optional[np.ndarray] = None) -> np.ndarray:
    """Best tag sequence per batch row: ``[batch, time]`` int64 (padding positions are 0).

    Positions at or beyond a row's length carry the state through unchanged, so rows of different
    lengths are decoded in one pass.
    """
    scores = np.asarray(scores, dtype=np.float64)
    b, n, k = scores.shape
    out = np.zeros((b, n), dtype=np.int64)
    if n == 0 or b == 0:
        return out
    lengths = np.asarray(lengths)
    start = np.zeros(k) if start is None else start
    end = np.zeros(k) if end is None else end
    alpha = scores[:, 0] + start
    back = np.empty((b, n, k), dtype=np.int64)
    back[:, 0] = 0
    ident = np.arange(k)
    for t in range(1, n):
        cand = alpha[:, :, None] + trans[None]           # [b, from, to]
        best = cand.argmax(axis=1)                          # [b, to]
        new = np.take_along_axis(cand, best[:, None, :], axis=1)[:, 0] + scores[:, t]
        live = _step_mask(lengths, t)
        alpha = np.where(live, new, alpha)
        back[:, t] = np.where(live, best, ident)
    last = (alpha + end).argmax(axis=1)
    rows = np.arange(b)
    for t in range(n - 1, -1, -1):
        out[:, t] = last
        last = back[rows, t, last]
    out[np.arange(n)[None, :] >= lengths[:, None]] = 0
    return out


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def forward_backward(scores: np.ndarray, lengths: np.ndarray, trans: np.ndarray,
                     start: Optional[np.ndarray] = None,
                     end: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Posterior tag marginals ``[batch, time, tags]`` and log partitions ``[batch]``."""
    scores = np.asarray(scores, dtype=np.float64)
    b, n, k = scores.shape
    lengths = np.asarray(lengths)
    start = np.zeros(k) if start is None else start
    end = np.zeros(k) if end is None else end
    alpha = np.empty((b, n, k))
    alpha[:, 0] = scores[:, 0] + start
    for t in range(1, n):
        new = _logsumexp(alpha[:, t - 1, :, None] + trans[None], axis=1) + scores[:, t]
        alpha[:, t] = np.where(_step_mask(lengths, t), new, alpha[:, t - 1])
    beta = np.empty((b, n, k))
    # beta at each row's last real position is `end`; padding carries it back unchanged.
    beta[:, n - 1] = end
    for t in range(n - 2, -1, -1):
        new = _logsumexp(trans[None] + (scores[:, t + 1] + beta[:, t + 1])[:, None, :], axis=2)
        beta[:, t] = np.where(_step_mask(lengths, t + 1), new, beta[:, t + 1])
    log_z = _logsumexp(alpha[:, n - 1] + end, axis=1) if n else np.zeros(b)
    with np.errstate(invalid="ignore"):
        marg = np.exp(alpha + beta - log_z[:, None, None])
    marg = np.nan_to_num(marg)
    marg[np.arange(n)[None, :] >= lengths[:, None]] = 0.0
    return marg, log_z


class ConstrainedChain:
    """Learned chain potentials with the BIO constraints applied (what a CRF model decodes with)."""

    def __init__(self, labels: Sequence[str], trans: np.ndarray, start: np.ndarray, end: np.ndarray):
        pen_t, pen_s = constraint_penalties(labels)
        self.trans = np.asarray(trans, dtype=np.float64) + pen_t
        self.start = np.asarray(start, dtype=np.float64) + pen_s
        self.end = np.asarray(end, dtype=np.float64)

    def viterbi(self, scores: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Best valid sequences ``[batch, time]``."""
        return viterbi(scores, lengths, self.trans, self.start, self.end)

    def marginals(self, scores: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Posterior marginals ``[batch, time, tags]``."""
        return forward_backward(scores, lengths, self.trans, self.start, self.end)[0]


def decode(scores: np.ndarray, lengths: np.ndarray, labels: Sequence[str],
           crf: Optional[ConstrainedChain] = None) -> np.ndarray:
    """Tag ids ``[batch, time]`` from scores: CRF Viterbi when ``crf`` is given, else greedy + repair."""
    if crf is not None:
        return crf.viterbi(scores, lengths)
    return repair_bio(np.asarray(scores).argmax(-1), lengths, labels)
