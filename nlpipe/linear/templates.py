"""Feature templates: named conjunctions of word attributes at offsets and previous tags.

A template is written as ``+``-joined parts: ``lower@0``, ``s3@0``, ``amb@+1``, ``tag@-1`` (a
previously predicted tag), ``ptag@+1`` (the tag a first tagging pass predicted at that
offset, -2..+2: templates of the second pass of a two-pass tagger), or the single word ``bias``. Each template maps a token to one integer
key (a mixed-radix number over its parts); the model maps keys to weight rows.

Tokens of a batch of sentences live in one flat "padded layout": two padding slots before every
sentence and after the last, so looking at offsets -2..+2 is plain index arithmetic.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.linear.attributes import ATTR_INDEX, ATTRS, CLUSTER_ATTRS

MAX_OFFSET = 2
MAX_KEY = 1 << 62

# Choi & Palmer (2012) style set plus word-cluster templates, in the order `--order given` uses.
# `bias` comes last: placed early, it carries the label prior for every prefix, and the rows of the
# templates before it (the unknown-word rows above all) learn only corrections to that prior, so
# those short prefixes are poor classifiers on their own (dev XPOS of the first template alone:
# 81.02 with `bias` second, 83.74 with it last; a model trained on that template alone: 83.47).
DEFAULT_TEMPLATES: Tuple[str, ...] = (
    "lower@0", "form@0", "lower@-1", "lower@+1", "lower@-2", "lower@+2",
    "p1@0", "p2@0", "p3@0", "p4@0", "s1@0", "s2@0", "s3@0", "s4@0",
    "shape@0", "flags@0", "shape@-1", "shape@+1", "s3@-1", "s3@+1",
    "c64@0", "c256@0", "c1024@0", "c1024@-1", "c1024@+1", "c256@-2", "c256@+2",
    "c256@-1+c256@0", "c256@0+c256@+1", "c1024@0+s3@0", "c64@0+shape@0",
    "amb@0", "amb@-1", "amb@+1", "amb@-2", "amb@+2",
    "lower@-1+lower@0", "lower@0+lower@+1", "lower@-1+lower@+1", "lower@+1+lower@+2",
    "amb@0+amb@+1", "amb@+1+amb@+2", "lower@0+amb@+1", "amb@-1+lower@0", "flags@0+s3@0",
    "shape@0+amb@0", "s2@0+amb@+1", "c256@0+amb@+1",
    "tag@-1", "tag@-2", "tag@-2+tag@-1", "tag@-1+lower@0", "tag@-1+amb@0", "tag@-1+amb@+1",
    "tag@-1+amb@0+amb@+1", "tag@-2+tag@-1+amb@0", "tag@-1+s3@0", "tag@-1+lower@+1", "tag@-1+c256@0",
    "bias",
)


# Templates a second tagging pass adds to the first pass's: the first pass's tags of the word, of
# the right context (which a left-to-right pass cannot see otherwise) and conjunctions.
FIRST_PASS_TEMPLATES: Tuple[str, ...] = (
    "ptag@0", "ptag@+1", "ptag@+2", "ptag@+1+ptag@+2", "tag@-1+ptag@+1", "ptag@0+ptag@+1",
    "lower@0+ptag@+1", "ptag@-1+ptag@0+ptag@+1", "lower@0+ptag@0",
)


def second_pass_order(first_order: Sequence[str]) -> List[str]:
    """Template order of a second pass: the ``FIRST_PASS_TEMPLATES`` without tag history first
    (so a word the first pass got confidently right can stop at once), then the first pass's
    order, then those with tag history (which would otherwise start the position-by-position
    phase of tagging early)."""
    extra = [parse_template(t) for t in FIRST_PASS_TEMPLATES]
    return [t.name for t in extra if not t.history] + list(first_order) + [t.name for t in extra if t.history]


def word_only(template: Template) -> bool:
    """Whether a template reads nothing but attributes of the word itself (``bias`` included)."""
    return not template.history and not template.first and all(off == 0 for _, off in template.static)


def uses_clusters(spec: str) -> bool:
    """Whether a template reads a word-cluster attribute (``c64``, ``c256``, ``c1024``)."""
    return any(p.split("@", 1)[0] in CLUSTER_ATTRS for p in _split_parts(spec)) if spec != "bias" else False


@dataclass(frozen=True)
class Template:
    """One feature template: static parts (attribute column, offset), tag-history offsets and
    offsets of first-pass tags (``ptag``)."""

    name: str
    static: Tuple[Tuple[int, int], ...]
    history: Tuple[int, ...]
    first: Tuple[int, ...] = ()


def parse_template(spec: str) -> Template:
    """Parse ``"tag@-1+amb@0"`` style specs; raise ValueError on anything else."""
    if spec == "bias":
        return Template(spec, (), ())
    static: List[Tuple[int, int]] = []
    history: List[int] = []
    first: List[int] = []
    for part in _split_parts(spec):
        attr, sep, off = part.partition("@")
        try:
            offset = int(off)
        except ValueError:
            raise ValueError(f"template '{spec}': bad offset in '{part}'") from None
        if not sep or abs(offset) > MAX_OFFSET:
            raise ValueError(f"template '{spec}': expected attr@offset with |offset| <= {MAX_OFFSET}")
        if attr == "tag":
            if offset not in (-1, -2):
                raise ValueError(f"template '{spec}': tag history looks only at offsets -1 and -2")
            history.append(offset)
        elif attr == "ptag":
            first.append(offset)
        elif attr in ATTR_INDEX:
            static.append((ATTR_INDEX[attr], offset))
        else:
            raise ValueError(f"template '{spec}': unknown attribute '{attr}' (known: {', '.join(ATTRS)}, tag, ptag)")
    return Template(spec, tuple(static), tuple(history), tuple(first))


def _split_parts(spec: str) -> List[str]:
    """Split on the "+" that joins parts, not the sign of an offset like ``@+1``."""
    parts, cur = [], ""
    for i, c in enumerate(spec):
        if c == "+" and i > 0 and spec[i - 1] != "@":
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    if any(not p for p in parts):
        raise ValueError(f"template '{spec}': empty part")
    return parts


def check_radix(template: Template, sizes: Sequence[int], num_labels: int, first_size: Optional[int] = None) -> int:
    """Number of possible keys of the template; raise ValueError if they do not fit in an int64.
    ``first_size``: number of labels of the pass ``ptag`` reads (default ``num_labels``)."""
    total = 1
    for a, _ in template.static:
        total *= sizes[a]
    total *= (num_labels + 1) ** len(template.history)
    total *= ((num_labels if first_size is None else first_size) + 1) ** len(template.first)
    if total >= MAX_KEY:
        raise ValueError(f"template '{template.name}' has too many values to key in 64 bits")
    return total


def static_keys(template: Template, atoms: np.ndarray, g: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Keys of the static parts for tokens at padded positions ``g`` (int64 [len(g)])."""
    key = np.zeros(len(g), dtype=np.int64)
    for a, off in template.static:
        key *= sizes[a]
        key += atoms[g + off, a]
    return key


