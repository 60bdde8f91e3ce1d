"""LISA's syntax modes (issue 35): structured attention over tree marginals, the best tree with a
straight-through or SPIGOT backward, the own parse at test time and ``--write-parse``."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nlpipe.decode.matrix_tree import nonprojective_marginals  # noqa: E402
from nlpipe.decode.mst import diagonal_root_trees, is_tree  # noqa: E402
from nlpipe.io.conllu import DEPREL, HEAD, read_file  # noqa: E402
from nlpipe.io.model_dir import read_config  # noqa: E402
from nlpipe.models import lisa as srl  # noqa: E402
from nlpipe.models.lisa_numpy import tree_marginals as np_tree_marginals  # noqa: E402
from nlpipe.nn.lisa import tree_marginals, tree_nll  # noqa: E402
from nlpipe.nn.spigot import hard_tree, project_simplex  # noqa: E402
from nlpipe.registry import load_stage  # noqa: E402
from nlpipe.runtime.evaluate import strip_stage  # noqa: E402

FIX = Path(__file__).parent / "fixtures" / "srl"
TRAIN = str(FIX / "train.conllu")


# ---------------------------------------------------------------------------------------------
# SPIGOT and straight-through, worked by hand

# Three words w0 w1 w2, LISA's convention: S[dep, head], the diagonal = being the root.
# Per-word argmax: w0 -> w1 (2), w1 -> w0 (2.5, over 2 as root), w2 -> w1 (2): a cycle w0 <-> w1, no root.
# Trees: root w1 with w0, w2 -> w1 scores 2 + 2 + 2 = 6; root w0 (0) + w1 -> w0 (2.5) + w2 -> w1 (2) = 4.5;
# the rest score less. The best tree: every word's head is w1 (the root points to itself).
HAND_SCORES = [[0.0, 2.0, 0.0],
               [2.5, 2.0, 0.0],
               [0.0, 2.0, 0.0]]
HAND_TREE = [[0, 1, 0], [0, 1, 0], [0, 1, 0]]
# dL/dz, the downstream gradient of the one-hot tree z
HAND_GRAD = [[0.0, 0.6, -0.2],
             [0.5, -1.0, 0.0],
             [1.5, 0.5, 0.0]]
# SPIGOT, eta = 1: each row of z - eta * g projected onto the simplex (sort u descending; the support
# is the longest prefix with u_j > (u_1 + .. + u_j - 1) / j; theta = (sum of the support - 1) / its size;
# p = max(v - theta, 0)); the surrogate is z - p.
#   row 0: v = (0, 0.4, 0.2); all three in the support, theta = (0.6 - 1) / 3 = -2/15;
#          p = (2/15, 8/15, 5/15); z - p = (-2/15, 7/15, -5/15)
#   row 1: v = (-0.5, 2, 0); support {2} only (0 > (2 - 1) / 2 fails), theta = 1, p = (0, 1, 0) = z: 0
#   row 2: v = (-1.5, 0.5, 0); support {0.5, 0} (-1.5 > -2/3 fails), theta = (0.5 - 1) / 2 = -1/4;
#          p = (0, 3/4, 1/4); z - p = (0, 1/4, -1/4)
HAND_SPIGOT = [[-2 / 15, 7 / 15, -5 / 15],
               [0.0, 0.0, 0.0],
               [0.0, 0.25, -0.25]]
# eta = 0.5, row 0: v = (0, 0.7, 0.1), theta = (0.8 - 1) / 3 = -1/15, p = (1/15, 23/30, 5/30),
# z - p = (-2/30, 7/30, -5/30)
HAND_SPIGOT_ROW0_HALF = [-2 / 30, 7 / 30, -5 / 30]


def _hand_backward(eta):
    scores = torch.tensor([HAND_SCORES], requires_grad=True)
    tree = hard_tree(scores, torch.ones(1, 3, dtype=torch.bool), eta)
    tree.backward(torch.tensor([HAND_GRAD]))
    return tree, scores.grad[0]


def test_spigot_backward_matches_the_hand_worked_example():
    tree, grad = _hand_backward(1.0)
    assert tree[0].tolist() == HAND_TREE
    np.testing.assert_allclose(grad.numpy(), HAND_SPIGOT, atol=1e-6)
    _, half = _hand_backward(0.5)
    np.testing.assert_allclose(half[0].numpy(), HAND_SPIGOT_ROW0_HALF, atol=1e-6)


def test_straight_through_passes_the_gradient_unchanged():
    tree, grad = _hand_backward(None)
    assert tree[0].tolist() == HAND_TREE
    np.testing.assert_allclose(grad.numpy(), HAND_GRAD, atol=0)


def test_simplex_projection_ignores_padding():
    v = torch.tensor([[0.3, 0.9, 5.0], [0.2, 0.2, 0.0]])
    valid = torch.tensor([[True, True, False], [False, False, False]])
    # (0.3, 0.9): theta = (1.2 - 1) / 2 = 0.1 -> (0.2, 0.8); the padding entry and the empty row stay 0
    np.testing.assert_allclose(project_simplex(v, valid).numpy(), [[0.2, 0.8, 0.0], [0.0, 0.0, 0.0]], atol=1e-6)


def test_padding_gets_no_gradient():
    scores = torch.tensor([HAND_SCORES + [[0.0, 0.0, 0.0]]], requires_grad=True)
    scores = torch.nn.functional.pad(scores, (0, 1)).detach().requires_grad_()
    mask = torch.tensor([[True, True, True, False]])
    for eta in (None, 1.0):
        scores.grad = None
        tree = hard_tree(scores, mask, eta)
        assert tree[0, :3, :3].tolist() == HAND_TREE and tree[0, 3].abs().sum() == 0
        tree.backward(torch.ones_like(tree))
        assert scores.grad[0, 3].abs().sum() == 0 and scores.grad[0, :, 3].abs().sum() == 0


# ---------------------------------------------------------------------------------------------
# Trees and marginals against brute force

def _trees(n):
    """Every tree of n words in LISA's convention (heads[d] == d: the root), exactly one root."""
    for heads in itertools.product(range(n), repeat=n):
        rooted = [0] + [0 if h == d else h + 1 for d, h in enumerate(heads)]
        if is_tree(np.array(rooted)):
            yield heads


