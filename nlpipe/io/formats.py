"""Readers for the training corpora formats and the tag/span encodings they share.

Formats (see ``../shared/corpora/*/PROVENANCE.md``):

- CoNLL-2003: 4 space-separated columns ``word POS chunk NE``, IOB1 tags, ``-DOCSTART-`` documents.
- UNER "iob2": CoNLL-U-like comments, then ``index token tag - annotator`` (draft train lines: 3 columns).
- CoNLL-2012 ``*.gold_conll`` span props: ``doc sent tok word POS parse lemma roleset`` + one
  bracket column per predicate.
- Universal PropBank (CoNLL-U Plus): column 11 the roleset, then one column per predicate with the
  role label on the argument's head word.

Every reader is a generator over a text stream and raises :class:`InputError` with file and line.
Spans are ``(start, end exclusive, label)`` and tags are read by :mod:`nlpipe.tags`; frames are
:class:`nlpipe.io.misc.Frame`, written to and read from CoNLL-U MISC by :mod:`nlpipe.io.misc`.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import IO, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from nlpipe.io.conllu import FORM, LEMMA, Sentence, boundary, read_conllu
from nlpipe.io.misc import Frame, set_ne_tags
from nlpipe.io.inputs import HUGE, MAX_DIGITS, content_lines, number, shown
from nlpipe.errors import InputError
from nlpipe.tags import Span, is_tag, to_bio


# --------------------------------------------------------------------------------------------
# Line reading shared by the column formats

def _blocks(stream: IO[str], path: str) -> Iterator[Tuple[int, List[str]]]:
    """Yield ``(first line number, lines)`` for each run of non-blank lines."""
    block: List[str] = []
    first = 0
    for lineno, line in content_lines(stream, path):
        if line.strip():
            if not block:
                first = lineno
            block.append(line)
        elif block:
            yield first, block
            block = []
    if block:
        yield first, block


# --------------------------------------------------------------------------------------------
# CoNLL-2003

@dataclass
class NerSentence:
    """A CoNLL-2003 sentence. ``tags`` are BIO (converted from the file's scheme) unless read with ``bio=False``."""
    words: List[str]
    pos: List[str]
    chunks: List[str]
    tags: List[str]
    line: int
    newdoc: bool = False  # first sentence after a -DOCSTART- line


def read_conll2003(stream: IO[str], path: str = "<stdin>", bio: bool = True) -> Iterator[NerSentence]:
    """Yield the sentences of a CoNLL-2003 file; ``-DOCSTART-`` marks the next sentence ``newdoc``.

    ``bio`` converts the NE tags (IOB1 in the original files; BIO or BIOES also read) to BIO;
    ``bio=False`` keeps them as in the file.
    """
    newdoc = False
    for first, block in _blocks(stream, path):
        if block[0].startswith("-DOCSTART-"):
            if len(block) > 1:
                raise InputError(path, first + 1, "expected a blank line after -DOCSTART-")
            newdoc = True
            continue
        words, pos, chunks, tags = [], [], [], []
        for off, line in enumerate(block):
            cols = line.split()
            if len(cols) != 4:
                raise InputError(path, first + off, f"expected 4 space-separated columns "
                                 f"(word POS chunk NE), found {len(cols)}")
            if cols[0] == "-DOCSTART-":
                raise InputError(path, first + off, "-DOCSTART- inside a sentence (expected a blank line before it)")
            if not is_tag(cols[3]):
                raise InputError(path, first + off, f"bad NE tag '{cols[3]}' (expected O, or B-, I-, E- or S- "
                                 f"and a type)")
            words.append(cols[0])
            pos.append(cols[1])
            chunks.append(cols[2])
            tags.append(cols[3])
        yield NerSentence(words, pos, chunks, to_bio(tags) if bio else tags, first, newdoc)
        newdoc = False


# --------------------------------------------------------------------------------------------
# UNER

DRAFT_TAGS = {"B-OTH": "O", "I-OTH": "O", "B-O": "O", "I-O": "O"}


@dataclass
class UnerSentence:
    """A UNER sentence: its comment lines, tokens and tags (BIO in UNER; as in the file)."""
    comments: List[str]
    words: List[str]
    tags: List[str]
    line: int

    @property
    def newdoc(self) -> bool:
        return any(boundary(c) == "newdoc" for c in self.comments)

    @property
    def sent_id(self) -> Optional[str]:
        for c in self.comments:
            k, sep, v = c[1:].partition("=")
            if sep and k.strip() == "sent_id":
                return v.strip()
        return None


def read_uner(stream: IO[str], path: str = "<stdin>", map_draft: bool = False) -> Iterator[UnerSentence]:
    """Yield the sentences of a UNER ``.iob2`` file.

    Token lines have 5 tab-separated columns (index, token, tag, ``-``, annotator); the draft train
    file also has 3-column lines. ``map_draft`` maps the draft's ``B-OTH``/``I-OTH`` and stray
    ``B-O``/``I-O`` to ``O`` (PROVENANCE.md); without it those tags are an error.
    """
    for first, block in _blocks(stream, path):
        comments: List[str] = []
        words: List[str] = []
        tags: List[str] = []
        for off, line in enumerate(block):
            lineno = first + off
            if line.startswith("#"):
                if words:
                    raise InputError(path, lineno, "comment line inside a sentence (expected a blank line first)")
                comments.append(line)
                continue
            cols = line.split("\t")
            if len(cols) not in (3, 5):
                raise InputError(path, lineno, f"expected 5 (or 3) tab-separated columns, found {len(cols)}")
            index = number(cols[0])
            if index is None:
                raise InputError(path, lineno, f"token index must be an integer, found '{shown(cols[0])}'")
            if index != len(words) + 1:
                raise InputError(path, lineno, f"expected token index {len(words) + 1}, found {shown(cols[0])}")
            tag = cols[2]
            if map_draft:
                tag = DRAFT_TAGS.get(tag, tag)
            elif tag in DRAFT_TAGS:
                raise InputError(path, lineno, f"draft tag '{tag}' (read the draft train file with map_draft)")
            if not is_tag(tag):
                raise InputError(path, lineno, f"bad NE tag '{tag}' (expected O, or B-, I-, E- or S- and a type)")
            words.append(cols[1])
            tags.append(tag)
        if not words:
            raise InputError(path, first + len(block), "comment lines with no token lines")
        yield UnerSentence(comments, words, tags, first)


@dataclass
class JoinReport:
    """What a join of an annotation layer onto CoNLL-U sentences matched and skipped."""
    sentences: int = 0
    joined: int = 0
    missing: int = 0        # CoNLL-U sentences with no annotation
    mismatched: int = 0     # annotation found but the words differ (skipped)
    unused: int = 0         # annotated sentences never matched
    messages: List[str] = field(default_factory=list)


def join_uner(sentences: Iterable[Sentence], uner: Iterable[UnerSentence],
              report: Optional[JoinReport] = None) -> Iterator[Sentence]:
    """Add UNER tags (as MISC ``NE=``) to the CoNLL-U sentences with the same ``sent_id`` and words.

    The UNER file is indexed by sent_id (its order differs from UD's); sentences whose words differ
    (later UD retokenisations) are passed through unchanged and counted in ``report``.
    """
    report = report if report is not None else JoinReport()
    index: Dict[str, UnerSentence] = {}
    for u in uner:
        sid = u.sent_id
        if sid is not None:
            index[sid] = u
    for s in sentences:
        report.sentences += 1
        u = index.pop(s.sent_id or "", None)
        if u is None:
            report.missing += 1
        elif u.words != s.forms():
            report.mismatched += 1
            report.messages.append(f"{s.sent_id}: words differ from the NE layer; skipped")
        else:
            set_ne_tags(s, u.tags)
            report.joined += 1
        yield s
    report.unused += len(index)


# --------------------------------------------------------------------------------------------
# CoNLL-2012 span props (propbank_en_ewt)

@dataclass
class SrlSentence:
    """A CoNLL-2012 props sentence: words, POS, parse bits and one :class:`Frame` per predicate."""
    doc_id: str
    index: int
    words: List[str]
    pos: List[str]
    parse: List[str]
    frames: List[Frame]
    line: int


def parse_brackets(cells: Sequence[str], path: str, first: int) -> List[Span]:
    """Spans of one CoNLL-2005 bracket column (``(ARG0*``, ``*``, ``*)``, ``(V*)``), nesting allowed."""
    spans: List[Span] = []
    stack: List[Tuple[int, str]] = []
    for i, cell in enumerate(cells):
        opens, star, closes = cell.partition("*")
        if not star or closes.strip(")") or "*" in closes or (opens and not opens.startswith("(")):
            raise InputError(path, first + i, f"bad bracket cell '{cell}' (expected e.g. (ARG0*, *, *) or (V*))")
        for label in opens.split("(")[1:]:
            if not label:
                raise InputError(path, first + i, f"bad bracket cell '{cell}': empty label")
            stack.append((i, label))
        for _ in closes:
            if not stack:
                raise InputError(path, first + i, f"unbalanced brackets: ')' in '{cell}' closes no open span")
            s, label = stack.pop()
            spans.append((s, i + 1, label))
    if stack:
        s, label = stack[-1]
        raise InputError(path, first + s, f"unbalanced brackets: span '({label}' is never closed")
    spans.sort()
    return spans


def _conll2012_sentence(block: List[str], first: int, path: str) -> SrlSentence:
    rows = [line.split("\t") for line in block]
    ncols = len(rows[0])
    if ncols < 8:
        raise InputError(path, first, f"expected at least 8 tab-separated columns (doc sent tok word POS "
                         f"parse lemma roleset), found {ncols}")
    doc, sent = rows[0][0], rows[0][1]
    index = number(sent)
    if index is None or index >= HUGE:   # it goes into the sentence's sent_id
        raise InputError(path, first, f"sentence index must be an integer of at most {MAX_DIGITS} digits, "
                                      f"found '{shown(sent)}'")
    for off, cols in enumerate(rows):
        if len(cols) != ncols:
            raise InputError(path, first + off, f"expected {ncols} tab-separated columns like the line "
                             f"above, found {len(cols)}")
        if cols[0] != doc or cols[1] != sent:
            raise InputError(path, first + off, f"document/sentence changes inside a sentence "
                             f"(expected a blank line before '{cols[0]} {cols[1]}')")
        token = number(cols[2])
        if token is None:
            raise InputError(path, first + off, f"token index must be an integer, found '{shown(cols[2])}'")
        if token != off:
            raise InputError(path, first + off, f"expected token index {off}, found {shown(cols[2])}")
    columns = [parse_brackets([r[8 + k] for r in rows], path, first) for k in range(ncols - 8)]
    roleset_rows = [i for i, r in enumerate(rows) if r[7] != "-"]
    frames = []
    for k, spans in enumerate(columns):
        v = [s for s in spans if s[2] == "V"]
        if v:
            pred = v[0][0] if len(roleset_rows) != len(columns) else roleset_rows[k]
        elif len(roleset_rows) == len(columns):
            pred = roleset_rows[k]
        else:
            raise InputError(path, first, f"predicate column {k + 1} has no V span and the sentence has "
                             f"{len(roleset_rows)} rolesets for {len(columns)} predicate columns")
        frames.append(Frame(pred, rows[pred][6], rows[pred][7], spans))
    return SrlSentence(doc, index, [r[3] for r in rows], [r[4] for r in rows], [r[5] for r in rows],
                       frames, first)


def read_conll2012(stream: IO[str], path: str = "<stdin>") -> Iterator[SrlSentence]:
    """Yield the sentences of a CoNLL-2012 span props file (``#begin/#end document`` lines skipped)."""
    for first, block in _blocks(stream, path):
        while block and block[0].startswith("#"):
            block = block[1:]
            first += 1
        while block and block[-1].startswith("#"):
            block = block[:-1]
        if block:
            yield _conll2012_sentence(block, first, path)


def _doc_names(doc_id: str) -> Tuple[str, str]:
    parts = doc_id.split("/")
    base = parts[-1]
    for ext in (".xml", ".conllu", ".gold_conll"):
        if base.endswith(ext):
            base = base[: -len(ext)]
    return (f"{parts[-3]}-{base}" if len(parts) >= 3 else base), base


def doc_key(doc_id: str) -> str:
    """UD-style document name of a CoNLL-2012 doc id: ``google/ewt/weblog/00/x.xml`` -> ``weblog-x``."""
    return _doc_names(doc_id)[0]


def _same_doc(newdoc: Optional[str], doc_id: str) -> bool:
    if newdoc is None:
        return False
    key, base = _doc_names(doc_id)
    return newdoc == key or newdoc == base or newdoc.endswith("-" + base)


@dataclass
class AlignReport:
    """Counts of what :func:`align_conll2012` could not carry over (and why, in ``messages``)."""
    documents: int = 0
    documents_without_props: int = 0   # CoNLL-U documents with no CoNLL-2012 document
    documents_unmatched: int = 0       # CoNLL-2012 documents never found in the CoNLL-U input
    tokens_unaligned: int = 0
    predicates: int = 0
    predicates_dropped: int = 0
    spans: int = 0                     # argument spans (not V) read
    spans_dropped: int = 0
    spans_trimmed: int = 0             # kept, but an edge token did not align
    messages: List[str] = field(default_factory=list)


def _documents(sentences: Iterable[Sentence]) -> Iterator[Tuple[Optional[str], List[Sentence]]]:
    doc: List[Sentence] = []
    name: Optional[str] = None
    for s in sentences:
        newdoc = (s.meta("newdoc id") or "") if s.starts_document else None
        if newdoc is not None and doc:
            yield name, doc
            doc = []
        if not doc:
            name = newdoc
        doc.append(s)
    if doc:
        yield name, doc


def _srl_documents(sentences: Iterable[SrlSentence]) -> Iterator[Tuple[str, List[SrlSentence]]]:
    doc: List[SrlSentence] = []
    for s in sentences:
        if doc and s.doc_id != doc[0].doc_id:
            yield doc[0].doc_id, doc
            doc = []
        doc.append(s)
    if doc:
        yield doc[0].doc_id, doc


def _align_document(ud: List[Sentence], srl: List[SrlSentence],
                    report: AlignReport) -> Iterator[Tuple[Sentence, List[Frame]]]:
    ud_pos = [(si, wi) for si, s in enumerate(ud) for wi in range(len(s.words))]
    ud_forms = [w[FORM] for s in ud for w in s.words]
    srl_start = []
    srl_forms: List[str] = []
    for s in srl:
        srl_start.append(len(srl_forms))
        srl_forms.extend(s.words)
    mapping: Dict[int, Tuple[int, int]] = {}
    matcher = difflib.SequenceMatcher(None, srl_forms, ud_forms, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        # equal blocks, and same-length replacements (changed spellings) map token for token
        if op == "equal" or (op == "replace" and a1 - a0 == b1 - b0):
            for k in range(a1 - a0):
                mapping[a0 + k] = ud_pos[b0 + k]
    report.tokens_unaligned += len(srl_forms) - len(mapping)
    frames: List[List[Frame]] = [[] for _ in ud]
    for s, start in zip(srl, srl_start):
        where = f"{s.doc_id} sentence {s.index}"
        for f in s.frames:
            n_args = len(f.arguments())
            report.predicates += 1
            report.spans += n_args
            target = mapping.get(start + f.pred)
            if target is None:
                report.predicates_dropped += 1
                report.spans_dropped += n_args
                report.messages.append(f"{where}: predicate '{s.words[f.pred]}' (token {f.pred}) does not "
                                       f"align; dropped with {n_args} arguments")
                continue
            si = target[0]
            spans = []
            for a, b, label in f.spans:
                hits = [mapping[start + t] for t in range(a, b) if start + t in mapping]
                if not hits or any(h[0] != si for h in hits):
                    if label != "V":
                        report.spans_dropped += 1
                    report.messages.append(f"{where}: span {label} {a}-{b - 1} has no aligned token in the "
                                           f"predicate's CoNLL-U sentence; dropped")
                    continue
                if len(hits) != b - a and label != "V":
                    report.spans_trimmed += 1
                spans.append((hits[0][1], hits[-1][1] + 1, label))
            frames[si].append(Frame(target[1], f.lemma, f.roleset, sorted(spans)))
    for sent, fs in zip(ud, frames):
        yield sent, sorted(fs, key=lambda f: f.pred)


def align_conll2012(ud: Iterable[Sentence], srl: Iterable[SrlSentence],
                    report: Optional[AlignReport] = None) -> Iterator[Tuple[Sentence, List[Frame]]]:
    """Pair each CoNLL-U sentence with the CoNLL-2012 frames projected onto its words.

    Documents are matched in order by name (``# newdoc id`` = :func:`doc_key` of the doc id); CoNLL-U
    documents without props get no frames. Within a document the two token sequences are aligned, so
    differing sentence boundaries and tokens are tolerated: what does not align is dropped and
    counted in ``report``, never an error. Memory holds one document at a time.
    """
    report = report if report is not None else AlignReport()
    srl_docs = _srl_documents(srl)
    pending = next(srl_docs, None)
    for name, doc in _documents(ud):
        report.documents += 1
        if pending is not None and _same_doc(name, pending[0]):
            yield from _align_document(doc, pending[1], report)
            pending = next(srl_docs, None)
        else:
            report.documents_without_props += 1
            for s in doc:
                yield s, []
    while pending is not None:
        report.documents_unmatched += 1
        n = sum(len(f.arguments()) for s in pending[1] for f in s.frames)
        report.predicates += sum(len(s.frames) for s in pending[1])
        report.predicates_dropped += sum(len(s.frames) for s in pending[1])
        report.spans += n
        report.spans_dropped += n
        report.messages.append(f"{pending[0]}: no CoNLL-U document of that name (in this order); dropped")
        pending = next(srl_docs, None)


# --------------------------------------------------------------------------------------------
# Universal PropBank (CoNLL-U Plus: column 11 roleset, then one column per predicate)

@dataclass
class UpSentence:
    """A UP sentence: the CoNLL-U sentence (all columns kept) and its head-word frames.

    ``frames[k].spans`` are one-word spans ``(i, i + 1, role)`` on argument head words and the ``V``
    word(s); the ``V`` is not always the roleset's row (``two-timing``: V on ``two``, C-V on ``timing``).
    """
    sentence: Sentence
    frames: List[Frame]


def up_frames(sentence: Sentence, path: str = "<string>") -> List[Frame]:
    """Frames of a CoNLL-U Plus sentence from columns 11+ (blank cells count as ``_``)."""
    words = sentence.words
    if not words or len(words[0]) < 11:
        return []
    preds = [i for i, w in enumerate(words) if w[10] not in ("_", "")]
    ncols = len(words[0]) - 11
    if ncols < len(preds):
        raise InputError(path, sentence.line_of(words[preds[ncols]]), f"{len(preds)} rolesets but only {ncols} "
                         f"predicate columns")
    for k in range(len(preds), ncols):
        for w in words:
            if w[11 + k] not in ("_", ""):
                raise InputError(path, sentence.line_of(w), f"label '{w[11 + k]}' in predicate column {k + 1}, "
                                 f"but the sentence has only {len(preds)} rolesets")
    frames = []
    for k, p in enumerate(preds):
        spans = []
        for i, w in enumerate(words):
            label = w[11 + k]
            if label not in ("_", ""):
                spans.append((i, i + 1, label))
        roleset = words[p][10]
        lemma = words[p][LEMMA] if words[p][LEMMA] != "_" else roleset.rpartition(".")[0]
        frames.append(Frame(p, lemma, roleset, spans))
    return frames


def read_up(stream: IO[str], path: str = "<stdin>") -> Iterator[UpSentence]:
    """Yield the sentences of a Universal PropBank CoNLL-U Plus file with their frames."""
    for s in read_conllu(stream, path):
        yield UpSentence(s, up_frames(s, path))
