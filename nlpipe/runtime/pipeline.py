"""Running stages over files: one stage as a filter, or the whole chain in one process.

``nlpipe annotate`` reads each input (raw text, or CoNLL-U when tokenize is not asked or the input
looks like CoNLL-U), cuts it into chunks (:mod:`nlpipe.runtime.chunks`) and hands them to the loaded
chain (:mod:`nlpipe.runtime.chain`) here or in worker processes (:mod:`nlpipe.runtime.parallel`);
outputs are checked before any work starts and written whole (:mod:`nlpipe.io.outputs`).
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Optional

from nlpipe.errors import EncodingError, InputError, NlpipeError
from nlpipe.io.conllu import Sentence, parse_string, read_conllu
from nlpipe.io.inputs import (DEFAULT_ENCODING, ENCODING_HINT, binary_lines, check_encoding, check_input, codec_name,
                              content_lines, open_input, sniff)
from nlpipe.io.outputs import check_output, is_output_dir, open_output, plan_outputs
from nlpipe.io.render import FORMATS, Renderer
from nlpipe.io.model_dir import UNDETERMINED
from nlpipe.io.scripts import ScriptCheck
from nlpipe.registry import check_probs, check_stage_input, load_stage, model_language, resolve_model
from nlpipe.runtime.chain import Pipeline, PipelineSpec, Warn, chain_tokenizer, resolve_stages, without_probs
from nlpipe.runtime.chunks import (CHUNK_SENTENCES, TEXT_CHARS, Chunk, ChunkResult, conllu_chunks, process_chunk,
                                   renumbered, sentence_chunks, sentences_in, text_chunks)
from nlpipe.runtime.progress import Progress
from nlpipe.stages.base import usable_cpus
from nlpipe.stages.tokenize import TEXT_MODES, SpaceTokenizer

# How an input is read (``--input``): ``auto`` tells CoNLL-U from raw text by the first lines; the
# text modes are those of the tokenizer (raw, sentences: one a line, tokens: one sentence a line,
# tokens split at spaces); ``conllu`` is read as it is.
INPUT_MODES = ("auto",) + TEXT_MODES + ("conllu",)
TOKENIZER_METHODS = {"trained": "tokenize-char-ewt", "rules": "tokenize-rules-ewt"}
METHOD_ARCHS = {"trained": "char-segmenter.v1", "rules": "punkt-treebank.v1"}

# ----------------------------------------------------------------------------------------------
# Single-stage filters (the reference that `annotate` must match byte for byte)

def load_tokenizer(model: Optional[str] = None, method: Optional[str] = None, **options: Any) -> Any:
    """The tokenizer of ``model``, else the shipped one of ``method``, else the default; a model
    folder given with a ``method`` that is not its own is refused."""
    from nlpipe.io.model_dir import read_config

    if method is not None:
        if model is None:
            model = TOKENIZER_METHODS[method]
        else:
            arch = read_config(resolve_model("tokenize", model), "tokenize")["arch"]
            if arch != METHOD_ARCHS[method]:
                raise NlpipeError(f"--method {method} and --model {model} disagree: the model is a {arch} "
                                  f"tokenizer; give one of them")
    return load_stage("tokenize", model, **options)


def run_tokenize(input: str, output: str, model: Optional[str] = None, method: Optional[str] = None,
                 encoding_errors: str = "strict", mode: str = "auto", output_format: str = "conllu",
                 probs: bool = False, jobs: Optional[int] = None, encoding: str = DEFAULT_ENCODING) -> int:
    """Tokenize a raw-text file into CoNLL-U, or ``output_format`` (``mode``: see :data:`INPUT_MODES`;
    CoNLL-U input is written as it is); return the number of sentences written. ``encoding``: the
    input's (a file is decoded whole before the model loads, unless ``encoding_errors`` is
    ``replace``); the output is UTF-8. ``probs``: MISC
    ``SentEndProb`` on the last token of each sentence the trained tokenizer finds in raw text.
    ``jobs``: worker processes tokenizing whole paragraphs of a file (None: :func:`auto_jobs`, a
    sentence of raw text taken as :data:`~nlpipe.runtime.chunks.TEXT_CHARS` bytes; stdin is read in
    one process), with the bytes of one process."""
    encoding = codec_name(encoding)
    check_output(output, [input])
    check_input(input, encoding=encoding)
    if jobs is not None and jobs < 1:
        raise NlpipeError(f"--jobs must be at least 1, not {jobs}")
    if encoding_errors == "strict":   # text that is not in its encoding fails before the model loads
        check_encoding(input, encoding)
    src = Source(input, mode, encoding_errors, encoding)
    try:
        # CoNLL-U passes through untokenized; an empty input still loads (and so checks) the model
        passed = src.mode == "tokens" or (src.mode == "conllu" and not src.empty)
        options = {"probs": True} if probs else {}
        tokenizer = None if passed else load_tokenizer(model, method, **options)
        if jobs is None:
            jobs = auto_jobs(input, CHUNK_SENTENCES, "cpu", TEXT_CHARS)
        if jobs > 1 and src.mode in ("raw", "sentences") and input != "-" and os.path.isfile(input):
            src.close()   # the workers' run reads the file again
            if model is None and method is not None:
                model = TOKENIZER_METHODS[method]
            spec = PipelineSpec(["tokenize"], {"tokenize": model} if model is not None else {}, options)
            with Annotator(spec, jobs, input_mode=src.mode, encoding_errors=encoding_errors, encoding=encoding,
                           tokenizer=tokenizer) as ann, open_output(output, [input]) as out:
                return ann.run([input], rendered(out, output_format), Progress("tokenize", enabled=False))["sentences"]
        check = ScriptCheck(getattr(tokenizer, "language", None), src.name)
        with open_output(output, [input]) as out:
            return Renderer(out, output_format).write_sentences(checked(src.sentences(tokenizer), check))
    except EncodingError as e:
        raise e.hint(ENCODING_HINT) from None
    finally:
        src.close()


def checked(sentences: Iterable[Sentence], check: ScriptCheck) -> Iterator[Sentence]:
    """``sentences``, their words fed to ``check`` (a warning printed when it has one)."""
    for s in sentences:
        if not check.done:
            _warn_if(check.feed(" ".join(s.forms())))
        yield s
    _warn_if(check.finish())


def _warn_if(message: Optional[str]) -> None:
    if message:
        print_warning(message)


def conllu_forms(text: str) -> str:
    """The FORM column of the token lines of a piece of CoNLL-U, joined by spaces."""
    return " ".join(line.split("\t", 2)[1] for line in text.split("\n") if line[:1].isdigit() and "\t" in line)


def run_stage(stage: str, input: str, output: str, model: Optional[str] = None, *, skip_bad: bool = False,
              batch: int = CHUNK_SENTENCES, output_format: str = "conllu", jobs: Optional[int] = None,
              **options: Any) -> int:
    """Apply one stage to a CoNLL-U file; return the number of sentences written.

    The filter runs the same chunked path as ``annotate`` (length limits included), so a shell
    pipe of filters and ``annotate`` give the same bytes by construction. ``jobs``: worker
    processes (None: :func:`auto_jobs`).
    """
    spec = PipelineSpec([stage], {stage: model} if model is not None else {}, dict(options), skip_bad=skip_bad)
    check_output(output, [input])
    check_format(output_format, output, skip_bad)
    check_input(input, nul=not skip_bad)
    if options.get("probs"):
        check_probs(stage, model)
    if not skip_bad:  # a wrong input is refused before the model loads
        try:
            check_stage_input(stage, first_sentences(input), **options)
        except InputError as e:
            raise e.at(input) from None
    if jobs is None:
        jobs = auto_jobs(input, batch, options.get("device", "cpu"))
    with Annotator(spec, jobs=jobs, batch=batch) as ann, open_output(output, [input]) as out:
        return ann.run([input], rendered(out, output_format), Progress(stage, enabled=False))["sentences"]


# An estimate of a CoNLL-U sentence's bytes (en_ewt tagged: about 900), to tell from a file's size how
# many chunks it makes.
SENTENCE_BYTES = 1000


def auto_jobs(path: str, batch: int, device: str, sentence_bytes: Optional[int] = None) -> int:
    """Worker processes for a filter by default: on the CPU, one per core, up to the chunks that
    the input file makes (a chunk is never split: one chunk keeps one process, whose batches then
    run in threads; ``sentence_bytes``: a sentence's estimated size in the file, default
    :data:`SENTENCE_BYTES`); 1 for a stream, whose size is unknown, or another device. Processes
    keep each core busy where threads share one interpreter lock."""
    if device != "cpu" or path == "-" or not os.path.isfile(path):
        return 1
    chunks = os.path.getsize(path) // (batch * (sentence_bytes or SENTENCE_BYTES))
    return max(1, min(usable_cpus(), chunks))


# ----------------------------------------------------------------------------------------------
# Inputs

FIRST_LINES = 10_000  # lines of a file read to find its first sentence with words


def first_sentences(path: str) -> List[Any]:
    """The first sentences of a CoNLL-U file, up to its first one with words, read ahead so that a
    stage can refuse a wrong input before its model loads (none for stdin, which cannot be read twice,
    or for a file that is not UTF-8 CoNLL-U: the run itself reports those)."""
    if path == "-" or not os.path.isfile(path):
        return []
    lines: List[str] = []
    try:
        with open(path, encoding="utf-8", newline="\n") as f:
            for _, line in zip(range(FIRST_LINES), f):
                lines.append(line)
                if not line.strip() and any(x[:1].isdigit() for x in lines):
                    break
        return parse_string("".join(lines), path)
    except (OSError, UnicodeDecodeError, InputError):
        return []

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


def check_input_mode(mode: str) -> None:
    """An :class:`NlpipeError` unless ``mode`` is one of :data:`INPUT_MODES`."""
    if mode not in INPUT_MODES:
        raise NlpipeError(f"unknown input mode '{mode}' (expected one of: {', '.join(INPUT_MODES)})")


class Source:
    """One input file (or stdin) read as ``mode`` says (:data:`INPUT_MODES`); ``auto``: CoNLL-U or
    raw text, decided from its first lines (:func:`sniff`); an empty input is CoNLL-U with no sentences.
    Input in another ``encoding`` than UTF-8 is read as UTF-8 bytes decoded from it (its ``size`` and
    the bytes read, for progress, are then estimates)."""

    def __init__(self, path: str, mode: str = "auto", encoding_errors: str = "strict",
                 encoding: str = DEFAULT_ENCODING):
        check_input_mode(mode)
        self.stream, self.name = open_input(path, encoding_errors, encoding)
        self.path = path
        self.buffer: IO[bytes] = self.stream.buffer
        self.encoding_errors = encoding_errors
        self.size: Optional[int] = None
        if self.name != "<stdin>":
            try:
                self.size = os.fstat(self.buffer.fileno()).st_size
            except (OSError, ValueError, io.UnsupportedOperation):
                pass
        head: List[bytes] = []
        # CoNLL-U lines are cut into chunks as bytes: a NUL byte is reported (or, with --skip-bad,
        # passed through) where a chunk is parsed; only the length of a line is bounded here
        self.lines = binary_lines(self.buffer, self.name, nul=False)
        self.empty = False   # an input of no sentences at all (``auto`` only)
        if mode == "auto":
            kind, head = sniff(self.lines)
            mode = "conllu" if kind in ("conllu", "empty") else "raw"
            self.empty = kind == "empty"
        self.mode = mode
        self.is_conllu = mode == "conllu"
        self.head = head
        self._raw: Optional[_Prepend] = None

    def sentences(self, tokenizer: Any) -> Iterator[Sentence]:
        """The input's sentences: read as CoNLL-U, or cut by ``tokenizer`` (not needed for ``tokens``)."""
        if self.is_conllu:
            return read_conllu(self._text(), self.name)
        if self.mode == "tokens":
            tokenizer = SpaceTokenizer()
        return tokenizer.tokenize(self._text(), self.name, self.mode)

    def chunks(self, tokenizer: Any, batch: int, document: bool, jobs: int = 1) -> Iterator[Chunk]:
        """The input in chunks of ``batch`` sentences, for ``jobs`` workers (CoNLL-U files: cut so that they
        finish together, see :func:`~nlpipe.runtime.chunks.conllu_chunks`)."""
        if self.is_conllu:
            lines = self._lines()
            sentences = sentences_in(self.path, self.size) if self.size and jobs > 1 and not document else None
            return conllu_chunks(lines, self.name, batch, document, sentences=sentences, parts=jobs)
        sentences = self.sentences(tokenizer)
        return sentence_chunks(sentences, self.name, batch, document, self._read_bytes)

    def text_chunks(self, tokenizer: Callable[[], Any], batch: int, jobs: int = 1) -> Iterator[Chunk]:
        """Raw text in chunks of whole paragraphs, for ``jobs`` workers to tokenize (see
        :func:`~nlpipe.runtime.chunks.text_chunks`); lines are read and checked here."""
        lines = (line for _, line in content_lines(self._text(), self.name))
        return text_chunks(lines, self.name, batch, self.mode, tokenizer, self._read_bytes, total=self.size,
                           parts=jobs)

    def _read_bytes(self) -> int:
        """Input bytes read so far as text (0 before :meth:`_text`)."""
        return self._raw.read_bytes if self._raw else 0

    def _text(self) -> IO[str]:
        """The input as text (the lines read to decide its format first)."""
        self._raw = _Prepend(b"".join(self.head), self.buffer)
        return io.TextIOWrapper(io.BufferedReader(self._raw, 1 << 16), encoding="utf-8",
                                errors=self.encoding_errors, newline="\n")

    def _lines(self) -> Iterator[bytes]:
        yield from self.head
        yield from self.lines

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


