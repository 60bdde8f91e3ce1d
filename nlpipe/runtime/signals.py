"""How a run ends on SIGINT, SIGTERM and SIGHUP: the same way in every command, with or without workers.
SIGUSR1, SIGUSR2, SIGALRM and SIGXCPU, which batch systems send for soft limits, end it the same way.

While :func:`ending_on_signals` is active, each of these signals raises :class:`Interrupted` in the
main thread. Unwinding then does the clean-up that the code on the way already does for errors:
temporary output files are removed (:mod:`nlpipe.io.outputs`) and worker processes are stopped
(:class:`nlpipe.runtime.parallel.ChunkPool`). The command line prints one line and exits with
``128 + signal number`` (130, 143, 129). Further signals during that clean-up are ignored, so that
it finishes; should it not end within :data:`GRACE` seconds (the exception was swallowed by a
finalizer), the temporary files are removed and the process exits all the same. A signal that was ignored when the run started (``nohup``, a background job) stays
ignored.

SIGPIPE keeps Python's setting (ignored): a closed stdout is an ``EPIPE`` error on write, handled
where the output is written. Letting SIGPIPE kill the process would also kill it when a pipe to a
worker process breaks during the clean-up after Ctrl-C (exit 141, no message).
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Optional

from nlpipe.io.outputs import TEMPORARY

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGALRM",
                                                   "SIGXCPU") if hasattr(signal, name))
_WORDS = {"SIGINT": "interrupted", "SIGTERM": "terminated", "SIGHUP": "hangup", "SIGUSR1": "stopped by SIGUSR1",
          "SIGUSR2": "stopped by SIGUSR2", "SIGALRM": "stopped by SIGALRM (alarm)",
          "SIGXCPU": "stopped by SIGXCPU (CPU time limit)"}


class Interrupted(BaseException):
    """A signal ended the run (a BaseException, like KeyboardInterrupt: no ``except Exception`` stops it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def __str__(self) -> str:
        name = signal.Signals(self.signum).name
        return _WORDS.get(name, name)


GRACE = 5.0  # seconds the clean-up may take before the process ends anyway
_watchdog: Optional[threading.Timer] = None


def _hard_exit(signum: int) -> None:
    """The last resort when unwinding did not end the run in time (the exception was swallowed, by
    an object's ``__del__`` say): remove the temporary files and exit; workers die with us."""
    for path in list(TEMPORARY):
        try:
            if os.path.isdir(path):       # a model being trained (nlpipe.io.model_dir.building)
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass
    try:
        sys.stderr.write(f"nlpipe: {Interrupted(signum)}\n")
        sys.stderr.flush()
    finally:
        os._exit(128 + signum)


def _raise(signum: int, frame: Any) -> None:
    global _watchdog
    if frame is not None and frame.f_code.co_name == "__del__":
        # an exception raised here would be printed and dropped: ask again after the finalizer
        os.kill(os.getpid(), signum)
        return
    for s in SIGNALS:  # the clean-up that follows must not be cut short by another signal
        if signal.getsignal(s) is _raise:
            signal.signal(s, signal.SIG_IGN)
    _watchdog = threading.Timer(GRACE, _hard_exit, (signum,))
    _watchdog.daemon = True
    _watchdog.start()
    raise Interrupted(signum)


@contextmanager
def ending_on_signals() -> Iterator[None]:
    """Inside the block, SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted`; the previous
    handlers come back afterwards (so an in-process call, as in tests, leaves nothing behind)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: Dict[int, Any] = {}
    for s in SIGNALS:
        old = signal.getsignal(s)
        if old is signal.SIG_IGN:
            continue
        previous[s] = old
        signal.signal(s, _raise)
    try:
        yield
    finally:
        if _watchdog is not None:  # the clean-up is done
            _watchdog.cancel()
        for s, old in previous.items():
            signal.signal(s, old if old is not None else signal.SIG_DFL)


def worker_signals() -> None:
    """In a worker process: SIGINT, SIGHUP and the others are the main process's to handle (a
    terminal or a batch system sends them to the whole process group); SIGTERM, which the main
    process uses to stop its workers, ends the worker at once."""
    for s in SIGNALS:
        signal.signal(s, signal.SIG_DFL if s == getattr(signal, "SIGTERM", None) else signal.SIG_IGN)
