"""FEATS after the parse: the tree features of a word, the classifier that re-decides the FEATS the
syntax decides (an English base-form verb: imperative at the root without a subject, infinitive under
``will`` or ``to``), choosing its tag groups on dev, its files, and the parse stage that runs it."""
from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli
from nlpipe.errors import ModelError
from nlpipe.io.conllu import FEATS, HEAD, parse_string, to_string
from nlpipe.models.tree_feats import FOLDER, TEMPLATES, TreeFeats, children_of, feature_key, word_features
from nlpipe.registry import load_stage
from nlpipe.train.tree_feats import TreeFeatsOptions, group_labels, select_groups, train_tree_feats

IMP, INF = "Mood=Imp|VerbForm=Fin", "VerbForm=Inf"
VERBS = ["stop", "open", "close", "wash", "fix", "paint", "move", "check"]
OBJECTS = ["car", "door", "box", "gate"]


def rows(words):
    """CoNLL-U lines of (form, upos, xpos, feats, head, deprel) words."""
    return [f"{i}\t{f}\t_\t{u}\t{x}\t{feats}\t{h}\t{r}\t_\t_" for i, (f, u, x, feats, h, r) in enumerate(words, 1)]


def imperative(verb, obj, feats=IMP):
    """``Verb the obj .``: the verb is the root and has no subject."""
    return rows([(verb.capitalize(), "VERB", "VB", feats, 0, "root"), ("the", "DET", "DT", "_", 3, "det"),
                 (obj, "NOUN", "NN", "Number=Sing", 1, "obj"), (".", "PUNCT", ".", "_", 1, "punct")])


def infinitive(verb, obj, feats=INF):
    """``I will verb the obj .``: the verb has a subject and the modal as its auxiliary."""
    return rows([("I", "PRON", "PRP", "Case=Nom|Number=Sing|Person=1|PronType=Prs", 3, "nsubj"),
                 ("will", "AUX", "MD", "VerbForm=Fin", 3, "aux"), (verb, "VERB", "VB", feats, 0, "root"),
                 ("the", "DET", "DT", "_", 5, "det"), (obj, "NOUN", "NN", "Number=Sing", 3, "obj"),
                 (".", "PUNCT", ".", "_", 3, "punct")])


def treebank(sentences) -> str:
    return "".join("\n".join(s) + "\n\n" for s in sentences)


TRAIN = treebank([make(v, o) for v in VERBS for o in OBJECTS for make in (imperative, infinitive)])


@pytest.fixture(scope="module")
def model() -> TreeFeats:
    m = train_tree_feats(parse_string(TRAIN), TreeFeatsOptions(epochs=10))
    assert m is not None
    return m


def test_word_features_read_the_tree():
    words = parse_string(treebank([infinitive("stop", "car")]))[0].words
    children = children_of(words)
    assert children == [[], [], [0, 1, 4, 5], [], [3], []]
    got = dict(zip(TEMPLATES, word_features(words, 2, children)))
    g = "VERB\tVB"
    assert got["group"] == g
    assert got["rel"] == "root\t" + g
    assert got["head"] == "ROOT\t" + g and got["head+rel"] == "-\troot\t" + g
    assert got["children"] == "aux+nsubj+obj+punct\t" + g
    assert got["dep:aux"] == "will\t" + g and got["dep:nsubj"] == "i\t" + g and got["dep:mark"] == "-\t" + g
    assert got["prev"] == "will\t" + g and got["next"] == "the\t" + g
    assert got["first"] == "False\t" + g
    obj = dict(zip(TEMPLATES, word_features(words, 4, children)))
    assert obj["head"] == "VB\tNOUN\tNN" and obj["side+rel"] == "R\tobj\tNOUN\tNN"   # its head is to its left


def test_feature_keys_are_62_bit_and_tell_templates_and_values_apart():
    keys = {feature_key(j, v) for j in range(3) for v in ("a", "b", "VERB\tVB")}
    assert len(keys) == 9 and all(0 <= k < 1 << 62 for k in keys)
    assert feature_key(1, "a") == feature_key(1, "a")


