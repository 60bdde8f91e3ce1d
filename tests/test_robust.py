"""Robustness of `nlpipe annotate`: broken pipes, Ctrl-C, malformed input (and --skip-bad), model
files that are truncated or carry a pickle payload, and a property test of the CoNLL-U reader."""
from __future__ import annotations

import ast
import io
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import missing, run_cli, signal_midway
from nlpipe.io.conllu import read_conllu, to_string
from nlpipe.errors import InputError, ModelError
from nlpipe.runtime.chunks import Chunk, conllu_chunks, parse_chunk
from nlpipe.registry import MODELS_DIR, load_stage

REPO = Path(__file__).resolve().parent.parent
SAMPLE = (REPO / "data" / "sample.txt").read_text(encoding="utf-8")
NL = [sys.executable, "-m", "nlpipe.cli"]


def sentences(n: int, bad_at: int = 0) -> str:
    out = []
    for k in range(1, n + 1):
        rows = [f"# sent_id = s{k}", f"# text = w{k} x"] + [f"1\tw{k}\t_\t_\t_\t_\t0\troot\t_\t_",
                                                          "2\tx\t_\t_\t_\t_\t1\tdep\t_\t_"]
        if k == bad_at:
            rows[3] = "2\tx\t_\t_\t_"
        out.append("\n".join(rows) + "\n\n")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# | head, Ctrl-C

@pytest.mark.parametrize("jobs", ["1", "2"])
def test_broken_pipe_is_quiet(tmp_path, jobs):
    src = tmp_path / "big.txt"
    src.write_text((SAMPLE + "\n") * 200, encoding="utf-8")
    r = subprocess.run(" ".join(NL) + f" annotate --jobs {jobs} --batch 16 {src} | head -3", shell=True,
                       capture_output=True, timeout=300)
    assert r.stdout.decode().splitlines() == ["# newdoc", "# newpar", "# sent_id = big-1"]
    assert r.stderr == b""
    time.sleep(0.5)
    left = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(src) not in left  # no worker outlives the run


def _workers_of(fifo: Path) -> list:
    """Processes whose command line names ``fifo`` (the run and its workers)."""
    left = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in left.splitlines() if str(fifo) in line and "ps -eo" not in line]


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("sig, message", [(signal.SIGINT, "interrupted"), (signal.SIGTERM, "terminated"),
                                          (signal.SIGHUP, "hangup")])
