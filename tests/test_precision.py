"""``--precision bf16``: mixed-precision training of the torch models (nlpipe.nn.precision).

On the CPU these run wherever torch has bfloat16 kernels (emulated where the CPU lacks the
instructions: slower, still correct); ``tests/test_gpu.py`` runs the same trainings on CUDA.
"""
from __future__ import annotations

import json
import random

import pytest

from conftest import FIXTURES, TINY_TRAININGS, run_cli, tiny_training
from nlpipe.errors import NlpipeError
from nlpipe.nn.precision import autocast, check_precision, cpu_has_bf16

torch = pytest.importorskip("torch")


# --- the CPU's flags ---------------------------------------------------------------------------

def test_cpu_bf16_read_from_the_flags_line(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx512f avx512_bf16 avx512_vnni\n\n", encoding="utf-8")
    assert cpu_has_bf16(info) is True
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n", encoding="utf-8")
    assert cpu_has_bf16(info) is False
    info.write_text("processor\t: 0\nflags\t\t: fpu amx_bf16 amx_tile\n", encoding="utf-8")
    assert cpu_has_bf16(info) is True


def test_cpu_bf16_unknown_without_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nFeatures\t: fp asimd\n", encoding="utf-8")   # an ARM cpuinfo
    assert cpu_has_bf16(info) is None
    assert cpu_has_bf16(tmp_path / "missing") is None


# --- the check before training -----------------------------------------------------------------

def test_unknown_precision_refused():
    with pytest.raises(NlpipeError, match="unknown precision 'fp16'"):
        check_precision("fp16", "cpu", print)


def test_bf16_refused_on_a_gpu_without_it():
    with pytest.raises(NlpipeError, match="no bfloat16"):
        check_precision("bf16", "cuda", print, cuda_bf16=lambda: False)
    check_precision("bf16", "cuda", print, cuda_bf16=lambda: True)


def test_bf16_warns_once_on_a_cpu_without_it():
    said = []
    check_precision("bf16", "cpu", said.append, cpu_bf16=lambda: False)
    assert len(said) == 1 and "slower than fp32" in said[0]
    for known in (True, None):          # with the instructions, or where it cannot be told: silent
        check_precision("bf16", "cpu", said.append, cpu_bf16=lambda: known)
    check_precision("fp32", "cpu", said.append, cpu_bf16=lambda: False)
    assert len(said) == 1


# --- what runs in bfloat16 ---------------------------------------------------------------------

def test_autocast_runs_products_in_bf16_and_leaves_fp32_alone():
    lin = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    with autocast("bf16", "cpu"):
        assert lin(x).dtype == torch.bfloat16
    with autocast("fp32", "cpu"):
        assert lin(x).dtype == torch.float32


def test_crf_loss_is_float32_under_bf16():
    from nlpipe.nn.crf import CRF

    torch.manual_seed(0)
    crf = CRF(["O", "B-PER", "I-PER"])
    emissions = torch.randn(2, 5, 3)
    tags = torch.tensor([[1, 2, 0, 0, 0], [0, 1, 2, 2, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    full = crf.nll(emissions, tags, mask)
    with autocast("bf16", "cpu"):
        mixed = crf.nll(emissions.to(torch.bfloat16), tags, mask)
    assert mixed.dtype == torch.float32
    # only the emissions' rounding to bfloat16 (8 bits of mantissa) separates the two
    assert abs(mixed.item() - full.item()) < 0.02 * abs(full.item())


def test_the_loop_runs_forward_and_loss_in_bf16_and_keeps_float32_weights():
    from nlpipe.train.loop import Trainer

    seen = []

    class Tiny(Trainer):
        net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))

        def batches(self, rng):
            g = torch.Generator().manual_seed(1)
            return [(torch.randn(16, 6, generator=g), torch.randint(0, 3, (16,), generator=g)) for _ in range(4)]

        def loss(self, batch):
            x, y = batch
            out = self.net(x)
            seen.append(out.dtype)
            return torch.nn.functional.cross_entropy(out, y)

        def dev_scores(self):
            return {"f1": 0.0}

    torch.manual_seed(0)
    trainer = Tiny()
    opt = torch.optim.Adam(trainer.net.parameters(), lr=0.01)
    before = [p.detach().clone() for p in trainer.net.parameters()]
    trainer.fit(opt, 1, random.Random(0), lambda m: None, precision="bf16")
    assert seen == [torch.bfloat16] * 4
    assert all(p.dtype == torch.float32 for p in trainer.net.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.net.parameters()))
    seen.clear()
    trainer.fit(opt, 1, random.Random(0), lambda m: None)
    assert seen == [torch.float32] * 4


# --- the commands ------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("stage", sorted(TINY_TRAININGS))
def test_every_torch_trainer_trains_in_bf16(tmp_path, stage):
    r = run_cli(*tiny_training(stage, tmp_path), "--precision", "bf16", "--json")
    assert r.returncode == 0, r.stderr.decode()
    json.loads(r.stdout.decode().strip().splitlines()[-1])
    config = json.loads((tmp_path / "m" / "config.json").read_text(encoding="utf-8"))
    assert config["training"]["precision"] == "bf16"
    assert "--precision bf16" in config["training"]["command"]


@pytest.mark.parametrize("args, says", [
    (["train", "parse", "--parser", "transition"], "--precision"),
    (["train", "pos"], "--arch bilstm"),
    (["train", "tokenize", "--method", "rules"], "trained segmenter"),
])
def test_bf16_refused_where_nothing_trains_in_torch(tmp_path, args, says):
    data = str(FIXTURES / "srl" / "train.conllu")
    r = run_cli(*args, "--train", data, "--dev", data, "--out", str(tmp_path / "m"), "--precision", "bf16")
    assert r.returncode == 2
    assert says in r.stderr.decode()
    assert not (tmp_path / "m").exists()


def test_fp16_is_not_a_choice(tmp_path):
    data = str(FIXTURES / "srl" / "train.conllu")
    r = run_cli("train", "parse", "--train", data, "--dev", data, "--out", str(tmp_path / "m"), "--precision", "fp16")
    assert r.returncode == 2
    assert "fp16" in r.stderr.decode()
