"""Issue 34, "Reliability II": hostile inputs, endless lines, failing streams, interrupted training.

Each test builds its own fixture; none needs a corpus. Commands run as a user runs them (a
subprocess), and a refused run must end with one line on stderr, exit code 2, no traceback and
the input left as it was.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

import pytest

from conftest import run_cli, signal_midway

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


# ----------------------------------------------------------------------------------------------
# Digit strings: one number parser for every format

def test_number_takes_ascii_digits_only_and_any_length():
    from nlpipe.io.inputs import number

    assert number("0") == 0 and number("17") == 17 and number("007") == 7
    for bad in ("", "²", "٣", "1²", "-1", "+1", " 1", "1.5", "x"):
        assert number(bad) is None, bad
    assert number("9" * 5000) > 10 ** 15          # too large for anything it counts, no ValueError
    assert number("0" * 5000 + "3") == 3


def _row(i: str, form: str, head: str, misc: str = "_") -> str:
    return "\t".join([i, form, "_", "_", "_", "_", head, "_", "_", misc]) + "\n"


LONG = "9" * 5000


@pytest.mark.parametrize("text, line", [
    (_row("1", "The", "2") + _row("2", "dog", LONG) + "\n", 2),             # HEAD of 5000 digits
    (_row("1", "The", "²") + _row("2", "dog", "0") + "\n", 1),              # HEAD ²
    (_row("1-" + LONG, "Thedog", "_") + _row("1", "The", "2") + _row("2", "dog", "0") + "\n", 1),  # range
    (_row("²", "The", "0") + "\n", 1),                                       # ID ²
])
@pytest.mark.parametrize("args", [["pos"], ["annotate", "--stages", "pos", "-j", "2"]])
def test_bad_digit_strings_in_conllu_are_one_line_naming_the_line(tmp_path, text, line, args):
    src = tmp_path / "in.conllu"
    src.write_text(CONLLU + text, encoding="utf-8")
    r = nlpipe([*args, str(src)])
    msg = refused(r, f"{src}:{line + 3}:")
    assert len(msg) < 300                          # the 5000 digits are not echoed


def test_skip_bad_passes_a_sentence_with_a_huge_head_through(tmp_path):
    bad = _row("1", "The", "2") + _row("2", "dog", LONG) + "\n"
    src = tmp_path / "in.conllu"
    src.write_text(CONLLU + bad + CONLLU, encoding="utf-8")
    r = nlpipe(["annotate", "--stages", "pos", "--skip-bad", str(src)])
    assert r.returncode == 0, r.stderr
    assert b"Traceback" not in r.stderr
    out = r.stdout.decode()
    assert bad in out and out.count("\tDT\t") == 2  # the good sentences tagged, the bad one as it was


SRL_BAD = (_row("1", "Dogs", "2", "SRL=²:B-ARG0").replace("_\t_\t_\t_\t2", "dog\tNOUN\tNNS\t_\t2")
           + _row("2", "bark", "0", "Pred=bark.01").replace("_\t_\t_\t_\t0", "bark\tVERB\tVBP\t_\t0") + "\n")


@pytest.mark.parametrize("args", [["srl", "--predicates-from-input", "{bad}"],
                                  ["eval", "srl", "--gold", "{bad}", "--pred", "{bad}"],
                                  ["convert", "--from", "conllu", "--to", "conll2005", "{bad}"]])
def test_a_superscript_predicate_id_in_srl_is_one_line(tmp_path, args):
    bad = tmp_path / "bad.conllu"
    bad.write_text(SRL_BAD, encoding="utf-8")
    r = nlpipe([a.format(bad=bad) for a in args])
    refused(r, f"{bad}:1:", "SRL")


def _conll2012(sent: str = "0", token: str = "0") -> str:
    return (f"doc\t{sent}\t{token}\tDogs\tNNS\t(TOP(S(NP*)\t-\t-\t(ARG0*)\n"
            f"doc\t{sent}\t1\tbark\tVBP\t(VP*))\tbark\tbark.01\t(V*)\n\n")


@pytest.mark.parametrize("sent, token", [("²", "0"), ("0", "²"), (LONG, "0"), ("0", LONG)])
def test_bad_indexes_in_conll2012_are_one_line(tmp_path, sent, token):
    src = tmp_path / "props.txt"
    src.write_text(_conll2012() + _conll2012(sent, token), encoding="utf-8")
    r = nlpipe(["convert", "--from", "conll2012", "--to", "conllu", str(src)])
    msg = refused(r, f"{src}:4:")
    assert len(msg) < 300


@pytest.mark.parametrize("index", ["²", LONG])
def test_a_bad_token_index_in_uner_is_an_input_error(index):

    from nlpipe.errors import InputError
    from nlpipe.io.formats import read_uner

    text = "1\tDogs\tO\t-\tx\n" + f"{index}\tbark\tO\t-\tx\n\n"
    with pytest.raises(InputError) as e:
        list(read_uner(io.StringIO(text), "u.iob2"))
    assert str(e.value).startswith("u.iob2:2: ") and len(str(e.value)) < 300


def test_a_superscript_first_line_of_vectors_is_a_word_and_a_huge_header_is_refused(tmp_path):
    from nlpipe.errors import InputError
    from nlpipe.train.vectors import read_vectors

    src = tmp_path / "v.txt"
    src.write_text("² 3\nthe 0.1\n", encoding="utf-8")   # not word2vec's header: a word and its number
    assert read_vectors(str(src)).words == ["²", "the"]
    src.write_text(f"1 {LONG}\nthe 0.1\n", encoding="utf-8")
    with pytest.raises(InputError):
        read_vectors(str(src))


# ----------------------------------------------------------------------------------------------
# A bound on a line

MEMORY = 1500 << 20   # address space for a command that must stay flat (loading pos takes less than 1 GB)


def limited(args: Sequence[str], memory: int = MEMORY, timeout: float = 60) -> subprocess.CompletedProcess:
    """``nlpipe ARGS`` under an address-space limit: a reader whose memory grows with its input
    fails (a MemoryError) instead of eating the machine."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return nlpipe(args, timeout=timeout, preexec_fn=limit)


