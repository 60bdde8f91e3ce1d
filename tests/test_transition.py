"""The transition parser: system, oracle, features, model storage, training and the parse stage."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from nlpipe.io.conllu import DEPREL, HEAD, parse_string, read_file
from nlpipe.decode.mst import is_tree
from nlpipe.errors import InputError, ModelError, NlpipeError
from nlpipe.runtime.evaluate import strip_stage
from nlpipe.io.model_dir import read_config
from nlpipe.registry import load_stage
from nlpipe.models.biaffine import read_treebank
from nlpipe.stages import parse as P
from nlpipe.models.transition.features import DEFAULT_TEMPLATES, FeaturePlan, atom_sizes, parse_template
from nlpipe.models.transition.lookup import KeyHash, RowTable
from conftest import missing
from nlpipe.models.transition.model import TransitionModel
from nlpipe.models.transition.system import SHIFT, SWAP, Configurations, Oracle, projective_order
from nlpipe.train.transition import TrainOptions, train_parser, train_transition

CORPORA = Path(os.environ.get("NLPIPE_CORPORA", Path(__file__).resolve().parent.parent.parent / "shared" / "corpora"))

# "A hearing is scheduled on the issue today": the classic non-projective arc hearing -> issue.
NONPROJ = [2, 4, 4, 0, 7, 7, 2, 4]
LABELS = ["case", "det", "nsubj", "obl", "punct", "root"]


def _replay(trees):
    """Run the static oracle on (heads, label ids) pairs; return the built trees and action counts."""
    cfg = Configurations([len(h) for h, _ in trees], len(LABELS), LABELS.index("root"))
    oracle = Oracle(cfg, [h for h, _ in trees], [l for _, l in trees])
    counts = {"swap": 0, "illegal": 0}
    active = cfg.active()
    while len(active):
        a = oracle.actions(active)
        counts["illegal"] += int((~cfg.legal(active)[np.arange(len(a)), a]).sum())
        counts["swap"] += int((a == SWAP).sum())
        oracle.attached(cfg.apply(active, a))
        active = cfg.unfinished(active)
    return cfg.trees(), counts


def test_projective_order_is_the_in_order_walk():
    assert projective_order([2, 0, 2]) == [0, 1, 2, 3]
    # non-projective: word 7 (issue) belongs right after its head 2 (hearing)
    rank = projective_order(NONPROJ)
    assert sorted(range(1, 9), key=lambda w: rank[w]) == [1, 2, 5, 6, 7, 3, 4, 8]


def test_oracle_rebuilds_projective_and_non_projective_trees():
    trees = [([2, 0, 2], [1, 5, 4]), (NONPROJ, [1, 2, 3, 5, 0, 1, 3, 3]), ([0], [5])]
    built, counts = _replay(trees)
    assert built == [(list(h), list(l)) for h, l in trees]
    assert counts["swap"] > 0 and counts["illegal"] == 0


@pytest.mark.parametrize("seed", range(20))
def test_random_legal_actions_always_give_one_rooted_tree(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 15, size=8)
    cfg = Configurations(lengths, len(LABELS), LABELS.index("root"))
    active = cfg.active()
    while len(active):
        legal = cfg.legal(active)
        assert legal.any(axis=1).all()
        a = np.array([rng.choice(np.flatnonzero(row)) for row in legal])
        cfg.apply(active, a)
        active = cfg.unfinished(active)
    for (heads, labels), n in zip(cfg.trees(), lengths):
        assert len(heads) == n and is_tree(np.array([0] + heads))
        assert [l for h, l in zip(heads, labels) if h == 0] == [LABELS.index("root")]
        assert all(l != LABELS.index("root") for h, l in zip(heads, labels) if h != 0)


def _run(heads, labels, actions):
    """Take ``actions`` (None: the oracle's) on one sentence; return its tree."""
    cfg = Configurations([len(heads)], len(LABELS), LABELS.index("root"))
    oracle = Oracle(cfg, [heads], [labels])
    c = np.array([0])
    for a in actions:
        legal = cfg.legal(c)
        a = oracle.actions(c, legal)[0] if a is None else a
        assert legal[0, a]
        oracle.attached(cfg.apply(c, np.array([a])))
    while len(cfg.unfinished(c)):
        oracle.attached(cfg.apply(c, oracle.actions(c, cfg.legal(c))))
    return cfg.trees()[0]


def test_oracle_after_an_early_shift_still_builds_the_gold_tree():
    # "dog barks .": after SHIFT dog, SHIFT barks the gold action is LEFT (dog <- barks)
    heads, labels = [2, 0, 2], [2, 5, 4]
    assert _run(heads, labels, [SHIFT, SHIFT, SHIFT]) == (heads, labels)


def test_oracle_after_a_costly_shift_loses_one_arc_only():
    # "The dog barks .": shifting barks before The <- dog leaves The below dog; the oracle does not
    # undo that with SWAPs, it loses that one arc (as arc-standard without SWAP would)
    heads, labels = [2, 3, 0, 3], [1, 2, 5, 4]
    built, built_labels = _run(heads, labels, [SHIFT, SHIFT, SHIFT])
    assert sum(b != h for b, h in zip(built, heads)) == 1


def test_oracle_sends_an_orphan_to_its_nearest_gold_ancestor_and_keeps_the_other_arcs():
    heads, labels = [2, 3, 0, 3], [1, 2, 5, 4]
    # attach dog to barks while The still waits for it: The loses its head and goes to barks, its
    # grandparent; every other arc is still built
    early_left = 2 + labels[1]                     # s1 (dog) <- s0 (barks)
    built, built_labels = _run(heads, labels, [SHIFT, SHIFT, SHIFT, early_left])
    assert built == [3, 3, 0, 3]
    assert built_labels[1:] == labels[1:]


@pytest.mark.parametrize("seed", range(10))
def test_oracle_answers_legally_from_wherever_random_actions_lead(seed):
    rng = np.random.default_rng(seed)
    trees = [(NONPROJ, [1, 2, 3, 5, 0, 1, 3, 3]), ([2, 0, 2], [1, 5, 4]), ([0], [5]),
             ([3, 3, 0, 5, 3, 3], [1, 2, 5, 0, 3, 4])]
    for heads, labels in trees:
        for steps in range(0, 2 * len(heads) + 1, 2):
            cfg = Configurations([len(heads)], len(LABELS), LABELS.index("root"))
            oracle = Oracle(cfg, [heads], [labels])
            c = np.array([0])
            for _ in range(steps):
                if not len(cfg.unfinished(c)):
                    break
                oracle.attached(cfg.apply(c, np.array([rng.choice(np.flatnonzero(cfg.legal(c)[0]))])))
            taken = 0
            while len(cfg.unfinished(c)):
                legal = cfg.legal(c)
                a = oracle.actions(c, legal)
                assert legal[0, a[0]]
                oracle.attached(cfg.apply(c, a))
                taken += 1
                assert taken < 10 * len(heads) + 10
            built, built_labels = cfg.trees()[0]
            assert is_tree(np.array([0] + built))
            if steps == 0:
                assert (built, built_labels) == (heads, labels)


def test_swap_needs_s1_before_s0_and_root_arc_waits_for_the_empty_buffer():
    cfg = Configurations([3], len(LABELS), LABELS.index("root"))
    c = np.array([0])
    assert cfg.legal(c)[0].tolist() == [True] + [False] * (1 + 2 * len(LABELS))
    cfg.apply(c, np.array([SHIFT]))          # stack: root w1
    legal = cfg.legal(c)[0]
    assert legal[SHIFT] and not legal[SWAP] and not legal[2 + len(LABELS) + LABELS.index("root")]
    cfg.apply(c, np.array([SHIFT]))          # stack: root w1 w2
    assert cfg.legal(c)[0][SWAP]
    cfg.apply(c, np.array([SWAP]))           # stack: root w2, buffer: w1 w3
    cfg.apply(c, np.array([SHIFT]))          # stack: root w2 w1
    assert not cfg.legal(c)[0][SWAP]         # w2 after w1: swapping back is not allowed


def test_plan_reads_stack_buffer_children_and_distances():
    sizes = atom_sizes(1000, 5, 5, len(LABELS))
    cfg = Configurations([4], len(LABELS), LABELS.index("root"))
    c = np.array([0])
    for a in (SHIFT, SHIFT, 2 + LABELS.index("det"), SHIFT):   # w1 <- w2, then shift w3
        cfg.apply(c, np.array([a]))
    tokens = np.stack([np.arange(cfg.size)] * 4, axis=1)        # word id = flat index
    specs = ["s0.w", "s1.w", "s1l.w", "s0l.w", "b0.w", "b1.w", "s1l.l", "s0.l", "d01", "s1vl", "s0.w+s1.w", "bias"]
    plan = FeaturePlan([parse_template(t) for t in specs], sizes)
    keys = plan.keys(cfg, tokens, c)[0].tolist()
    base = int(cfg.base[0])
    assert keys == [base + 3, base + 2, base + 1, 0, base + 4, 0, LABELS.index("det"), len(LABELS), 1, 1,
                    (base + 3) * 1000 + base + 2, 0]
    assert plan.keys(cfg, tokens, c, slice(2, 4))[0].tolist() == [base + 1, 0]


def test_plan_reads_grandchildren_valencies_and_mixed_blocks():
    sizes = atom_sizes(1000, 5, 5, len(LABELS))
    cfg = Configurations([7], len(LABELS), LABELS.index("root"))
    c = np.array([0])
    left, right = 2 + LABELS.index("det"), 2 + len(LABELS) + LABELS.index("obl")
    # w2 -> w3 and w1 -> w2 (s1 = w1, its rightmost grandchild w3); w4 <- w5 <- w6 (s0 = w6, s0ll = w4)
    for a in (SHIFT, SHIFT, SHIFT, right, right, SHIFT, SHIFT, left, SHIFT, left):
        cfg.apply(c, np.array([a]))
    tokens = np.stack([np.arange(cfg.size)] * 4, axis=1)        # word id = flat index
    specs = ["s1rr.w", "s0ll.w", "s0ll.l+d01+s1vr", "s0.w+d0b+s0vl", "b0l.w", "s1r.l+s1.w"]
    plan = FeaturePlan([parse_template(t) for t in specs], sizes)
    base = int(cfg.base[0])
    det, obl = LABELS.index("det"), LABELS.index("obl")
    expect = [base + 3, base + 4, (det * 8 + 5) * 7 + 1, ((base + 6) * 8 + 1) * 7 + 1, 0, obl * 1000 + base + 1]
    assert plan.keys(cfg, tokens, c)[0].tolist() == expect
    assert plan.keys(cfg, tokens, c, slice(2, 5))[0].tolist() == expect[2:5]
    state = plan.state(cfg, np.array([0, 0]))
    assert plan.block_keys(cfg, tokens, state, slice(5, 6)).tolist() == [expect[5:]] * 2


@pytest.mark.parametrize("probes", [0, 1, 3])
def test_key_hash_and_row_table_find_every_key(probes, monkeypatch):
    import nlpipe.models.transition.lookup as lookup
    monkeypatch.setattr(lookup, "PROBES", probes)      # 0: every lookup takes the binary-search path
    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(0, 1 << 40, size=5000))
    h = KeyHash(keys, np.arange(len(keys)))
    probe = np.concatenate([keys, keys + 1])
    got = h.get(probe, np.full(len(probe), -7))
    expect = np.concatenate([np.arange(len(keys)), np.where(np.isin(keys + 1, keys),
                                                            np.searchsorted(keys, keys + 1), -7)])
    assert got.tolist() == expect.tolist()
    tables = [np.array([3, 9]), np.array([5, 1 << 35])]
    rt = RowTable(tables, [10, 1 << 36])
    rows = rt.rows(np.array([[9, 1 << 35], [4, 5], [3, 6]]), slice(0, 2))
    assert rows.tolist() == [[2, 5], [0, 4], [1, 3]]