def context_keys(template: Template, atoms: np.ndarray, g: np.ndarray, sizes: Sequence[int], num_labels: int,
                 first: Optional[np.ndarray] = None, first_size: Optional[int] = None) -> np.ndarray:
    """Keys of everything but the tag history: static parts, then first-pass tags read from
    ``first`` (padded layout; padding = ``first_size``, the number of labels of that pass, which
    defaults to ``num_labels``), which templates with ``ptag`` parts need."""
    key = static_keys(template, atoms, g, sizes)
    if template.first:
        if first is None:
            raise ValueError(f"template '{template.name}' needs the tags of a first tagging pass")
        radix = (num_labels if first_size is None else first_size) + 1
        for off in template.first:
            key *= radix
            key += first[g + off]
    return key


def full_keys(template: Template, atoms: np.ndarray, tags: np.ndarray, g: np.ndarray,
              sizes: Sequence[int], num_labels: int, first: Optional[np.ndarray] = None,
              first_size: Optional[int] = None) -> np.ndarray:
    """Keys including tag history read from ``tags`` (padded layout; padding = ``num_labels``)
    and first-pass tags from ``first`` (see :func:`context_keys`)."""
    key = context_keys(template, atoms, g, sizes, num_labels, first, first_size)
    for off in template.history:
        key *= num_labels + 1
        key += tags[g + off]
    return key


class Layout:
    """Flat padded positions of a batch of sentences given their lengths."""

    def __init__(self, lengths: Sequence[int]):
        lens = np.asarray(lengths, dtype=np.int64)
        self.lengths = lens
        self.starts = MAX_OFFSET + np.concatenate([[0], np.cumsum(lens + MAX_OFFSET)[:-1]]) if len(lens) \
            else np.zeros(0, dtype=np.int64)
        self.size = int(lens.sum() + MAX_OFFSET * (len(lens) + 1))
        n = int(lens.sum())
        sent = np.repeat(np.arange(len(lens)), lens)
        first = np.concatenate([[0], np.cumsum(lens)[:-1]]) if len(lens) else np.zeros(0, dtype=np.int64)
        self.position = np.arange(n, dtype=np.int64) - np.repeat(first, lens)
        self.g = self.starts[sent] + self.position if n else np.zeros(0, dtype=np.int64)
        self.num_tokens = n
        # optional, set by TemplatedModel.layout: attribute rows of the distinct word types and
        # each token's type (templates that read only the word itself are scored per type)
        self.type_atoms: Optional[np.ndarray] = None
        self.type_of: Optional[np.ndarray] = None

    def scatter(self, rows: np.ndarray, fill: int) -> np.ndarray:
        """Put token rows into the padded layout, padding rows set to ``fill``."""
        out = np.full((self.size,) + rows.shape[1:], fill, dtype=rows.dtype)
        out[self.g] = rows
        return out