@pytest.mark.parametrize("args", [["pos"], ["tokenize"], ["tokenize", "--method", "rules"],
                                  ["convert", "--from", "conll2012", "--to", "conllu"]])
def test_dev_zero_is_refused_at_its_first_nul_byte_in_flat_memory(args):
    r = limited([*args, "/dev/zero"])
    refused(r, "/dev/zero:1:", "NUL byte")


@pytest.mark.parametrize("args", [["pos"], ["tokenize", "--method", "rules"], ["annotate", "--stages", "pos"]])
def test_a_file_without_line_breaks_is_refused_past_the_line_cap(tmp_path, args):
    src = tmp_path / "one-line.txt"
    with open(src, "wb") as f:
        for _ in range(40):
            f.write(b"word " * 100_000)    # 20 MB, no line break
    r = limited([*args, str(src)])
    refused(r, f"{src}:1:", "line longer than")


def _read_vectors_limited(path: str) -> str:
    """What ``read_vectors(path)`` raises, run in a process whose memory is limited (a reader that
    holds an endless line must fail there, not on the test machine)."""
    import resource

    code = ("import sys\nfrom nlpipe.errors import InputError\nfrom nlpipe.train.vectors import read_vectors\n"
            "try:\n    read_vectors(sys.argv[1])\nexcept InputError as e:\n    print(e)\n")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    r = subprocess.run([sys.executable, "-c", code, path], capture_output=True, timeout=60, preexec_fn=limit)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return r.stdout.decode()


def test_word_vectors_from_dev_zero_are_refused():
    assert "/dev/zero:1: binary data (NUL byte)" in _read_vectors_limited("/dev/zero")


def test_word_vectors_that_inflate_to_one_endless_line_are_refused(tmp_path):
    import gzip

    bomb = tmp_path / "v.txt.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as f:
        block = b"0.5 " * (1 << 18)
        for _ in range(256):              # 256 MiB of numbers and no line break
            f.write(block)
    assert bomb.stat().st_size < 16 << 20
    assert f"{bomb}:1: line longer than" in _read_vectors_limited(str(bomb))