def max_jobs() -> int:
    """The most ``--jobs`` accepted: twice the cores this process may use (at least 4)."""
    return max(4, 2 * usable_cpus())


def make_runner(spec: PipelineSpec, jobs: int) -> Any:
    if jobs <= 1:
        return InlineRunner(spec)
    from nlpipe.runtime.parallel import ChunkPool

    return ChunkPool(spec, jobs)


class Annotator:
    """Runs a :class:`PipelineSpec` over inputs with ``jobs`` processes; reusable across files."""

    def __init__(self, spec: PipelineSpec, jobs: int = 1, batch: int = CHUNK_SENTENCES,
                 warn: Optional[Warn] = None, input_mode: str = "auto", encoding_errors: str = "strict",
                 tokenizer: Any = None, encoding: str = DEFAULT_ENCODING):
        """``tokenizer``: the chain's tokenize stage, already loaded (else loaded here when needed)."""
        check_input_mode(input_mode)
        if batch < 1:
            raise NlpipeError(f"--batch must be at least 1, not {batch}")
        if jobs < 1:
            raise NlpipeError(f"--jobs must be at least 1, not {jobs}")
        if jobs > max_jobs():
            raise NlpipeError(f"--jobs {jobs}: at most {max_jobs()} on this machine (each worker loads "
                              "every model; more workers than cores only add memory)")
        self.spec = spec
        self.jobs = jobs
        self.batch = batch
        self.warn = warn or print_warning
        self.wants_tokenize = "tokenize" in spec.stages
        # without tokenize in the chain, input is CoNLL-U unless a text mode is asked for
        self.input_mode = "conllu" if input_mode == "auto" and not self.wants_tokenize else input_mode
        self._tokenizer: Any = tokenizer
        self.encoding_errors = encoding_errors
        self.encoding = encoding
        self.runner = make_runner(spec, jobs)
        languages = {model_language(resolve_model(s, spec.models.get(s))) for s in spec.stages} - {UNDETERMINED}
        self.language = next(iter(languages)) if len(languages) == 1 else None
        try:
            if jobs > 1:
                self.runner.document  # a model error in a worker shows before any output is opened
            # with --jobs, the workers tokenize raw text unless a stage reads whole documents
            if self.input_mode in ("auto", "raw", "sentences") and (jobs == 1 or self.runner.document):
                self.tokenizer()
        except BaseException:
            self.runner.terminate()
            raise

    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer = chain_tokenizer(self.spec)
        return self._tokenizer

    def run(self, inputs: List[str], out: IO[str], progress: Progress, base: int = 0) -> Dict[str, int]:
        """Annotate ``inputs`` one after another into ``out``; ``base``: bytes of earlier inputs."""
        stats = {"sentences": 0, "tokens": 0}
        for path in inputs:
            src = Source(path, self.input_mode, self.encoding_errors, self.encoding)
            check = ScriptCheck(self.language, src.name)
            try:
                if self.jobs > 1 and src.mode in ("raw", "sentences") and not self.runner.document:
                    chunks = src.text_chunks(self.tokenizer, self.batch, self.jobs)   # tokenized by the workers
                else:
                    tokenizer = None if src.mode in ("conllu", "tokens") else self.tokenizer()
                    chunks = src.chunks(tokenizer, self.batch, self.runner.document, self.jobs)
                written = 0   # sentences of this input
                for r in self.runner.map(chunks):
                    text, warnings = renumbered(r, written)
                    written += r.sentences
                    if warnings:
                        progress.clear()
                    for w in warnings:
                        self.warn(w)
                    out.write(text)
                    if not check.done:
                        self._warn_once(check.feed(conllu_forms(text)), progress)
                    stats["sentences"] += r.sentences
                    stats["tokens"] += r.tokens
                    progress.update(r.sentences, r.tokens, position=base + r.position)
                self._warn_once(check.finish(), progress)
            finally:
                src.close()
            base += src.size or 0
        return stats

    def _warn_once(self, message: Optional[str], progress: Progress) -> None:
        if message:
            progress.clear()
            self.warn(message)

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


