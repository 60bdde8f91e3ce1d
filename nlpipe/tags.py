"""BIO, IOB1 and BIOES tags: split, spans, validity, the one repair, conversions, scheme detection.

Conventions, used everywhere in nlpipe:

- A tag is ``O`` or ``P-LABEL``: a prefix ``P`` in ``B I E S`` and a non-empty label
  (``B-PER``, ``I-ARGM-TMP``, ``S-LOC``). Only the first ``-`` separates, so labels may hold more.
- A span is ``(start, end, label)`` with ``end`` exclusive, like a Python slice: the span covers
  ``tags[start:end]``; a one-word span at position ``i`` is ``(i, i + 1, label)``.
- Tags are read into spans by conlleval's rules whatever the scheme: ``B-``/``S-`` start a span,
  ``E-``/``S-`` end one, an ``I-`` or ``E-`` that does not continue a span of its label starts one
  (so ``I-PER`` after ``O`` is a span of its own). IOB1, BIO and BIOES, valid or not, all decode.
- Models write BIO (``B-X`` starts every span). The repair makes a BIO sequence valid by turning
  each ``I-X`` that starts a span (at the beginning, after ``O`` or after another label) into
  ``B-X``; it keeps the spans and changes nothing else.

:func:`repair_ids` is the repair on tag ids (numpy, a batch at a time) for decoders; it follows the
same rule (:func:`follows`) through :func:`repair_table`.
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np

Span = Tuple[int, int, str]  # (start, end exclusive, label)
PREFIXES = "BIES"
SCHEMES = ("bio", "iob1", "bioes")


def split_tag(tag: str) -> Tuple[str, str]:
    """``"B-PER"`` -> ``("B", "PER")``, ``"O"`` -> ``("O", "")``; a ``ValueError`` for other shapes."""
    if tag == "O":
        return "O", ""
    prefix, dash, label = tag.partition("-")
    if not dash or len(prefix) != 1 or prefix not in PREFIXES or not label:
        raise ValueError(f"'{tag}' is not a tag (O, or B-/I-/E-/S- followed by a label)")
    return prefix, label


def label_order(tag: str) -> Tuple[str, str]:
    """Sort key of a label set: by type, then prefix (``B-LOC, I-LOC, B-ORG, ...``)."""
    prefix, label = split_tag(tag)
    return label, prefix


def is_tag(tag: str, prefixes: str = PREFIXES) -> bool:
    """True for ``O`` or ``P-LABEL`` with ``P`` in ``prefixes`` and a non-empty label."""
    if tag == "O":
        return True
    return len(tag) > 2 and tag[1] == "-" and tag[0] in prefixes


# --------------------------------------------------------------------------------------------
# Spans (conlleval's rules)

def _ends(prev: str, prefix: str, prev_label: str, label: str) -> bool:
    # conlleval's endOfChunk, with S (single) ending like E
    return (prev in ("E", "S") or (prev in ("B", "I") and prefix in ("B", "S", "O"))
            or (prev != "O" and prev_label != label))


def _starts(prev: str, prefix: str, prev_label: str, label: str) -> bool:
    # conlleval's startOfChunk, with S (single) starting like B
    return (prefix in ("B", "S") or (prefix in ("I", "E") and prev in ("O", "E", "S"))
            or (prefix != "O" and prev_label != label))


def spans(tags: Sequence[str]) -> List[Span]:
    """The spans ``(start, end exclusive, label)`` of one sequence, in order (any scheme)."""
    out: List[Span] = []
    prev, prev_label = "O", ""
    start = -1
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, label = split_tag(tag)
        if start >= 0 and _ends(prev, prefix, prev_label, label):
            out.append((start, i, prev_label))
            start = -1
        if _starts(prev, prefix, prev_label, label):
            start = i
        prev, prev_label = prefix, label
    return out


def spans_to_bio(spans_: Iterable[Span], n: int) -> List[str]:
    """BIO tags of length ``n`` for non-overlapping spans."""
    tags = ["O"] * n
    for s, e, label in spans_:
        tags[s] = "B-" + label
        for i in range(s + 1, e):
            tags[i] = "I-" + label
    return tags


def spans_to_bioes(spans_: Iterable[Span], n: int) -> List[str]:
    """BIOES tags of length ``n`` for non-overlapping spans."""
    tags = ["O"] * n
    for s, e, label in spans_:
        if e - s == 1:
            tags[s] = "S-" + label
            continue
        tags[s] = "B-" + label
        for i in range(s + 1, e - 1):
            tags[i] = "I-" + label
        tags[e - 1] = "E-" + label
    return tags


# --------------------------------------------------------------------------------------------
# Conversions and schemes

def to_bio(tags: Sequence[str]) -> List[str]:
    """BIO encoding of the spans of ``tags`` in any scheme: IOB1 -> BIO, BIOES -> BIO (and the
    repair of an invalid BIO sequence)."""
    return spans_to_bio(spans(tags), len(tags))


def to_bioes(tags: Sequence[str]) -> List[str]:
    """BIOES encoding of the spans of ``tags`` in any scheme (BIO -> BIOES, IOB1 -> BIOES)."""
    return spans_to_bioes(spans(tags), len(tags))


def detect_scheme(tag_seqs: Iterable[Sequence[str]]) -> str:
    """``bioes`` if ``E-``/``S-`` occur, ``iob1`` if a span starts with ``I-``, else ``bio``."""
    i_start = False
    for tags in tag_seqs:
        prev, prev_label = "O", ""
        for tag in tags:
            prefix, label = split_tag(tag)
            if prefix in ("E", "S"):
                return "bioes"
            if prefix == "I" and (prev == "O" or prev_label != label):
                i_start = True
            prev, prev_label = prefix, label
    return "iob1" if i_start else "bio"


def is_valid(tags: Sequence[str], scheme: str = "bio") -> bool:
    """Whether ``tags`` is a valid ``bio`` or ``bioes`` sequence: its spans' own encoding."""
    if scheme == "bio":
        return all(not t.startswith(("E-", "S-")) for t in tags) and \
            all(follows(p, t) for p, t in zip([None] + list(tags), tags))
    if scheme == "bioes":
        return list(tags) == to_bioes(tags)
    raise ValueError(f"scheme must be 'bio' or 'bioes', not {scheme!r}")