@pytest.mark.parametrize("spec", ["s9.w", "s0.q", "s0.w+", "d02"])
def test_bad_templates_are_refused(spec):
    with pytest.raises(ValueError):
        parse_template(spec)


def test_default_templates_parse():
    assert len(DEFAULT_TEMPLATES) >= 60
    assert len(set(DEFAULT_TEMPLATES)) == len(DEFAULT_TEMPLATES)
    for t in DEFAULT_TEMPLATES:
        parse_template(t)


TREEBANK = """\
# sent_id = a
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tbarks\tbark\tVERB\tVBZ\t_\t0\troot\t_\t_
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

# sent_id = b
1\tA\ta\tDET\tDT\t_\t2\tdet\t_\t_
2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tsleeps\tsleep\tVERB\tVBZ\t_\t0\troot\t_\t_
4\ton\ton\tADP\tIN\t_\t6\tcase\t_\t_
5\tthe\tthe\tDET\tDT\t_\t6\tdet\t_\t_
6\tmat\tmat\tNOUN\tNN\t_\t3\tobl\t_\t_
7\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

# sent_id = c
1\tA\ta\tDET\tDT\t_\t2\tdet\t_\t_
2\thearing\thearing\tNOUN\tNN\t_\t4\tnsubj\t_\t_
3\tis\tbe\tAUX\tVBZ\t_\t4\taux\t_\t_
4\tscheduled\tschedule\tVERB\tVBN\t_\t0\troot\t_\t_
5\ton\ton\tADP\tIN\t_\t7\tcase\t_\t_
6\tthe\tthe\tDET\tDT\t_\t7\tdet\t_\t_
7\tissue\tissue\tNOUN\tNN\t_\t2\tnmod\t_\t_
8\ttoday\ttoday\tNOUN\tNN\t_\t4\tobl\t_\t_

"""


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tp")
    (d / "train.conllu").write_text(TREEBANK * 3, encoding="utf-8")
    (d / "dev.conllu").write_text(TREEBANK, encoding="utf-8")
    for name, mode, explore in (("m", "dynamic", 0.0), ("mf", "full", 0.0), ("mx", "dynamic+full", 0.9)):
        opts = TrainOptions(mode=mode, epochs=20, lr=0.1, min_count=1, min_word=1, margin=0.5, explore=explore)
        train_transition(str(d / "train.conllu"), str(d / "dev.conllu"), str(d / name), opts, "gold", None,
                           log=open(os.devnull, "w"))
    return d