def check_format(output_format: str, output: str, skip_bad: bool) -> None:
    """Refuse an output format that cannot go with the other options, before any work."""
    if output_format not in FORMATS:
        raise NlpipeError(f"unknown output format '{output_format}' (expected one of: {', '.join(FORMATS)})")
    if output_format == "conllu":
        return
    if skip_bad:
        raise NlpipeError("--skip-bad passes malformed input through as it is: only --to conllu can hold it")
    if is_output_dir(output):
        raise NlpipeError(f"-o {output}: a folder receives one NAME.conllu per input; --to {output_format} "
                          f"writes to a file or stdout")


def rendered(out: IO[str], output_format: str) -> Any:
    """``out`` itself for CoNLL-U, else a :class:`Renderer` writing ``output_format`` into it."""
    return out if output_format == "conllu" else Renderer(out, output_format)


def run_annotate(inputs: List[str], output: str, stages: Optional[List[str]] = None, *,
                 models: Optional[Dict[str, str]] = None, keep_existing: bool = False, skip_bad: bool = False,
                 jobs: int = 1, batch: int = CHUNK_SENTENCES, progress: Optional[bool] = None,
                 input_mode: str = "auto", overwrite: bool = False, output_format: str = "conllu",
                 encoding_errors: str = "strict", encoding: str = DEFAULT_ENCODING,
                 **options: Any) -> Dict[str, int]:
    """Run ``stages`` in one process (or ``jobs`` worker processes) over ``inputs``, read as
    ``input_mode`` says (:data:`INPUT_MODES`), in ``encoding`` (``encoding_errors``: ``strict`` or
    ``replace``, as for :func:`run_tokenize`; input files are decoded whole before the models load,
    unless ``replace`` or ``skip_bad``, which passes CoNLL-U sentences that are not UTF-8 through).

    ``output`` is a file (``-``: stdout) receiving all inputs in order, or a directory (an existing
    one, or a path ending in ``/``) receiving one ``<name>.conllu`` per input; there, files already
    present are finished work and are not redone (no model is loaded when all are), unless
    ``overwrite``. ``output_format``: see :data:`nlpipe.io.render.FORMATS`. Returns counts of
    sentences and tokens.
    """
    inputs = inputs or ["-"]
    encoding = codec_name(encoding)
    check_format(output_format, output, skip_bad)
    spec = PipelineSpec(resolve_stages(stages), dict(models or {}), dict(options), keep_existing, skip_bad)
    if options.get("probs"):
        for stage in without_probs(spec.stages, spec.models):
            name = resolve_model(stage, spec.models.get(stage)).name
            print_warning(f"--probs: the {stage} model {name} gives no confidences; {stage} runs without them")
    for s in spec.models:
        if s not in spec.stages:
            raise NlpipeError(f"--model {s}=...: stage {s} is not among the stages run ({','.join(spec.stages)})")
    for s in spec.stages:
        resolve_model(s, spec.models.get(s))  # a missing model fails before any output
    for path in inputs:   # a compressed or binary input fails before the models load
        check_input(path, nul=not skip_bad, encoding=encoding)
    decode_check = encoding_errors == "strict" and not skip_bad
    if is_output_dir(output):
        pairs = plan_outputs(inputs, output)
        todo = [(s, d) for s, d in pairs if overwrite or not os.path.lexists(d)]
        if len(todo) < len(pairs):
            print_warning(f"{len(pairs) - len(todo)} of {len(pairs)} output files exist in {output}; not redone "
                          f"(--overwrite redoes them)")
        stats = {"sentences": 0, "tokens": 0, "files": len(todo)}
        if not todo:
            return stats
        for src, _ in todo if decode_check else ():   # so does text that is not in its encoding
            check_encoding(src, encoding)
        with _hinted(), \
                Progress("annotate", _total_size([s for s, _ in todo]), "sentences", "tokens", progress) as prog, \
                _loaded(prog, spec, jobs, batch, input_mode, encoding_errors, encoding) as ann:
            base = 0
            for src, dst in todo:
                with open_output(dst) as out:
                    done = ann.run([src], out, prog, base)
                base += os.path.getsize(src)
                stats["sentences"] += done["sentences"]
                stats["tokens"] += done["tokens"]
        return stats
    check_output(output, inputs)
    for path in inputs if decode_check else ():
        check_encoding(path, encoding)
    with _hinted(), Progress("annotate", _total_size(inputs), "sentences", "tokens", progress) as prog, \
            _loaded(prog, spec, jobs, batch, input_mode, encoding_errors, encoding) as ann, \
            open_output(output, inputs) as out:
        return ann.run(inputs, rendered(out, output_format), prog)


@contextlib.contextmanager
def _hinted() -> Iterator[None]:
    """An :class:`EncodingError` raised inside (stdin, read as it comes) with :data:`ENCODING_HINT`."""
    try:
        yield
    except EncodingError as e:
        raise e.hint(ENCODING_HINT) from None


def _loaded(progress: Progress, spec: PipelineSpec, jobs: int, batch: int, input_mode: str,
            encoding_errors: str = "strict", encoding: str = DEFAULT_ENCODING) -> Annotator:
    """An :class:`Annotator` with its models loaded, saying so on ``progress``, whose clock then starts."""
    t0 = time.perf_counter()
    progress.note(f"loading the models of {', '.join(spec.stages)} ...")
    ann = Annotator(spec, jobs, batch, input_mode=input_mode, encoding_errors=encoding_errors, encoding=encoding)
    progress.note(f"models loaded in {time.perf_counter() - t0:.1f} s")
    progress.restart()
    return ann