def _brute(scores):
    """(best tree, marginals [n, n], log Z) of the scores [n, n] by enumeration."""
    n = len(scores)
    trees = list(_trees(n))
    totals = np.array([sum(scores[d, h] for d, h in enumerate(t)) for t in trees])
    p = np.exp(totals - totals.max())
    p /= p.sum()
    marg = np.zeros((n, n))
    for t, pt in zip(trees, p):
        for d, h in enumerate(t):
            marg[d, h] += pt
    log_z = totals.max() + np.log(np.exp(totals - totals.max()).sum())
    return trees[int(totals.argmax())], marg, log_z


def test_enumeration_counts_the_trees():
    # n^(n-1) rooted trees on n labelled nodes (Cayley), each with one root word
    assert len(list(_trees(3))) == 9 and len(list(_trees(4))) == 64


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tree_marginals_and_best_tree_match_enumeration(seed):
    rng = np.random.default_rng(seed)
    scores = rng.normal(scale=2.0, size=(2, 5, 5))
    lengths = np.array([4, 3])
    mask = np.arange(5)[None] < lengths[:, None]
    heads = diagonal_root_trees(scores, lengths)
    t_scores = torch.tensor(scores, dtype=torch.float64)
    t_mask = torch.from_numpy(mask)
    torch_marg = tree_marginals(t_scores, t_mask).numpy()
    numpy_marg = np_tree_marginals(scores, mask)
    nll = tree_nll(t_scores, t_mask, torch.from_numpy(heads)).item()
    expect_nll = 0.0
    for b, n in enumerate(lengths):
        best, marg, log_z = _brute(scores[b, :n, :n])
        assert tuple(heads[b, :n]) == best
        np.testing.assert_allclose(torch_marg[b, :n, :n], marg, atol=1e-9)
        np.testing.assert_allclose(numpy_marg[b, :n, :n], marg, atol=1e-5)   # float32 out
        assert np.abs(torch_marg[b, n:]).sum() == 0 and np.abs(numpy_marg[b, n:]).sum() == 0
        expect_nll += log_z - sum(scores[b, d, h] for d, h in enumerate(best))
    assert nll == pytest.approx(expect_nll / lengths.sum(), abs=1e-9)


