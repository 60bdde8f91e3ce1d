"""Running stages over files: one stage as a filter, or the whole chain in one process.

``nlpipe annotate`` reads each input (raw text, or CoNLL-U when tokenize is not asked or the input
looks like CoNLL-U) and cuts it into chunks of about ``batch`` sentences. A chunk of CoNLL-U is kept
as bytes until it is annotated, so that the same chunk can be parsed and annotated here or in a
worker process (:mod:`nlpipe.runtime.parallel`) or on a Dask worker (:mod:`nlpipe.runtime.distributed`), with the same
result: :func:`process_chunk` is the one place where a chunk is parsed, annotated and written.

Each stage sees a chunk's sentences as one iterable, so neural stages batch across them. When a
stage reads whole documents (``stage.document`` is true), chunks end only where a ``# newdoc``
starts (up to ``DOC_CAP`` batches), so the stage sees the same documents as in a shell pipe.

A stage may declare ``max_len`` (words): a longer sentence is annotated window by window when the
stage declares ``windowable = True`` (its columns do not refer to word IDs), otherwise it is passed
through unannotated by that stage with a warning naming its sent_id.
"""
from __future__ import annotations

import io
import os
import sys
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from nlpipe.io.conllu import DEPS, HEAD, ID, Sentence, boundary, read_conllu, write_conllu
from nlpipe.io.inputs import decode, open_input, sniff
from nlpipe.io.outputs import check_output, is_output_dir, open_output, plan_outputs
from nlpipe.errors import EncodingError, InputError, NlpipeError
from nlpipe.runtime.progress import Progress
from nlpipe.registry import DEFAULT_MODELS, MODELS_DIR, STAGES, load_stage, resolve_model
from nlpipe.stages.base import COLUMNS

CHUNK_SENTENCES = 256
DOC_CAP = 16  # a document-aligned chunk is cut anyway after this many batches
_BLANK = (b"\n", b"\r\n")

Warn = Callable[[str], None]


# ----------------------------------------------------------------------------------------------
# Single-stage filters (the reference that `annotate` must match byte for byte)

def load_tokenizer(model: Optional[str] = None, method: Optional[str] = None, **options: Any) -> Any:
    if method is not None and model is None:
        model = {"rules": "tokenize-rules-ewt", "trained": "tokenize-char-ewt"}[method]
    return load_stage("tokenize", model, **options)


def run_tokenize(input: str, output: str, model: Optional[str] = None, method: Optional[str] = None,
                 encoding_errors: str = "strict") -> int:
    """Tokenize a raw-text file into CoNLL-U; return the number of sentences written."""
    check_output(output)
    tokenizer = load_tokenizer(model, method)
    stream, name = open_input(input, encoding_errors)
    try:
        with open_output(output) as out:
            return write_conllu(tokenizer.tokenize(stream, name), out)
    except EncodingError as e:
        raise e.hint("use --encoding-errors replace to go on") from None
    finally:
        if name != "<stdin>":
            stream.close()


def run_stage(stage: str, input: str, output: str, model: Optional[str] = None, *, skip_bad: bool = False,
              batch: int = CHUNK_SENTENCES, **options: Any) -> int:
    """Apply one stage to a CoNLL-U file; return the number of sentences written.

    The filter runs the same chunked path as ``annotate`` (length limits included), so a shell
    pipe of filters and ``annotate`` give the same bytes by construction.
    """
    spec = PipelineSpec([stage], {stage: model} if model is not None else {}, dict(options), skip_bad=skip_bad)
    check_output(output)
    with Annotator(spec, batch=batch) as ann, open_output(output) as out:
        return ann.run([input], out, Progress(stage, enabled=False))["sentences"]


def available_stages() -> List[str]:
    """Stages that have a shipped default model, in pipeline order."""
    return [s for s in STAGES
            if any((MODELS_DIR / m / "config.json").is_file() for m in DEFAULT_MODELS.get(s, []))]


def resolve_stages(stages: Optional[Iterable[str]]) -> List[str]:
    """Check stage names and put them in pipeline order (default: every stage with a shipped model)."""
    chosen = list(stages) if stages else available_stages()
    unknown = [s for s in chosen if s not in STAGES]
    if unknown:
        raise NlpipeError(f"unknown stage(s) {', '.join(unknown)} (expected some of: {', '.join(STAGES)})")
    return sorted(set(chosen), key=STAGES.index)


# ----------------------------------------------------------------------------------------------
# --keep-existing: is a sentence's column for a stage already filled?

