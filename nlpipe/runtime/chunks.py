"""Chunks: what one call of :func:`process_chunk` parses (or tokenizes), annotates and writes.

A chunk of CoNLL-U is kept as bytes until it is annotated, so that the same chunk can be handled
here, in a worker process (:mod:`nlpipe.runtime.parallel`) or on a Dask worker
(:mod:`nlpipe.runtime.distributed`) with the same result. When a stage reads whole documents
(``stage.document`` is true), chunks end only where a ``# newdoc`` starts (up to ``DOC_CAP``
batches), so the stage sees the same documents as in a shell pipe.

A chunk of raw text (whole paragraphs, :func:`text_chunks`) is tokenized where it is annotated, so
that worker processes share the tokenizer's work. Its sentences are numbered from 1 there; the
process that writes the results in order gives them their place in the input (:func:`renumbered`).
"""
from __future__ import annotations

import io
import itertools
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, List, Optional, Tuple, Union

from nlpipe.errors import InputError
from nlpipe.io.conllu import Sentence, boundary, parse_string
from nlpipe.io.inputs import decode
from nlpipe.runtime.chain import Pipeline, Warn

# The neural stages sort a chunk's sentences by length before batching: the more sentences, the less
# padding (en_ewt test raw text x2, whole default chain: 11% faster with --jobs 1 at 1024 than at 256).
CHUNK_SENTENCES = 1024
DOC_CAP = 16  # a document-aligned chunk is cut anyway after this many batches
EVEN_GAIN = 0.03  # smaller chunks only where the workers then finish this much sooner (even_size)
SCAN_BYTES = 1 << 25  # a CoNLL-U file's sentences are counted in its first 32 MiB (sentences_in)
_BLANK = (b"\n", b"\r\n")
# A chunk of raw text ends at the first paragraph break after ``batch`` times this many characters
# (en_ewt: about 90 a sentence), so it holds about ``batch`` sentences or more; see text_chunks for
# the cap (in chunks' sizes) past which a paragraph is tokenized in this process, and the words a
# chunk of such sentences holds at most (per sentence of ``batch``).
TEXT_CHARS = 100
TEXT_CAP = 16
TEXT_WORDS = 20


@dataclass
class Chunk:
    """Consecutive sentences of one input: CoNLL-U ``data`` (bytes, starting at ``first_line``),
    already built ``sentences`` (from the tokenizer), or ``text``: whole paragraphs of raw text read
    as ``mode`` (see :data:`nlpipe.stages.tokenize.TEXT_MODES`), for the pipeline's tokenizer;
    ``position``: input bytes read so far. ``numbered``: the sentences were numbered by a tokenizer
    that did not start at this chunk (or may not have): their results carry
    :attr:`ChunkResult.numbers` for :func:`renumbered`. ``continues``: ``text`` begins inside a
    paragraph (a sentence a line), so its first sentence gets no ``# newpar``."""

    path: str
    first_line: int = 1
    data: Optional[bytes] = None
    sentences: Optional[List[Sentence]] = None
    position: int = 0
    offset: int = 0  # of ``data`` in the input, in bytes
    text: Optional[str] = None
    mode: str = "raw"
    batch: int = CHUNK_SENTENCES   # sentences of ``text`` annotated at a time
    numbered: bool = False
    continues: bool = False


@dataclass
class ChunkResult:
    """``numbers``, for a chunk whose sentences need renumbering: for each sentence, in order, where
    the number of its ``# sent_id = NAME-N`` starts in ``text``, and N."""

    text: str
    warnings: List[str]
    sentences: int
    tokens: int
    position: int = 0
    numbers: Optional[List[Tuple[int, int]]] = None


class Verbatim:
    """Input passed through unchanged (a malformed sentence under ``--skip-bad``)."""

    __slots__ = ("text", "line")

    def __init__(self, text: str, line: int):
        self.text = text
        self.line = line

    def to_string(self) -> str:
        return self.text


Item = Union[Sentence, Verbatim]