def test_a_signal_ends_the_run_with_one_line_and_no_temporary_file(tmp_path, jobs, sig, message):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    out = tmp_path / "out.conllu"
    # a suite started in the background (`make test &`) inherits SIGINT ignored, and one started
    # under nohup SIGHUP, and so would the child (nlpipe keeps an ignored signal ignored); give it
    # the default disposition a terminal's Ctrl-C or hang-up meets
    proc = subprocess.Popen(NL + ["annotate", "--stages", "tokenize", "--model", "tokenize=tokenize-rules-ewt",
                                  "--jobs", jobs, "--batch", "1", str(fifo), "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
    err = signal_midway(proc, fifo, SAMPLE * 3, sig)   # several chunks go to the temporary file meanwhile
    assert proc.returncode == 128 + sig, err
    assert err.decode() == f"nlpipe: {message}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fifo"]
    time.sleep(0.3)
    assert _workers_of(fifo) == []


@pytest.mark.parametrize("command", [["pos"], ["convert"], ["tokenize", "--method", "rules"]])
def test_a_signal_ends_a_filter_reading_stdin(tmp_path, command):
    out = tmp_path / "out.conllu"
    proc = subprocess.Popen(NL + command + ["-o", str(out)], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write((SAMPLE if command[0] == "tokenize" else sentences(3)).encode())
    proc.stdin.flush()  # and the input stays open
    deadline = time.time() + 60
    while not [p for p in tmp_path.iterdir() if p.name.startswith(".nlpipe-")] and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (143, b"nlpipe: terminated\n")
    assert list(tmp_path.iterdir()) == []


def test_a_late_input_error_under_jobs_is_reported(tmp_path):
    src = tmp_path / "in.conllu"
    text = sentences(200, bad_at=190)
    src.write_text(text, encoding="utf-8")
    line = text.splitlines().index("2\tx\t_\t_\t_") + 1
    for _ in range(3):
        r = subprocess.run(NL + ["annotate", "--stages", "pos", "--jobs", "2", "--batch", "4", str(src)],
                           capture_output=True, timeout=120)
        assert r.returncode == 2, r.stderr
        assert r.stderr.decode().splitlines()[-1].startswith(f"nlpipe: error: {src}:{line}: expected 10")
        assert b"Traceback" not in r.stderr


# ---------------------------------------------------------------------------------------------
# Malformed input, --skip-bad

def test_malformed_sentence_in_a_later_chunk_names_file_and_line(tmp_path):
    src = tmp_path / "in.conllu"
    text = sentences(30, bad_at=23)
    src.write_text(text, encoding="utf-8")
    line = text.splitlines().index("2\tx\t_\t_\t_") + 1
    out = tmp_path / "out.conllu"
    r = run_cli("annotate", "--stages", "tokenize", "--batch", "4", str(src), "-o", str(out))
    assert r.returncode == 2
    assert r.stderr.decode() == f"nlpipe: error: {src}:{line}: expected 10 tab-separated columns, found 5: '2\\tx\\t_\\t_\\t_'\n"
    assert not out.exists()


@pytest.mark.parametrize("parser", ["biaffine", "transition"])
def test_untagged_sentence_for_the_parser_names_file_and_line(tmp_path, parser):
    # the stage finds this error, not the reader: the message must still name the file, not "<input>"
    tagged = sentences(3).replace("\t_\t_\t_\t0\t", "\t_\tNOUN\tNN\t_\t0\t").replace("\t_\t_\t_\t1\t", "\t_\tNOUN\tNN\t_\t1\t")
    src = tmp_path / "in.conllu"
    src.write_text(tagged + sentences(1), encoding="utf-8")
    line = len(tagged.splitlines()) + 1
    out = tmp_path / "out.conllu"
    r = run_cli("parse", "--parser", parser, str(src), "-o", str(out))
    assert r.returncode == 2
    assert r.stderr.decode().startswith(f"nlpipe: error: {src}:{line}: sentence without POS tags")
    assert not out.exists()
    r = run_cli("parse", "--parser", parser, input=src.read_bytes())
    assert r.returncode == 2 and r.stderr.decode().startswith(f"nlpipe: error: <stdin>:{line}: sentence without POS")


def test_invalid_utf8_in_a_later_chunk_names_its_line(tmp_path):
    src = tmp_path / "in.conllu"
    data = sentences(20).encode()
    line = 37
    lines = data.split(b"\n")
    lines[line - 1] = lines[line - 1].replace(b"x", b"\xff")
    src.write_bytes(b"\n".join(lines))
    column = lines[line - 1].index(b"\xff") + 1
    offset = sum(len(x) + 1 for x in lines[:line - 1]) + column - 1
    r = run_cli("annotate", "--stages", "tokenize", "--batch", "2", str(src))
    assert r.returncode == 2 and r.stderr.decode() == (f"nlpipe: error: {src}:{line}: invalid UTF-8 (byte 0xff at "
                                                      f"byte offset {offset}, column {column}); if the text is in another "
                                                      "encoding, name it with --encoding NAME (e.g. --encoding "
                                                      "latin-1); or use --encoding-errors replace to go on\n")
    r = run_cli("annotate", "--stages", "tokenize", "--batch", "2", "--skip-bad", str(src))
    assert r.returncode == 0 and r.stdout == src.read_bytes()  # passed through byte for byte


def test_skip_bad_passes_the_bad_sentence_through_and_goes_on(tmp_path):
    src = tmp_path / "in.conllu"
    text = sentences(30, bad_at=23)
    src.write_text(text, encoding="utf-8")
    line = text.splitlines().index("2\tx\t_\t_\t_") + 1
    r = run_cli("annotate", "--stages", "tokenize", "--skip-bad", "--batch", "4", str(src))
    assert r.returncode == 0
    assert r.stdout.decode() == text
    assert r.stderr.decode() == (f"nlpipe: warning: {src}:{line}: expected 10 tab-separated columns, found 5: "
                                 "'2\\tx\\t_\\t_\\t_'; passed through unchanged (--skip-bad)\n")


def test_skip_bad_recovers_at_the_next_blank_line():
    text = sentences(2) + "# sent_id = joined\n1\ta\t_\t_\t_\t_\t_\t_\t_\t_\n# stray comment\n1\tb\t_\t_\t_\t_\t_\t_\t_\t_\n\n" + sentences(1)
    warnings = []
    items = parse_chunk(Chunk("x", data=text.encode()), True, warnings.append)
    assert "".join(i.to_string() for i in items) == text
    assert [type(i).__name__ for i in items] == ["Sentence", "Sentence", "Verbatim", "Sentence"]
    assert warnings == ["x:13: comment line inside a sentence (expected a blank line first); "
                        "passed through unchanged (--skip-bad)"]
    bad = b"1\tb\xff\t_\t_\t_\t_\t_\t_\t_\t_\n\n" + sentences(1).encode()
    items = parse_chunk(Chunk("y", first_line=5, data=bad), True, warnings.append)
    assert warnings[-1].startswith("y:5: invalid UTF-8") and len(items) == 2


# ---------------------------------------------------------------------------------------------
# Model files: truncated, wrong, or carrying a pickle payload

class Payload:
    """Unpickling this runs code: it creates the file named by ``path``."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


@pytest.fixture
def tokenizer_copy(tmp_path):
    model = tmp_path / "tok"
    shutil.copytree(MODELS_DIR / "tokenize-rules-ewt", model)
    return model


def test_truncated_tokenizer_model(tmp_path, tokenizer_copy):
    punkt = tokenizer_copy / "punkt.json"
    punkt.write_bytes(punkt.read_bytes()[:1000])
    r = run_cli("annotate", "--model", f"tokenize={tokenizer_copy}", str(REPO / "data" / "sample.txt"),
                "-o", str(tmp_path / "out.conllu"))
    assert r.returncode == 2 and b"Traceback" not in r.stderr
    assert r.stderr.decode().startswith(f"nlpipe: error: {tokenizer_copy}: corrupt or incompatible model file "
                                        f"punkt.json")
    assert not (tmp_path / "out.conllu").exists()


@pytest.mark.parametrize("name", ["punkt.json", "words.json", "config.json"])
def test_pickle_payload_in_tokenizer_json_is_not_run(tmp_path, tokenizer_copy, name):
    marker = tmp_path / "pwned"
    (tokenizer_copy / name).write_bytes(pickle.dumps(Payload(str(marker))))
    with pytest.raises(ModelError):
        load_stage("tokenize", str(tokenizer_copy))
    assert not marker.exists()


def test_wrong_model_version(tmp_path, tokenizer_copy):
    config = tokenizer_copy / "config.json"
    config.write_text(config.read_text().replace('"format": 2', '"format": 99'))
    with pytest.raises(ModelError, match="model format 99"):
        load_stage("tokenize", str(tokenizer_copy))


def test_numpy_weights_refuse_pickled_objects(tmp_path):
    """The contract every .npy/.npz weight file is read under: allow_pickle=False."""
    marker = tmp_path / "pwned"
    path = tmp_path / "weights.npz"
    np.savez(path, w=np.array([Payload(str(marker))], dtype=object))
    with pytest.raises(ValueError), np.load(path, allow_pickle=False) as z:
        z["w"]
    with zipfile.ZipFile(path) as z:
        assert z.namelist() == ["w.npy"]
    assert not marker.exists()


def test_torch_weights_refuse_pickled_objects(tmp_path):
    """The contract every torch weight file is read under: weights_only=True."""
    torch = pytest.importorskip("torch")
    marker = tmp_path / "pwned"
    path = tmp_path / "weights.pt"
    torch.save({"w": torch.zeros(2), "evil": Payload(str(marker))}, path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path, map_location="cpu", weights_only=True)
    path.write_bytes(path.read_bytes()[:100])  # truncated
    with pytest.raises(Exception):
        torch.load(path, map_location="cpu", weights_only=True)
    assert not marker.exists()


def unsafe_loads(source: str):
    """(line, what) of calls in ``source`` that could unpickle: torch.load without weights_only=True,
    np.load without allow_pickle=False, and any pickle/dill/joblib/cloudpickle load."""
    safe = {"torch": ("weights_only", True), "np": ("allow_pickle", False), "numpy": ("allow_pickle", False)}
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)):
            continue
        module, name = node.func.value.id, node.func.attr
        if module in ("pickle", "dill", "joblib", "cloudpickle") and name in ("load", "loads"):
            yield node.lineno, f"{module}.{name}"
        elif module in safe and name == "load":
            key, value = safe[module]
            if not any(k.arg == key and isinstance(k.value, ast.Constant) and k.value.value is value
                       for k in node.keywords):
                yield node.lineno, f"{module}.load without {key}={value}"


def test_the_unpickling_scan_finds_unsafe_calls():
    found = list(unsafe_loads("import torch, pickle\ntorch.load(p)\nnp.load(Path(a), allow_pickle=False)\n"
                              "torch.load(Path(p), weights_only=True)\npickle.loads(b)\nnp.load(x)\n"))
    assert [line for line, _ in found] == [2, 5, 6]


def test_no_loader_in_the_package_can_unpickle():
    found = []
    for path in sorted((REPO / "nlpipe").rglob("*.py")):
        for line, what in unsafe_loads(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(REPO)}:{line}: {what}")
    assert found == []


@pytest.mark.parametrize("stage, weights", [("ner", "weights.npz"), ("parse", "weights.pt")])
def test_stage_weights_with_a_pickle_payload_give_a_model_error(tmp_path, stage, weights):
    """Each shipped default model of a neural stage, with its weights replaced by a payload."""
    from nlpipe.registry import DEFAULT_MODELS

    shipped = [MODELS_DIR / m for m in DEFAULT_MODELS.get(stage, []) if (MODELS_DIR / m / weights).is_file()]
    if not shipped:
        missing(f"no shipped {stage} model with {weights} yet")
    model = tmp_path / "model"
    shutil.copytree(shipped[0], model)
    marker = tmp_path / "pwned"
    (model / weights).write_bytes(pickle.dumps(Payload(str(marker))))
    with pytest.raises(ModelError) as e:
        load_stage(stage, str(model))
    if weights == "weights.pt":  # the whole message: no advice from torch to load it unsafely
        assert str(e.value) == f"{model}: corrupt or incompatible model file weights.pt (not a file of plain tensors)"
        import torch

        torch.save({"w": torch.zeros(2), "evil": Payload(str(marker))}, model / weights)
        with pytest.raises(ModelError) as e:
            load_stage(stage, str(model))
        assert str(e.value) == (f"{model}: the model file weights.pt holds objects that nlpipe does not load "
                                "(only plain tensors)")
    (model / weights).write_bytes((shipped[0] / weights).read_bytes()[:200])
    with pytest.raises(ModelError):
        load_stage(stage, str(model))
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# Property test: random CoNLL-U-like text

FIELD = st.sampled_from(["_", "a", "b=c", "NOUN", "0", "1", "2", "3", "x y", "", "é", "root", "SpaceAfter=No"])
ID = st.sampled_from(["1", "2", "3", "4", "1-2", "2-3", "1.1", "2.1", "0", "x", "10"])
LINE = st.one_of(
    st.builds(lambda i, f: "\t".join([i] + f), ID, st.lists(FIELD, min_size=8, max_size=11)),
    st.sampled_from(["", "", "# sent_id = a", "# text = a b", "#", "\ufeff# x", "\r", "\x00", " "]),
    st.text(alphabet="ab\t #_1", max_size=12),
)
TEXT = st.builds(lambda lines, end: "\n".join(lines) + end, st.lists(LINE, min_size=0, max_size=25),
                 st.sampled_from(["", "\n", "\n\n", "\r\n"]))


def read_all(text: str):
    return list(read_conllu(io.StringIO(text, newline="\n"), "f"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT, st.integers(1, 4))
def test_reader_round_trips_or_raises_input_error(text, batch):
    try:
        sents = read_all(text)
    except InputError as e:
        whole = (e.line, e.message)
        assert e.path == "f" and (e.line is None or 1 <= e.line <= text.count("\n") + 1)
    else:
        whole = None
        assert to_string(sents) == text
    # the chunked path (what annotate and its workers read) agrees: same bytes or the same error
    data = text.encode("utf-8")
    try:
        items = [i for c in conllu_chunks(io.BytesIO(data), "f", batch) for i in parse_chunk(c, False, print)]
    except InputError as e:
        assert whole == (e.line, e.message)
    else:
        assert whole is None and "".join(i.to_string() for i in items) == text
    # with --skip-bad every input comes out unchanged: good sentences round-trip, bad ones verbatim
    if data:
        warnings = []
        items = [i for c in conllu_chunks(io.BytesIO(data), "f", batch) for i in parse_chunk(c, True, warnings.append)]
        assert "".join(i.to_string() for i in items) == text
        assert bool(warnings) == (whole is not None)


# ---------------------------------------------------------------------------------------------
# A 5,000-word sentence through every shipped stage

def test_a_5000_word_sentence_through_the_shipped_stages(tmp_path):
    from nlpipe.runtime.chain import available_stages

    stages = [s for s in available_stages() if s != "tokenize"]
    if not stages:
        missing("no shipped stage besides tokenize yet")
    words = [f"w{i % 97}" if i % 13 else "Smith" for i in range(5000)]
    rows = [f"{i}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_" for i, w in enumerate(words, 1)]
    src = tmp_path / "long.conllu"
    src.write_text("# sent_id = long-1\n" + "\n".join(rows) + "\n\n" + sentences(1), encoding="utf-8")
    r = run_cli("annotate", "--stages", ",".join(stages), str(src))
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode("utf-8")
    for line in r.stderr.decode().splitlines():  # a stage that cannot take it says so, by sent_id
        assert line.startswith("nlpipe: warning: sentence long-1 (") and "limit" in line
    assert len(out.split("\n\n")) == 3


@pytest.mark.slow
def test_a_5mb_line_tokenizes(tmp_path):
    """One paragraph of 5 MB: nltk's time cap on a regex scan (5 s, meant for patterns users give
    it) once ended this with a traceback, since Punkt scans a paragraph lazily in one go."""
    src = tmp_path / "line.txt"
    words = SAMPLE.split()
    src.write_text(" ".join(words[i % len(words)] for i in range(900_000))[:5_000_000] + "\n", encoding="utf-8")
    # (the trained tokenizer's memory on such a line: bench/huge_line.py; its windows: the tests below)
    r = subprocess.run(NL + ["tokenize", "--method", "rules", str(src), "-o", str(tmp_path / "out.conllu")],
                       capture_output=True, timeout=600)
    assert r.returncode == 0 and r.stderr == b""


@pytest.fixture
def small_windows(monkeypatch):
    """The shipped trained tokenizer, cutting paragraphs longer than 1,000 characters in windows."""
    tok = load_stage("tokenize")
    monkeypatch.setattr(type(tok), "LONG_CHARS", 1000)
    monkeypatch.setattr(type(tok), "CONTEXT", 100)
    return tok


def test_a_long_paragraph_in_windows_is_tokenized_as_a_whole(small_windows, monkeypatch):
    words = SAMPLE.split()
    text = " ".join(words[i % len(words)] for i in range(3000))  # 18,000 characters, one paragraph
    windowed = to_string(small_windows.tokenize_text(text, "x"))
    monkeypatch.setattr(type(small_windows), "LONG_CHARS", 10 ** 9)
    assert windowed == to_string(small_windows.tokenize_text(text, "x"))


@pytest.mark.parametrize("text", ["a" * 3000 + " b c", "x. " + " " * 5000 + "Yes it is. " * 100, "word " * 2000])
def test_a_long_paragraph_loses_no_character(small_windows, text):
    # a sentence (or token) longer than a window is cut, nothing is lost
    sents = small_windows.tokenize_text(text, "x")
    assert "".join(w[1] for s in sents for w in s.tokens) == "".join(text.split())
