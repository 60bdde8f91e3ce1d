"""Writing output: ``-o FILE``, ``-o DIR/`` (one file per input) or stdout.

What ``-o PATH`` does depends on what is there:

- nothing, or a regular file: the output goes to a temporary file beside it, renamed over it at
  the end, so that an interrupted or failed run leaves the old file (or none) and no temporary
  file. A new file gets the permissions the umask allows (``0666 & ~umask``); a replaced file
  keeps its own.
- a symlink: the same, applied to the file it points to (the link stays a link).
- a FIFO, a character device (``/dev/null``, a terminal), a socket: written directly.
- a directory, a missing or unwritable folder: an error before any work starts.
- the same file or pipe as one of the inputs (by device and inode, so through symlinks, hard
  links, ``/dev/stdin``, ``/dev/fd/N`` and ``/proc/self/fd/N``; stdout too): an error before any
  work starts, since writing it would destroy (or, for a pipe, feed) the input being read.

Write errors (a full disk) are one-line errors naming the output; a closed stdout or FIFO
(``| head``) raises :class:`~nlpipe.errors.OutputClosed`.
"""
from __future__ import annotations

import io
import os
import stat
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from nlpipe.errors import NlpipeError, OutputClosed

STDOUT = "<stdout>"
TEMPORARY: Set[str] = set()  # temporary files being written, for a last-resort clean-up on a signal


