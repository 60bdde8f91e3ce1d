"""The README says what the code does: its shipped-models table shows the scores `nlpipe models` lists
(one source: each model's config.json), and its commands run as written."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import run_cli

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def table_rows(title: str):
    """The cells of each row of the table under the ``## title`` heading (header and rule excluded)."""
    section = README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def test_every_test_score_in_the_models_table_is_one_nlpipe_models_lists():
    r = run_cli("models", "--json")
    assert r.returncode == 0, r.stderr
    listed = {m["name"]: m for m in json.loads(r.stdout)}
    rows = table_rows("Shipped models")
    assert len(rows) == 8
    for stage, model, _, scores, _ in rows:
        name = model.split()[0]
        assert name in listed, name
        named = [name] + [m for m in listed if m in scores]     # a row may quote another model's score
        recorded = {round(v, 2) for m in named for k, v in listed[m]["scores"].items() if k.startswith("test_")}
        shown = [float(x) for x in re.findall(r"\d+\.\d+", scores)]
        assert shown, name
        assert [x for x in shown if x not in recorded] == [], f"{name}: README scores not in its config.json"


def test_the_models_listing_has_a_header_and_explains_its_scores():
    out = run_cli("models").stdout.decode("utf-8").splitlines()
    assert out[0].split()[:6] == ["name", "stage", "lang", "arch", "words/s", "scores"]
    assert "dev_joint" in run_cli("models", "--help").stdout.decode("utf-8")
    assert "words per CPU second" in run_cli("models", "--help").stdout.decode("utf-8")


def shell(tmp_path: Path):
    """``run(command)``: a README command run by bash in ``tmp_path/work``, ``nlpipe`` being this checkout."""
    import os
    import stat
    import subprocess
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nlpipe").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m nlpipe.cli "$@"\n', encoding="utf-8")
    (bin_dir / "nlpipe").chmod(stat.S_IRWXU)
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    def run(command: str) -> subprocess.CompletedProcess:
        r = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=work, env=env, capture_output=True,
                           timeout=600)
        assert r.returncode == 0, (command, r.stderr)
        return r

    return work, run


def sh_block(after: str) -> list:
    """The commands of the first sh block after the line ``after`` (comments and ``[...]`` options dropped)."""
    block = README.split(after + "\n", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [re.sub(r"\s*\[[^]]*\]", "", line.split("  #")[0]).strip() for line in block.splitlines() if line.strip()]


@pytest.mark.slow
def test_the_readmes_pipe_and_annotate_give_the_same_bytes(tmp_path):
    pipe, one = sh_block("## Use")[:2]
    assert pipe.startswith("nlpipe tokenize a.txt |") and one.startswith("nlpipe annotate a.txt")
    work, run = shell(tmp_path)
    (work / "a.txt").write_text("Mary met John in Paris. They said it would rain.\n", encoding="utf-8")
    outputs = []
    for command in (pipe, one):
        run(command)
        outputs.append((work / "a.conllu").read_bytes())
    assert outputs[0] == outputs[1] and b"# sent_id = a-1\n" in outputs[0]


@pytest.mark.slow
def test_the_readmes_input_and_output_examples_run(tmp_path):
    commands = sh_block("### Input modes and readable output")
    assert len(commands) == 6
    work, run = shell(tmp_path)
    (work / "lines.txt").write_text("the cat sat\nthe dog ran\n", encoding="utf-8")
    (work / "toks.txt").write_text("I can't swim\nDogs bark\n", encoding="utf-8")
    (work / "a.txt").write_text("Mary met John in Paris. They said it would rain.\n", encoding="utf-8")
    run("nlpipe annotate a.txt -o a.conllu")
    out = {c.split()[1] + " " + c.split()[-1]: run(c).stdout.decode("utf-8") for c in commands}
    assert out["annotate lines.txt"].count("# text = ") == 2 and "\tcan't\t" in out["annotate toks.txt"]
    assert "─┮" in out["annotate tree"] and out["parse json"].startswith('{"sent_id": "a-1"')
    assert out["convert a.conllu"] == "Mary met John in Paris.\nThey said it would rain.\n"
    assert (work / "a.html").read_text(encoding="utf-8").count("<svg") == 2


def test_every_picture_and_local_link_of_the_readme_exists():
    targets = re.findall(r"\]\(([^)#\s]+)", README)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert "docs/view.png" in local
    assert [t for t in local if not (REPO / t).exists()] == []