def test_groups_are_tag_pairs_with_two_frequent_feats():
    text = treebank([imperative("stop", "car"), imperative("fix", "box"), infinitive("stop", "car"),
                     infinitive("fix", "gate"), infinitive("open", "door", feats="VerbForm=Ger")])
    got = group_labels(parse_string(text), min_label_count=2)
    assert got == {"VERB\tVB": sorted([IMP, INF])}    # Ger seen once; the other groups have one FEATS


def test_the_tree_decides_imperative_or_infinitive_of_unseen_verbs(model):
    # the tagger's FEATS are wrong on purpose: the classifier reads the tree, not them
    text = treebank([imperative("clean", "box", feats=INF), infinitive("clean", "box", feats=IMP),
                     imperative("lift", "gate", feats=INF)])
    sentences = parse_string(text)
    model.apply(sentences)
    assert [w[FEATS] for s in sentences for w in s.words if w[FEATS] in (IMP, INF)] == [IMP, INF, IMP]
    assert sentences[1].words[0][FEATS] == "Case=Nom|Number=Sing|Person=1|PronType=Prs"   # not a kept group


def test_groups_are_kept_only_where_they_beat_the_tagger_on_dev(model):
    gold = parse_string(treebank([imperative("clean", "box"), infinitive("lift", "door"),
                                  imperative("pull", "gate")]))
    tagger_right = copy.deepcopy(gold)
    kept, counts = select_groups(model, gold, tagger_right)
    assert kept is None and counts == {"VERB\tVB": (0, 0)}        # a tie keeps the tagger's
    tagger_wrong = parse_string(treebank([imperative("clean", "box", feats=INF), infinitive("lift", "door"),
                                          imperative("pull", "gate", feats=INF)]))
    kept, counts = select_groups(model, gold, tagger_wrong)
    assert counts == {"VERB\tVB": (2, 0)} and sorted(kept.groups) == ["VERB\tVB"]


def test_files_round_trip_and_broken_ones_are_model_errors(model, tmp_path):
    model.save(tmp_path / FOLDER, {"note": "test"})
    again = TreeFeats.load(tmp_path / FOLDER)
    keys = np.array([[feature_key(j, f"v{j}") for j in range(len(TEMPLATES))]])
    np.testing.assert_array_equal(again.scores(keys), model.scores(keys))
    assert json.loads((tmp_path / FOLDER / "tree_feats.json").read_text())["training"] == {"note": "test"}
    assert TreeFeats.load_optional(tmp_path / "elsewhere") is None
    config = json.loads((tmp_path / FOLDER / "tree_feats.json").read_text())
    for damage in ("templates", "weights", "groups"):
        bad = tmp_path / damage
        bad.mkdir()
        broken = dict(config)
        if damage == "templates":
            broken["templates"] = config["templates"][:-1]
        if damage == "groups":
            broken["groups"] = {"VERB\tVB": [len(config["labels"])]}
        (bad / "tree_feats.json").write_text(json.dumps(broken))
        weights = (tmp_path / FOLDER / "weights.npz").read_bytes()
        (bad / "weights.npz").write_bytes(weights[:50] if damage == "weights" else weights)
        with pytest.raises(ModelError) as e:
            TreeFeats.load(bad)
        assert str(bad) in str(e.value)


# ---------------------------------------------------------------------------------------------
# In the parse stage

@pytest.fixture(scope="module")
def parser(tmp_path_factory, model) -> Path:
    """A tiny biaffine parser that has learnt the training trees by heart, with the classifier."""
    from nlpipe.train import biaffine

    d = tmp_path_factory.mktemp("tree_feats")
    (d / "train.conllu").write_text(TRAIN, encoding="utf-8")
    hyper = {"word_dim": 8, "shape_dim": 2, "affix_dim": 8, "tag_dim": 4, "hidden": 16, "layers": 1,
             "arc_dim": 16, "rel_dim": 8, "dropout": 0.0, "word_dropout": 0.0, "tag_dropout": 0.0}
    biaffine.train(str(d / "train.conllu"), str(d / "train.conllu"), str(d / "parser"), epochs=30,
                   batch_tokens=64, lr=1e-2, decay=1.0, ema=0.0, patience=None, threads=1, hyper=hyper,
                   vectors=None, log=io.StringIO())
    model.save(d / "parser" / FOLDER)
    return d / "parser"


