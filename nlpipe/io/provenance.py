"""The ``training`` block of a model's ``config.json``: which data, which command, which nlpipe,
when, and the scores (see :mod:`nlpipe.io.model_dir` for the format).

Every trainer builds it here, where it writes its config. It lives beside the format (layer 0)
rather than in ``nlpipe.train`` so that every trainer, wherever it sits, and ``tools/`` reach it.
"""
from __future__ import annotations

import hashlib
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence

from nlpipe.version import __version__

CHUNK = 1 << 20


def sha256(path: str) -> Optional[str]:
    """Hex SHA-256 of a file's bytes; None for stdin ("-") or a path that is not a regular file."""
    p = Path(path)
    if path == "-" or not p.is_file():
        return None
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def command_line(argv: Optional[Sequence[str]] = None) -> str:
    """The command as the user typed it (default ``sys.argv``), the program written as users call
    it: ``nlpipe ...`` for the console script and ``python -m nlpipe`` / ``python -m nlpipe.cli``,
    ``python -m nlpipe.X ...`` for another module of the package, ``python tools/x.py ...`` for a
    script, else the program's file name."""
    argv = list(sys.argv if argv is None else argv)
    prog, args = (argv[0] if argv else ""), argv[1:]
    path = Path(prog)
    package = Path(__file__).resolve().parent.parent
    try:
        inside = path.resolve().relative_to(package) if prog and path.suffix == ".py" else None
    except ValueError:
        inside = None
    if path.name == "nlpipe" or (inside is not None and inside.name == "__main__.py"
                                 and inside.parent.as_posix() in (".", "cli")):
        head = ["nlpipe"]
    elif inside is not None:
        head = ["python", "-m", ".".join(("nlpipe",) + inside.with_suffix("").parts)]
    elif path.suffix == ".py":
        rel = path.resolve()
        try:
            rel = rel.relative_to(package.parent)
        except ValueError:
            rel = Path(path.name)
        head = ["python", rel.as_posix()]
    else:
        head = [path.name or "python"]
    return shlex.join(head + args)


def utc_now() -> str:
    """The current UTC time as ``2026-11-25T13:05:12Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def data_entry(path: str, note: Optional[str] = None) -> Dict[str, Any]:
    """``{"path", "sha256"[, "note"]}`` for one data file."""
    entry: Dict[str, Any] = {"path": str(path), "sha256": sha256(str(path))}
    if note:
        entry["note"] = note
    return entry


def vectors_entry(path: Optional[str] = None, name: Optional[str] = None) -> Dict[str, Any]:
    """The ``vectors`` entry of a training block for the word vectors a model was trained with: a
    file (``{"path", "sha256"}``), a named package (``{"name"}``), or both (a package's vectors read
    from a file). A model trained without vectors records ``"vectors": null``."""
    entry: Dict[str, Any] = {} if name is None else {"name": name}
    if path is not None:
        entry.update(data_entry(path))
    return entry


def training_block(data: Mapping[str, Optional[str]], dev: Mapping[str, Any],
                   test: Optional[Mapping[str, Any]] = None, command: Optional[str] = None,
                   **settings: Any) -> Dict[str, Any]:
    """The ``training`` block: ``data`` maps a role ("train", "dev", "test", or another name such
    as "init") to a file (None: left out), hashed here; ``dev`` and ``test`` are scores by metric
    (``{"las": 87.4}`` is recorded as ``dev_las``); ``command`` defaults to :func:`command_line`;
    ``settings`` are the trainer's own entries (seed, epochs, options, history, notes); a trainer
    that reads word vectors records them as ``vectors`` (:func:`vectors_entry`, or None: none)."""
    clash = set(settings) & {"data", "command", "nlpipe_version", "date", "scores"}
    if clash:
        raise ValueError(f"training settings may not be named {', '.join(sorted(clash))}")
    scores = {f"dev_{k}": v for k, v in dev.items()}
    scores.update({f"test_{k}": v for k, v in (test or {}).items()})
    return {"data": {role: data_entry(p) for role, p in data.items() if p is not None},
            "command": command_line() if command is None else command,
            "nlpipe_version": __version__, "date": utc_now(), "scores": scores, **settings}


def record_test(training: Dict[str, Any], path: str, scores: Mapping[str, Any]) -> None:
    """Add a test file (hashed) and its scores, by metric, to a ``training`` block in place."""
    training["data"]["test"] = data_entry(path)
    training["scores"].update({f"test_{k}": v for k, v in scores.items()})