def test_matrix_tree_marginals_in_the_root_first_convention():
    # nonprojective_marginals takes the parser's convention (position 0 the root): compare with
    # enumeration over 3 words, the root column holding each word's root score
    rng = np.random.default_rng(5)
    diag = rng.normal(size=(3, 3))
    scores = np.full((1, 4, 4), -1e9)
    scores[0, 1:, 1:] = diag
    scores[0, 1:, 0] = np.diagonal(diag)
    marg = nonprojective_marginals(scores, np.ones((1, 4), dtype=bool))[0]
    _, expect, _ = _brute(diag)
    np.testing.assert_allclose(marg[1:, 0], np.diagonal(expect), atol=1e-9)
    off = expect - np.diag(np.diagonal(expect))
    np.testing.assert_allclose(marg[1:, 1:], off, atol=1e-9)
    assert np.abs(marg[0]).sum() == 0


def test_marginals_are_differentiable():
    s = torch.randn(1, 4, 4, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(1, 4, dtype=torch.bool)
    assert torch.autograd.gradcheck(lambda x: tree_marginals(x, mask, differentiable=True), (s,))


# ---------------------------------------------------------------------------------------------
# Every mode trains, saves, loads, runs as a stage; torch and numpy agree

MODES = ("lisa", "marginals", "ste", "spigot")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny model of every mode, trained for two epochs on the fixture by ``nlpipe train srl``."""
    from click.testing import CliRunner

    from nlpipe.cli.train import train_srl

    tmp = tmp_path_factory.mktemp("modes")
    words = tmp / "g.txt"
    words.write_text("the\ncat\ndog\n", encoding="utf-8")
    np.save(tmp / "g.npy", np.random.default_rng(0).normal(size=(3, 50)).astype(np.float32))
    out = {}
    for mode in MODES:
        out[mode] = tmp / mode
        r = CliRunner().invoke(train_srl, [
            "--train", TRAIN, "--dev", TRAIN, "--out", str(out[mode]), "--epochs", "2", "--layers", "3",
            "--d-model", "16", "--heads", "2", "--glove-words", str(words), "--glove-vectors",
            str(tmp / "g.npy"), "--syntax", mode, "--eta", "0.5", "--json"])
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout.strip().splitlines()[-1])["syntax_mode"] == mode
    return out


def test_each_mode_round_trips_through_the_model_folder(trained):
    for mode, folder in trained.items():
        config = read_config(folder)
        assert config["model"]["syntax_mode"] == mode and config["model"]["eta"] == 0.5
        assert config["training"]["syntax_mode"] == mode
        stage = load_stage("srl", str(folder))
        assert stage.own_parse == {"lisa": "argmax", "marginals": "marginals"}.get(mode, "tree")
        out = list(stage.annotate(strip_stage("srl", list(read_file(TRAIN)))))
        assert len(out) == 4


def test_a_config_without_the_mode_is_lisa(trained, tmp_path):
    import shutil

    folder = tmp_path / "old"
    shutil.copytree(trained["lisa"], folder)
    config = json.loads((folder / "config.json").read_text())
    del config["model"]["syntax_mode"], config["model"]["eta"]
    (folder / "config.json").write_text(json.dumps(config))
    stage = load_stage("srl", str(folder))
    assert stage.own_parse == "argmax" and stage.model.syntax_mode == "lisa"
    config["model"]["syntax_mode"] = "gumbel"
    (folder / "config.json").write_text(json.dumps(config))
    from nlpipe.errors import ModelError

    with pytest.raises(ModelError, match="syntax_mode 'gumbel'"):
        load_stage("srl", str(folder))


@pytest.mark.parametrize("mode", MODES)
def test_torch_and_numpy_inference_agree_for_every_mode_and_own_parse(trained, mode):
    config = read_config(trained[mode])
    fast = srl.LisaModel.load(trained[mode], config, "cpu", numpy=True)
    slow = srl.LisaModel.load(trained[mode], config, "cpu")
    examples = [srl.example(s, TRAIN, gold=True) for s in read_file(TRAIN)]
    a = fast.arrays(examples)
    t = slow.tensors(examples)
    for own in ("argmax", "tree", "marginals"):
        out = fast.inference.encode(a["words"], a["shapes"], a["mask"], None, own)
        with torch.no_grad():
            ref = slow.net.encode(t["words"], t["shapes"], t["mask"], None, own)
        mask = a["mask"]
        np.testing.assert_allclose(out["states"][mask], ref["states"].numpy()[mask], atol=1e-5)
        if own != "marginals":
            assert (out["heads"][mask] == ref["heads"].numpy()[mask]).all()
        for given_heads in (True, False):
            assert (fast.predict(examples, given_heads, False, own=own, parse=not given_heads)
                    == slow.predict(examples, given_heads, False, own=own, parse=not given_heads))


def test_training_mode_sends_the_srl_gradient_into_the_arc_scores(trained):
    # lisa attends to the given (gold) tree: the SRL loss alone reaches no arc parameter; the other
    # modes attend to their own parse and pass a gradient back into the arc scorer
    for mode, folder in trained.items():
        model = srl.LisaModel.load(folder, read_config(folder), "cpu")
        model.net.train()
        torch.manual_seed(0)
        batch = model.tensors([srl.example(s, TRAIN, gold=True) for s in read_file(TRAIN)], gold=True)
        heads = batch["heads"] if mode == "lisa" else None
        out = model.net.encode(batch["words"], batch["shapes"], batch["mask"], heads)
        s_role = model.net.role_scores(out["states"], batch["preds"])
        role_mask = batch["mask"][batch["preds"][:, 0]]
        torch.nn.functional.cross_entropy(s_role[role_mask], batch["roles"][role_mask]).backward()
        grad = model.net.parser.arc_w.grad
        reached = grad is not None and grad.abs().sum().item() > 0
        assert reached == (mode != "lisa"), mode


def test_own_tree_and_write_parse(trained, tmp_path):
    from click.testing import CliRunner

    from nlpipe.cli import cli
    from nlpipe.io.conllu import parse_string

    src = tmp_path / "in.conllu"
    gold = list(read_file(TRAIN))
    src.write_text("".join(s.to_string() for s in strip_stage("srl", gold)), encoding="utf-8")
    for mode, folder in trained.items():
        model = load_stage("srl", str(folder)).model
        r = CliRunner().invoke(cli, ["srl", str(src), "--model", str(folder), "--write-parse",
                                     "--own-parse", "tree"])
        assert r.exit_code == 0, r.output
        for s, g in zip(parse_string(r.stdout), gold):
            heads = [int(w[HEAD]) for w in s.words]
            assert is_tree(np.array([0] + heads)), (mode, heads)
            rels = [w[DEPREL] for w in s.words]
            assert all(r in model.rels for r in rels)
            assert [r == "root" for r in rels] == [h == 0 for h in heads]
            assert [w[1] for w in s.words] == [w[1] for w in g.words]
    # the input's parse is the parse: nothing of the model's to write
    r = CliRunner().invoke(cli, ["srl", str(src), "--model", str(trained["lisa"]), "--write-parse",
                                 "--parse-from-input"])
    assert r.exit_code != 0 and "does not go with --parse-from-input" in str(r.exception)


def test_write_parse_and_probs_together_change_only_head_deprel_and_predprob(trained):
    from nlpipe.io.conllu import MISC, misc_get

    def src():
        return strip_stage("srl", list(read_file(TRAIN)))

    plain = list(load_stage("srl", str(trained["spigot"])).annotate(src()))
    both = list(load_stage("srl", str(trained["spigot"]), write_parse=True, probs=True).annotate(src()))
    parsed = list(load_stage("srl", str(trained["spigot"]), write_parse=True).annotate(src()))
    for p, b, w in zip(plain, both, parsed):
        assert [(x[HEAD], x[DEPREL]) for x in b.words] == [(x[HEAD], x[DEPREL]) for x in w.words]
        for x, y in zip(p.words, b.words):
            probs = misc_get(y[MISC], "PredProb")
            assert (probs is not None) == (misc_get(y[MISC], "Pred") is not None)
            assert probs is None or 0.0 <= float(probs) <= 1.0
            rest = "|".join(e for e in y[MISC].split("|") if not e.startswith("PredProb=")) or "_"
            assert rest == x[MISC]
    assert any(misc_get(x[MISC], "PredProb") for s in both for x in s.words)


def test_without_write_parse_head_and_deprel_are_the_inputs(trained, tmp_path):
    gold = list(read_file(TRAIN))
    for mode, folder in trained.items():
        out = list(load_stage("srl", str(folder), own_parse="tree").annotate(strip_stage("srl", gold)))
        assert [[(w[HEAD], w[DEPREL]) for w in s.words] for s in out] == \
               [[(w[HEAD], w[DEPREL]) for w in s.words] for s in gold]


def test_bench_scores_every_mode_on_a_small_file(trained):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from srl_modes import score_mode, table

    gold = list(read_file(TRAIN))
    rows = {mode: score_mode(mode, str(folder), gold, gold) for mode, folder in trained.items()}
    every = {"own", "own_argmax", "own_tree", "own_marginals", "predicates_f1", "biaffine", "gold", "uas"}
    assert set(rows["lisa"]) == set(rows["spigot"]) == every
    assert rows["lisa"]["own"] == rows["lisa"]["own_argmax"] and rows["spigot"]["own"] == rows["spigot"]["own_tree"]
    assert all(0 <= row["uas"] <= 100 and 0 <= row["predicates_f1"] <= 100 for row in rows.values())
    text = table({"split": "dev", "sentences": 4, "seed": 1, "minutes": 0.1, "rows": rows})
    assert text.splitlines()[2].startswith("lisa") and "own parse: argmax" in text


def test_numpy_marginals_survive_words_whose_scores_lie_far_apart():
    # one word's scores 2000 below the others': a shared shift would underflow its column of the
    # Laplacian (a singular matrix); the per-word shift does not, and the marginals are unchanged
    rng = np.random.default_rng(3)
    diag = rng.normal(size=(3, 3))
    far = diag.copy()
    far[2] -= 2000.0
    mask = np.ones((1, 3), dtype=bool)
    np.testing.assert_allclose(np_tree_marginals(far[None], mask), np_tree_marginals(diag[None], mask), atol=1e-6)
    np.testing.assert_allclose(np_tree_marginals(diag[None], mask)[0], _brute(diag)[1], atol=1e-6)


def test_continued_training_with_ema_keeps_a_moving_average_of_the_weights(trained, tmp_path):
    """With a decay near 1 the average hardly leaves the model it continues; without, training moves it."""
    from click.testing import CliRunner

    from nlpipe.cli.train import train_srl

    def continued(name: str, *ema: str) -> dict:
        out = tmp_path / name
        r = CliRunner().invoke(train_srl, ["--train", TRAIN, "--dev", TRAIN, "--out", str(out), "--epochs", "1",
                                           "--init", str(trained["marginals"]), "--lr", "1", "--warmup", "1",
                                           "--batch-tokens", "10", *ema])
        assert r.exit_code == 0, r.output
        return torch.load(out / "weights.pt", map_location="cpu")

    before = torch.load(trained["marginals"] / "weights.pt", map_location="cpu")
    moved = {k: (v.float() - before[k].float()).abs().max().item()
             for k, v in continued("plain").items() if v.is_floating_point()}
    averaged = {k: (v.float() - before[k].float()).abs().max().item()
                for k, v in continued("ema", "--ema", "0.999999").items() if v.is_floating_point()}
    assert max(moved.values()) > 1e-2
    assert max(averaged.values()) < 1e-3
    assert read_config(tmp_path / "ema")["training"]["ema"] == 0.999999
    assert read_config(tmp_path / "plain")["training"].get("ema") is None
