"""``--jobs N``: worker processes that each load the pipeline once and annotate chunks in turn.

The main process reads and cuts the input; chunks go to the workers, at most ``ahead`` at a time so
memory stays bounded on any input size, and results are written in input order. Raw text goes out as
whole paragraphs that the workers tokenize (:func:`~nlpipe.runtime.chunks.text_chunks`), so the
main process's work per word stays small however many workers there are. Errors are sent back as
values, because an :class:`InputError` does not survive pickling, and re-raised here with the same
file and line.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Deque, Iterable, Iterator, Optional, Tuple

from nlpipe.errors import EncodingError, InputError, ModelError, NlpipeError
from nlpipe.runtime.chain import Pipeline, PipelineSpec
from nlpipe.runtime.chunks import Chunk, ChunkResult, process_chunk
from nlpipe.runtime.signals import worker_signals
from nlpipe.stages.base import THREADS_VAR, usable_cpus

_pipeline: Optional[Pipeline] = None
_error: Optional[Tuple[Any, ...]] = None


def _pack(e: NlpipeError) -> Tuple[Any, ...]:
    if isinstance(e, InputError):   # an EncodingError stays one: the command adds its hint
        return ("encoding" if isinstance(e, EncodingError) else "input", e.path, e.line, e.message)
    return ("model" if isinstance(e, ModelError) else "other", str(e))


def _unpack(error: Tuple[Any, ...]) -> NlpipeError:
    if error[0] in ("input", "encoding"):
        return (EncodingError if error[0] == "encoding" else InputError)(error[1], error[2], error[3])
    return (ModelError if error[0] == "model" else NlpipeError)(error[1])


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _die_with_parent(parent: int) -> None:
    """End this worker when the main process dies (e.g. of SIGPIPE under `| head`): an orphan
    would otherwise go on holding the pipes of the shell pipeline open, or wait forever."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, signal.SIGKILL, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG (Linux)
            raise OSError
    except (OSError, AttributeError):
        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent:  # it died before we asked
        os._exit(1)


def _init(spec: PipelineSpec, threads: int, parent: int) -> None:
    """Worker start: load the models once, with ``threads`` math threads (so that N workers do not
    each start one thread per core). Signals are the main process's to handle (:func:`worker_signals`)."""
    global _pipeline, _error
    worker_signals()
    _die_with_parent(parent)
    # THREAD_VARS were set by ChunkPool in the parent's environment, which workers inherit
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
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
    """``jobs`` worker processes running :func:`nlpipe.runtime.pipeline.process_chunk`, results in order.

    A worker that dies (killed, out of memory) ends the run with an error instead of a hang: the
    executor notices the lost process, where ``multiprocessing.Pool`` would wait for its result forever.
    """

    def __init__(self, spec: PipelineSpec, jobs: int, ahead: Optional[int] = None):
        self.jobs = jobs
        self.ahead = ahead or 2 * jobs
        threads = max(1, usable_cpus() // jobs)
        # This process may tokenize too (a paragraph too long for a chunk, or a stage that reads
        # whole documents): its math libraries get the same share of the cores. Read when numpy /
        # torch are first imported, so this must come before the tokenizer loads; the forked
        # workers inherit it.
        for var in THREAD_VARS + (THREADS_VAR,):
            os.environ.setdefault(var, str(threads))
        self.executor = ProcessPoolExecutor(jobs, mp_context=_context(), initializer=_init,
                                            initargs=(spec, threads, os.getpid()))
        self._document: Optional[bool] = None

    @property
    def document(self) -> bool:
        """Whether a stage reads whole documents; asked of a worker once it has loaded the models
        (the first call waits for that, so the main process loads its tokenizer meanwhile)."""
        if self._document is None:
            error, document = self._get(self.executor.submit(_info))
            if error is not None:
                raise _unpack(error)
            self._document = document
        return self._document

    def map(self, chunks: Iterable[Chunk]) -> Iterator[ChunkResult]:
        """Annotate ``chunks`` in the workers; yields results in the order of ``chunks``."""
        pending: Deque[Future] = deque()
        for chunk in chunks:
            pending.append(self.executor.submit(_work, chunk))
            if len(pending) >= self.ahead:
                yield self._result(pending.popleft())
        while pending:
            yield self._result(pending.popleft())

    def _result(self, job: Future) -> ChunkResult:
        error, result = self._get(job)
        if error is not None:
            raise _unpack(error)
        return result

    @staticmethod
    def _get(job: Future) -> Any:
        try:
            return job.result()
        except BrokenProcessPool:
            raise NlpipeError("a worker process died (killed, or out of memory?); "
                              "nothing more was written") from None

    def close(self) -> None:
        self.executor.shutdown(wait=True)

    def terminate(self) -> None:
        """Stop after an error or Ctrl-C: queued chunks are dropped and the workers stopped."""
        # Stopping the workers and then waiting for the executor's manager thread is deliberate:
        # shutdown(wait=False) leaves that thread running into interpreter exit, where CPython 3.11
        # can race on its wake-up pipe and print "Bad file descriptor" after our message
        # (python/cpython#132969; seen once in a --jobs 2 Ctrl-C test under load).
        for proc in list((getattr(self.executor, "_processes", None) or {}).values()):
            proc.terminate()
        self.executor.shutdown(wait=True, cancel_futures=True)
