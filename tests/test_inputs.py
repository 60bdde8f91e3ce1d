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


# what tokenize and annotate, which have --encoding and --encoding-errors, say after an encoding error
HINT = ("if the text is in another encoding, name it with --encoding NAME (e.g. --encoding latin-1); "
        "or use --encoding-errors replace to go on")
RULES = ["--method", "rules"]                                            # tokenize, without a trained model
ANNOTATE_RULES = ["annotate", "--stages", "tokenize", "--model", "tokenize=tokenize-rules-ewt"]


def test_the_encoding_hint_names_the_options_of_the_command(tmp_path, capsys):
    src = tmp_path / "bad.txt"
    src.write_bytes(b"Fine.\nBroken \xff here.\n")
    for args in (["tokenize", *RULES], ANNOTATE_RULES):
        code, out, err = run(capsys, *args, str(src))
        assert code == 2 and out == ""
        assert err == f"nlpipe: error: {src}:2: invalid UTF-8 (byte 0xff at byte offset 13, column 8); {HINT}\n"


# ---------------------------------------------------------------------------------------------
# --encoding NAME and --encoding-errors in tokenize and annotate: a file is decoded before any model
# loads; stdin as it is read; the output is UTF-8 whatever the input's encoding

TEXT = "Café crème au lait.\n\nNaïve résumé, déjà vu.\n"


def _no_models(monkeypatch):
    """Loading a model fails the test: what is checked must be refused before."""
    from nlpipe.runtime import pipeline

    def loaded(*_, **__):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(pipeline, "load_tokenizer", loaded)
    monkeypatch.setattr(pipeline, "_loaded", loaded)


@pytest.mark.parametrize("args", [["tokenize", *RULES], ANNOTATE_RULES])
def test_latin1_text_is_refused_before_a_model_loads_naming_the_way_on(tmp_path, capsys, monkeypatch, args):
    src = tmp_path / "latin.txt"
    src.write_bytes(TEXT.encode("latin-1"))   # é at byte 3 of line 1
    out = tmp_path / "out.conllu"
    _no_models(monkeypatch)
    code, stdout, err = run(capsys, *args, str(src), "-o", str(out))
    assert code == 2 and stdout == ""
    assert err == f"nlpipe: error: {src}:1: invalid UTF-8 (byte 0xe9 at byte offset 3, column 4); {HINT}\n"
    assert not out.exists()


def test_annotate_into_a_folder_refuses_before_a_model_loads_and_writes_nothing(tmp_path, capsys, monkeypatch):
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text(TEXT, encoding="utf-8")
    bad.write_bytes(b"Fine.\n\nStill fine.\nBut caf\xe9.\n")
    out = tmp_path / "out"
    out.mkdir()
    _no_models(monkeypatch)
    code, _, err = run(capsys, *ANNOTATE_RULES, str(good), str(bad), "-o", str(out))
    assert code == 2
    assert err == f"nlpipe: error: {bad}:4: invalid UTF-8 (byte 0xe9 at byte offset 26, column 8); {HINT}\n"
    assert list(out.iterdir()) == []


def test_a_bad_byte_megabytes_in_is_found_with_its_line_offset_and_column(tmp_path):
    from nlpipe.errors import EncodingError
    from nlpipe.io.inputs import check_encoding

    line = "x" * 99 + "\n"                              # 100 bytes
    head = (line * 30_000).encode()                      # 3,000,000 bytes: past the first blocks read
    src = tmp_path / "big.txt"
    # an 'é' (2 bytes) across the 1 MiB mark is no error; the bad byte is on line 30001, column 7
    src.write_bytes(head[:(1 << 20) - 1] + "é".encode() + head[(1 << 20) - 1:] + b"caf\xc3\xa9 \xff\n")
    with pytest.raises(EncodingError) as e:
        check_encoding(str(src))
    assert str(e.value) == f"{src}:30001: invalid UTF-8 (byte 0xff at byte offset 3000008, column 7); {HINT}"
    ok = tmp_path / "ok.txt"
    ok.write_bytes(head[:(1 << 20) - 1] + "é".encode() + head[(1 << 20) - 1:] + b"\xe2\x82")   # cut short at the end
    with pytest.raises(EncodingError, match=r"^.*ok.txt:30001: invalid UTF-8 \(byte 0xe2 at byte offset 3000002, "
                                            r"column 1\)"):
        check_encoding(str(ok))
    check_encoding(str(ok), "latin-1")    # every byte is Latin-1


