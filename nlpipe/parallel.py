"""``--jobs N``: worker processes that each load the pipeline once and annotate chunks in turn.

The main process reads and cuts the input (and tokenizes raw text); chunks go to the workers, at
most ``ahead`` at a time so memory stays bounded on any input size, and results are written in input
order. Errors are sent back as values, because an :class:`InputError` does not survive pickling, and
re-raised here with the same file and line.
"""
from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from typing import Any, Deque, Iterable, Iterator, Optional, Tuple

from .errors import InputError, ModelError, NlpipeError
from .pipeline import Chunk, ChunkResult, Pipeline, PipelineSpec, process_chunk

_pipeline: Optional[Pipeline] = None
_error: Optional[Tuple[Any, ...]] = None


def _pack(e: NlpipeError) -> Tuple[Any, ...]:
    if isinstance(e, InputError):
        return ("input", e.path, e.line, e.message)
    return ("model" if isinstance(e, ModelError) else "other", str(e))


def _unpack(error: Tuple[Any, ...]) -> NlpipeError:
    if error[0] == "input":
        return InputError(error[1], error[2], error[3])
    return (ModelError if error[0] == "model" else NlpipeError)(error[1])


def _init(spec: PipelineSpec) -> None:
    """Worker start: load the models once. Ctrl-C is the main process's to handle."""
    global _pipeline, _error
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _pipeline = Pipeline.load(spec)
    except NlpipeError as e:  # raising here would make the pool restart the worker forever
        _error = _pack(e)


def _info() -> Tuple[Optional[Tuple[Any, ...]], bool]:
    return _error, bool(_pipeline is not None and _pipeline.document)


def _work(chunk: Chunk) -> Tuple[Optional[Tuple[Any, ...]], Optional[ChunkResult]]:
    if _error is not None:
        return _error, None
    assert _pipeline is not None
    try:
        return None, process_chunk(_pipeline, chunk)
    except NlpipeError as e:
        return _pack(e), None


def _context() -> Any:
    # fork: workers start at once and inherit the stage registry as the parent has it; the parent
    # loads no neural model before forking (only the tokenizer, which is plain Python).
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


class ChunkPool:
    """``jobs`` worker processes running :func:`nlpipe.pipeline.process_chunk`, results in order."""

    def __init__(self, spec: PipelineSpec, jobs: int, ahead: Optional[int] = None):
        self.jobs = jobs
        self.ahead = ahead or 2 * jobs
        self.pool = _context().Pool(jobs, initializer=_init, initargs=(spec,))
        try:
            error, self.document = self.pool.apply(_info)
        except BaseException:
            self.terminate()
            raise
        if error is not None:
            self.terminate()
            raise _unpack(error)

    def map(self, chunks: Iterable[Chunk]) -> Iterator[ChunkResult]:
        """Annotate ``chunks`` in the workers; yields results in the order of ``chunks``."""
        pending: Deque[Any] = deque()
        for chunk in chunks:
            pending.append(self.pool.apply_async(_work, (chunk,)))
            if len(pending) >= self.ahead:
                yield self._result(pending.popleft())
        while pending:
            yield self._result(pending.popleft())

    @staticmethod
    def _result(job: Any) -> ChunkResult:
        error, result = job.get()
        if error is not None:
            raise _unpack(error)
        return result

    def close(self) -> None:
        self.pool.close()
        self.pool.join()

    def terminate(self) -> None:
        self.pool.terminate()
        self.pool.join()