@pytest.mark.parametrize("name,margin", [("m", 0.5), ("mf", None), ("mx", None)])
def test_training_fits_the_tiny_treebank(model_dir, name, margin):
    """The prefix-trained model at its training margin, the full-trained one and the one trained with
    exploration without a margin all rebuild the training trees, the non-projective one included."""
    config = read_config(model_dir / name, "parse")
    assert config["arch"] == "transition-dfs.v1"
    assert sorted(p.name for p in (model_dir / name).iterdir()) == ["config.json", "vocab.json", "weights.npz"]
    gold = list(read_file(str(model_dir / "dev.conllu")))
    stage = load_stage("parse", str(model_dir / name), margin=margin)
    pred = list(stage.annotate(strip_stage("parse", gold)))
    assert [[w[HEAD] for w in s.words] for s in pred] == [[w[HEAD] for w in s.words] for s in gold]
    assert [[w[DEPREL] for w in s.words] for s in pred] == [[w[DEPREL] for w in s.words] for s in gold]
    if margin is not None:
        assert stage.mean_templates < len(DEFAULT_TEMPLATES)
    else:
        assert stage.mean_templates == len(DEFAULT_TEMPLATES)


def test_exploration_collects_only_configurations_off_the_gold_path(model_dir):
    from nlpipe.train.transition import explore_examples

    trees = [(e.forms, e.upos, e.xpos, e.heads, e.rels) for e in read_treebank(str(model_dir / "dev.conllu"))]
    model = TransitionModel.load(model_dir / "mx")
    rng = np.random.default_rng(0)
    keys, gold, legal = explore_examples(model, trees, 0.0, rng)    # always the oracle: never off the path
    assert len(gold) == 0 and keys.shape == (0, len(model.templates))
    zero = TransitionModel(model.words, model.upos, model.xpos, model.labels, model.template_names, model.keys,
                           [np.zeros_like(w) for w in model.weights])
    keys, gold, legal = explore_examples(zero, trees, 1.0, rng)     # an untrained model errs at once
    assert len(gold) > 0 and keys.shape == (len(gold), len(model.templates))
    assert legal[np.arange(len(gold)), gold].all()
    config = read_config(model_dir / "mx", "parse")
    assert config["training"]["options"]["explore"] == 0.9