@pytest.mark.parametrize("args", [["tokenize", *RULES], ANNOTATE_RULES])
def test_encoding_latin1_reads_latin1_and_writes_utf8(tmp_path, args):
    (tmp_path / "utf8").mkdir()
    (tmp_path / "latin").mkdir()
    want = tmp_path / "utf8" / "a.txt"                  # the same name: it goes into the sent_ids
    want.write_text(TEXT, encoding="utf-8")
    src = tmp_path / "latin" / "a.txt"
    src.write_bytes(TEXT.encode("latin-1"))
    r = run_cli(*args, str(want))
    assert r.returncode == 0, r.stderr
    assert "# text = Café crème au lait.\n" in r.stdout.decode("utf-8")
    for spelling in ("latin-1", "ISO-8859-1", "latin1"):
        got = run_cli(*args, "--encoding", spelling, str(src))
        assert got.returncode == 0 and got.stderr == b"" and got.stdout == r.stdout
    got = run_cli(*args, "--encoding", "latin-1", input=TEXT.encode("latin-1"))    # stdin
    assert got.returncode == 0 and got.stdout == run_cli(*args, input=TEXT.encode("utf-8")).stdout


def test_encoding_reads_conllu_and_text_in_workers_as_utf8_does(tmp_path):
    text = "".join(f"Paragraph {i}: café, crème; naïve.\n\n" for i in range(60))
    (tmp_path / "utf8").mkdir()
    (tmp_path / "cp").mkdir()
    (tmp_path / "utf8" / "a.txt").write_text(text, encoding="utf-8")
    (tmp_path / "cp" / "a.txt").write_bytes(text.encode("cp1252"))
    want = run_cli("tokenize", *RULES, str(tmp_path / "utf8" / "a.txt"))
    assert want.returncode == 0
    got = run_cli("tokenize", *RULES, "-j", "2", "--encoding", "cp1252", str(tmp_path / "cp" / "a.txt"))
    assert got.returncode == 0 and got.stdout == want.stdout
    conllu = tmp_path / "a.conllu"
    conllu.write_bytes(want.stdout.decode("utf-8").encode("cp1252"))
    # CoNLL-U in cp1252 through annotate (tokenize passes CoNLL-U through) is the UTF-8 CoNLL-U
    got = run_cli(*ANNOTATE_RULES, "--encoding", "cp1252", "--batch", "4", str(conllu))
    assert got.returncode == 0 and got.stdout == want.stdout


def test_utf16_is_read_with_encoding_utf16(tmp_path):
    src = tmp_path / "a.txt"
    src.write_bytes(TEXT.encode("utf-16"))    # with its byte-order mark
    r = run_cli("tokenize", *RULES, "--to", "text", str(src))
    assert r.returncode == 2 and b"UTF-16" in r.stderr    # refused as before without --encoding
    r = run_cli("tokenize", *RULES, "--to", "text", "--encoding", "utf-16", str(src))
    assert r.returncode == 0 and r.stdout.decode("utf-8") == "Café crème au lait.\n\nNaïve résumé, déjà vu.\n"


