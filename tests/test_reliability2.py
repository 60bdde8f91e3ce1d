"""Issue 34, "Reliability II": hostile inputs, endless lines, failing streams, interrupted training.

Each test builds its own fixture; none needs a corpus. Commands run as a user runs them (a
subprocess), and a refused run must end with one line on stderr, exit code 2, no traceback and
the input left as it was.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

import pytest

from conftest import run_cli

CONLLU = "1\tThe\t_\t_\t_\t_\t2\tdet\t_\t_\n2\tdog\t_\t_\t_\t_\t0\troot\t_\t_\n\n"


def nlpipe(args: Sequence[str], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, timeout: float = 120,
           **kwargs) -> subprocess.CompletedProcess:
    """``python -m nlpipe.cli ARGS`` with the given standard streams (files, pipes)."""
    return subprocess.run([sys.executable, "-m", "nlpipe.cli", *args], stdin=stdin, stdout=stdout,
                          stderr=subprocess.PIPE, timeout=timeout, **kwargs)


def refused(r: subprocess.CompletedProcess, *words: str) -> str:
    """The one error line of a run that was refused with exit code 2 (asserted)."""
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 2, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("nlpipe: error: "), err
    for w in words:
        assert w in lines[0], err
    return lines[0]


# ----------------------------------------------------------------------------------------------
# An output that is the input

@pytest.mark.parametrize("target", ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"])
def test_output_naming_stdin_redirected_from_a_file_is_refused(tmp_path, target):
    src = tmp_path / "in.conllu"
    src.write_text(CONLLU)
    with open(src, "rb") as f:
        r = nlpipe(["pos", "-o", target], stdin=f)
    refused(r, target, "input")
    assert src.read_text() == CONLLU


def test_output_naming_stdin_that_is_a_pipe_is_refused_without_hanging():
    r = subprocess.run([sys.executable, "-m", "nlpipe.cli", "pos", "-o", "/dev/stdin"], input=CONLLU.encode(),
                       capture_output=True, timeout=60)
    refused(r, "/dev/stdin")


@pytest.mark.parametrize("how", ["itself", "symlink", "hardlink", "relative"])
def test_output_that_is_the_input_file_by_any_name_is_refused(tmp_path, how):
    src = tmp_path / "in.conllu"
    src.write_text(CONLLU)
    out = {"itself": src, "symlink": tmp_path / "link.conllu", "hardlink": tmp_path / "hard.conllu",
           "relative": Path("sub") / ".." / "in.conllu"}[how]
    if how == "symlink":
        out.symlink_to(src)
    elif how == "hardlink":
        os.link(src, out)
    (tmp_path / "sub").mkdir()
    r = nlpipe(["pos", str(src), "-o", str(out)], cwd=tmp_path)
    refused(r, "input")
    assert src.read_text() == CONLLU
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["in.conllu", "sub"] + ([out.name] if how in ("symlink", "hardlink") else []))


def test_output_naming_a_later_input_of_annotate_is_refused(tmp_path):
    a, b = tmp_path / "a.conllu", tmp_path / "b.conllu"
    a.write_text(CONLLU)
    b.write_text(CONLLU)
    r = nlpipe(["annotate", "--stages", "pos", str(a), str(b), "-o", str(b)])
    refused(r, "input")
    assert b.read_text() == CONLLU


def test_stdout_appending_to_the_input_is_refused(tmp_path):
    src = tmp_path / "in.conllu"
    src.write_text(CONLLU)
    with open(src, "ab") as out:
        r = nlpipe(["pos", str(src)], stdout=out)
    refused(r, "<stdout>", "input")
    assert src.read_text() == CONLLU


@pytest.mark.parametrize("command", [["tokenize", "--method", "rules"], ["convert", "--from", "text", "--to", "conllu"]])
def test_other_commands_refuse_their_input_as_output(tmp_path, command):
    src = tmp_path / "in.txt"
    src.write_text("A dog barks.\n")
    r = nlpipe([*command, str(src), "-o", str(src)])
    refused(r, "input")
    assert src.read_text() == "A dog barks.\n"


def test_reading_and_writing_a_terminal_like_device_is_not_refused(tmp_path):
    # /dev/null as both input and output shares an inode, and harms nothing
    r = nlpipe(["pos", "/dev/null", "-o", "/dev/null"])
    assert r.returncode == 0, r.stderr
