"""The parse stage: training on a tiny treebank, save/load, annotation of HEAD/DEPREL only, errors."""
from __future__ import annotations

import inspect
import io
import json
from pathlib import Path

import subprocess
import sys

import numpy as np
import pytest
import torch

from nlpipe.io.conllu import DEPREL, HEAD, MISC, misc_get, parse_string, to_string
from nlpipe.decode.mst import is_tree, projective_mask
from nlpipe.errors import InputError, ModelError, NlpipeError
from nlpipe.io.model_dir import read_config
from conftest import missing, run_cli
from nlpipe.registry import load_stage
from nlpipe.models import biaffine as B
from nlpipe.stages import parse as P
from nlpipe.train import biaffine as B
from nlpipe.train import transition as T
from nlpipe.train.vectors import Vectors

TREEBANK = """\
# sent_id = a
# text = The dog barks.
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tbarks\tbark\tVERB\tVBZ\t_\t0\troot\t_\tSpaceAfter=No
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

# sent_id = b
# text = A cat sleeps on the mat.
1\tA\ta\tDET\tDT\t_\t2\tdet\t_\t_
2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tsleeps\tsleep\tVERB\tVBZ\t_\t0\troot\t_\t_
4\ton\ton\tADP\tIN\t_\t6\tcase\t_\t_
5\tthe\tthe\tDET\tDT\t_\t6\tdet\t_\t_
6\tmat\tmat\tNOUN\tNN\t_\t3\tobl\t_\tSpaceAfter=No
7\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

# sent_id = c
# text = Dogs bark.
1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_
2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\tSpaceAfter=No
3\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_

"""

# To parse: a multiword token and an empty node must pass through untouched.
INPUT = """\
# sent_id = x
# text = The cat's mat sleeps.
1\tThe\tthe\tDET\tDT\t_\t_\t_\t_\t_
2-3\tcat's\t_\t_\t_\t_\t_\t_\t_\t_
2\tcat\tcat\tNOUN\tNN\t_\t_\t_\t_\t_
3\t's\t's\tPART\tPOS\t_\t_\t_\t_\t_
4\tmat\tmat\tNOUN\tNN\t_\t_\t_\t_\tKeep=me
4.1\tis\tbe\tAUX\tVBZ\t_\t_\t_\t_\t_
5\tsleeps\tsleep\tVERB\tVBZ\t_\t_\t_\t_\tSpaceAfter=No
6\t.\t.\tPUNCT\t.\t_\t_\t_\t_\t_

# sent_id = y
1\tBark\tbark\tVERB\tVB\t_\t_\t_\t_\t_

"""

TINY = {"word_dim": 8, "shape_dim": 2, "affix_dim": 8, "tag_dim": 4, "hidden": 8, "layers": 2,
        "arc_dim": 8, "rel_dim": 4, "dropout": 0.0, "word_dropout": 0.0, "tag_dropout": 0.0}
VECTORS = Vectors(["the", "dog", "cat", "."], np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32),
                  {"name": "hand-made"})


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("parse")
    (d / "train.conllu").write_text(TREEBANK, encoding="utf-8")
    log = io.StringIO()
    result = B.train(str(d / "train.conllu"), str(d / "train.conllu"), str(d / "model"), epochs=40,
                     batch_tokens=8, lr=1e-2, decay=1.0, ema=0.0, patience=None, threads=1, hyper=TINY, vectors=VECTORS,
                     log=log)
    assert result["history"] and "epoch" in log.getvalue()
    return d / "model"


def test_training_fits_a_tiny_treebank_and_saves_plain_files(model_dir):
    config = read_config(model_dir, "parse")
    assert config["arch"] == "biaffine.v1" and config["labels"][0] == "root"
    assert config["training"]["scores"]["dev_las"] == 100.0  # it can memorise three sentences
    assert sorted(p.name for p in model_dir.iterdir()) == ["config.json", "vocab.json", "weights.pt"]
    torch.load(model_dir / "weights.pt", weights_only=True)