def is_filled(stage: Any, sentence: Sentence) -> bool:
    """Whether ``sentence`` already has ``stage``'s columns (its ``columns``, else those that
    :data:`nlpipe.stages.base.COLUMNS` declares for its name)."""
    columns = getattr(stage, "columns", None) or COLUMNS.get(getattr(stage, "name", ""))
    return columns is not None and columns.filled(sentence)


# ----------------------------------------------------------------------------------------------
# Sentences longer than a stage's limit

def describe(sentence: Sentence, path: str) -> str:
    """``sentence <sent_id> (file:line)`` for messages."""
    where = f"{path}:{sentence.line}" if sentence.line else path
    sid = sentence.sent_id
    return f"sentence {sid} ({where})" if sid is not None else f"sentence at {where}"


def annotate_windowed(stage: Any, sentences: List[Sentence], limit: int) -> None:
    """Annotate each sentence in windows of at most ``limit`` words, in one call of the stage.

    Each window is a copy of the words renumbered from 1 (HEAD and DEPS blanked, since they refer to
    IDs); afterwards every column but ID, HEAD and DEPS is copied back to the sentence's words.
    """
    pieces: List[Tuple[List[List[str]], Sentence]] = []
    for sent in sentences:
        words = sent.words
        for a in range(0, len(words), limit):
            part = words[a:a + limit]
            rows = []
            for k, w in enumerate(part, 1):
                r = list(w)
                r[ID], r[HEAD], r[DEPS] = str(k), "_", "_"
                rows.append(r)
            pieces.append((part, Sentence([], rows)))
    done = list(stage.annotate([win for _, win in pieces]))
    if len(done) != len(pieces):
        raise RuntimeError(f"stage {stage.name} returned {len(done)} sentences for {len(pieces)}")
    keep = (ID, HEAD, DEPS)
    for (part, _), win in zip(pieces, done):
        for w, r in zip(part, win.words):
            for c in range(len(w)):
                if c not in keep:
                    w[c] = r[c]


# ----------------------------------------------------------------------------------------------
# The loaded chain

@dataclass
class PipelineSpec:
    """What to load: picklable, so worker processes and Dask workers build the same pipeline."""

    stages: List[str]
    models: Dict[str, str] = field(default_factory=dict)
    options: Dict[str, Any] = field(default_factory=dict)
    keep_existing: bool = False
    skip_bad: bool = False

    def key(self) -> str:
        return repr((self.stages, sorted(self.models.items()), sorted(self.options.items()),
                     self.keep_existing, self.skip_bad))


def chain_stages(spec: PipelineSpec) -> List[str]:
    """The stages to load for a chain, tokenize excluded. ``predicates`` is dropped before an ``srl``
    stage with the same model: srl predicts the same predicates itself, so the model runs once."""
    stages = [s for s in spec.stages if s != "tokenize"]
    if "predicates" in stages and "srl" in stages and spec.models.get("predicates") == spec.models.get("srl"):
        stages.remove("predicates")
    return stages


def chain_options(stage: str, spec: PipelineSpec) -> Dict[str, Any]:
    """Options a stage takes from its place in the chain: ``srl`` after ``parse`` attends to that
    parse (the shell equivalent is ``nlpipe parse | nlpipe srl --parse-from-input``)."""
    if stage == "srl" and "parse" in spec.stages and "parse_from_input" not in spec.options:
        return {"parse_from_input": True}
    return {}


def shell_equivalent(spec: PipelineSpec) -> List[List[str]]:
    """The single-stage commands (``nlpipe`` arguments, tokenize excluded) whose shell pipe writes
    the same bytes as the chain: ``[["pos"], ["parse"], ["srl", "--parse-from-input"]]``."""
    commands = []
    for stage in chain_stages(spec):
        args = [stage] + (["--model", spec.models[stage]] if stage in spec.models else [])
        for key, value in chain_options(stage, spec).items():
            if value is True:
                args.append("--" + key.replace("_", "-"))
        commands.append(args)
    return commands