@dataclass
class Target:
    """Where an output goes: ``how`` is ``stdout``, ``direct`` (opened and written as it is) or
    ``replace`` (temporary file + rename onto ``real``, the path with symlinks resolved)."""

    name: str
    how: str
    real: str = ""


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _writable_folder(folder: str, name: str) -> None:
    if not os.path.exists(folder):
        raise NlpipeError(f"{name}: no such folder {folder or '.'}")
    if not os.path.isdir(folder):
        raise NlpipeError(f"{name}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise NlpipeError(f"{name}: cannot write in folder {folder} (permission denied)")


def _identity(path: Optional[str]) -> Optional[Tuple[int, int]]:
    """(device, inode) of the regular file or pipe that ``path`` (``None``/``-``: stdin) names,
    through links; ``None`` for anything else (a terminal, ``/dev/null``: reading and writing one
    is harmless) or a path that cannot be looked at (its own error comes where it is opened)."""
    try:
        st = os.fstat(0) if path is None or path == "-" else os.stat(path)
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return st.st_dev, st.st_ino
    return None


def refuse_input_as_output(path: Optional[str], inputs: Sequence[Optional[str]]) -> None:
    """An :class:`NlpipeError` when the output ``path`` (``None``/``-``: stdout) is the same file
    or pipe as one of ``inputs`` (``None``/``-``: stdin)."""
    if not inputs:
        return
    if path is None or path == "-":
        try:
            st = os.fstat(1)
        except (OSError, ValueError):
            return
        # stdout may be a pipe that merely shares nothing with the input; only a file is compared
        out = (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None
        name = STDOUT
    else:
        out = _identity(path)
        name = path
    if out is None:
        return
    for src in inputs:
        if _identity(src) == out:
            shown = "<stdin>" if src is None or src == "-" else src
            raise NlpipeError(f"{name}: is the input {shown} itself; choose another output")


def check_output(path: Optional[str], inputs: Sequence[Optional[str]] = ()) -> Target:
    """How ``path`` (``None``/``-``: stdout) will be written; every problem that can be seen
    before writing is an :class:`NlpipeError` here, an output that is one of ``inputs`` too."""
    refuse_input_as_output(path, inputs)
    if path is None or path == "-":
        if sys.stdout is None:   # started with stdout closed (`>&-`)
            raise NlpipeError(f"{STDOUT}: cannot write (stdout is closed)")
        return Target(STDOUT, "stdout")
    if path.endswith(("/", os.sep)):
        raise NlpipeError(f"{path}: is a folder name; expected a file name")
    try:
        st = os.stat(path)  # through symlinks
    except (FileNotFoundError, NotADirectoryError):
        real = os.path.realpath(path)  # a dangling symlink: the file it names is created
        _writable_folder(os.path.dirname(real), path)
        return Target(path, "replace", real)
    except OSError as e:
        raise NlpipeError(f"{path}: cannot write ({e.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise NlpipeError(f"{path}: is a directory, expected a file")
    # /dev/stdout and the like name an open file: written as it is, never replaced
    if stat.S_ISREG(st.st_mode) and not os.path.abspath(path).startswith(("/dev/", "/proc/")):
        real = os.path.realpath(path)
        _writable_folder(os.path.dirname(real), path)
        return Target(path, "replace", real)
    if not os.access(path, os.W_OK):
        raise NlpipeError(f"{path}: permission denied")
    return Target(path, "direct", path)


class Output:
    """A text output whose write errors are one-line errors naming it."""

    def __init__(self, stream: IO[str], name: str):
        self.stream = stream
        self.name = name

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            raise OutputClosed(self.name) from None
        except OSError as e:
            raise NlpipeError(f"{self.name}: cannot write ({e.strerror})") from None

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise OutputClosed(self.name) from None
        except OSError as e:
            raise NlpipeError(f"{self.name}: cannot write ({e.strerror})") from None


def _text(binary: IO[bytes]) -> io.TextIOWrapper:
    # surrogateescape: bytes passed through verbatim (--skip-bad) were decoded the same way
    return io.TextIOWrapper(binary, encoding="utf-8", errors="surrogateescape", newline="\n",
                            write_through=False, line_buffering=False)


def _discard(stream: IO[str]) -> None:
    """Close ``stream`` after a failed write, dropping what its buffers still hold."""
    try:
        stream.close()
    except (OSError, ValueError):
        pass


def echo(text: str) -> None:
    """``text`` and a newline on stdout, flushed; write errors as in :class:`Output`."""
    if sys.stdout is None:
        raise NlpipeError(f"{STDOUT}: cannot write (stdout is closed)")
    out = Output(sys.stdout, STDOUT)
    try:
        out.write(text + "\n")
        out.flush()
    except (OutputClosed, NlpipeError):
        silence_stdout()   # what stdout's buffer still holds must not fail again at exit
        raise


def flush_stdout() -> None:
    """Flush stdout at the end of a command, its errors as in :class:`Output` (else Python
    would report them at exit, with a traceback-like message and exit code 120)."""
    if not hasattr(sys.stdout, "flush"):   # closed, or a stand-in that holds what was written
        return
    try:
        Output(sys.stdout, STDOUT).flush()
    except (OutputClosed, NlpipeError):
        silence_stdout()
        raise


def silence_stdout() -> None:
    """Point fd 1 at /dev/null, so that no later flush of stdout fails (or prints) again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def _temporary_prefix(real: str) -> str:
    # the output's name cut so that the temporary name fits where the output's own name does
    # (255 bytes on most file systems): a long output name is not refused only after the work
    return f".nlpipe-{os.fsdecode(os.fsencode(os.path.basename(real))[:200])}-"


def stale_temporaries(path: str) -> List[str]:
    """Temporary files that writing ``path`` left behind (a process killed with SIGKILL leaves them)."""
    real = os.path.realpath(path)
    prefix = _temporary_prefix(real)
    folder = os.path.dirname(real)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names if n.startswith(prefix) and n.endswith(".tmp")]


@contextmanager
def open_output(path: Optional[str], inputs: Sequence[Optional[str]] = ()) -> Iterator[Output]:
    """The text output for ``path`` (``None``/``-``: stdout), written as :func:`check_output` says."""
    target = check_output(path, inputs)
    if target.how == "stdout":
        out = _text(sys.stdout.buffer)
        try:
            yield Output(out, STDOUT)
            Output(out, STDOUT).flush()
        except OutputClosed:
            silence_stdout()
            raise
        finally:
            try:
                out.detach()
            except OSError:  # a failed write: what the buffer holds cannot go anywhere
                silence_stdout()
                out.detach()
        return
    if target.how == "direct":
        try:
            out = _text(open(target.real, "wb"))
        except OSError as e:
            raise NlpipeError(f"{target.name}: cannot write ({e.strerror})") from None
        try:
            yield Output(out, target.name)
            Output(out, target.name).flush()
        except BaseException:
            _discard(out)
            raise
        out.close()
        return
    folder = os.path.dirname(target.real)
    try:
        mode = stat.S_IMODE(os.stat(target.real).st_mode)
    except OSError:
        mode = 0o666 & ~_umask()
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(target.real), suffix=".tmp", dir=folder)
    except OSError as e:
        raise NlpipeError(f"{target.name}: cannot write in folder {folder} ({e.strerror})") from None
    TEMPORARY.add(tmp)
    out = _text(os.fdopen(fd, "wb"))
    try:
        os.fchmod(fd, mode)
        yield Output(out, target.name)
        Output(out, target.name).flush()
        out.close()
        try:
            os.replace(tmp, target.real)
        except OSError as e:
            raise NlpipeError(f"{target.name}: cannot write ({e.strerror})") from None
    except BaseException:
        _discard(out)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        TEMPORARY.discard(tmp)


# ----------------------------------------------------------------------------------------------
# One output file per input in a folder (``annotate -o DIR/``)

def is_output_dir(output: str) -> bool:
    """Whether ``-o output`` names a folder: an existing one, or a path ending in ``/``."""
    return output != "-" and (output.endswith(("/", os.sep)) or os.path.isdir(output))


def output_name(src: str, out_dir: str) -> str:
    """``DIR/<input's base name without extension>.conllu``."""
    stem = os.path.splitext(os.path.basename(src))[0] or os.path.basename(src)
    return os.path.join(out_dir, stem + ".conllu")


def plan_outputs(inputs: List[str], out_dir: str) -> List[Tuple[str, str]]:
    """(input, output) pairs for one output per input in ``out_dir``, which is created; every
    problem (stdin, a missing input, two inputs with one output name, an output that is the input
    itself, a folder that cannot be made or written) is an error before any work starts."""
    if "-" in inputs:
        raise NlpipeError("per-file output into a directory needs input files, not stdin")
    pairs = [(src, output_name(src, out_dir)) for src in inputs]
    seen: Dict[str, str] = {}
    for src, dst in pairs:
        if dst in seen:
            raise NlpipeError(f"{seen[dst]} and {src} would both be written to {dst}")
        seen[dst] = src
        if not os.path.isfile(src):
            if not os.path.exists(src):
                raise NlpipeError(f"{src}: no such file")
            raise NlpipeError(f"{src}: not a regular file")
        if os.path.exists(dst) and os.path.samefile(src, dst):
            raise NlpipeError(f"{dst} would be the input {src} itself; choose another output folder")
        if os.path.lexists(dst) and not os.path.isfile(dst):   # "finished work" is a file
            raise NlpipeError(f"{dst}: exists and is not a file (the output for {src})")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except FileExistsError:
        raise NlpipeError(f"{out_dir}: exists and is not a folder") from None
    except OSError as e:
        raise NlpipeError(f"{out_dir}: cannot make the folder ({e.strerror})") from None
    _writable_folder(out_dir.rstrip("/" + os.sep) or out_dir, out_dir)
    return pairs