def sentences_in(path: str, size: int) -> int:
    """About how many sentences the CoNLL-U file ``path`` of ``size`` bytes holds: its blank lines,
    counted in the first :data:`SCAN_BYTES` and scaled to the whole (0 if it cannot be read)."""
    blanks = read = 0
    try:
        with open(path, "rb") as f:
            while read < SCAN_BYTES:
                block = f.read(1 << 20)
                if not block:
                    break
                read += len(block)
                blanks += block.count(b"\n\n") + block.count(b"\n\r\n")
    except OSError:
        return 0
    return round(blanks * size / read) if read else 0


def conllu_chunks(lines: Iterable[bytes], path: str, batch: int, document: bool = False,
                  first_line: int = 1, position: int = 0, sentences: Optional[int] = None,
                  parts: int = 1) -> Iterator[Chunk]:
    """Cut binary CoNLL-U lines into chunks of ``batch`` sentences, only between sentences.

    A sentence is a run of non-blank lines plus the blank lines after it, so that the chunks'
    bytes concatenate to the input and each parses like its part of the whole. With ``document``,
    a chunk ends only before a ``# newdoc`` sentence (or after ``DOC_CAP * batch`` sentences).
    An empty input gives no chunk. ``position``: the input's bytes before ``lines``. ``sentences``:
    the input's (estimated, :func:`sentences_in`), where known: the chunks are then cut for
    ``parts`` workers, at most ``batch`` sentences each (:func:`even_size`).
    """
    if not document:
        batch = even_size(batch, sentences, parts)
    offset = position
    buf: List[bytes] = []
    first = first_line
    lineno = first_line - 1
    n = 0               # sentences begun in buf
    after_blank = True  # the next non-blank line starts a sentence
    start = 0           # index in buf of the current sentence's first line
    start_line = first_line
    header = False      # still in the current sentence's comment lines
    newdoc = False
    for line in lines:
        lineno += 1
        position += len(line)
        if line in _BLANK:
            buf.append(line)  # leading blank lines stay with the first sentence (a reader error)
            after_blank = True
            continue
        if after_blank:
            after_blank = False
            n += 1
            start, start_line, header, newdoc = len(buf), lineno, True, False
        buf.append(line)
        if header:
            if line[:1] == b"#":
                if document and not newdoc:     # only document-aligned chunks need to know
                    newdoc = boundary(line.decode("utf-8", "replace")) == "newdoc"
                continue
            header = False
            done = n - 1
            if done >= batch and (not document or newdoc or done >= DOC_CAP * batch):
                data = b"".join(buf[:start])
                yield Chunk(path, first, data, position=position, offset=offset)
                offset += len(data)
                buf = buf[start:]
                first, n, start = start_line, 1, 0
    if buf:
        yield Chunk(path, first, b"".join(buf), position=position, offset=offset)


def sentence_chunks(sentences: Iterable[Sentence], path: str, batch: int, document: bool = False,
                    position: Callable[[], int] = lambda: 0, max_words: Optional[int] = None) -> Iterator[Chunk]:
    """Group built sentences into chunks (same cutting rule as :func:`conllu_chunks`); with
    ``max_words`` (not with ``document``), a chunk also ends once it holds that many words."""
    buf: List[Sentence] = []
    words = 0
    for s in sentences:
        if buf and (len(buf) >= batch and (not document or s.starts_document or len(buf) >= DOC_CAP * batch)
                    or max_words is not None and words >= max_words):
            yield Chunk(path, sentences=buf, position=position())
            buf, words = [], 0
        buf.append(s)
        if max_words is not None:
            words += len(s.rows)
    if buf:
        yield Chunk(path, sentences=buf, position=position())


def _parse(text: str, path: str, first_line: int) -> List[Sentence]:
    """Sentences of a CoNLL-U piece that starts at ``first_line`` of ``path`` (errors say so)."""
    shift = first_line - 1
    try:
        sents = parse_string(text, path)
    except InputError as e:
        raise InputError(path, None if e.line is None else e.line + shift, e.message) from None
    if shift:
        for s in sents:
            s.line += shift
    return sents