def test_save_and_load_keep_the_model(model_dir, tmp_path):
    m = TransitionModel.load(model_dir / "m")
    m.save(tmp_path)
    m2 = TransitionModel.load(tmp_path)
    assert m2.template_names == m.template_names and m2.labels == m.labels
    for a, b in zip(m.weights, m2.weights):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("damage", ["missing", "garbage", "vocab"])
def test_broken_model_is_a_model_error(model_dir, tmp_path, damage):
    import shutil

    d = tmp_path / "bad"
    shutil.copytree(model_dir / "m", d)
    if damage == "missing":
        (d / "weights.npz").unlink()
    elif damage == "garbage":
        (d / "weights.npz").write_bytes(b"not a zip file")
    else:
        (d / "vocab.json").write_text('{"words": []}', encoding="utf-8")
    with pytest.raises(ModelError):
        load_stage("parse", str(d))


def test_only_head_and_deprel_change_and_special_rows_pass(model_dir):
    text = ("# sent_id = x\n1\tThe\tthe\tDET\tDT\t_\t_\t_\t_\t_\n2-3\tcat's\t_\t_\t_\t_\t_\t_\t_\t_\n"
            "2\tcat\tcat\tNOUN\tNN\t_\t_\t_\t_\t_\n3\t's\t's\tPART\tPOS\t_\t_\t_\t_\t_\n"
            "3.1\tis\tbe\tAUX\tVBZ\t_\t_\t_\t_\t_\n4\tsleeps\tsleep\tVERB\tVBZ\t_\t_\t_\t_\tKeep=me\n\n")
    stage = load_stage("parse", str(model_dir / "m"))
    before = parse_string(text)
    after = list(stage.annotate(parse_string(text)))
    for b, a in zip(before[0].rows, after[0].rows):
        same = [i for i in range(10) if i not in (HEAD, DEPREL)] if "." not in b[0] and "-" not in b[0] \
            else list(range(10))
        assert [b[i] for i in same] == [a[i] for i in same]
    heads = np.array([0] + [int(w[HEAD]) for w in after[0].words])
    assert is_tree(heads)