def wrong_feats_input() -> str:
    return treebank([imperative("stop", "car", feats=INF), infinitive("fix", "door", feats=IMP)])


def test_the_parse_stage_re_decides_feats_unless_told_not_to(parser):
    right = parse_string(treebank([imperative("stop", "car"), infinitive("fix", "door")]))
    out = list(load_stage("parse", str(parser)).annotate(parse_string(wrong_feats_input())))
    assert [[w[HEAD] for w in s.words] for s in out] == [[w[HEAD] for w in s.words] for s in right]
    assert [[w[FEATS] for w in s.words] for s in out] == [[w[FEATS] for w in s.words] for s in right]
    kept = list(load_stage("parse", str(parser), feats=False).annotate(parse_string(wrong_feats_input())))
    assert [w[FEATS] for s in kept for w in s.words] == \
        [w[FEATS] for s in parse_string(wrong_feats_input()) for w in s.words]


def test_sentences_without_feats_keep_them_empty(parser):
    text = wrong_feats_input().replace(IMP, "_").replace(INF, "_").replace("Number=Sing", "_")
    text = text.replace("Case=Nom|_|Person=1|PronType=Prs", "_").replace("VerbForm=Fin", "_")
    out = list(load_stage("parse", str(parser)).annotate(parse_string(text)))
    assert {w[FEATS] for s in out for w in s.words} == {"_"}


def test_parse_command_keeps_feats_when_asked(parser):
    r = run_cli("parse", "--model", str(parser), input=wrong_feats_input().encode())
    assert r.returncode == 0, r.stderr
    assert [w[FEATS] for s in parse_string(r.stdout.decode()) for w in s.words if w[FEATS] in (IMP, INF)] == [IMP, INF]
    r = run_cli("parse", "--model", str(parser), "--keep-feats", input=wrong_feats_input().encode())
    assert r.returncode == 0, r.stderr
    assert [w[FEATS] for s in parse_string(r.stdout.decode()) for w in s.words if w[FEATS] in (IMP, INF)] == [INF, IMP]


