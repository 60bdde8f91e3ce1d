"""Corpus-level checks of `nlpipe annotate` with the shipped models: on en_ewt test, the one-process
chain, --jobs 2 and the shell pipe of single-stage filters give the same bytes."""
from __future__ import annotations

import subprocess
import sys

import pytest

from nlpipe.io.conllu import read_file
from nlpipe.runtime.evaluate import raw_text

pytestmark = [pytest.mark.slow, pytest.mark.corpus]


def test_en_ewt_test_chain_jobs_and_pipe_agree(tmp_path, corpora):
    test = corpora / "en_ewt" / "en_ewt-ud-test.conllu"
    if not test.is_file():
        pytest.skip(f"{test} not found")
    src = tmp_path / "test.txt"
    src.write_text(raw_text(read_file(str(test))), encoding="utf-8")
    nl = f"{sys.executable} -m nlpipe.cli"
    # the README's pipe: predicates come from srl itself, which reads the parse of the stage before it
    filters = [f"{nl} pos", f"{nl} parse", f"{nl} ner", f"{nl} srl --parse-from-input"]
    outs = {}
    for name, cmd in {
        "pipe": " | ".join([f"{nl} tokenize {src}"] + filters),
        "chain": f"{nl} annotate {src}",
        "jobs": f"{nl} annotate --jobs 2 --batch 64 {src}",
    }.items():
        r = subprocess.run(cmd, shell=True, capture_output=True, timeout=900)
        assert r.returncode == 0 and r.stderr == b"", (name, r.stderr)
        outs[name] = r.stdout
    assert outs["chain"] == outs["pipe"]
    assert outs["jobs"] == outs["pipe"]
    # and a CoNLL-U input skips tokenizing: the chain on the tokenized file gives the same bytes
    tok = tmp_path / "test.tok.conllu"
    tok.write_bytes(subprocess.run(f"{nl} tokenize {src}", shell=True, capture_output=True).stdout)
    r = subprocess.run(f"{nl} annotate {tok}", shell=True, capture_output=True, timeout=900)
    assert r.stdout == outs["pipe"]