class Pipeline:
    """Loaded stages (tokenize excluded) that annotate chunks of sentences in place."""

    def __init__(self, annotators: List[Any], keep_existing: bool = False, skip_bad: bool = False):
        self.annotators = annotators
        self.keep_existing = keep_existing
        self.skip_bad = skip_bad

    @classmethod
    def load(cls, spec: PipelineSpec) -> "Pipeline":
        annotators = [load_stage(s, spec.models.get(s), **spec.options, **chain_options(s, spec))
                      for s in chain_stages(spec)]
        return cls(annotators, spec.keep_existing, spec.skip_bad)

    @property
    def document(self) -> bool:
        """Whether some stage reads whole documents (chunks then end at ``# newdoc``)."""
        return any(getattr(a, "document", False) for a in self.annotators)

    def annotate(self, sentences: List[Sentence], path: str, warn: Warn) -> None:
        """Run every stage over ``sentences`` (replaced in the list if a stage yields new objects)."""
        try:
            for stage in self.annotators:
                self._run_stage(stage, sentences, path, warn)
        except InputError as e:   # a stage names no file: this is the file it read
            raise e.at(path) from None

    def _run_stage(self, stage: Any, sentences: List[Sentence], path: str, warn: Warn) -> None:
        limit = getattr(stage, "max_len", None)
        todo: List[int] = []
        long: List[int] = []
        for i, s in enumerate(sentences):
            if self.keep_existing and is_filled(stage, s):
                continue
            (long if limit is not None and len(s.words) > limit else todo).append(i)
        if todo:
            out = list(stage.annotate(sentences[i] for i in todo))
            if len(out) != len(todo):
                raise RuntimeError(f"stage {stage.name} returned {len(out)} sentences for {len(todo)}")
            for i, s in zip(todo, out):
                sentences[i] = s
        if long:
            if getattr(stage, "windowable", False):
                annotate_windowed(stage, [sentences[i] for i in long], limit)
                for i in long:
                    warn(f"{describe(sentences[i], path)}: {len(sentences[i].words)} words, more than "
                         f"the {stage.name} model's limit of {limit}; annotated in windows")
            else:
                for i in long:
                    warn(f"{describe(sentences[i], path)}: {len(sentences[i].words)} words, more than "
                         f"the {stage.name} model's limit of {limit}; passed through without {stage.name}")


# ----------------------------------------------------------------------------------------------
# Chunks: what one call of process_chunk annotates

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
                newdoc = newdoc or boundary(line.decode("utf-8", "replace")) == "newdoc"
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
        sents = list(read_conllu(io.StringIO(text, newline="\n"), path))
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


# ----------------------------------------------------------------------------------------------
# Inputs

class _Prepend(io.RawIOBase):
    """A binary stream: ``head`` bytes, then the rest of ``rest``; counts the bytes read."""

    def __init__(self, head: bytes, rest: IO[bytes]):
        super().__init__()
        self._head = head
        self._rest = rest
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
        else:
            data = self._rest.read1(len(b)) if hasattr(self._rest, "read1") else self._rest.read(len(b))
            n = len(data)
            b[:n] = data
        self.read_bytes += n
        return n


class Source:
    """One input file (or stdin), its format decided from its first lines (:func:`sniff`) when
    ``detect`` (else CoNLL-U); an empty input is CoNLL-U with no sentences."""

    def __init__(self, path: str, detect: bool):
        self.stream, self.name = open_input(path)
        self.buffer: IO[bytes] = self.stream.buffer
        self.size: Optional[int] = None
        if self.name != "<stdin>":
            try:
                self.size = os.fstat(self.buffer.fileno()).st_size
            except (OSError, ValueError, io.UnsupportedOperation):
                pass
        head: List[bytes] = []
        self.is_conllu = True
        if detect:
            kind, head = sniff(self.buffer)
            self.is_conllu = kind in ("conllu", "empty")
        self.head = head

    def chunks(self, tokenizer: Any, batch: int, document: bool) -> Iterator[Chunk]:
        if self.is_conllu:
            lines = self._lines()
            return conllu_chunks(lines, self.name, batch, document)
        raw = _Prepend(b"".join(self.head), self.buffer)
        text = io.TextIOWrapper(io.BufferedReader(raw, 1 << 16), encoding="utf-8", newline="\n")
        return sentence_chunks(tokenizer.tokenize(text, self.name), self.name, batch, document,
                               lambda: raw.read_bytes)

    def _lines(self) -> Iterator[bytes]:
        yield from self.head
        yield from self.buffer

    def close(self) -> None:
        if self.name != "<stdin>":
            self.stream.close()


def _total_size(inputs: List[str]) -> Optional[int]:
    total = 0
    for p in inputs:
        if p == "-" or not os.path.isfile(p):
            return None
        total += os.path.getsize(p)
    return total


# ----------------------------------------------------------------------------------------------
# Running

def print_warning(message: str) -> None:
    sys.stderr.write(f"nlpipe: warning: {message}\n")


class InlineRunner:
    """Annotates chunks in this process (``--jobs 1``)."""

    def __init__(self, spec: PipelineSpec):
        self.pipeline = Pipeline.load(spec)
        self.document = self.pipeline.document

    def map(self, chunks: Iterable[Chunk]) -> Iterator[ChunkResult]:
        for c in chunks:
            yield process_chunk(self.pipeline, c)

    def close(self) -> None:
        pass

    def terminate(self) -> None:
        pass


def make_runner(spec: PipelineSpec, jobs: int) -> Any:
    if jobs <= 1:
        return InlineRunner(spec)
    from nlpipe.runtime.parallel import ChunkPool

    return ChunkPool(spec, jobs)