def test_bytes_not_valid_in_the_named_encoding_are_refused_likewise(tmp_path, capsys, monkeypatch):
    src = tmp_path / "a.txt"
    src.write_bytes(b"plain\ncaf\xc3\xa9\n")
    _no_models(monkeypatch)
    for args in (["tokenize", *RULES], ANNOTATE_RULES):
        code, _, err = run(capsys, *args, "--encoding", "ascii", str(src))
        assert code == 2
        assert err == f"nlpipe: error: {src}:2: invalid ascii (byte 0xc3 at byte offset 9, column 4); {HINT}\n"
    odd = tmp_path / "odd.txt"
    odd.write_bytes("ab\ncd\n".encode("utf-16-le") + b"\x00\xd8x\x00")    # a lone surrogate on line 3
    code, _, err = run(capsys, "tokenize", *RULES, "--encoding", "utf-16-le", str(odd))
    assert code == 2 and err == f"nlpipe: error: {odd}:3: invalid utf-16-le (byte 0x00 at byte offset 12); {HINT}\n"


def test_a_nul_byte_in_another_encoding_is_refused_before_a_model_loads(tmp_path, capsys, monkeypatch):
    src = tmp_path / "a.txt"
    src.write_bytes(b"caf\xe9\nsome\x00thing\n")
    _no_models(monkeypatch)
    code, _, err = run(capsys, "tokenize", *RULES, "--encoding", "latin-1", str(src))
    assert code == 2 and err == f"nlpipe: error: {src}:2: binary data (NUL byte) in input; is this a text file?\n"


@pytest.mark.parametrize("args", [["tokenize", *RULES], ANNOTATE_RULES])
def test_encoding_errors_replace_reads_each_bad_byte_as_u_fffd(tmp_path, args):
    src = tmp_path / "a.txt"
    src.write_bytes(b"Fine.\n\nBroken \xff here.\n")
    r = run_cli(*args, "--encoding-errors", "replace", str(src))
    assert r.returncode == 0 and r.stderr == b""
    assert "# text = Broken \ufffd here.\n" in r.stdout.decode("utf-8")
    r = run_cli(*args, "--encoding", "ascii", "--encoding-errors", "replace", input=b"caf\xc3\xa9\n")
    assert r.returncode == 0 and "# text = caf\ufffd\ufffd\n" in r.stdout.decode("utf-8")


@pytest.mark.parametrize("args", [["tokenize", *RULES], ANNOTATE_RULES])
def test_stdin_is_refused_as_it_is_read_naming_the_way_on(tmp_path, args):
    r = run_cli(*args, input=b"ok\n\xc3(\n")
    assert r.returncode == 2
    assert r.stderr.decode() == f"nlpipe: error: <stdin>:2: invalid UTF-8 (byte 0xc3 at byte offset 3, column 1); {HINT}\n"
    r = run_cli(*args, "--encoding", "ascii", input=b"ok\nfine\ncaf\xe9\n")
    assert r.returncode == 2
    assert r.stderr.decode() == f"nlpipe: error: <stdin>:3: invalid ascii (byte 0xe9 at byte offset 11, column 4); {HINT}\n"


@pytest.mark.parametrize("args", [["tokenize", *RULES], ANNOTATE_RULES])
@pytest.mark.parametrize("name, what", [("nope", "unknown encoding"), ("", "unknown encoding"),
                                        ("base64", "not a text encoding"), ("rot13", "not a text encoding")])
def test_an_encoding_that_is_not_one_is_one_line(tmp_path, capsys, monkeypatch, args, name, what):
    src = tmp_path / "a.txt"
    src.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "out.conllu"
    _no_models(monkeypatch)
    code, _, err = run(capsys, *args, "--encoding", name, str(src), "-o", str(out))
    assert code == 2 and err.startswith(f"nlpipe: error: --encoding {name}: {what} (") and err.count("\n") == 1
    assert not out.exists()


def test_annotate_on_a_cluster_refuses_another_encoding(tmp_path, capsys):
    src = tmp_path / "a.txt"
    src.write_text(TEXT, encoding="utf-8")
    for option in (["--encoding", "latin-1"], ["--encoding-errors", "replace"]):
        code, _, err = run(capsys, "annotate", "--cluster", "tcp://127.0.0.1:1", *option, str(src),
                           "-o", str(tmp_path / "out") + "/")
        assert code == 2 and err == ("nlpipe: error: --cluster reads its inputs as UTF-8 and refuses bytes that are "
                                     "not; leave --encoding and --encoding-errors out\n")