def test_main_turns_a_memory_error_into_one_line(monkeypatch, capsys):
    import nlpipe.runtime.pipeline as pipeline
    from nlpipe.cli import main

    def exhausted(*args, **kwargs):
        raise MemoryError()
    monkeypatch.setattr(pipeline, "run_stage", exhausted)
    with pytest.raises(SystemExit) as e:
        main(["pos", "-"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nlpipe: error: ") and "memory" in err


# ----------------------------------------------------------------------------------------------
# Interrupted training leaves the model it would replace whole

def _treebank(n: int) -> str:
    """``n`` three-word sentences with tags, features, lemmas and trees."""
    import random

    rnd = random.Random(n)
    det = [("the", "DT", "Definite=Def|PronType=Art"), ("a", "DT", "Definite=Ind|PronType=Art")]
    noun = [("dog", "NN", "Number=Sing"), ("cat", "NN", "Number=Sing")]
    verb = [("barks", "VBZ", "Mood=Ind|Number=Sing|Person=3|Tense=Pres"),
            ("sleeps", "VBZ", "Mood=Ind|Number=Sing|Person=3|Tense=Pres")]
    out = []
    for k in range(n):
        (d, dx, df), (w, nx, nf), (v, vx, vf) = rnd.choice(det), rnd.choice(noun), rnd.choice(verb)
        out.append(f"# sent_id = s{k}\n# text = {d} {w} {v}\n"
                   f"1\t{d}\t{d}\tDET\t{dx}\t{df}\t2\tdet\t_\t_\n"
                   f"2\t{w}\t{w}\tNOUN\t{nx}\t{nf}\t3\tnsubj\t_\t_\n"
                   f"3\t{v}\t{v[:-1]}\tVERB\t{vx}\t{vf}\t0\troot\t_\t_\n\n")
    return "".join(out)


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def trained_pos(tmp_path):
    """(train, dev, model folder trained from them, its files' bytes)."""
    train, dev = tmp_path / "train.conllu", tmp_path / "dev.conllu"
    train.write_text(_treebank(200))
    dev.write_text(_treebank(20))
    out = tmp_path / "model"
    r = nlpipe(["train", "pos", "--train", str(train), "--dev", str(dev), "--out", str(out), "--vectors", "none"])
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return train, dev, out, _snapshot(out)


def test_a_training_that_fails_at_the_end_leaves_the_old_model_whole(trained_pos, monkeypatch):
    import nlpipe.train.pos as pos

    train, dev, out, before = trained_pos

    def broken(*args, **kwargs):
        raise RuntimeError("the disk went away")
    monkeypatch.setattr(pos, "write_config", broken)   # after the weights and morph/ are written
    with pytest.raises(RuntimeError):
        pos.train_model(str(train), str(dev), str(out), pos.TrainOptions(epochs=2), vectors="none")
    assert _snapshot(out) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["dev.conllu", "model", "train.conllu"]


def test_sigterm_during_training_leaves_the_old_model_whole_and_no_temporary_folder(trained_pos):
    import signal
    import time

    train, dev, out, before = trained_pos
    proc = subprocess.Popen([sys.executable, "-m", "nlpipe.cli", "train", "pos", "--train", str(train),
                             "--dev", str(dev), "--out", str(out), "--vectors", "none", "--epochs", "50"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not list(out.parent.glob(".nlpipe-model-*")) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "nlpipe: terminated"
    assert _snapshot(out) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["dev.conllu", "model", "train.conllu"]


def test_a_finished_training_replaces_the_model_and_names_it(trained_pos):
    import json

    train, dev, out, before = trained_pos
    (out / "stale.txt").write_text("from an older model")
    r = nlpipe(["train", "tokenize", "--method", "rules", "--train", str(train), "--out", str(out), "--json"])
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert json.loads(r.stdout)["model"] == str(out)
    assert not (out / "stale.txt").exists() and json.loads((out / "config.json").read_text())["stage"] == "tokenize"
    assert sorted(p.name for p in out.parent.iterdir()) == ["dev.conllu", "model", "train.conllu"]
    assert oct(out.stat().st_mode & 0o777) == oct(0o777 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_training_into_a_file_is_refused_before_any_work(tmp_path):
    train = tmp_path / "train.conllu"
    train.write_text(_treebank(20))
    out = tmp_path / "model"
    out.write_text("not a folder")
    r = nlpipe(["train", "tokenize", "--method", "rules", "--train", str(train), "--out", str(out)])
    refused(r, str(out), "not a folder")
    assert out.read_text() == "not a folder"


# ----------------------------------------------------------------------------------------------
# Failing streams

@pytest.mark.parametrize("args", [["pos"], ["tokenize", "--method", "rules"], ["annotate", "--stages", "pos"],
                                  ["convert", "--from", "conll2012", "--to", "conllu"]])
def test_an_input_that_fails_to_read_is_one_line(args):
    # reading /proc/self/mem at offset 0 fails with EIO
    refused(nlpipe([*args, "/proc/self/mem"]), "/proc/self/mem:1:", "cannot read")


def test_an_input_that_fails_to_read_in_eval_is_one_line(tmp_path):
    gold = tmp_path / "gold.conllu"
    gold.write_text(CONLLU)
    refused(nlpipe(["eval", "ud", "--gold", str(gold), "--pred", "/proc/self/mem"]), "/proc/self/mem:1:", "cannot read")


def _closing(fd: int):
    return lambda: os.close(fd)


def test_a_closed_stdin_is_one_line():
    refused(nlpipe(["pos"], preexec_fn=_closing(0)), "<stdin>", "closed")


@pytest.mark.parametrize("args", [["pos", "{src}"], ["models"], ["eval", "ud", "--gold", "{src}", "--pred", "{src}"]])
def test_a_closed_stdout_is_one_line(tmp_path, args):
    src = tmp_path / "in.conllu"
    src.write_text(CONLLU)
    refused(nlpipe([a.format(src=src) for a in args], preexec_fn=_closing(1)), "<stdout>", "closed")


@pytest.mark.parametrize("args", [["pos", "{src}"], ["models"], ["models", "--json"], ["--help"], ["pos", "--help"],
                                  ["eval", "ud", "--gold", "{src}", "--pred", "{src}"]])
def test_a_full_stdout_is_one_line(tmp_path, args):
    src = tmp_path / "in.conllu"
    src.write_text(CONLLU)
    with open("/dev/full", "wb") as full:
        r = nlpipe([a.format(src=src) for a in args], stdout=full)
    refused(r, "No space left on device")


def test_a_closed_stderr_keeps_exit_code_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "nlpipe.cli", "pos", str(tmp_path / "missing.conllu")],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=_closing(2), timeout=60)
    assert r.returncode == 2


def test_a_full_stderr_keeps_exit_code_2(tmp_path):
    with open("/dev/full", "wb") as full:
        r = subprocess.run([sys.executable, "-m", "nlpipe.cli", "pos", str(tmp_path / "missing.conllu")],
                           stdout=subprocess.PIPE, stderr=full, timeout=60)
    assert r.returncode == 2


@pytest.mark.parametrize("data, what", [(None, "gzip"), ("\ufeffA dog barks.\n".encode("utf-16-le"), "UTF-16"),
                                        (b"A dog\x00 barks.\n", "NUL")])
def test_annotate_refuses_an_input_that_is_not_text_before_loading_models(tmp_path, data, what):
    import gzip
    import time

    src = tmp_path / "in.txt"
    src.write_bytes(gzip.compress(b"A dog barks.\n") if data is None else data)
    start = time.time()
    r = nlpipe(["annotate", str(src), "-o", str(tmp_path / "out.conllu")])
    refused(r, str(src), what)
    assert time.time() - start < 3      # the whole chain takes about 5 s to load
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_annotate_refuses_a_closed_stdout_before_loading_models(tmp_path):
    import time

    src = tmp_path / "in.txt"
    src.write_text("A dog barks.\n")
    start = time.time()
    refused(nlpipe(["annotate", str(src)], preexec_fn=_closing(1)), "<stdout>", "closed")
    assert time.time() - start < 3


# ----------------------------------------------------------------------------------------------
# Other signals

@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("name", ["SIGUSR1", "SIGUSR2", "SIGALRM", "SIGXCPU"])
def test_batch_system_signals_end_the_run_with_one_line_and_no_temporary_file(tmp_path, name, jobs):
    import signal

    sig = getattr(signal, name)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    out = tmp_path / "out.conllu"
    proc = subprocess.Popen([sys.executable, "-m", "nlpipe.cli", "annotate", "--stages", "pos", "--jobs", jobs,
                             "--batch", "1", str(fifo), "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = signal_midway(proc, fifo, CONLLU * 3, sig)   # chunks go to the temporary file meanwhile
    assert proc.returncode == 128 + sig, err
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nlpipe: ") and "Traceback" not in lines[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fifo"]


# ----------------------------------------------------------------------------------------------
# Hostile model folders and malformed configs

def _model_copy(tmp_path: Path, name: str = "tokenize-rules-ewt") -> Path:
    import shutil

    from nlpipe.registry import MODELS_DIR

    if not (MODELS_DIR / name).is_dir():
        pytest.skip(f"shipped model {name} absent")
    dst = tmp_path / "models" / "m"
    shutil.copytree(MODELS_DIR / name, dst)
    return dst


def _edit_config(model: Path, edit) -> None:
    import json

    config = json.loads((model / "config.json").read_text())
    edit(config)
    (model / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("name", ["../other/punkt.json", "/dev/zero", "/etc/hostname"])
def test_a_file_name_in_config_that_leaves_the_folder_is_refused(tmp_path, name):
    import shutil

    model = _model_copy(tmp_path)
    (tmp_path / "models" / "other").mkdir()
    shutil.copy(model / "punkt.json", tmp_path / "models" / "other" / "punkt.json")
    _edit_config(model, lambda c: c["model"].update(punkt=name))
    r = limited(["tokenize", "--model", str(model)], timeout=30)
    refused(r, "model.punkt", "outside")


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "outside"])
def test_a_model_file_that_is_not_a_regular_file_of_the_folder_is_refused(tmp_path, kind):
    model = _model_copy(tmp_path)
    (model / "punkt.json").unlink()
    if kind == "dev-zero":
        (model / "punkt.json").symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(model / "punkt.json")
    else:
        (tmp_path / "elsewhere.json").write_text("{}")
        (model / "punkt.json").symlink_to(tmp_path / "elsewhere.json")
    r = limited(["tokenize", "--model", str(model)], timeout=30)
    refused(r, "punkt.json")


@pytest.mark.parametrize("edit, words", [
    (lambda c: c["training"].update(scores=[1, 2]), "training.scores"),
    (lambda c: c.update(language="\ud800"), "language"),
    (lambda c: c.update(language="en\nzz"), "language"),
    (lambda c: c.update(also_stages=[[1]]), "also_stages"),
    (lambda c: c["training"].update(notes=float("nan")), "finite"),
])
def test_a_malformed_config_is_one_line_and_nlpipe_models_lists_the_others(tmp_path, edit, words):
    import shutil

    good = _model_copy(tmp_path)
    bad = tmp_path / "models" / "bad"
    shutil.copytree(good, bad)
    _edit_config(bad, edit)
    refused(nlpipe(["tokenize", "--model", str(bad)]), str(bad), words)
    r = nlpipe(["models"], env=dict(os.environ, NLPIPE_MODELS=str(tmp_path / "models")))
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    lines = [line for line in out.splitlines() if str(tmp_path) in line]
    assert len(lines) == 2 and "broken" in lines[0] and str(bad) in lines[0]
    assert str(good) in lines[1] and "punkt-treebank.v1" in lines[1]


def test_a_config_nested_100000_levels_deep_is_one_line(tmp_path):
    model = _model_copy(tmp_path)
    text = (model / "config.json").read_text()
    (model / "config.json").write_text(text.rstrip().rstrip("}") + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}")
    refused(nlpipe(["tokenize", "--model", str(model)]), str(model), "nested")


@pytest.mark.parametrize("key, value", [("heads", 0), ("layers", 1e30), ("d_model", -1), ("layers", True)])
def test_network_sizes_out_of_range_are_one_line(tmp_path, key, value):
    model = _model_copy(tmp_path, "srl-lisa-ewt")
    _edit_config(model, lambda c: c["model"].update({key: value}))
    refused(limited(["srl", "--model", str(model)], timeout=60), f"model.{key}")


def _npz_with_header(path: Path, declared: int) -> None:
    """An uncompressed .npz whose one array's header declares ``declared`` float32 elements but
    holds 4."""
    import zipfile

    import numpy as np
    from numpy.lib import format as npy

    head = io.BytesIO()
    npy.write_array_header_1_0(head, {"descr": "<f4", "fortran_order": False, "shape": (declared,)})
    data = head.getvalue() + np.zeros(4, np.float32).tobytes()
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("weights.npy", data)


def test_an_npz_declaring_10_to_the_11_elements_is_refused_before_allocating(tmp_path):
    model = _model_copy(tmp_path, "tokenize-char-ewt")
    _npz_with_header(model / "weights.npz", 10 ** 11)
    refused(limited(["tokenize", "--model", str(model)], timeout=60), "weights.npz", "declares")


def test_a_model_file_that_unpacks_beyond_the_cap_is_refused(tmp_path, monkeypatch):
    import zipfile

    import numpy as np

    import nlpipe.io.model_dir as model_dir
    from nlpipe.errors import ModelError

    monkeypatch.setattr(model_dir, "MAX_FILE", 1 << 20)     # a 1 MiB cap stands in for the real one
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, x=np.zeros(1 << 20, np.float32))   # 4 MiB of zeros, a few KiB packed
    assert path.stat().st_size < 64 << 10
    with pytest.raises(ModelError, match="unpacks to"):
        model_dir.read_arrays(path)
    assert zipfile.is_zipfile(path)


# ----------------------------------------------------------------------------------------------
# Low

def test_a_file_name_that_is_not_utf8_gives_valid_conllu(tmp_path):
    src = os.path.join(os.fsencode(tmp_path), b"caf\xe9.txt")
    with open(src, "wb") as f:
        f.write(b"A dog barks.\n")
    r = nlpipe(["tokenize", "--method", "rules", os.fsdecode(src)])
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode("utf-8")                   # strict: raises on invalid UTF-8
    assert "# sent_id = caf\ufffd-1" in text


def test_an_output_name_near_the_file_system_limit_is_written(tmp_path):
    src = tmp_path / "in.conllu"
    src.write_text(CONLLU)
    out = tmp_path / ("a" * 248 + ".conllu")         # 255 bytes: the longest name most file systems take
    r = nlpipe(["pos", str(src), "-o", str(out)])
    assert r.returncode == 0, r.stderr
    assert out.is_file() and sorted(p.name for p in tmp_path.iterdir()) == sorted(["in.conllu", out.name])


def test_a_per_file_output_that_is_a_folder_is_refused(tmp_path):
    src = tmp_path / "a.conllu"
    src.write_text(CONLLU)
    (tmp_path / "od" / "a.conllu").mkdir(parents=True)
    refused(nlpipe(["annotate", "--stages", "pos", str(src), "-o", str(tmp_path / "od") + "/"]), "a.conllu", "not a file")


def test_a_value_with_a_pipe_stays_one_misc_entry():
    from nlpipe.io.conllu import misc_get, misc_set

    misc = misc_set("SpaceAfter=No", "Pred", "zorb|ne=b-per.01")
    assert misc_get(misc, "ne") is None and misc_get(misc, "SpaceAfter") == "No"
    assert misc_get(misc, "Pred").startswith("zorb") and misc_get(misc, "Pred").endswith("ne=b-per.01")
    assert len(misc.split("|")) == 2


@pytest.mark.parametrize("text, line, words", [
    (CONLLU.replace("\n", "\r"), 1, "carriage return"),                                   # CR-only line breaks
    ("1\t\t_\t_\t_\t_\t0\troot\t_\t_\n\n", 1, "empty FORM"),
    ("1-3\tabc\t_\t_\t_\t_\t_\t_\t_\t_\n1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2-3\tbc\t_\t_\t_\t_\t_\t_\t_\t_\n"
     "2\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n3\tc\t_\t_\t_\t_\t1\tdep\t_\t_\n\n", 3, "overlaps"),        # nested ranges
    ("1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_\n1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2-3\tbc\t_\t_\t_\t_\t_\t_\t_\t_\n"
     "2\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n3\tc\t_\t_\t_\t_\t1\tdep\t_\t_\n\n", 3, "overlaps"),        # overlapping
])
def test_the_reader_refuses_what_conllu_does_not_allow(tmp_path, text, line, words):
    src = tmp_path / "in.conllu"
    src.write_text(text, newline="")
    refused(nlpipe(["pos", str(src)]), f"{src}:{line}:", words)


def test_the_parser_trainer_refuses_a_word_headed_by_itself(tmp_path):
    # eval reads predicted files, which may hold a self-loop; a gold tree to train on may not
    src = tmp_path / "train.conllu"
    src.write_text("1\ta\t_\tX\tX\t_\t0\troot\t_\t_\n2\tb\t_\tX\tX\t_\t2\tdep\t_\t_\n\n")
    refused(nlpipe(["train", "parse", "--train", str(src), "--dev", str(src), "--out", str(tmp_path / "m")]),
            f"{src}:", "itself")
    assert nlpipe(["eval", "parse", "--gold", str(src), "--pred", str(src)]).returncode == 0


def test_jobs_beyond_the_machine_are_refused_before_loading(tmp_path):
    # the README: at most twice the cores, and 4 on any machine
    jobs = str(max(5, 2 * len(os.sched_getaffinity(0)) + 1))
    src = tmp_path / "in.conllu"
    src.write_text(CONLLU)
    refused(nlpipe(["annotate", "--stages", "pos", "-j", jobs, str(src)]), f"--jobs {jobs}")


def test_an_error_about_a_200000_character_cell_is_cut(tmp_path):
    src = tmp_path / "in.conllu"
    src.write_text(CONLLU.replace("0\troot\t_\t_", "0\troot\t_\tNE=" + "x" * 200_000))
    line = refused(nlpipe(["eval", "ner", "--gold", str(src), "--pred", str(src)]), f"{src}:2:")
    assert len(line) < 1000


# ----------------------------------------------------------------------------------------------
# Memory that grows with the input

def test_the_rule_tokenizer_cuts_a_text_without_sentence_ends_into_bounded_sentences():
    from nlpipe.runtime.pipeline import load_tokenizer

    words = ("the dog barks at a cat while his friend reads in the garden and it rains " * 3000).split()
    text = " ".join(words) + "\n"                       # ~220,000 characters, no sentence end
    sentences = load_tokenizer(method="rules").tokenize_text(text, "t")
    assert len(sentences) > 5
    assert all(len(s.meta("text")) <= 20_000 for s in sentences)
    assert [f for s in sentences for f in s.forms()] == words   # no word lost, split or joined


def test_a_text_without_sentence_ends_tokenizes_in_bounded_memory(tmp_path):
    src = tmp_path / "list.txt"
    with open(src, "w") as f:
        for _ in range(40):
            f.write(("the dog barks at a cat while his friend reads in the garden and it rains\n" * 1400))
    # 4 MB and no sentence end: before, one sentence of 860,000 words took about 550 MB
    r = limited(["tokenize", "--method", "rules", str(src), "-o", str(tmp_path / "out.conllu")], memory=350 << 20,
                timeout=300)
    assert r.returncode == 0, r.stderr.decode()[-2000:]


# ----------------------------------------------------------------------------------------------
# Out of memory in a library's own words

TORCH_OOM = ("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: you tried to "
             "allocate 4718592 bytes.")


def test_an_allocation_failure_while_reading_a_model_is_out_of_memory_not_a_damaged_model(tmp_path):
    from nlpipe.io.model_dir import model_errors

    with pytest.raises(MemoryError):
        with model_errors(tmp_path, "network weights weights.pt"):
            raise RuntimeError(TORCH_OOM)


@pytest.mark.parametrize("failure", [ImportError("libtorch_cpu.so: failed to map segment from shared object"),
                                     RuntimeError(TORCH_OOM)], ids=["loading a library", "torch's allocator"])
def test_main_turns_a_failed_allocation_into_the_out_of_memory_line(monkeypatch, capsys, failure):
    import nlpipe.runtime.pipeline as pipeline
    from nlpipe.cli import main

    def exhausted(*args, **kwargs):
        raise failure
    monkeypatch.setattr(pipeline, "run_stage", exhausted)
    with pytest.raises(SystemExit) as e:
        main(["pos", "-"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "out of memory" in err


# ----------------------------------------------------------------------------------------------
# A tight ulimit -v: never OpenBLAS's own exit

TAGGED = "1\tThe\tthe\tDET\tDT\t_\t_\t_\t_\t_\n2\tdog\tdog\tNOUN\tNN\t_\t_\t_\t_\t_\n3\tbarked\tbark\tVERB\tVBD\t_\t_\t_\t_\t_\n\n"


@pytest.mark.parametrize("mb", [100, 150, 200, 220, 260, 320])
def test_under_a_tight_address_limit_parse_gives_output_or_one_line(tmp_path, mb):
    src = tmp_path / "in.conllu"
    src.write_text(TAGGED, encoding="utf-8")
    r = limited(["parse", str(src)], memory=mb << 20)
    if r.returncode == 0:
        assert r.stdout.decode().count("\n1\t") + r.stdout.decode().startswith("1\t") == 1
    else:
        refused(r, "ulimit -v")
