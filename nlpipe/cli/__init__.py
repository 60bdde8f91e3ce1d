"""The ``nlpipe`` command: one module per command, each a thin click function that parses options,
calls a plain function of the package and prints its result.

Every command reads its input file (``-`` or nothing: stdin) and writes to ``-o`` (nothing: stdout).
Results go to stdout (a short summary, or one JSON object with ``--json``); progress, warnings and
errors go to stderr. Errors in input, options or models print one line ``nlpipe: error: ...`` and
exit with code 2. Shared options are declared once in :mod:`nlpipe.cli.options`.

A command's module is imported only when the command runs (or ``--help`` lists it), so that
``nlpipe --help`` and the filters start fast.
"""
from __future__ import annotations

import gc
import importlib
import os
import sys
from typing import Dict, List, Optional

import click

from nlpipe import __version__
from nlpipe.errors import NlpipeError, out_of_memory

# Allocations of containers between two runs of Python's cycle collector (its default: 700). A
# command builds a list of columns per token and next to no reference cycles: at the default the
# collector ran some 130 times over en_ewt test in `nlpipe pos`, ~5% of its time for nothing; at
# this threshold it still runs on long inputs, so that cycles are freed as they go.
GC_THRESHOLD = 100_000

OUT_OF_MEMORY = "out of memory (the input, a model or the memory limit; see 'ulimit -v')"

# command name -> "module:attribute" under nlpipe.cli, in the order `nlpipe --help` lists them
COMMANDS: Dict[str, str] = {
    "tokenize": "filters:tokenize",
    "pos": "filters:pos",
    "parse": "filters:parse",
    "ner": "filters:ner",
    "predicates": "filters:predicates",
    "srl": "filters:srl",
    "annotate": "annotate:annotate",
    "train": "train:train",
    "eval": "evaluate:eval_command",
    "convert": "convert:convert",
    "models": "models:models",
    "view": "view:view",
}


class LazyGroup(click.Group):
    """A group whose subcommands live in other modules, imported on first use."""

    def __init__(self, *args, lazy: Optional[Dict[str, str]] = None, package: str = __name__, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})
        self.package = package

    def list_commands(self, ctx: click.Context) -> List[str]:
        return list(self.lazy) + [c for c in super().list_commands(ctx) if c not in self.lazy]

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name not in self.lazy:
            return super().get_command(ctx, name)
        module, attr = self.lazy[name].split(":")
        return getattr(importlib.import_module(f"{self.package}.{module}"), attr)


@click.group(cls=LazyGroup, lazy=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="nlpipe")
def cli() -> None:
    """Fast NLP pipeline over CoNLL-U: tokenize, tag, parse, find entities and semantic roles.

    \b
    nlpipe tokenize < a.txt | nlpipe pos | nlpipe parse | nlpipe ner | nlpipe srl > a.conllu
    nlpipe annotate a.txt -o a.conllu
    """


def _hold_closed_streams() -> None:
    """A process started with stdin, stdout or stderr closed (``<&-``, ``>&-``, ``2>&-``): hold
    each closed descriptor with /dev/null, so that no file opened later takes its number (and is
    taken for stdin or stdout). ``sys.stdin``/``sys.stdout`` stay None, which a command that reads
    or writes them reports; ``sys.stderr`` writes to /dev/null, so that the exit code stays right."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)   # the lowest free number: this one
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            if fd == 2:
                sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)


MAX_MESSAGE = 400   # characters of an error message: input echoed in it (a 200,000-character cell) is cut


def one_line(message: str) -> str:
    """``message`` on one line (line breaks escaped) of at most :data:`MAX_MESSAGE` characters."""
    message = message.replace("\r", "\\r").replace("\n", "\\n")
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE] + "... (cut)"


def _fail(message: str, code: int = 2) -> None:
    try:
        sys.stderr.write(f"nlpipe: error: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):   # stderr itself fails (2>/dev/full): the exit code still says it
        pass
    sys.exit(code)


MIN_ADDRESS_SPACE = 192 << 20   # below this limit numpy with its OpenBLAS buffer does not start


def _within_address_limit() -> None:
    """Under ``ulimit -v``, OpenBLAS (inside numpy) maps a buffer at a thread's first matrix product
    and, when it cannot, ends the process itself (its own message, exit 1). So under a limit: refuse
    one too small to start in one line, map the main thread's buffer now, and keep the matrix
    products in that thread (``$NLPIPE_THREADS`` 1); running out of memory later is then a
    MemoryError, one line like any other."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY:
        return
    if soft < MIN_ADDRESS_SPACE:
        _fail(f"the memory limit (ulimit -v) of {soft >> 20} MB is below the {MIN_ADDRESS_SPACE >> 20} MB "
              "nlpipe needs to start")
    os.environ.setdefault("NLPIPE_THREADS", "1")
    import numpy as np

    a = np.ones((256, 256), dtype=np.float32)
    a @ a


def main(argv: Optional[list] = None) -> None:
    """Entry point: run the click group, turning user errors into one line and exit code 2, and
    SIGINT/SIGTERM/SIGHUP (and the other signals of nlpipe.runtime.signals) into one line and exit
    code 128 + n. Failing streams (a full disk on stdout, an input that cannot be read, a closed
    stdin or stdout) and running out of memory are one line and exit code 2 too."""
    from nlpipe.errors import OutputClosed
    from nlpipe.io.outputs import flush_stdout, silence_stdout
    from nlpipe.runtime.signals import Interrupted, ending_on_signals

    _hold_closed_streams()
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    # The parser and LISA run their batches in threads of their own, one core each (stages.base.cpu_threads):
    # numpy's BLAS must not start threads of its own under them. Read when numpy is first imported.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    _within_address_limit()
    try:
        with ending_on_signals():
            cli.main(args=argv, prog_name="nlpipe", standalone_mode=False)
            flush_stdout()
    except Interrupted as e:
        sys.stderr.write(f"nlpipe: {e}\n")
        sys.exit(e.exit_code)
    except click.exceptions.Abort:  # Ctrl-C where click catches it (a prompt)
        sys.stderr.write("nlpipe: interrupted\n")
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(2)
    except NlpipeError as e:
        _fail(one_line(str(e)))
    except OutputClosed:  # `nlpipe ... | head`: quiet, like any Unix filter whose reader left
        sys.exit(141)
    except MemoryError:
        _fail(OUT_OF_MEMORY)
    except BrokenPipeError:   # a write outside nlpipe's outputs (click's --help | head)
        silence_stdout()
        sys.exit(141)
    except (OSError, ImportError, RuntimeError) as e:
        if out_of_memory(e):
            _fail(OUT_OF_MEMORY)
        if not isinstance(e, OSError):
            raise
        # an error of the system outside the readers and writers that name their file (click's
        # --help on a full disk): one line all the same; stdout's buffer must not fail again at exit
        silence_stdout()
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        _fail(one_line(f"{where}{e.strerror or e}"))


if __name__ == "__main__":
    main()