def parse_chunk(chunk: Chunk, skip_bad: bool, warn: Warn) -> List[Item]:
    """The sentences of a CoNLL-U chunk. With ``skip_bad``, a malformed sentence (up to the next
    blank line) becomes a :class:`Verbatim` item with a warning, and reading goes on."""
    assert chunk.data is not None
    if not skip_bad:
        text = decode(chunk.data, chunk.path, chunk.first_line, chunk.offset)
        return list(_parse(text, chunk.path, chunk.first_line))
    items: List[Item] = []
    for block in conllu_chunks(io.BytesIO(chunk.data), chunk.path, 1, first_line=chunk.first_line,
                               position=chunk.offset):
        assert block.data is not None
        try:
            text = decode(block.data, chunk.path, block.first_line, block.offset)
            items.extend(_parse(text, chunk.path, block.first_line))
        except InputError as e:
            warn(f"{e}; passed through unchanged (--skip-bad)")
            # surrogateescape: bytes that are not UTF-8 go out as they came (see nlpipe.io.outputs)
            items.append(Verbatim(block.data.decode("utf-8", "surrogateescape"), block.first_line))
    return items


def _makespan(size: int, total: int, parts: int) -> int:
    """Units of work of the busiest of ``parts`` workers taking chunks of ``size`` (the last one
    what is left of ``total``) in turn."""
    n = -(-total // size)
    rounds, extra = divmod(n - 1, parts)
    return max((rounds + (extra > 0)) * size, rounds * size + total - (n - 1) * size)


def even_size(target: int, total: Optional[int], parts: int) -> int:
    """The chunk size, at most ``target``, that lets ``parts`` workers finish an input of ``total``
    units together: on two workers, chunks of 100k, 100k and 50k characters keep one worker alone
    for a third of the run, and four of 63k do not. ``target`` itself where smaller chunks would
    save less than :data:`EVEN_GAIN` of the run (they cost the neural stages some padding), the
    total is unknown (a stream) or there is one part."""
    if not total or total <= 0 or parts < 2:
        return target
    even = max(1, -(-total // (parts * -(-total // (parts * target)))))
    return even if _makespan(even, total, parts) < (1 - EVEN_GAIN) * _makespan(target, total, parts) else target


def text_chunks(lines: Iterable[str], path: str, batch: int, mode: str, tokenizer: Callable[[], Any],
                position: Callable[[], int] = lambda: 0, total: Optional[int] = None,
                parts: int = 1) -> Iterator[Chunk]:
    """Cut the lines of raw text (without their line endings, as
    :func:`~nlpipe.io.inputs.content_lines` gives them) into chunks of about ``batch * TEXT_CHARS``
    characters: whole paragraphs, each chunk ending at the first blank line after that size; in
    ``sentences`` mode (a sentence a line) at the first line after it. Each chunk's text starts with a
    blank line, so that a tokenizer reading it takes nothing on its first line for a byte-order mark.
    ``total``: the input's size (bytes, where known), cut into chunks of :func:`even_size` for
    ``parts`` workers.

    Where no paragraph ends within ``TEXT_CAP`` times that many characters (``raw`` mode), the rest of
    the input is tokenized here by ``tokenizer()`` (a tokenizer bounds its memory within a paragraph,
    a chunk could not) and goes out as chunks of sentences, ``numbered`` as well."""
    buf: List[str] = ["\n"]
    size = 0
    target = batch * TEXT_CHARS
    continues = False    # the chunk begins inside a paragraph (``sentences`` mode)
    cut = even_size(target, total, parts)
    it = iter(lines)
    for line in it:
        blank = not line or line.isspace()
        if size == 0 and blank:
            continues = False
        buf.append(line + "\n")
        size += len(line) + 1
        if size >= cut and (blank or mode == "sentences"):
            yield Chunk(path, text="".join(buf), mode=mode, batch=batch, position=position(), numbered=True,
                        continues=continues)
            buf, size, continues = ["\n"], 0, not blank
        elif size >= TEXT_CAP * target:
            rest = itertools.chain(buf, (x + "\n" for x in it))
            # such a text's sentences may be long: chunks of at most ``batch * TEXT_WORDS`` words keep
            # what is on its way to the workers small
            for c in sentence_chunks(tokenizer().tokenize(rest, path, mode), path, batch, position=position,
                                     max_words=batch * TEXT_WORDS):
                c.numbered = True
                yield c
            return
    if size:
        yield Chunk(path, text="".join(buf), mode=mode, batch=batch, position=position(), numbered=True,
                    continues=continues)


def _sentences(pipe: Pipeline, chunk: Chunk) -> Iterator[List[Sentence]]:
    """The chunk's sentences, ``chunk.batch`` at a time where the pipeline's tokenizer makes them."""
    if chunk.text is None:
        yield list(chunk.sentences or [])
        return
    if pipe.tokenizer is None:
        raise RuntimeError("a chunk of raw text for a pipeline without a tokenizer")
    sentences = pipe.tokenizer.tokenize(io.StringIO(chunk.text, newline="\n"), chunk.path, chunk.mode)
    for k, c in enumerate(sentence_chunks(sentences, chunk.path, chunk.batch)):
        if k == 0 and chunk.continues and c.sentences and "# newpar" in c.sentences[0].comments:
            c.sentences[0].comments.remove("# newpar")   # its paragraph began in the chunk before
        yield c.sentences or []


def process_chunk(pipe: Pipeline, chunk: Chunk) -> ChunkResult:
    """Parse (or tokenize), annotate and serialize one chunk; warnings are collected, not printed."""
    warnings: List[str] = []
    if chunk.data is not None:
        parts = [parse_chunk(chunk, pipe.skip_bad, warnings.append)]
    else:
        parts = _sentences(pipe, chunk)  # type: ignore[assignment]
    out: List[str] = []
    numbers: Optional[List[Tuple[int, int]]] = [] if chunk.numbered else None
    size = n_sents = n_tokens = 0
    for items in parts:
        where = [i for i, x in enumerate(items) if isinstance(x, Sentence)]
        sents: List[Sentence] = [items[i] for i in where]  # type: ignore[misc]
        pipe.annotate(sents, chunk.path, warnings.append)
        for i, s in zip(where, sents):
            items[i] = s
        for x in items:
            piece = x.to_string()
            if numbers is not None and isinstance(x, Sentence):
                numbers.append(_number_at(x, size))
            out.append(piece)
            size += len(piece)
        n_sents += len(sents)
        n_tokens += sum(len(s.words) for s in sents)
    return ChunkResult("".join(out), warnings, n_sents, n_tokens, chunk.position, numbers)


def _number_at(s: Sentence, start: int) -> Tuple[int, int]:
    """Where the N of the sentence's ``# sent_id = NAME-N`` comment (the tokenizer's) starts in its
    text written at ``start``, and N."""
    pos = start + len(s.prefix)
    for c in s.comments:
        if c.startswith("# sent_id = "):
            number = c.rsplit("-", 1)[1]
            return pos + len(c) - len(number), int(number)
        pos += len(c) + len(s.eol)
    raise RuntimeError("a sentence from the tokenizer without its sent_id")


_SENTENCE = re.compile(r"\bsentence (\S+)-(\d+)\b")


def renumbered(result: ChunkResult, before: int) -> Tuple[str, List[str]]:
    """The text and warnings of a chunk whose ``before`` preceding sentences of the same input were
    written already: its sentences numbered ``before + 1`` on in their ``# sent_id``, as one tokenizer
    run over the whole input numbers them, and ``# newdoc`` kept only on the input's first sentence.
    Warnings that name a sentence by its sent_id name the new one."""
    if result.numbers is None:
        return result.text, result.warnings
    text = result.text
    out: List[str] = []
    last = 0
    new = {}
    for k, (at, number) in enumerate(result.numbers):
        out.append(text[last:at])
        out.append(str(before + k + 1))
        last = at + len(str(number))
        new[number] = before + k + 1
    out.append(text[last:])
    joined = "".join(out)
    if before and joined.startswith("# newdoc\n"):
        joined = joined[len("# newdoc\n"):]
    warnings = [_SENTENCE.sub(lambda m: f"sentence {m.group(1)}-{new.get(int(m.group(2)), m.group(2))}", w)
                for w in result.warnings]
    return joined, warnings