def test_train_parse_feats_command_adds_the_folder_or_says_why_not(parser, tmp_path):
    (tmp_path / "train.conllu").write_text(TRAIN, encoding="utf-8")
    dev = treebank([imperative("stop", "car"), infinitive("fix", "door")])
    (tmp_path / "dev.conllu").write_text(dev, encoding="utf-8")
    target = tmp_path / "parser"
    target.mkdir()
    for p in parser.iterdir():
        if p.is_file():
            (target / p.name).write_bytes(p.read_bytes())
    pos = tmp_path / "pos"
    r = run_cli("train", "pos", "--train", str(tmp_path / "train.conllu"), "--dev", str(tmp_path / "dev.conllu"),
                "--out", str(pos), "--epochs", "1", "--order", "baseline")
    assert r.returncode == 0, r.stderr
    r = run_cli("train", "parse-feats", "--train", str(tmp_path / "train.conllu"), "--dev", str(tmp_path / "dev.conllu"),
                "--model", str(target), "--pos", str(pos), "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert set(result) == {"groups", "dev_errors", "dev_ufeats_tagger", "dev_ufeats_after_parse"}
    # a group is written exactly when it beat the tagger on dev
    written = (target / FOLDER).is_dir()
    assert written == bool(result["groups"])
    assert all((b < a) == (g in result["groups"]) for g, (a, b) in result["dev_errors"].items())
    if written:
        assert sorted(json.loads((target / FOLDER / "tree_feats.json").read_text())["groups"]) == result["groups"]
    no_feats = tmp_path / "nofeats.conllu"
    no_feats.write_text(TRAIN.replace(IMP, "_").replace(INF, "_").replace("Number=Sing", "_")
                        .replace("Case=Nom|_|Person=1|PronType=Prs", "_").replace("VerbForm=Fin", "_"))
    r = run_cli("train", "parse-feats", "--train", str(no_feats), "--dev", str(tmp_path / "dev.conllu"),
                "--model", str(target), "--pos", str(pos))
    assert r.returncode == 2 and r.stderr.decode() == f"nlpipe: error: {no_feats}: no word has FEATS: nothing to learn\n"


def test_add_to_parsers_writes_the_groups_that_beat_the_tagger_and_removes_a_stale_folder(tmp_path, monkeypatch):
    from nlpipe.train import tree_feats as T

    (tmp_path / "train.conllu").write_text(TRAIN, encoding="utf-8")
    gold = treebank([imperative("clean", "box"), infinitive("lift", "door"), imperative("pull", "gate")])
    (tmp_path / "dev.conllu").write_text(gold, encoding="utf-8")
    wrong = treebank([imperative("clean", "box", feats=INF), infinitive("lift", "door"),
                      imperative("pull", "gate", feats=INF)])
    monkeypatch.setattr(T, "_tagged", lambda *_: parse_string(wrong))
    monkeypatch.setattr(T, "_parsed", lambda tagged, *_: copy.deepcopy(tagged))   # the trees are dev's own
    parser = tmp_path / "parser"
    result, = T.add_to_parsers(str(tmp_path / "train.conllu"), str(tmp_path / "dev.conllu"), [str(parser)], "pos-x",
                               TreeFeatsOptions(epochs=10))
    # dev has 4 + 6 + 4 words; the tagger got 2 FEATS wrong, the classifier none
    assert result["groups"] == ["VERB\tVB"] and result["dev_errors"] == {"VERB\tVB": (2, 0)}
    assert result["dev_ufeats_tagger"] == 85.71 and result["dev_ufeats_after_parse"] == 100.0
    training = json.loads((parser / FOLDER / "tree_feats.json").read_text())["training"]
    assert training["pos_model"] == "pos-x" and training["scores"] == {"dev_ufeats_tagger": 85.71, "dev_ufeats_after_parse": 100.0}
    assert training["data"]["train"]["path"] == str(tmp_path / "train.conllu")
    monkeypatch.setattr(T, "_tagged", lambda *_: parse_string(gold))
    result, = T.add_to_parsers(str(tmp_path / "train.conllu"), str(tmp_path / "dev.conllu"), [str(parser)], "pos-x")
    assert result["groups"] == [] and not (parser / FOLDER).exists()


def test_several_parsers_share_one_training_and_one_tagging_of_dev(tmp_path, monkeypatch):
    from nlpipe.train import tree_feats as T

    (tmp_path / "train.conllu").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "dev.conllu").write_text(treebank([imperative("clean", "box")]), encoding="utf-8")
    calls = {"train": 0, "tag": 0, "parse": []}
    real_train = T.train_tree_feats

    def count_train(*args, **kwargs):
        calls["train"] += 1
        return real_train(*args, **kwargs)

    def tag(*_):
        calls["tag"] += 1
        return parse_string(treebank([imperative("clean", "box", feats=INF)]))

    def parse(tagged, parser, device):
        calls["parse"].append(parser)
        return copy.deepcopy(tagged)

    monkeypatch.setattr(T, "train_tree_feats", count_train)
    monkeypatch.setattr(T, "_tagged", tag)
    monkeypatch.setattr(T, "_parsed", parse)
    parsers = [str(tmp_path / "a"), str(tmp_path / "b")]
    results = T.add_to_parsers(str(tmp_path / "train.conllu"), str(tmp_path / "dev.conllu"), parsers, "pos-x",
                               TreeFeatsOptions(epochs=10))
    assert calls == {"train": 1, "tag": 1, "parse": parsers}
    assert [r["groups"] for r in results] == [["VERB\tVB"], ["VERB\tVB"]]
    assert all((tmp_path / p / FOLDER / "weights.npz").is_file() for p in ("a", "b"))