def test_input_without_pos_is_an_input_error(model_dir):
    stage = load_stage("parse", str(model_dir / "m"))
    with pytest.raises(InputError):
        list(stage.annotate(parse_string("1\tdog\t_\t_\t_\t_\t_\t_\t_\t_\n\n")))


def test_biaffine_options_are_refused(model_dir):
    with pytest.raises(NlpipeError):
        load_stage("parse", str(model_dir / "m"), projective=True)


def test_training_file_without_gold_heads_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tdog\tdog\tNOUN\tNN\t_\t_\t_\t_\t_\n\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        train_transition(str(bad), str(bad), str(tmp_path / "m"), TrainOptions(epochs=1), "gold", None,
                           log=open(os.devnull, "w"))
    assert "bad.conllu" in str(e.value)


def test_cli_transition_parse_and_train(model_dir, tmp_path):
    from click.testing import CliRunner

    from nlpipe.cli import cli

    runner = CliRunner()
    r = runner.invoke(cli, ["parse", "--model", str(model_dir / "m"), str(model_dir / "dev.conllu")])
    assert r.exit_code == 0, r.output
    assert len(parse_string(r.output)) == 3
    out = tmp_path / "m2"
    r = runner.invoke(cli, ["train", "parse", "--parser", "transition", "--train", str(model_dir / "train.conllu"),
                            "--dev", str(model_dir / "dev.conllu"), "--out", str(out), "--epochs", "1",
                            "--min-count", "1", "--margin", "0.5", "--checkpoints", "8,24"])
    assert r.exit_code == 0, r.output
    config = read_config(out, "parse")
    assert config["arch"] == "transition-dfs.v1"
    assert config["model"]["margin"] == 0.5 and config["model"]["checkpoints"] == "8,24"
    assert load_stage("parse", str(out)).margin == 0.5
    r = runner.invoke(cli, ["train", "parse", "--parser", "transition", "--train", str(model_dir / "train.conllu"),
                            "--dev", str(model_dir / "dev.conllu"), "--out", str(out), "--checkpoints", "x"])
    assert isinstance(r.exception, NlpipeError) and "bad checkpoint schedule" in str(r.exception)


