"""Odd input, the same way in every command: a byte-order mark, an empty document, digits that are not
ASCII, invalid UTF-8 (the line it is on), and the hints that go with it."""
from __future__ import annotations

import io
import subprocess
import sys

import pytest

from conftest import FIXTURES, run_cli
from nlpipe.cli import main
from nlpipe.io.inputs import read_lines, sniff

NL = [sys.executable, "-m", "nlpipe.cli"]
DATA = (FIXTURES / "special.conllu").read_bytes()
ROWS = b"# sent_id = 1\n1\tA\t_\tDET\tDT\t_\t2\tdet\t_\t_\n2\tb\t_\tNOUN\tNN\t_\t0\troot\t_\t_\n\n"


def run(capsys, *args: str):
    """``nlpipe ARGS`` in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as e:
        main(list(args))
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return e.value.code, out, err


@pytest.mark.parametrize("lines, kind", [
    ([b"\xef\xbb\xbf# newdoc\n", b"# sent_id = 1\n", b"1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n"], "conllu"),
    ([b"\xef\xbb\xbfThe cat sat on the mat.\n"], "text"),
    ([b"# A heading\n", b"\n", b"Some text here.\n"], "text"),
    ([b"-DOCSTART- -X- -X- O\n"], "conll2003"),
    ([b"EU NNP B-NP B-ORG\n"], "conll2003"),
    ([b"# sent_id = 1\n", b"EU\tB-ORG\n"], "columns"),
    ([], "empty"),
    ([b"\xef\xbb\xbf"], "empty"),
    ([b"\n"], "text"),
])
def test_sniff(lines, kind):
    found, head = sniff(iter(lines))
    assert found == kind and head == lines


def test_sniff_reads_no_further_than_the_first_content_line():
    lines = iter([b"# c\n", b"1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n", b"rest\n"])
    assert sniff(lines)[0] == "conllu" and list(lines) == [b"rest\n"]


def test_annotate_reads_conllu_with_a_byte_order_mark_as_conllu(tmp_path):
    src = tmp_path / "bom.conllu"
    src.write_bytes(b"\xef\xbb\xbf" + DATA)
    r = run_cli("annotate", "--stages", "tokenize", "--model", "tokenize=tokenize-rules-ewt", str(src))
    assert r.returncode == 0, r.stderr
    assert r.stdout == src.read_bytes()  # CoNLL-U passes through; read as raw text it would be re-tokenized


def test_lines_are_decoded_one_by_one():
    stream = io.TextIOWrapper(io.BytesIO(b"a\r\nb\n\xff\n"), encoding="utf-8", newline="\n")
    lines = read_lines(stream, "f")
    assert next(lines) == "a\r\n" and next(lines) == "b\n"
    with pytest.raises(Exception, match=r"^f:3: invalid UTF-8 \(byte 0xff at byte offset 5, column 1\)"):
        next(lines)


# ---------------------------------------------------------------------------------------------
# An empty document: empty output, exit 0, in every command

def test_an_empty_document_goes_through_the_readme_pipe(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    r = subprocess.run(" ".join(NL) + f" tokenize --method rules {empty} | " + " ".join(NL) + " pos",
                       shell=True, capture_output=True, timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")


@pytest.mark.parametrize("args", [
    ["tokenize", "--method", "rules"], ["pos"], ["parse", "--parser", "transition"], ["ner"],
    ["annotate", "--stages", "tokenize", "--model", "tokenize=tokenize-rules-ewt"], ["annotate", "--stages", "pos"],
    ["convert"], ["convert", "--from", "conll2003"], ["convert", "--to", "text"],
])
@pytest.mark.parametrize("content", [b"", b"\xef\xbb\xbf"])
def test_an_empty_document_is_empty_output(tmp_path, capsys, args, content):
    src = tmp_path / "empty"
    src.write_bytes(content)
    assert run(capsys, *args, str(src)) == (0, "", "")


# ---------------------------------------------------------------------------------------------
# Digits that str.isdigit() takes but int() does not: one line, exit 2, in every command

SUPERSCRIPT = ROWS.replace(b"\t2\tdet", "\t\u00b2\tdet".encode())


@pytest.mark.parametrize("args", [
    ["pos"], ["parse", "--parser", "transition"], ["ner"], ["convert"], ["convert", "--to", "text"],
    ["annotate", "--stages", "pos"], ["annotate", "--stages", "tokenize,pos"],
])
def test_a_head_of_unicode_digits_is_one_line(tmp_path, capsys, args):
    src = tmp_path / "sup.conllu"
    src.write_bytes(ROWS + SUPERSCRIPT)
    code, out, err = run(capsys, *args, str(src))
    assert code == 2 and err == f"nlpipe: error: {src}:6: HEAD must be an integer or '_', found '\u00b2'\n"


def test_a_head_of_unicode_digits_in_eval_and_with_skip_bad(tmp_path, capsys):
    src = tmp_path / "sup.conllu"
    src.write_bytes(ROWS + SUPERSCRIPT)
    code, _, err = run(capsys, "eval", "pos", "--gold", str(src), "--pred", str(src))
    assert code == 2 and err == f"nlpipe: error: {src}:6: HEAD must be an integer or '_', found '\u00b2'\n"
    code, out, err = run(capsys, "annotate", "--stages", "tokenize", "--skip-bad", str(src))
    assert code == 0 and out.encode() == src.read_bytes()
    assert err == (f"nlpipe: warning: {src}:6: HEAD must be an integer or '_', found '\u00b2'; "
                   "passed through unchanged (--skip-bad)\n")


@pytest.mark.parametrize("bad", ["1-\u00b2", "\u0661"])
def test_ids_of_unicode_digits_are_one_line(capsys, tmp_path, bad):
    src = tmp_path / "id.conllu"
    src.write_bytes(f"{bad}\tab\t_\t_\t_\t_\t_\t_\t_\t_\n1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n\n".encode())
    code, _, err = run(capsys, "convert", str(src))
    assert code == 2 and err.startswith(f"nlpipe: error: {src}:1: ") and err.count("\n") == 1


# ---------------------------------------------------------------------------------------------
# Invalid UTF-8: the line it is on, and a hint only where the command has the option

BAD = ROWS * 30 + b"1\tH\xffi\t_\t_\t_\t_\t0\troot\t_\t_\n\n"   # line 121; each ROWS is 4 lines, 67 bytes


@pytest.mark.parametrize("args", [["convert"], ["eval", "pos", "--pred", "{src}", "--gold"], ["pos"]])
def test_invalid_utf8_names_its_line_in_every_command(tmp_path, capsys, args):
    src = tmp_path / "bad.conllu"
    src.write_bytes(BAD)
    assert len(ROWS) == 67
    code, _, err = run(capsys, *[a.format(src=src) for a in args], str(src))
    assert code == 2
    assert err == (f"nlpipe: error: {src}:121: invalid UTF-8 (byte 0xff at byte offset 2013, column 4); "
                   "is this a UTF-8 text file?\n")


def test_the_encoding_hint_names_an_option_the_command_has(tmp_path, capsys):
    src = tmp_path / "bad.txt"
    src.write_bytes(b"Fine.\nBroken \xff here.\n")
    code, _, err = run(capsys, "tokenize", "--method", "rules", str(src))
    assert code == 2 and err.endswith("; use --encoding-errors replace to go on\n")
    code, _, err = run(capsys, "annotate", "--stages", "tokenize", "--model", "tokenize=tokenize-rules-ewt", str(src))
    assert code == 2 and "--encoding-errors" not in err
    assert err == f"nlpipe: error: {src}:2: invalid UTF-8 (byte 0xff at byte offset 13, column 8); is this a UTF-8 text file?\n"