class Annotator:
    """Runs a :class:`PipelineSpec` over inputs with ``jobs`` processes; reusable across files."""

    def __init__(self, spec: PipelineSpec, jobs: int = 1, batch: int = CHUNK_SENTENCES,
                 warn: Optional[Warn] = None):
        if batch < 1:
            raise NlpipeError(f"--batch must be at least 1, not {batch}")
        if jobs < 1:
            raise NlpipeError(f"--jobs must be at least 1, not {jobs}")
        self.spec = spec
        self.batch = batch
        self.warn = warn or print_warning
        self.wants_tokenize = "tokenize" in spec.stages
        self._tokenizer: Any = None
        self.runner = make_runner(spec, jobs)
        if jobs > 1:
            try:
                if self.wants_tokenize:  # while the workers load their models
                    self.tokenizer()
                self.runner.document  # a model error in a worker shows before any output is opened
            except BaseException:
                self.runner.terminate()
                raise

    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer = load_stage("tokenize", self.spec.models.get("tokenize"), **self.spec.options)
        return self._tokenizer

    def run(self, inputs: List[str], out: IO[str], progress: Progress, base: int = 0) -> Dict[str, int]:
        """Annotate ``inputs`` one after another into ``out``; ``base``: bytes of earlier inputs."""
        stats = {"sentences": 0, "tokens": 0}
        for path in inputs:
            src = Source(path, detect=self.wants_tokenize)
            try:
                tokenizer = None if src.is_conllu else self.tokenizer()
                for r in self.runner.map(src.chunks(tokenizer, self.batch, self.runner.document)):
                    if r.warnings:
                        progress.clear()
                    for w in r.warnings:
                        self.warn(w)
                    out.write(r.text)
                    stats["sentences"] += r.sentences
                    stats["tokens"] += r.tokens
                    progress.update(r.sentences, r.tokens, position=base + r.position)
            finally:
                src.close()
            base += src.size or 0
        return stats

    def run_file(self, src: str, dst: str, progress: Optional[Progress] = None) -> Dict[str, int]:
        """Annotate one file into ``dst``, written atomically."""
        with open_output(dst) as out:
            return self.run([src], out, progress or Progress("annotate", enabled=False))

    def close(self) -> None:
        self.runner.close()

    def __enter__(self) -> "Annotator":
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        if kind is None:
            self.runner.close()
        else:
            self.runner.terminate()


def run_annotate(inputs: List[str], output: str, stages: Optional[List[str]] = None, *,
                 models: Optional[Dict[str, str]] = None, keep_existing: bool = False, skip_bad: bool = False,
                 jobs: int = 1, batch: int = CHUNK_SENTENCES, progress: Optional[bool] = None,
                 **options: Any) -> Dict[str, int]:
    """Run ``stages`` in one process (or ``jobs`` worker processes) over ``inputs``.

    ``output`` is a file (``-``: stdout) receiving all inputs in order, or a directory (an existing
    one, or a path ending in ``/``) receiving one ``<name>.conllu`` per input; there, files already
    present are finished work and are not redone. Returns counts of sentences and tokens.
    """
    inputs = inputs or ["-"]
    spec = PipelineSpec(resolve_stages(stages), dict(models or {}), dict(options), keep_existing, skip_bad)
    for s in spec.models:
        if s not in spec.stages:
            raise NlpipeError(f"--model {s}=...: stage {s} is not among the stages run ({','.join(spec.stages)})")
    for s in spec.stages:
        resolve_model(s, spec.models.get(s))  # a missing model fails before any output
    if is_output_dir(output):
        pairs = plan_outputs(inputs, output)
        todo = [(s, d) for s, d in pairs if not os.path.exists(d)]
        if len(todo) < len(pairs):
            print_warning(f"{len(pairs) - len(todo)} of {len(pairs)} output files exist in {output}; not redone")
        stats = {"sentences": 0, "tokens": 0, "files": len(todo)}
        with Annotator(spec, jobs, batch) as ann, \
                Progress("annotate", _total_size([s for s, _ in todo]), "sentences", "tokens", progress) as prog:
            base = 0
            for src, dst in todo:
                with open_output(dst) as out:
                    done = ann.run([src], out, prog, base)
                base += os.path.getsize(src)
                stats["sentences"] += done["sentences"]
                stats["tokens"] += done["tokens"]
        return stats
    check_output(output)
    with Annotator(spec, jobs, batch) as ann, open_output(output) as out, \
            Progress("annotate", _total_size(inputs), "sentences", "tokens", progress) as prog:
        return ann.run(inputs, out, prog)
