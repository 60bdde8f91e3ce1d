"""The MISC codecs of nlpipe's annotations: ``NE=``, ``Pred=`` and ``SRL=``; nothing else parses them.

- ``NE=B-PER`` on each word inside a named entity (absent: ``O``). Stages write BIO; the reader
  accepts the tags of any scheme (``B-``, ``I-``, ``E-``, ``S-``; see :mod:`nlpipe.tags`).
- ``Pred=<roleset>`` on a predicate (``Pred=Y`` when it has no sense).
- ``SRL=<pred-id>:<tag>`` on each word inside an argument: the predicate's word ID and the word's tag
  in that predicate's frame, one entry per predicate joined by ``,`` (``SRL=2:B-ARG0,6:I-ARG1``).

Words are addressed by their position in :attr:`Sentence.words` (0-based); ``SRL=`` refers to
predicates by word ID (position + 1). A malformed entry is an :class:`InputError` naming the file and
line. :class:`Frame` is a predicate with its spans, the form the corpus readers and converters use.
Generic ``Key=Value`` entries are read and written by :func:`misc_get` / :func:`misc_set` (and a
confidence by :func:`misc_prob`), which live in :mod:`nlpipe.io.conllu` (its ``Sentence.text`` reads ``SpaceAfter``) and are re-exported here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Sequence, Tuple

from nlpipe.errors import STAGE_INPUT, InputError
from nlpipe.io.conllu import FORM, LEMMA, MISC, Sentence, misc_get, misc_prob, misc_set, srl_entries
from nlpipe.io.inputs import number, shown
from nlpipe.tags import Span, is_tag, spans, spans_to_bio

__all__ = ["misc_get", "misc_set", "misc_prob", "ne_tags", "set_ne_tags", "predicates", "set_predicates", "srl_tags",
           "set_srl_tags", "Frame", "frames_to_misc", "frames_from_misc", "NO_SENSE"]

NO_SENSE = "Y"  # the Pred= value of a predicate without a roleset


# --------------------------------------------------------------------------------------------
# NE=

def ne_tags(sent: Sentence, path: str = STAGE_INPUT) -> List[str]:
    """The ``NE=`` tag of every word (``O`` where absent)."""
    out = []
    for w in sent.words:
        tag = misc_get(w[MISC], "NE") or "O"
        if not is_tag(tag):
            raise InputError(path, sent.line_of(w), f"bad NE tag '{tag}' in MISC (expected O, or B-, I-, E- "
                                                    f"or S- and a type)")
        out.append(tag)
    return out


def set_ne_tags(sent: Sentence, tags: Sequence[str]) -> None:
    """Write one tag per word as ``NE=`` (``O`` removes the entry)."""
    for w, tag in zip(sent.words, tags):
        w[MISC] = misc_set(w[MISC], "NE", None if tag == "O" else tag)


# --------------------------------------------------------------------------------------------
# Pred= and SRL=

def predicates(sent: Sentence) -> Dict[int, str]:
    """Word position -> ``Pred=`` value of each predicate, in order."""
    out = {}
    for i, w in enumerate(sent.words):
        value = misc_get(w[MISC], "Pred")
        if value is not None:
            out[i] = value
    return out


def set_predicates(sent: Sentence, values: Mapping[int, str]) -> None:
    """Write ``Pred=`` on the words at ``values``' positions and remove it from the others."""
    for i, w in enumerate(sent.words):
        w[MISC] = misc_set(w[MISC], "Pred", values.get(i))


def srl_tags(sent: Sentence, path: str = STAGE_INPUT) -> Dict[int, List[str]]:
    """Predicate position -> the tag of every word in its frame, from ``SRL=`` (every ``Pred=``
    word is a key, all ``O`` when it has no arguments)."""
    n = len(sent.words)
    out: Dict[int, List[str]] = {p: ["O"] * n for p in predicates(sent)}
    for i, w in enumerate(sent.words):
        for pid, tag in srl_entries(misc_get(w[MISC], "SRL")):
            entry = f"{pid}:{tag}" if tag else pid
            p = number(pid)
            if not (p is not None and is_tag(tag)):
                raise InputError(path, sent.line_of(w), f"bad SRL entry '{shown(entry)}' (expected <predicate "
                                                        f"word ID>:<tag>, e.g. 2:B-ARG0)")
            p -= 1
            if p not in out:
                raise InputError(path, sent.line_of(w), f"SRL entry '{shown(entry)}' refers to word "
                                                        f"{shown(pid)}, which has no Pred= entry")
            out[p][i] = tag
    return out


def set_srl_tags(sent: Sentence, frames: Sequence[Tuple[int, Sequence[str]]]) -> None:
    """Write ``SRL=`` from ``(predicate position, tags)`` pairs (entries in that order); a word
    outside every argument loses its ``SRL=`` entry."""
    words = sent.words
    entries: List[List[str]] = [[] for _ in words]
    for p, tags in frames:
        for i, tag in enumerate(tags):
            if tag != "O":
                entries[i].append(f"{p + 1}:{tag}")
    for w, e in zip(words, entries):
        w[MISC] = misc_set(w[MISC], "SRL", ",".join(e) if e else None)


# --------------------------------------------------------------------------------------------
# Frames

@dataclass
class Frame:
    """One predicate: its word position (0-based), lemma, roleset (``-``: none) and labelled spans
    ``(start, end exclusive, label)``, the ``V`` span included (normally the predicate alone;
    phrasal verbs cover more)."""
    pred: int
    lemma: str
    roleset: str
    spans: List[Span]

    def arguments(self) -> List[Span]:
        return [s for s in self.spans if s[2] != "V"]


def frames_to_misc(sentence: Sentence, frames: Sequence[Frame]) -> None:
    """Replace the sentence's ``Pred``/``SRL`` entries by ``frames`` (one BIO sequence per frame).

    A ``V`` span of the predicate word alone is implied by ``Pred`` and not written.
    Raises ``ValueError`` for overlapping spans of one frame (BIO cannot encode them).
    """
    words = sentence.words
    rolesets: Dict[int, str] = {}
    tags: List[Tuple[int, List[str]]] = []
    for f in frames:
        rolesets[f.pred] = f.roleset if f.roleset != "-" else NO_SENSE
        args = sorted(s for s in f.spans if s != (f.pred, f.pred + 1, "V"))
        covered: set = set()
        for s, e, _ in args:
            if covered.intersection(range(s, e)):
                raise ValueError(f"overlapping argument spans for the predicate at word {f.pred + 1}")
            covered.update(range(s, e))
        tags.append((f.pred, spans_to_bio(args, len(words))))
    set_predicates(sentence, rolesets)
    set_srl_tags(sentence, tags)


def frames_from_misc(sentence: Sentence, path: str = STAGE_INPUT) -> List[Frame]:
    """The frames written by :func:`frames_to_misc` (lemma from LEMMA, else the roleset's base)."""
    words = sentence.words
    roles = srl_tags(sentence, path)
    frames = []
    for p, value in predicates(sentence).items():
        roleset = "-" if value in (NO_SENSE, "") else value
        lemma = words[p][LEMMA] if words[p][LEMMA] != "_" else roleset.rpartition(".")[0] or words[p][FORM]
        found = spans(roles[p])
        if not any(s[2] == "V" for s in found):
            found.append((p, p + 1, "V"))
        frames.append(Frame(p, lemma, roleset, sorted(found)))
    return frames

