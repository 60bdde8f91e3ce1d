"""The LISA predicates/srl stages: data, model pieces, loading, annotation invariants, training."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from conftest import run_cli  # noqa: E402
from nlpipe.io.conllu import HEAD, MISC, misc_get, parse_string, read_file  # noqa: E402
from nlpipe.tags import is_valid  # noqa: E402
from nlpipe.errors import InputError, ModelError  # noqa: E402
from nlpipe.io.provenance import training_block  # noqa: E402
from nlpipe.runtime.evaluate import strip_stage  # noqa: E402
from nlpipe.nn.lisa import DEFAULTS, inverse_sqrt  # noqa: E402
from nlpipe.models.lisa import heads_tensor  # noqa: E402
from nlpipe.cli.train import train_srl  # noqa: E402
from nlpipe.registry import load_stage  # noqa: E402
from nlpipe.models import lisa as srl  # noqa: E402

FIX = Path(__file__).parent / "fixtures" / "srl"
TRAIN = str(FIX / "train.conllu")
TINY = dict(DEFAULTS, d_model=16, heads=2, ffn=16, layers=3, arc_dim=8, rel_dim=8, pred_dim=8, role_dim=8,
            max_len=12)


def gold():
    return list(read_file(TRAIN))


def tiny_model(syntax: bool = True, seed: int = 0) -> srl.LisaModel:
    from nlpipe.train.srl import build_vocab

    torch.manual_seed(seed)
    examples = [srl.example(s, TRAIN, gold=True) for s in gold()]
    vocab = build_vocab(examples, ["the", "a"], 2)
    return srl.LisaModel(vocab, dict(TINY, syntax=syntax))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("lisa")
    tiny_model().save(d, training_block({"train": str(TRAIN)}, {}), "en")
    return d


def test_example_reads_gold_frames_and_joint_tags():
    ex = srl.example(gold()[1], TRAIN, gold=True)
    assert ex.preds == [1, 3] and ex.rolesets == ["say.01", "rain.01"]
    assert ex.roles[0] == ["B-ARG0", "B-V", "B-ARG1", "I-ARG1", "I-ARG1", "O"]
    assert ex.roles[1] == ["O", "O", "O", "B-V", "B-ARGM-TMP", "O"]
    assert ex.tags == ["PRP", "VBD:P", "PRP", "VBD:P", "NN", "."]
    assert ex.heads == [2, 0, 4, 2, 4, 2]


def test_heads_tensor_root_points_to_itself():
    assert heads_tensor([[2, 0, 2]], 4).tolist() == [[1, 1, 1, 0]]


def test_inverse_sqrt_schedule():
    assert inverse_sqrt(50, 1.0, 100) == pytest.approx(0.5)
    assert inverse_sqrt(100, 1.0, 100) == pytest.approx(1.0)
    assert inverse_sqrt(400, 1.0, 100) == pytest.approx(0.5)


def test_senses_from_lemma_then_form_then_default():
    m = tiny_model()
    assert m.sense("said", "say") == "say.01"
    assert m.sense("chased", "_") == "chase.01"  # form table, no LEMMA
    assert m.sense("Flew", "fly") == "fly.01"
    assert m.sense("Zorbed", "_") == "zorbed.01"


def test_syntactic_head_attends_to_the_given_parse():
    m = tiny_model()
    m.net.eval()
    t = m.tensors([srl.example(s, TRAIN, gold=True) for s in gold()[:2]], gold=True)
    a = m.net.encode(t["words"], t["shapes"], t["mask"], t["heads"])
    b = m.net.encode(t["words"], t["shapes"], t["mask"], None)
    assert torch.equal(a["heads"], t["heads"])
    assert torch.equal(b["heads"], b["s_arc"].argmax(-1))
    # a different parse changes the upper layers' states
    other = t["heads"].clone()
    other[:, :] = 0
    c = m.net.encode(t["words"], t["shapes"], t["mask"], other)
    assert not torch.allclose(a["states"], c["states"])
    # the SA baseline has no syntactic head
    sa = tiny_model(syntax=False)
    assert sa.net.parser is None and "heads" not in sa.net.encode(t["words"], t["shapes"], t["mask"])


def test_loss_goes_down_when_fitting_the_fixture():
    m = tiny_model()
    batch = m.tensors([srl.example(s, TRAIN, gold=True) for s in gold()], gold=True)
    opt = torch.optim.Adam(m.net.parameters(), lr=1e-2)
    m.net.train()
    first, parts = m.net.loss(batch)
    assert set(parts) == {"tags", "srl", "arc", "rel"}
    for _ in range(60):
        loss, _ = m.net.loss(batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.5 * first.item()


def _others(misc):
    return [e for e in misc.split("|") if e != "_" and not e.startswith(("Pred=", "SRL="))]


def test_srl_output_is_valid_bio_and_touches_only_pred_and_srl(model_dir):
    from nlpipe.io.conllu import misc_set
    from nlpipe.io.misc import srl_tags

    stage = load_stage("srl", str(model_dir))
    inp = strip_stage("srl", gold())
    inp[0].words[5][MISC] = misc_set(inp[0].words[5][MISC], "SpaceAfter", "No")
    before = [[list(w) for w in s.words] for s in inp]
    out = list(stage.annotate(inp))
    assert len(out) == len(before)
    for s, rows in zip(out, before):
        for w, r in zip(s.words, rows):
            assert w[:MISC] == r[:MISC] and _others(w[MISC]) == _others(r[MISC])
        for seq in srl_tags(s).values():
            assert is_valid(seq)
    assert misc_get(out[0].words[5][MISC], "SpaceAfter") == "No"


def test_predicates_from_input_labels_exactly_the_given_predicates(model_dir):
    stage = load_stage("srl", str(model_dir), predicates_from_input=True)
    out = list(stage.annotate(strip_stage("srl", gold(), gold_predicates=True)))
    for s, g in zip(out, gold()):
        assert [misc_get(w[MISC], "Pred") for w in s.words] == [misc_get(w[MISC], "Pred") for w in g.words]


def test_srl_keeps_the_inputs_predicates_and_predicts_the_others(model_dir):
    stage = load_stage("srl", str(model_dir))
    given = strip_stage("srl", gold(), gold_predicates=True)
    bare = strip_stage("srl", gold())
    alone = list(stage.annotate(strip_stage("srl", gold())))
    mixed = list(stage.annotate([given[0]] + bare[1:]))
    assert [misc_get(w[MISC], "Pred") for w in mixed[0].words] == [misc_get(w[MISC], "Pred")
                                                                   for w in gold()[0].words]
    assert [s.to_string() for s in mixed[1:]] == [s.to_string() for s in alone[1:]]


def test_predicates_stage_writes_pred_only(model_dir):
    stage = load_stage("predicates", str(model_dir))
    assert stage.name == "predicates"
    src = gold()
    out = list(stage.annotate(strip_stage("predicates", gold())))
    for s, g in zip(out, src):
        assert [misc_get(w[MISC], "SRL") for w in s.words] == [misc_get(w[MISC], "SRL") for w in g.words]
        for w in s.words:
            v = misc_get(w[MISC], "Pred")
            assert v is None or v == "Y" or "." in v


def test_parse_from_input_uses_head_column_and_needs_it(model_dir):
    stage = load_stage("srl", str(model_dir), parse_from_input=True)
    assert "parse" in stage.requires
    list(stage.annotate(gold()))
    bad = gold()
    bad[2].words[1][HEAD] = "_"
    with pytest.raises(InputError, match=r"HEAD '_' of word 2"):
        list(stage.annotate(bad))


def test_same_output_for_a_sentence_alone_or_in_a_batch(model_dir):
    stage = load_stage("srl", str(model_dir), predicates_from_input=True)
    together = [s.to_string() for s in stage.annotate(strip_stage("srl", gold(), True))]
    alone = [next(stage.annotate(strip_stage("srl", [s], True))).to_string() for s in gold()]
    assert together == alone


def test_greedy_and_viterbi_both_valid(model_dir):
    for viterbi in (True, False):
        stage = load_stage("srl", str(model_dir), predicates_from_input=True, viterbi=viterbi)
        from nlpipe.io.misc import srl_tags

        for s in stage.annotate(strip_stage("srl", gold(), True)):
            assert all(is_valid(t) for t in srl_tags(s).values())


def test_long_sentence_left_to_the_pipeline(model_dir):
    stage = load_stage("srl", str(model_dir))
    assert stage.max_len == TINY["max_len"]
    text = "".join(f"{i}\tw{i}\t_\t_\t_\t_\t_\t_\t_\t_\n" for i in range(1, 15)) + "\n"
    s = parse_string(text)
    out = list(stage.annotate(s))
    assert out[0].to_string() == text  # over the limit: untouched (the pipeline warns)


def test_missing_or_corrupt_model_files(model_dir, tmp_path):
    import shutil

    d = tmp_path / "m"
    shutil.copytree(model_dir, d)
    (d / "weights.pt").write_bytes(b"not a torch file")
    with pytest.raises(ModelError, match="corrupt or incompatible model file weights.pt"):
        load_stage("srl", str(d))
    (d / "weights.pt").unlink()
    with pytest.raises(ModelError, match="missing model file weights.pt"):
        load_stage("srl", str(d))


@pytest.mark.parametrize("key, value", [("d_model", 24), ("layers", 2), ("heads", 5), ("syntax", False)])
def test_weights_that_do_not_fit_the_config_are_a_model_error(model_dir, tmp_path, key, value):
    import shutil

    d = tmp_path / "m"
    shutil.copytree(model_dir, d)
    config = json.loads((d / "config.json").read_text())
    config["model"][key] = value
    (d / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError):
        load_stage("srl", str(d))


def test_join_propbank_keeps_annotated_documents_only():
    from nlpipe.io.formats import read_conll2012
    from nlpipe.train.srl_data import join_propbank

    ud = parse_string(
        "# newdoc id = answers-d1\n# sent_id = a\n"
        "1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_\n\n"
        "# newdoc id = answers-d2\n# sent_id = b\n"
        "1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n\n")
    props = ("google/ewt/answers/00/d1.xml\t0\t0\tDogs\tNNS\t*\t-\t-\t(ARG0*)\n"
             "google/ewt/answers/00/d1.xml\t0\t1\tbark\tVBP\t*\tbark\tbark.01\t(V*)\n\n")
    out = list(join_propbank(ud, list(read_conll2012(io.StringIO(props), "p"))))
    assert [s.sent_id for s in out] == ["a"]
    assert [w[MISC] for w in out[0].words] == ["SRL=2:B-ARG0", "Pred=bark.01"]


def test_train_srl_data_command_writes_the_joined_file(tmp_path):
    ud = tmp_path / "ud.conllu"
    ud.write_text("# newdoc id = answers-d1\n# sent_id = a\n"
                  "1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_\n\n"
                  "# newdoc id = answers-d2\n# sent_id = b\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n\n",
                  encoding="utf-8")
    props = tmp_path / "p.gold_conll"
    props.write_text("google/ewt/answers/00/d1.xml\t0\t0\tDogs\tNNS\t*\t-\t-\t(ARG0*)\n"
                     "google/ewt/answers/00/d1.xml\t0\t1\tbark\tVBP\t*\tbark\tbark.01\t(V*)\n\n", encoding="utf-8")
    out = tmp_path / "srl.conllu"
    r = run_cli("train", "srl-data", str(ud), str(props), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stderr.decode().startswith(f"{out}: 1 sentences; predicates 1 (0 dropped)")
    sents = list(read_file(str(out)))
    assert [s.sent_id for s in sents] == ["a"]
    assert [w[MISC] for w in sents[0].words] == ["SRL=2:B-ARG0", "Pred=bark.01"]


def test_train_command_writes_a_loadable_model(tmp_path):
    from click.testing import CliRunner

    words = tmp_path / "g.txt"
    words.write_text("the\ncat\ndog\n", encoding="utf-8")
    np.save(tmp_path / "g.npy", np.random.default_rng(0).normal(size=(3, 50)).astype(np.float32))
    out = tmp_path / "model"
    r = CliRunner().invoke(train_srl, [
        "--train", TRAIN, "--dev", TRAIN, "--out", str(out), "--epochs", "2", "--layers", "2",
        "--d-model", "16", "--heads", "2", "--glove-words", str(words), "--glove-vectors",
        str(tmp_path / "g.npy"), "--json"])
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["syntax"] is True and "epoch   1" in r.stderr
    config = json.loads((out / "config.json").read_text())
    assert config["arch"] == "lisa.v1" and config["also_stages"] == ["predicates"]
    out_sents = list(load_stage("srl", str(out)).annotate(strip_stage("srl", gold())))
    assert len(out_sents) == 4


def test_train_command_refuses_data_without_predicates(tmp_path):
    bare = tmp_path / "trees.conllu"
    bare.write_text("".join(s.to_string() for s in strip_stage("srl", gold())), encoding="utf-8")
    out = tmp_path / "model"
    r = run_cli("train", "srl", "--train", str(bare), "--dev", str(bare), "--out", str(out))
    assert r.returncode == 2
    assert r.stderr.decode().startswith(f"nlpipe: error: {bare}: no predicates in the training data")
    assert not out.exists()


def test_cli_srl_and_eval(model_dir, tmp_path):
    from click.testing import CliRunner

    from nlpipe.cli import cli

    src = tmp_path / "in.conllu"
    src.write_text("".join(s.to_string() for s in strip_stage("srl", gold(), True)), encoding="utf-8")
    r = CliRunner().invoke(cli, ["srl", str(src), "--model", str(model_dir), "--predicates-from-input",
                                 "--parse-from-input"])
    assert r.exit_code == 0, r.output
    out = list(parse_string(r.stdout))
    assert [s.sent_id for s in out] == ["t1", "t2", "t3", "t4"]
    r = CliRunner().invoke(cli, ["eval", "srl", "--gold", TRAIN, "--model", str(model_dir), "--gold-predicates",
                                 "--json"])
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["predicates"]["f1"] == 100.0  # the gold predicates were labelled, not predicted


def test_viterbi_shortcut_equals_full_viterbi(model_dir):
    # Rows whose argmax is valid BIO skip the Viterbi: on them the Viterbi path is the argmax.
    from nlpipe.decode import chain

    m = load_stage("srl", str(model_dir)).model
    real = chain.viterbi
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(20, 7, len(m.roles)))
    lengths = rng.integers(1, 8, size=20)
    expect = real(scores, lengths, *chain.constrain(m.allowed, m.allowed_start))
    ids = scores.argmax(-1)
    ok = m.allowed[ids[:, :-1], ids[:, 1:]] | (np.arange(1, 7)[None] >= lengths[:, None])
    valid = ok.all(1) & m.allowed_start[ids[:, 0]]
    assert 0 < valid.sum() < 20
    for r in np.flatnonzero(valid):
        assert (expect[r, :lengths[r]] == ids[r, :lengths[r]]).all()


def test_numpy_inference_computes_what_the_torch_network_computes(model_dir):
    # On the CPU the stage runs the saved network in numpy; it must give the torch network's scores.
    from nlpipe.io.model_dir import read_config

    config = read_config(model_dir)
    fast = srl.LisaModel.load(model_dir, config, "cpu", numpy=True)
    slow = srl.LisaModel.load(model_dir, config, "cpu")
    assert fast.inference is not None and slow.inference is None
    examples = [srl.example(s, TRAIN, gold=True) for s in gold()]
    a = fast.arrays(examples, heads=True)
    t = slow.tensors(examples, heads=True)
    for heads in (a["heads"], None):  # the input's parse, then the model's own
        out_np = fast.inference.encode(a["words"], a["shapes"], a["mask"], heads)
        states, tags = out_np["states"], out_np["tags"]
        with torch.no_grad():
            out = slow.net.encode(t["words"], t["shapes"], t["mask"], None if heads is None else t["heads"])
            preds = torch.tensor([[0, 1], [1, 0], [1, 2]])
            roles = slow.net.role_scores(out["states"], preds).numpy()
        mask = a["mask"]
        np.testing.assert_allclose(states[mask], out["states"].numpy()[mask], atol=1e-5)
        np.testing.assert_allclose(tags[mask], out["tags"].numpy()[mask], atol=1e-5)
        np.testing.assert_allclose(fast.inference.role_scores(states, preds.numpy()), roles, atol=1e-5)
    for given_heads in (True, False):
        for given_preds in (True, False):
            assert fast.predict(examples, given_heads, given_preds) == slow.predict(examples, given_heads, given_preds)


def test_cpu_inference_does_not_import_torch(model_dir, tmp_path):
    src = tmp_path / "in.conllu"
    src.write_text(Path(TRAIN).read_text(encoding="utf-8"), encoding="utf-8")
    code = ("import sys\nfrom nlpipe.registry import load_stage\nfrom nlpipe.io.conllu import read_file\n"
            f"st = load_stage('srl', {str(model_dir)!r})\nlist(st.annotate(read_file({str(src)!r})))\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_each_sentence_is_labelled_once(model_dir):
    # The predicates the first pass writes must not send the sentence through a second pass.
    stage = load_stage("srl", str(model_dir))
    seen = []
    predict = stage.model.predict

    def counting(examples, *args, **kwargs):
        seen.extend(e.forms for e in examples)
        return predict(examples, *args, **kwargs)

    stage.model.predict = counting
    sents = [s for s in gold() if s.words]
    for s in sents:
        for w in s.words:
            w[MISC] = "_"
    list(stage.annotate(sents))
    assert len(seen) == len(sents)


def test_an_unparsed_input_is_refused_before_the_model_loads(model_dir, tmp_path):
    import shutil

    broken = tmp_path / "m"
    shutil.copytree(model_dir, broken)
    (broken / "weights.pt").write_bytes(b"")          # loading it would be a model error
    src = tmp_path / "in.conllu"
    src.write_text("1\tThe\tthe\tDET\tDT\t_\t_\t_\t_\t_\n2\tcat\tcat\tNOUN\tNN\t_\t_\t_\t_\t_\n\n", encoding="utf-8")
    r = run_cli("srl", "--parse-from-input", "-m", str(broken), str(src))
    assert r.returncode == 2
    assert r.stderr.decode().startswith(f"nlpipe: error: {src}:1: HEAD '_'")
