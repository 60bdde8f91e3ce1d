"""Chunks: what one call of :func:`process_chunk` parses, annotates and writes.

A chunk of CoNLL-U is kept as bytes until it is annotated, so that the same chunk can be handled
here, in a worker process (:mod:`nlpipe.runtime.parallel`) or on a Dask worker
(:mod:`nlpipe.runtime.distributed`) with the same result. When a stage reads whole documents
(``stage.document`` is true), chunks end only where a ``# newdoc`` starts (up to ``DOC_CAP``
batches), so the stage sees the same documents as in a shell pipe.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, List, Optional, Union

from nlpipe.errors import InputError
from nlpipe.io.conllu import Sentence, boundary, parse_string
from nlpipe.io.inputs import decode
from nlpipe.runtime.chain import Pipeline, Warn

# The neural stages sort a chunk's sentences by length before batching: the more sentences, the less
# padding (en_ewt test raw text x2, whole default chain: 11% faster with --jobs 1 at 1024 than at 256).
CHUNK_SENTENCES = 1024
DOC_CAP = 16  # a document-aligned chunk is cut anyway after this many batches
_BLANK = (b"\n", b"\r\n")


@dataclass
class Chunk:
    """Consecutive sentences of one input: CoNLL-U ``data`` (bytes, starting at ``first_line``) or
    already built ``sentences`` (from the tokenizer); ``position``: input bytes read so far."""

    path: str
    first_line: int = 1
    data: Optional[bytes] = None
    sentences: Optional[List[Sentence]] = None
    position: int = 0
    offset: int = 0  # of ``data`` in the input, in bytes


@dataclass
class ChunkResult:
    text: str
    warnings: List[str]
    sentences: int
    tokens: int
    position: int = 0


class Verbatim:
    """Input passed through unchanged (a malformed sentence under ``--skip-bad``)."""

    __slots__ = ("text", "line")

    def __init__(self, text: str, line: int):
        self.text = text
        self.line = line

    def to_string(self) -> str:
        return self.text


Item = Union[Sentence, Verbatim]


def conllu_chunks(lines: Iterable[bytes], path: str, batch: int, document: bool = False,
                  first_line: int = 1, position: int = 0) -> Iterator[Chunk]:
    """Cut binary CoNLL-U lines into chunks of ``batch`` sentences, only between sentences.

    A sentence is a run of non-blank lines plus the blank lines after it, so that the chunks'
    bytes concatenate to the input and each parses like its part of the whole. With ``document``,
    a chunk ends only before a ``# newdoc`` sentence (or after ``DOC_CAP * batch`` sentences).
    An empty input gives no chunk. ``position``: the input's bytes before ``lines``.
    """
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
                    position: Callable[[], int] = lambda: 0) -> Iterator[Chunk]:
    """Group built sentences into chunks (same cutting rule as :func:`conllu_chunks`)."""
    buf: List[Sentence] = []
    for s in sentences:
        if len(buf) >= batch and (not document or s.starts_document or len(buf) >= DOC_CAP * batch):
            yield Chunk(path, sentences=buf, position=position())
            buf = []
        buf.append(s)
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


def process_chunk(pipe: Pipeline, chunk: Chunk) -> ChunkResult:
    """Parse (if needed), annotate and serialize one chunk; warnings are collected, not printed."""
    warnings: List[str] = []
    items: List[Item]
    items = parse_chunk(chunk, pipe.skip_bad, warnings.append) if chunk.data is not None else list(chunk.sentences or [])
    where = [i for i, x in enumerate(items) if isinstance(x, Sentence)]
    sents: List[Sentence] = [items[i] for i in where]  # type: ignore[misc]
    pipe.annotate(sents, chunk.path, warnings.append)
    for i, s in zip(where, sents):
        items[i] = s
    text = "".join(x.to_string() for x in items)
    return ChunkResult(text, warnings, len(sents), sum(len(s.words) for s in sents), chunk.position)