# --------------------------------------------------------------------------------------------
# The repair (BIO)

def follows(prev: Optional[str], tag: str) -> bool:
    """May ``tag`` come right after ``prev`` in BIO (``None``: the start)? ``I-X`` only after
    ``B-X`` or ``I-X``; every other tag anywhere."""
    prefix, label = split_tag(tag)
    if prefix != "I":
        return True
    if prev is None:
        return False
    p, lab = split_tag(prev)
    return p in ("B", "I") and lab == label


def repair(tags: Sequence[str]) -> List[str]:
    """Valid BIO from BIO tags: each ``I-X`` that may not follow its predecessor becomes ``B-X``."""
    out = []
    prev: Optional[str] = None
    for tag in tags:
        out.append(tag if follows(prev, tag) else "B-" + tag[2:])
        prev = tag  # the repair keeps labels, so the original predecessor decides
    return out


def bio_constraints(labels: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """Allowed BIO transitions among ``labels``: ``(allowed [K, K] from->to, allowed_start [K])``."""
    k = len(labels)
    allowed = np.array([[follows(a, b) for b in labels] for a in labels], dtype=bool).reshape(k, k)
    start = np.array([follows(None, b) for b in labels], dtype=bool)
    return allowed, start


def repair_table(labels: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """``(allowed [K + 1, K], to_begin [K])``: row ``K`` of ``allowed`` is the start of a sequence;
    ``to_begin[j]`` is the index of ``B-X`` for an ``I-X`` label (else ``j``)."""
    allowed, start = bio_constraints(labels)
    index = {t: i for i, t in enumerate(labels)}
    to_begin = np.arange(len(labels))
    for j, t in enumerate(labels):
        prefix, label = split_tag(t)
        if prefix == "I" and f"B-{label}" in index:
            to_begin[j] = index[f"B-{label}"]
    return np.vstack([allowed, start[None, :]]), to_begin


def repair_ids(ids: np.ndarray, lengths: np.ndarray, labels: Sequence[str]) -> np.ndarray:
    """:func:`repair` on tag ids ``[batch, time]`` (padding left alone); vectorised, since each
    position's fate depends only on its predecessor's original label. An ``I-X`` whose ``B-X`` is
    not among ``labels`` stays as it is."""
    allowed, to_begin = repair_table(labels)
    ids = np.asarray(ids)
    if ids.size == 0:
        return ids
    prev = np.empty_like(ids)
    prev[:, 0] = len(labels)
    prev[:, 1:] = ids[:, :-1]
    return np.where(~allowed[prev, ids], to_begin[ids], ids)