def test_annotate_writes_only_head_and_deprel(model_dir):
    stage = load_stage("parse", str(model_dir))
    sents = parse_string(INPUT)
    before = [[list(r) for r in s.rows] for s in sents]
    out = list(stage.annotate(sents))
    for s, rows in zip(out, before):
        for r, old in zip(s.rows, rows):
            if not r[0].isdigit():
                assert r == old  # multiword tokens and empty nodes untouched
                continue
            assert r[:HEAD] == old[:HEAD] and r[DEPREL + 1:] == old[DEPREL + 1:]
        heads = np.array([0] + [int(w[HEAD]) for w in s.words])
        assert is_tree(heads)
        assert sum(w[DEPREL] == "root" for w in s.words) == 1
        assert all((w[DEPREL] == "root") == (w[HEAD] == "0") for w in s.words)
    assert to_string(out).count("\n\n") == 2


@pytest.mark.parametrize("projective", [False, True])
def test_probs_go_to_misc_and_lie_in_0_1(model_dir, projective):
    stage = load_stage("parse", str(model_dir), probs=True, projective=projective)
    out = list(stage.annotate(parse_string(INPUT)))
    for s in out:
        for w in s.words:
            p = float(misc_get(w[MISC], "HeadProb"))
            assert 0.0 <= p <= 1.0
    assert misc_get(out[0].words[3][MISC], "Keep") == "me"


@pytest.mark.parametrize("probs", [False, True])  # the numpy network, then torch's (probabilities)
def test_padded_batch_equals_each_sentence_alone(model_dir, probs):
    stage = load_stage("parse", str(model_dir), probs=probs)
    assert (stage.model.inference is None) == probs
    examples = [B._example(s, "", False) for s in parse_string(TREEBANK + INPUT)]
    together = stage.model.predict(examples, probs=probs)
    for e, t in zip(examples, together):
        alone = stage.model.predict([e], probs=probs)[0]
        assert alone[0] == t[0] and alone[1] == t[1]
        if probs:
            assert np.allclose(alone[2], t[2], atol=1e-5)


def test_batches_in_worker_threads_give_the_same_output(model_dir):
    """Several small batches parsed by two worker threads come back in order, equal to one at a time,
    and torch's own thread count is restored afterwards."""
    text = (TREEBANK + INPUT) * 5
    threads = torch.get_num_threads()
    for probs in (False, True):  # numpy, torch
        one = load_stage("parse", str(model_dir), workers=1, batch_tokens=12, probs=probs)
        two = load_stage("parse", str(model_dir), workers=2, batch_tokens=12, probs=probs)
        assert two.workers == 2
        assert to_string(list(two.annotate(parse_string(text)))) == to_string(list(one.annotate(parse_string(text))))
        assert torch.get_num_threads() == threads


def test_untrained_model_still_gives_trees(tmp_path):
    vocab = B.build_vocab([B._example(s, "", True) for s in parse_string(TREEBANK)], [], 0)
    model = B.BiaffineModel(vocab, TINY)  # zero biaffine weights: every head scores the same
    for projective in (False, True):
        for heads, rels, _ in model.predict([B._example(s, "", False) for s in parse_string(TREEBANK)],
                                            projective=projective):
            assert is_tree(np.array([0] + heads)) and rels[heads.index(0)] == "root"
            if projective:
                assert projective_mask(np.array([[0] + heads]), np.array([len(heads)]))[0]


def test_training_file_without_gold_heads_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.conllu"
    bad.write_text(TREEBANK.replace("2\tdog\tdog\tNOUN\tNN\t_\t3", "2\tdog\tdog\tNOUN\tNN\t_\t_"), encoding="utf-8")
    for run_on_rate in (0.0, 1.0):
        with pytest.raises(InputError) as e:
            B.train(str(bad), str(bad), str(tmp_path / "m"), epochs=1, threads=1, hyper=TINY, vectors=VECTORS,
                    log=io.StringIO(), run_on_rate=run_on_rate)
        assert str(e.value).startswith(f"{bad}:4:") and "HEAD" in str(e.value)


@pytest.mark.parametrize("damage", ["missing-weights", "corrupt-weights", "missing-vocab", "bad-config"])
def test_broken_model_gives_model_error(model_dir, tmp_path, damage):
    d = tmp_path / "m"
    d.mkdir()
    for p in model_dir.iterdir():
        (d / p.name).write_bytes(p.read_bytes())
    if damage == "missing-weights":
        (d / "weights.pt").unlink()
    elif damage == "corrupt-weights":
        (d / "weights.pt").write_bytes((d / "weights.pt").read_bytes()[:100])
    elif damage == "missing-vocab":
        (d / "vocab.json").unlink()
    else:
        config = json.loads((d / "config.json").read_text())
        config["model"]["hidden"] = 9
        (d / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError):
        load_stage("parse", str(d))


