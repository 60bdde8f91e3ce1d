"""Shared test helpers: fixture paths, the corpora folder (skipped with a reason when absent), CLI runner."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# The suite runs torch on one thread: faster for its small tensors on a 2-core machine, and the same
# numbers wherever it runs.
try:
    import torch
except ImportError:  # pragma: no cover - torch is a dependency
    torch = None
else:
    torch.set_num_threads(1)

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CORPORA = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))


ON_CI = os.environ.get("CI") == "true"


def missing(reason: str) -> None:
    """Skip a test whose shipped model or optional package is absent; under CI=true that is a
    failure, since CI must test them."""
    if ON_CI:
        pytest.fail(f"{reason} (CI=true: required)")
    pytest.skip(reason)


def require_module(name: str, reason: str):
    """``pytest.importorskip`` that fails under CI=true (see :func:`missing`)."""
    try:
        return __import__(name)
    except ImportError:
        missing(reason)


# one epoch of each torch trainer on the fixtures, as small as the trainers allow
# (``{srl}``, ``{ner}``, ``{tok}``: :data:`TINY_DATA`; those in :data:`TINY_VECTORS` also take
# :func:`tiny_glove_args`)
TINY_DATA = {"srl": str(FIXTURES / "srl" / "train.conllu"), "ner": str(FIXTURES / "ner" / "tiny.conll"),
             "tok": str(FIXTURES / "tok_small.conllu")}
TINY_TRAININGS = {
    "parse": ["train", "parse", "--train", "{srl}", "--dev", "{srl}", "--epochs", "1"],
    "pos": ["train", "pos", "--arch", "bilstm", "--train", "{srl}", "--dev", "{srl}", "--epochs", "1",
            "--hidden", "16"],
    "srl": ["train", "srl", "--train", "{srl}", "--dev", "{srl}", "--epochs", "1", "--layers", "2", "--d-model",
            "16", "--heads", "2"],
    "srl-marginals": ["train", "srl", "--train", "{srl}", "--dev", "{srl}", "--epochs", "1", "--layers", "2",
                      "--d-model", "16", "--heads", "2", "--syntax", "marginals"],
    "srl-spigot": ["train", "srl", "--train", "{srl}", "--dev", "{srl}", "--epochs", "1", "--layers", "2",
                   "--d-model", "16", "--heads", "2", "--syntax", "spigot"],
    "ner": ["train", "ner", "--train", "{ner}", "--dev", "{ner}", "--epochs", "1", "--width", "16", "--blocks", "1",
            "--crf"],
    "tokenize": ["train", "tokenize", "--train", "{tok}", "--dev", "{tok}", "--epochs", "1", "--channels", "8",
                 "--emb", "4", "--dilations", "1,2", "--length", "32", "--min-char", "1"],
}
TINY_VECTORS = ("parse", "pos", "srl", "srl-marginals", "srl-spigot", "ner")


def tiny_glove_args(folder: Path) -> list:
    """``--glove-words``/``--glove-vectors`` options of six random 50-dimensional vectors written to ``folder``."""
    import numpy as np

    words = ["the", "cat", "dog", "a", "saw", "."]
    (folder / "g.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    np.save(folder / "g.npy", np.random.default_rng(0).normal(size=(len(words), 50)).astype(np.float32))
    return ["--glove-words", str(folder / "g.txt"), "--glove-vectors", str(folder / "g.npy")]


def tiny_training(stage: str, folder: Path) -> list:
    """The arguments of :data:`TINY_TRAININGS`' ``stage``, writing its model to ``folder / "m"``."""
    return ([a.format(**TINY_DATA) for a in TINY_TRAININGS[stage]] + ["--out", str(folder / "m")]
            + (tiny_glove_args(folder) if stage in TINY_VECTORS else []))


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def corpora() -> Path:
    """The corpora folder; skips the test with a visible reason when it is absent."""
    if not CORPORA.is_dir():
        pytest.skip(f"corpora not found at {CORPORA} (set NLPIPE_CORPORA)")
    return CORPORA


def run_cli(*args: str, input: bytes = b"", cwd: "str | None" = None) -> subprocess.CompletedProcess:
    """Run `python -m nlpipe.cli ARGS` as a user would; returns the completed process (bytes out/err)."""
    return subprocess.run([sys.executable, "-m", "nlpipe.cli", *args], input=input, capture_output=True,
                          cwd=cwd, timeout=600)


def signal_midway(proc: subprocess.Popen, fifo: Path, text: str, sig: int) -> bytes:
    """Write ``text`` into ``fifo`` and, keeping it open (the run waits for more input), send ``sig``
    to ``proc`` once its temporary output has appeared beside ``fifo``; the run's stderr."""
    import time

    with open(fifo, "w", encoding="utf-8") as w:
        w.write(text)
        w.flush()
        deadline = time.time() + 60
        while not [p for p in fifo.parent.iterdir() if p.name.startswith(".nlpipe-")] and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        assert proc.poll() is None
        proc.send_signal(sig)
        return proc.communicate(timeout=60)[1]


@pytest.fixture(scope="session")
def ewt_test_tagged():
    """(gold, tagged): en_ewt test, and the same with HEAD/DEPREL removed and POS from the shipped
    tagger, which is what the parsers' corpus checks read; tagged once per test session."""
    from nlpipe.io.conllu import read_file
    from nlpipe.runtime.evaluate import strip_stage
    from nlpipe.registry import load_stage

    path = CORPORA / "en_ewt" / "en_ewt-ud-test.conllu"
    if not path.exists():
        pytest.skip(f"en_ewt corpus not found at {path} (set NLPIPE_CORPORA)")
    gold = list(read_file(str(path)))
    return gold, list(load_stage("pos").annotate(strip_stage("parse", gold)))