@pytest.mark.corpus
def test_oracle_rebuilds_every_en_ewt_training_tree():
    path = CORPORA / "en_ewt" / "en_ewt-ud-train.conllu"
    if not path.exists():
        pytest.skip("en_ewt corpus not available (set NLPIPE_CORPORA)")
    sents = [s for s in read_file(str(path)) if s.words]
    labels = sorted({w[DEPREL] for s in sents for w in s.words})
    global LABELS
    saved, LABELS = LABELS, labels
    try:
        trees = [([int(w[HEAD]) for w in s.words], [labels.index(w[DEPREL]) for w in s.words]) for s in sents]
        built, counts = _replay(trees)
    finally:
        LABELS = saved
    assert built == [(h, l) for h, l in trees]
    assert counts["illegal"] == 0 and counts["swap"] > 0


@pytest.mark.corpus
@pytest.mark.slow
def test_shipped_model_gives_well_formed_trees_on_en_ewt_test(ewt_test_tagged):
    """Every tree of the en_ewt test set (tagged by the shipped tagger) is well formed, with and
    without a margin, and the full model keeps its measured accuracy."""
    from nlpipe.runtime.evaluate import score
    from nlpipe.registry import MODELS_DIR

    if not (MODELS_DIR / "parse-transition-ewt").is_dir():
        missing("no shipped transition parser")
    gold, tagged = ewt_test_tagged
    for margin in (-1.0, 1.0):
        stage = load_stage("parse", "parse-transition-ewt", margin=margin)
        pred = list(stage.annotate(strip_stage("parse", tagged)))
        for s in pred:
            heads = np.array([0] + [int(w[HEAD]) for w in s.words])
            assert is_tree(heads), s.meta("sent_id")
            assert sum(w[DEPREL] == "root" for w in s.words) == 1
        if margin < 0:
            assert score("parse", gold, pred)["las"] >= 82.0    # measured 82.32 (full model)


def test_cluster_attribute_is_read_saved_and_loaded(tmp_path):
    from nlpipe.linear.clusters import SIZES, Clusters

    ids = np.array([[1, 5, 7], [2, 9, 11]])
    assert len(SIZES) == 3
    trees = [(["The", "dog", "barks"], ["DET", "NOUN", "VERB"], ["DT", "NN", "VBZ"], [2, 3, 0], ["det", "nsubj", "root"])]
    model, _ = train_parser(trees, TrainOptions(epochs=1, min_count=1, min_word=1), clusters=Clusters(["dog", "cat"], ids))
    model.save(tmp_path)
    assert (tmp_path / "clusters.npz").exists()
    loaded = TransitionModel.load(tmp_path)
    cfg = Configurations([3], len(loaded.labels), loaded.root_label)
    m = loaded.token_matrix([(["The", "Cat", "dog"], ["DET", "NOUN", "NOUN"], ["DT", "NN", "NN"])], cfg)
    base = int(cfg.base[0])
    assert m[base + 1:base + 4, 3].tolist() == [0, 9 + 3, 5 + 3]      # c256 ids + 3; "the" has none
    assert m[base + 2, 0] == 0 and m[base + 3, 0] == loaded.word_vocab.id("dog")
