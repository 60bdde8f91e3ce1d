"""A property test: valid CoNLL-U and raw text, mutated at random (bytes, columns, IDs, heads, comments,
encodings), through `convert` and `annotate`. Every run ends with exit 0 and valid output, or exit 2
and one line naming the file and line; never a traceback, never a partial or temporary file."""
from __future__ import annotations

import io
import os
import re
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, REPO
from nlpipe.cli import main
from nlpipe.io.conllu import read_conllu

CONLLU = (FIXTURES / "special.conllu").read_bytes()
TEXT = (REPO / "data" / "sample.txt").read_bytes()[:400]
ODD = [b"\xef\xbb\xbf", b"\x00", b"\xff", b"\xc3", b"\t", b"\n", b"\r\n", b"\n\n", b"#", b"-", b".", b"_",
       "\u00b2".encode(), "\u0661".encode(), b"0", b"1", b"99", b"1-2", b"2.1", b" ", "\u00e9".encode("latin-1")]


@st.composite
def mutated(draw) -> bytes:
    data = bytearray(draw(st.sampled_from([CONLLU, TEXT])))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["insert", "delete", "replace", "line", "field"]))
        if kind == "insert":
            data[at:at] = draw(st.sampled_from(ODD))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 30))]
        elif kind == "replace":
            data[at:at + 1] = draw(st.sampled_from(ODD))
        else:
            lines = bytes(data).split(b"\n")
            k = draw(st.integers(0, len(lines) - 1))
            if kind == "line":  # duplicate, drop or move a line
                op = draw(st.sampled_from(["dup", "drop", "move"]))
                line = lines[k]
                if op != "dup":
                    del lines[k]
                if op != "drop":
                    lines.insert(draw(st.integers(0, len(lines))), line)
            else:  # one tab-separated field (ID, HEAD, ...) of a line replaced
                cells = lines[k].split(b"\t")
                cells[draw(st.integers(0, len(cells) - 1))] = draw(st.sampled_from(ODD))
                lines[k] = b"\t".join(cells)
            data = bytearray(b"\n".join(lines))
    return bytes(data)


COMMANDS = [["convert"], ["annotate", "--stages", "tokenize", "--model", "tokenize=tokenize-rules-ewt"],
            ["annotate", "--stages", "tokenize", "--model", "tokenize=tokenize-rules-ewt", "--skip-bad"]]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(mutated(), st.sampled_from(COMMANDS))
def test_mutated_input_gives_valid_output_or_one_line(capsys, data, command):
    folder = tempfile.mkdtemp()
    try:
        src = os.path.join(folder, "in.conllu")
        out = os.path.join(folder, "out.conllu")
        with open(src, "wb") as f:
            f.write(data)
        with pytest.raises(SystemExit) as e:
            main(command + [src, "-o", out])
            raise SystemExit(0)
        err = capsys.readouterr().err
        assert e.value.code in (0, 2), err
        assert "Traceback" not in err
        if e.value.code == 0:
            if "--skip-bad" not in command:  # (which passes bad sentences through as they are)
                with open(out, "rb") as f:
                    list(read_conllu(io.TextIOWrapper(f, encoding="utf-8", newline="\n"), "out"))  # valid CoNLL-U
            assert all(line.startswith("nlpipe: warning: ") for line in err.splitlines())
            assert sorted(os.listdir(folder)) == ["in.conllu", "out.conllu"]
        else:
            assert re.fullmatch(rf"nlpipe: error: {re.escape(src)}:\d+: [^\n]+\n", err), err
            assert os.listdir(folder) == ["in.conllu"]
    finally:
        shutil.rmtree(folder)
