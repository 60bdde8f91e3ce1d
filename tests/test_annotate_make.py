"""data/Makefile: per-stage intermediate files, the same result as `nlpipe annotate`, a changed model
re-runs only the stages after it, `make eval` scores against gold files."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nlpipe.runtime.pipeline import run_annotate
from test_annotate_standins import install, subprocess_env

REPO = Path(__file__).resolve().parent.parent
MAKEFILE = REPO / "data" / "Makefile"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")


def make(corpus: Path, env, *args: str) -> str:
    r = subprocess.run(["make", "-f", str(MAKEFILE), f"CORPUS={corpus}/", *args], capture_output=True,
                       text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    root = tmp_path / "models"
    env = subprocess_env(tmp_path, root)
    dirs = install(root, monkeypatch)
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "a.txt").write_text("First text. It has Two sentences.\n\nAnd a paragraph.\n", encoding="utf-8")
    (d / "b.txt").write_text("Another file here.\n", encoding="utf-8")
    return d, env, dirs


def test_make_builds_every_stage_and_equals_annotate(corpus):
    d, env, _ = corpus
    out = make(d, env, "-j2")
    for base in ("a", "b"):
        for step in ("tok", "pos", "parse", "ner"):
            assert (d / f"{base}.{step}.conllu").is_file()
        run_annotate([str(d / f"{base}.txt")], str(d / f"{base}.expected"))
        assert (d / f"{base}.conllu").read_bytes() == (d / f"{base}.expected").read_bytes()
    assert out.count(" tokenize ") == 2 and out.count(" ner ") == 2
    assert "Nothing to be done" in make(d, env)


def test_srl_reads_the_parse_stage_trees_as_annotate_does(corpus):
    d, env, _ = corpus
    steps = {line.split()[1]: line for line in make(d, env, "-n", "STAGES=tokenize pos parse srl").splitlines()
             if line.split()[:1] and line.split()[0].endswith("nlpipe")}
    assert "--parse-from-input" in steps["srl"] and "--parse-from-input" not in steps["parse"]
    steps = {line.split()[1]: line for line in make(d, env, "-n", "STAGES=tokenize pos srl").splitlines()
             if line.split()[:1] and line.split()[0].endswith("nlpipe")}
    assert "--parse-from-input" not in steps["srl"]
    out = make(d, env, "-n", "STAGES=tokenize pos parse", "OPTS_parse=--parser transition")
    assert "nlpipe parse --model" in out and "--parser transition" in out


def test_a_changed_model_reruns_only_the_stages_after_it(corpus):
    d, env, dirs = corpus
    make(d, env, "-j2")
    later = (d / "a.conllu").stat().st_mtime + 10
    os.utime(dirs["parse"] / "config.json", (later, later))
    out = make(d, env)
    ran = [line.split()[1] for line in out.splitlines() if line.split()[:1] and line.split()[0].endswith("nlpipe")]
    assert sorted(ran) == ["ner", "ner", "parse", "parse"]


def test_make_eval_scores_against_gold_files(corpus):
    d, env, _ = corpus
    make(d, env)
    shutil.copy(d / "a.conllu", d / "a.gold.conllu")
    make(d, env, "eval")
    for stage, key in (("tokenize", "tokens_f1"), ("pos", "upos"), ("parse", "las")):
        result = json.loads((d / f"a.{stage}.eval.json").read_text())
        assert result[key] == 100.0
    assert not (d / "b.pos.eval.json").exists()  # no gold for b
    make(d, env, "clean")
    assert sorted(p.name for p in d.iterdir()) == ["a.gold.conllu", "a.txt", "b.txt"]
