"""The command line as users meet it: help, missing models, error messages, exit codes, pipes."""
from __future__ import annotations

import subprocess
import sys

import pytest

from nlpipe import registry
from nlpipe.cli import main

from conftest import FIXTURES, REPO, run_cli

COMMANDS = ["tokenize", "pos", "parse", "ner", "predicates", "srl", "annotate", "train", "eval", "convert", "models"]


def test_help_lists_every_command():
    r = run_cli("--help")
    assert r.returncode == 0
    out = r.stdout.decode()
    for c in COMMANDS:
        assert f"  {c} " in out


def test_stage_without_model_says_so(monkeypatch, capsys):
    monkeypatch.setitem(registry.DEFAULT_MODELS, "srl", [])
    with pytest.raises(SystemExit) as e:
        main(["srl", str(FIXTURES / "special.conllu")])
    assert e.value.code == 2
    assert capsys.readouterr().err.strip() == "nlpipe: error: no model for stage srl yet"


def test_train_predicates_points_to_train_srl(capsys):
    with pytest.raises(SystemExit) as e:
        main(["train", "predicates", "--train", "t.conllu"])
    assert e.value.code == 2
    assert capsys.readouterr().err.strip() == ("nlpipe: error: the srl model predicts predicates too: "
                                               "train it with 'nlpipe train srl'")


def test_missing_model_directory(tmp_path):
    r = run_cli("pos", "--model", str(tmp_path / "nope"), str(FIXTURES / "special.conllu"))
    assert r.returncode == 2
    assert b"no such model" in r.stderr and b"Traceback" not in r.stderr


@pytest.mark.parametrize("content,where,what", [
    (b"# sent_id = 1\n1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n\n1\tthree\tcolumns\n", ":4:", b"expected 10 tab-separated"),
    (b"x\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n", ":1:", b"ID must be an integer"),
    (b"1\tHi\t_\t_\t_\t_\tone\troot\t_\t_\n", ":1:", b"HEAD must be an integer"),
    (b"Just some stray text.\n", ":1:", b"expected 10 tab-separated"),
    (b"1\tH\xff\xfei\t_\t_\t_\t_\t0\troot\t_\t_\n", ":1:", b"invalid UTF-8"),
    (b"1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n\n" * 40 + b"1\tH\xffi\t_\t_\t_\t_\t0\troot\t_\t_\n", ":81:",
     b"invalid UTF-8 (byte 0xff at byte offset 1003, column 4)"),
    (b"1\tHi\t_\t_\t_\t_\t\xc2\xb2\troot\t_\t_\n", ":1:", "HEAD must be an integer or '_', found '\u00b2'".encode()),
    (b"\x00\x01\x02binary\x00\n", ":1:", b"NUL byte"),
])
def test_malformed_input_one_line_exit_2(tmp_path, content, where, what):
    bad = tmp_path / "bad.conllu"
    bad.write_bytes(content)
    r = run_cli("convert", str(bad))
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("nlpipe: error: ")
    assert f"{bad}{where}" in err
    assert what in r.stderr


def test_output_before_an_error_is_whole_sentences_and_no_partial_file(tmp_path):
    good = (FIXTURES / "special.conllu").read_bytes()
    bad = tmp_path / "bad.conllu"
    bad.write_bytes(good + b"1\toops\n")
    r = run_cli("convert", str(bad))
    assert r.returncode == 2
    assert r.stdout == good
    out = tmp_path / "out.conllu"
    r = run_cli("convert", str(bad), "-o", str(out))
    assert r.returncode == 2
    assert not out.exists() and list(tmp_path.iterdir()) == [bad]


def test_missing_input_file(tmp_path):
    r = run_cli("convert", str(tmp_path / "absent.conllu"))
    assert r.returncode == 2
    assert r.stderr.decode().strip() == f"nlpipe: error: {tmp_path / 'absent.conllu'}: no such file"


def test_pass_through_is_byte_identical(tmp_path):
    data = (FIXTURES / "special.conllu").read_bytes()
    r = run_cli("convert", input=data)
    assert r.returncode == 0 and r.stdout == data
    out = tmp_path / "o.conllu"
    r = run_cli("convert", str(FIXTURES / "special.conllu"), "-o", str(out))
    assert r.returncode == 0 and out.read_bytes() == data


def test_broken_pipe_is_quiet(tmp_path):
    big = tmp_path / "big.conllu"
    big.write_bytes((FIXTURES / "special.conllu").read_bytes() * 3000)
    p = subprocess.run(f"{sys.executable} -m nlpipe.cli convert {big} | head -c 100 > /dev/null",
                       shell=True, capture_output=True, cwd=REPO, timeout=120)
    assert p.stderr == b""


def test_in_process_call_restores_sigpipe(capsys):
    import signal

    before = signal.getsignal(signal.SIGPIPE)
    with pytest.raises(SystemExit):
        main(["convert", str(FIXTURES / "absent.conllu")])
    assert signal.getsignal(signal.SIGPIPE) == before


def test_a_command_runs_the_cycle_collector_rarely_but_still_runs_it(capsys):
    import gc

    from nlpipe.cli import GC_THRESHOLD

    before = gc.get_threshold()
    try:
        main(["--help"])
        assert gc.isenabled() and gc.get_threshold() == (GC_THRESHOLD,) + before[1:]
        assert 1000 <= GC_THRESHOLD <= 1_000_000        # rarer than Python's 700, yet on long inputs
    finally:
        gc.set_threshold(*before)