def test_input_without_pos_is_an_input_error(model_dir):
    stage = load_stage("parse", str(model_dir))
    text = INPUT.replace("\tDET\tDT\t", "\t_\t_\t").replace("\tNOUN\tNN\t", "\t_\t_\t")
    text = text.replace("\tPART\tPOS\t", "\t_\t_\t").replace("\tVERB\tVBZ\t", "\t_\t_\t").replace("\tPUNCT\t.\t", "\t_\t_\t")
    with pytest.raises(InputError) as e:
        list(stage.annotate(parse_string(text)))
    assert ":1:" in str(e.value) and "nlpipe pos" in str(e.value)


def test_cli_parses_and_reports_errors_in_one_line(model_dir, tmp_path):
    from conftest import run_cli

    r = run_cli("parse", "--model", str(model_dir), input=INPUT.encode())
    assert r.returncode == 0, r.stderr
    out = parse_string(r.stdout.decode())
    assert len(out) == 2 and all(is_tree(np.array([0] + [int(w[HEAD]) for w in s.words])) for s in out)
    r = run_cli("parse", "--model", str(model_dir), input=b"1\tA\n")
    assert r.returncode == 2 and r.stderr.decode().startswith("nlpipe: error: <stdin>:1:")
    r = run_cli("train", "parse", "--parser", "transition", "--train", "x", "--dev", "y", "--out", str(tmp_path))
    assert r.returncode == 2 and r.stderr.decode() == "nlpipe: error: x: no such file\n"


def test_training_can_continue_from_a_model(model_dir, tmp_path):
    train = tmp_path / "t.conllu"
    train.write_text(TREEBANK, encoding="utf-8")
    B.train(str(train), str(train), str(tmp_path / "m"), epochs=1, batch_tokens=8, lr=1e-3, threads=1,
            init=str(model_dir), log=io.StringIO())
    config = read_config(tmp_path / "m", "parse")
    assert config["training"]["init"] == str(model_dir)
    assert config["training"]["scores"]["dev_las"] >= 90.0  # starts from the memorised model
    assert json.loads((tmp_path / "m" / "vocab.json").read_text()) == json.loads((model_dir / "vocab.json").read_text())


def test_a_continued_model_keeps_its_language_unless_given(tmp_path):
    train = tmp_path / "t.conllu"
    train.write_text(TREEBANK, encoding="utf-8")
    kw = dict(epochs=1, batch_tokens=8, threads=1, hyper=TINY, vectors=VECTORS, log=io.StringIO())
    B.train(str(train), str(train), str(tmp_path / "en"), lang="en", **kw)
    kw.pop("hyper"), kw.pop("vectors")
    B.train(str(train), str(train), str(tmp_path / "on"), init=str(tmp_path / "en"), **kw)
    B.train(str(train), str(train), str(tmp_path / "fr"), init=str(tmp_path / "en"), lang="fr", **kw)
    assert [read_config(tmp_path / m, "parse")["language"] for m in ("en", "on", "fr")] == ["en", "en", "fr"]


def test_treebank_paragraph_marks_follow_newpar_and_newdoc(tmp_path):
    from nlpipe.models.biaffine import read_treebank_paragraphs

    a, b, c = TREEBANK.split("\n\n")[:3]
    path = tmp_path / "t.conllu"
    path.write_text("\n\n".join([a, "# newpar\n" + b, c, "# newdoc id = d2\n" + a, c]) + "\n\n", encoding="utf-8")
    examples, starts = read_treebank_paragraphs(str(path))
    assert [len(e.forms) for e in examples] == [4, 7, 3, 4, 3]
    assert starts == [True, True, False, True, False]