def test_annotate_keep_existing_leaves_the_inputs_feats(parser, tmp_path):
    untouched = wrong_feats_input()
    for w in ("\t1\troot\t", "\t3\tdet\t", "\t1\tobj\t", "\t1\tpunct\t", "\t3\tnsubj\t", "\t3\taux\t",
              "\t0\troot\t", "\t5\tdet\t", "\t3\tobj\t", "\t3\tpunct\t"):
        untouched = untouched.replace(w, "\t_\t_\t")
    (tmp_path / "in.conllu").write_text(untouched, encoding="utf-8")
    args = ("annotate", "--stages", "parse", "--model", f"parse={parser}", str(tmp_path / "in.conllu"))
    feats = lambda r: [w[FEATS] for s in parse_string(r.stdout.decode()) for w in s.words if w[FEATS] in (IMP, INF)]
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    assert feats(r) == [IMP, INF]
    r = run_cli(*args, "--keep-existing")
    assert r.returncode == 0, r.stderr
    assert feats(r) == [INF, IMP] and all(w[HEAD] != "_" for s in parse_string(r.stdout.decode()) for w in s.words)


@pytest.mark.parametrize("damage", ["weights", "config"])
def test_a_parser_with_a_broken_feats_folder_is_a_model_error_in_one_line(parser, tmp_path, damage):
    import shutil

    broken = tmp_path / "parser"
    shutil.copytree(parser, broken)
    if damage == "weights":
        (broken / FOLDER / "weights.npz").write_bytes(b"PK\x03\x04 not a zip")
    else:
        (broken / FOLDER / "tree_feats.json").write_text("[1, 2]")
    with pytest.raises(ModelError) as e:
        load_stage("parse", str(broken))
    assert str(broken / FOLDER) in str(e.value)
    r = run_cli("parse", "--model", str(broken), input=wrong_feats_input().encode())
    assert r.returncode == 2 and r.stdout == b""
    assert r.stderr.decode().startswith(f"nlpipe: error: {broken / FOLDER}") and r.stderr.decode().count("\n") == 1


def test_train_pipeline_adds_it_to_a_parser_when_the_treebank_has_feats_and_a_tagger_was_trained(tmp_path, monkeypatch):
    from nlpipe.train import pipeline, tree_feats as T

    calls = []
    monkeypatch.setattr(T, "add_to_parsers", lambda train, dev, parsers, pos, **kw: calls.append((parsers, pos))
                        or [{"groups": [], "dev_ufeats_tagger": None, "dev_ufeats_after_parse": None} for _ in parsers])
    (tmp_path / "train.conllu").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "bare.conllu").write_text(TRAIN.replace(IMP, "_").replace(INF, "_").replace("Number=Sing", "_")
                                          .replace("Case=Nom|_|Person=1|PronType=Prs", "_").replace("VerbForm=Fin", "_"))
    root = tmp_path / "models"
    parsers = ["parse-transition", "parse"]
    options = pipeline.PipelineOptions()
    pipeline.train_feats_after_parse(str(tmp_path / "train.conllu"), "dev", root, parsers, options, print)
    assert calls == []                                   # no tagger in the pipeline's folder
    (root / "pos").mkdir(parents=True)
    (root / "pos" / "config.json").write_text("{}")
    pipeline.train_feats_after_parse(str(tmp_path / "bare.conllu"), "dev", root, parsers, options, print)
    assert calls == []                                   # no FEATS in the treebank
    pipeline.train_feats_after_parse(str(tmp_path / "train.conllu"), "dev", root, [], options, print)
    assert calls == []                                   # no parser trained
    pipeline.train_feats_after_parse(str(tmp_path / "train.conllu"), "dev", root, parsers, options, print)
    assert calls == [([str(root / "parse-transition"), str(root / "parse")], str(root / "pos"))]


def test_nlpipe_models_shows_the_parsers_feats_scores_and_survives_a_broken_file(parser, model, tmp_path):
    import shutil

    from nlpipe.cli.models import model_row

    folder = tmp_path / "parser"
    shutil.copytree(parser, folder)
    model.save(folder / FOLDER, {"scores": {"dev_ufeats_tagger": 90.0, "dev_ufeats_after_parse": 91.5}})
    scores = model_row(folder, "p", False)["scores"]
    assert scores["dev_ufeats_tagger"] == 90.0 and scores["dev_ufeats_after_parse"] == 91.5
    assert "dev_las" in scores                                 # the parser's own scores stay
    (folder / FOLDER / "tree_feats.json").write_text("not json")
    assert "dev_ufeats_after_parse" not in model_row(folder, "p", False)["scores"]
