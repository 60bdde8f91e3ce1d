"""Running stages over files: one stage as a filter, or the whole chain in one process.

``nlpipe annotate`` reads each input (raw text, or CoNLL-U when tokenize is not asked or the input
looks like CoNLL-U), cuts it into chunks (:mod:`nlpipe.runtime.chunks`) and hands them to the loaded
chain (:mod:`nlpipe.runtime.chain`) here or in worker processes (:mod:`nlpipe.runtime.parallel`);
outputs are checked before any work starts and written whole (:mod:`nlpipe.io.outputs`).
"""
from __future__ import annotations

import io
import os
import sys
from typing import IO, Any, Dict, Iterable, Iterator, List, Optional

from nlpipe.errors import EncodingError, NlpipeError
from nlpipe.io.conllu import write_conllu
from nlpipe.io.inputs import binary_lines, check_input, open_input, sniff
from nlpipe.io.outputs import check_output, is_output_dir, open_output, plan_outputs
from nlpipe.registry import load_stage, resolve_model
from nlpipe.runtime.chain import Pipeline, PipelineSpec, Warn, resolve_stages
from nlpipe.runtime.chunks import CHUNK_SENTENCES, Chunk, ChunkResult, conllu_chunks, process_chunk, sentence_chunks
from nlpipe.runtime.progress import Progress

# ----------------------------------------------------------------------------------------------
# Single-stage filters (the reference that `annotate` must match byte for byte)

def load_tokenizer(model: Optional[str] = None, method: Optional[str] = None, **options: Any) -> Any:
    if method is not None and model is None:
        model = {"rules": "tokenize-rules-ewt", "trained": "tokenize-char-ewt"}[method]
    return load_stage("tokenize", model, **options)


def run_tokenize(input: str, output: str, model: Optional[str] = None, method: Optional[str] = None,
                 encoding_errors: str = "strict") -> int:
    """Tokenize a raw-text file into CoNLL-U; return the number of sentences written."""
    check_output(output, [input])
    check_input(input)
    tokenizer = load_tokenizer(model, method)
    stream, name = open_input(input, encoding_errors)
    try:
        with open_output(output, [input]) as out:
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
    check_output(output, [input])
    check_input(input, nul=not skip_bad)
    with Annotator(spec, batch=batch) as ann, open_output(output, [input]) as out:
        return ann.run([input], out, Progress(stage, enabled=False))["sentences"]



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
        # CoNLL-U lines are cut into chunks as bytes: a NUL byte is reported (or, with --skip-bad,
        # passed through) where a chunk is parsed; only the length of a line is bounded here
        self.lines = binary_lines(self.buffer, self.name, nul=False)
        if detect:
            kind, head = sniff(self.lines)
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
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(4, 2 * cores)


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
        if jobs > max_jobs():
            raise NlpipeError(f"--jobs {jobs}: at most {max_jobs()} on this machine (each worker loads "
                              "every model; more workers than cores only add memory)")
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
    for path in inputs:   # a compressed or binary input fails before the models load
        check_input(path, nul=not skip_bad)
    if is_output_dir(output):
        pairs = plan_outputs(inputs, output)
        todo = [(s, d) for s, d in pairs if not os.path.lexists(d)]
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
    check_output(output, inputs)
    with Annotator(spec, jobs, batch) as ann, open_output(output, inputs) as out, \
            Progress("annotate", _total_size(inputs), "sentences", "tokens", progress) as prog:
        return ann.run(inputs, out, prog)