def test_training_with_run_on_sentences_joins_them_and_says_so(tmp_path):
    train = tmp_path / "t.conllu"
    train.write_text("# newpar\n" + TREEBANK, encoding="utf-8")     # one paragraph: a+b joined, then c
    log = io.StringIO()
    B.train(str(train), str(train), str(tmp_path / "m"), epochs=1, batch_tokens=8, threads=1, hyper=TINY,
            vectors=VECTORS, log=log, run_on_rate=1.0)
    assert "1 pairs of training sentences joined" in log.getvalue()
    assert read_config(tmp_path / "m", "parse")["training"]["run_on_rate"] == 1.0
    r = run_cli("train", "parse", "--parser", "transition", "--run-on", "0.1", "--train", str(train),
                "--dev", str(train), "--out", str(tmp_path / "t"))
    assert r.returncode == 2 and "--run-on" in r.stderr.decode()


@pytest.mark.corpus
@pytest.mark.slow
def test_shipped_biaffine_model_keeps_its_accuracy_on_en_ewt_test(ewt_test_tagged):
    """The default parser on en_ewt test tagged by the shipped tagger: well-formed trees with one
    root each, and the issue's LAS and UAS."""
    from nlpipe.runtime.evaluate import score, strip_stage
    from nlpipe.registry import MODELS_DIR

    if not (MODELS_DIR / "parse-biaffine-ewt").is_dir():
        missing("no shipped biaffine parser")
    gold, tagged = ewt_test_tagged
    pred = list(load_stage("parse").annotate(strip_stage("parse", tagged)))
    for s in pred:
        assert is_tree(np.array([0] + [int(w[HEAD]) for w in s.words])), s.meta("sent_id")
        assert sum(w[DEPREL] == "root" for w in s.words) == 1
    result = score("parse", gold, pred)
    assert result["las"] >= 88.0 and result["uas"] >= 90.5    # the targets; measured 88.17 / 90.57


def test_training_keeps_the_weight_average_when_asked(model_dir, tmp_path):
    train = tmp_path / "t.conllu"
    train.write_text(TREEBANK, encoding="utf-8")
    # a large learning rate wrecks the trained weights; the slow average stays near the memorised model
    wrecked = B.train(str(train), str(train), str(tmp_path / "w"), epochs=1, batch_tokens=8, lr=1.0, decay=1.0,
                      threads=1, init=str(model_dir), ema=0.0, log=io.StringIO())
    assert wrecked["best"]["las"] < 100.0
    B.train(str(train), str(train), str(tmp_path / "m"), epochs=1, batch_tokens=8, lr=1.0, decay=1.0,
            threads=1, init=str(model_dir), ema=0.999, log=io.StringIO())
    config = read_config(tmp_path / "m", "parse")
    assert config["training"]["ema"] == 0.999
    assert config["training"]["scores"]["dev_las"] == 100.0


def test_train_rejects_a_weight_average_decay_outside_0_1(tmp_path):
    from conftest import run_cli

    r = run_cli("train", "parse", "--train", "x", "--dev", "y", "--out", str(tmp_path), "--ema", "1.0")
    assert r.returncode == 2 and "--ema" in r.stderr.decode()


def test_train_command_leaves_epochs_and_lr_to_each_parser_unless_given(monkeypatch):
    from click.testing import CliRunner

    from nlpipe.cli.train import train_parse

    # the defaults a user gets when not giving the options (biaffine: train()'s; transition: TrainOptions')
    own = {k: v.default for k, v in inspect.signature(B.train).parameters.items()}
    assert {k: own[k] for k in ("epochs", "lr", "max_minutes", "batch_tokens", "decay", "ema", "patience")} == \
        {"epochs": 100, "lr": 2e-3, "max_minutes": 85.0, "batch_tokens": 1000, "decay": 0.93, "ema": 0.999,
         "patience": 10}
    calls = []
    done = {"best": {"uas": 0.0, "las": 0.0, "epoch": 1}, "minutes": 0.0}
    monkeypatch.setattr(B, "train", lambda *a, **kw: calls.append(kw) or done)
    monkeypatch.setattr(T, "train_transition", lambda *a, **kw: calls.append(a[3]) or done)
    base = ["--train", "t", "--dev", "d", "--out", "m"]
    for args in (base, base + ["--epochs", "3", "--lr", "0.1", "--run-on", "0.2"],
                 base + ["--parser", "transition"], base + ["--parser", "transition", "--epochs", "3", "--lr", "0.1"]):
        assert CliRunner().invoke(train_parse, args).exit_code == 0
    biaffine, biaffine_given, transition, transition_given = calls
    # only the shared options reach train(); its own defaults (100 epochs, lr 2e-3, 85 minutes, batches
    # of 1000 tokens, decay 0.93, ema 0.999, patience 10) apply to the rest
    assert biaffine == {"seed": 1, "threads": 1, "device": "cpu", "precision": "fp32", "vectors": None,
                        "glove_words_file": None, "glove_vectors_file": None, "glove_top": 40000,
                        "pos_source": "as in the training file", "init": None}
    assert (biaffine_given["epochs"], biaffine_given["lr"], biaffine_given["run_on_rate"]) == (3, 0.1, 0.2)
    assert (transition.epochs, transition.lr, transition.min_count, transition.margin, transition.seed) == \
        (8, 0.02, 6, 1.0, 1)
    assert (transition_given.epochs, transition_given.lr) == (3, 0.1)



