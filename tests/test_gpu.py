"""The CUDA paths: every neural stage and its training step on the GPU, and CUDA output against CPU output.

Marked ``gpu``: skipped (with the reason) where torch sees no CUDA device, run wherever one is
available (``pytest -m gpu``). CUDA and CPU differ only where two scores tie to float precision, so
the comparisons allow a few cells in ten thousand to differ.
"""
from __future__ import annotations

import json

import pytest

from conftest import REPO, TINY_TRAININGS, run_cli, tiny_training
from nlpipe.io.conllu import parse_string
from nlpipe.metrics import differing_cells

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (torch.cuda.is_available())")]

SAMPLE = REPO / "data" / "sample.txt"
TIES = 0.0005  # share of cells allowed to differ between CUDA and CPU (float ties)


def annotate(*args: str) -> str:
    r = run_cli("annotate", *args)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def differing(a: str, b: str) -> float:
    """Share of HEAD, DEPREL and MISC cells that differ between two outputs of the same words."""
    return differing_cells(parse_string(a), parse_string(b))


@pytest.mark.parametrize("stages", ["tokenize,pos,parse", "tokenize,pos,ner", "tokenize,pos,parse,predicates,srl"])
def test_every_neural_stage_gives_the_cpu_output_on_cuda(tmp_path, stages):
    src = tmp_path / "in.txt"
    src.write_text(SAMPLE.read_text(encoding="utf-8") * 20, encoding="utf-8")
    cpu = annotate("--stages", stages, "--device", "cpu", str(src))
    gpu = annotate("--stages", stages, "--device", "cuda", str(src))
    assert differing(cpu, gpu) <= TIES


def test_a_2000_word_sentence_and_a_large_chunk_fit_in_gpu_memory(tmp_path):
    words = ("the cat saw a dog near the bank , and " * 200).split()[:2000]
    long = " ".join(words) + " .\n\n"
    many = SAMPLE.read_text(encoding="utf-8") * 400
    src = tmp_path / "in.txt"
    src.write_text(long + many, encoding="utf-8")
    r = run_cli("annotate", "--device", "cuda", "--batch", "20000", str(src))
    assert r.returncode == 0, r.stderr.decode()
    assert "out of memory" not in r.stderr.decode().lower()


@pytest.mark.parametrize("stage", sorted(TINY_TRAININGS))
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_training_steps_run_on_cuda(tmp_path, stage, precision):
    r = run_cli(*tiny_training(stage, tmp_path), "--device", "cuda", "--precision", precision, "--json")
    assert r.returncode == 0, r.stderr.decode()
    json.loads(r.stdout.decode().strip().splitlines()[-1])
    assert (tmp_path / "m" / "config.json").is_file()