def test_numpy_inference_computes_what_the_torch_network_computes(model_dir):
    # On the CPU the stage runs the saved network in numpy; it must give the torch network's trees.
    from nlpipe.io.model_dir import read_config

    config = read_config(model_dir)
    fast = B.BiaffineModel.load(model_dir, config, "cpu", numpy=True)
    slow = B.BiaffineModel.load(model_dir, config, "cpu")
    assert fast.inference is not None and slow.inference is None
    examples = [B._example(s, "", False) for s in parse_string((TREEBANK + INPUT) * 3)]
    a = fast.arrays(examples)
    t = slow.tensors(examples)
    with torch.no_grad():
        states = slow.net.encoder(t["words"], t["shapes"], t["affixes"], t["upos"], t["xpos"], t["mask"])
    mask = a["mask"]
    np.testing.assert_allclose(fast.inference.encode(a, mask.sum(1))[mask], states.numpy()[mask], atol=1e-5)
    assert fast.predict(examples) == slow.predict(examples)


def test_cpu_parse_does_not_import_torch(model_dir, tmp_path):
    src = tmp_path / "in.conllu"
    src.write_text(TREEBANK + INPUT, encoding="utf-8")
    code = ("import sys\nfrom nlpipe.registry import load_stage\nfrom nlpipe.io.conllu import read_file\n"
            f"st = load_stage('parse', {str(model_dir)!r})\nlist(st.annotate(read_file({str(src)!r})))\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_int8_parser_gives_trees_close_to_the_float_ones(model_dir):
    # int8 weights shift scores a little: the trees stay trees, and most heads stay where they were
    text = (TREEBANK + INPUT) * 3
    full = list(load_stage("parse", str(model_dir)).annotate(parse_string(text)))
    small = list(load_stage("parse", str(model_dir), int8=True).annotate(parse_string(text)))
    heads = [(a[HEAD], b[HEAD]) for s, t in zip(full, small) for a, b in zip(s.words, t.words)]
    assert sum(x == y for x, y in heads) >= 0.8 * len(heads)
    for s in small:
        assert is_tree(np.array([0] + [int(w[HEAD]) for w in s.words]))


def test_int8_is_refused_where_it_cannot_run(model_dir, tmp_path):
    src = tmp_path / "in.conllu"
    src.write_text(INPUT, encoding="utf-8")
    r = run_cli("parse", "--int8", "--parser", "transition", str(src))
    assert r.returncode == 2 and b"--int8" in r.stderr
    with pytest.raises(NlpipeError, match="--int8"):
        load_stage("parse", str(model_dir), int8=True, device="cuda")


def test_an_untagged_input_is_refused_before_the_model_loads(model_dir, tmp_path):
    import shutil

    broken = tmp_path / "m"
    shutil.copytree(model_dir, broken)
    (broken / "weights.pt").write_bytes(b"")          # loading it would be a model error
    src = tmp_path / "in.conllu"
    src.write_text(INPUT.replace("\tDET\tDT\t", "\t_\t_\t").replace("\tNOUN\tNN\t", "\t_\t_\t")
                   .replace("\tPART\tPOS\t", "\t_\t_\t").replace("\tVERB\tVBZ\t", "\t_\t_\t")
                   .replace("\tPUNCT\t.\t", "\t_\t_\t"), encoding="utf-8")
    r = run_cli("parse", "-m", str(broken), str(src))
    assert r.returncode == 2
    assert r.stderr.decode().startswith(f"nlpipe: error: {src}:") and "without POS tags" in r.stderr.decode()
