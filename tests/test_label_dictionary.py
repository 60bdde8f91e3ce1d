"""The label dictionary of a linear model (the FEATS pass's): entries, masks, tagging and storage."""
from __future__ import annotations

import copy
from types import SimpleNamespace

import numpy as np
import pytest

from nlpipe.errors import ModelError
from nlpipe.io.model_dir import read_json, write_json
from nlpipe.linear.attributes import Attributes
from nlpipe.linear.dfs import checkpoint_schedule, tag
from nlpipe.linear.dictionary import RULED_OUT, LabelDictionary, dictionary_entries
from nlpipe.linear.model import TemplatedModel
from nlpipe.train.pos import choose_feats_margin

LABELS = ["A", "B", "C"]
FORMS = ["x", "y", "z", "w"]


def test_entries_keep_forms_seen_often_enough_with_all_their_labels():
    pairs = [("Saw", "VBD"), ("saw", "NN"), ("saw", "VBD"), ("cat", "NN"), ("1984", "CD")]
    assert dictionary_entries(pairs, 2) == {"saw": ["NN", "VBD"]}      # forms normalized: Saw = saw
    assert dictionary_entries(pairs, 1) == {"saw": ["NN", "VBD"], "cat": ["NN"], "0000": ["CD"]}


def test_masks_rule_out_labels_outside_a_words_set():
    attributes = Attributes.build(FORMS, {})
    d = LabelDictionary({"x": ["B", "C"], "y": ["C"], "z": ["C", "B"], "unknown": ["A"]}, LABELS, attributes)
    lower = np.array([attributes.ids(f)[1] for f in ["x", "y", "z", "w"]])
    sets = d.sets(lower)
    assert sets[0] == sets[2] and sets[3] == 0 and len({sets[0], sets[1], 0}) == 3   # x and z share {B, C}
    assert d.num_sets == 4             # no restriction, {A} (of a form outside the vocabulary), {B, C}, {C}
    assert d.masks[sets[0]].tolist() == [RULED_OUT, 0, 0]
    assert d.masks[sets[1]].tolist() == [RULED_OUT, RULED_OUT, 0]
    assert d.masks[0].tolist() == [0, 0, 0]
    with pytest.raises(ValueError):
        LabelDictionary({"x": []}, LABELS, attributes)


def _model(templates, dictionary_entries_=None):
    """Every template scores every word (row 0: no keys) A 3, B 2, C 1 divided among the templates;
    ``lower@-1`` reads a neighbour (not a word-only template), ``tag@-1`` the tag history."""
    attributes = Attributes.build(FORMS, {})
    weights = [np.array([[3.0, 2.0, 1.0]]) / len(templates) for _ in templates]
    d = None if dictionary_entries_ is None else LabelDictionary(dictionary_entries_, LABELS, attributes)
    return TemplatedModel(LABELS, attributes, templates, [np.zeros(0, np.int64)] * len(templates), weights,
                          dictionary=d)


@pytest.mark.parametrize("templates", [["bias"], ["lower@-1", "bias"], ["tag@-1", "bias"], ["bias", "tag@-1"]])
@pytest.mark.parametrize("margin,checkpoints", [(None, None), (0.5, None), (0.5, "1"), (0.5, "2"), (5.0, "1,2")])
def test_a_word_gets_the_best_of_its_allowed_labels(templates, margin, checkpoints):
    sentences = [["x", "y", "w", "x"], ["z", "w", "y", "y"]]
    plain = _model(templates)
    layout, atoms = plain.layout(sentences)
    pred, _ = tag(plain, layout, atoms, margin, checkpoints=checkpoint_schedule(checkpoints))
    assert [LABELS[p] for p in pred] == ["A"] * 8
    model = _model(templates, {"x": ["B", "C"], "y": ["C"]})
    layout, atoms = model.layout(sentences)
    pred, used = tag(model, layout, atoms, margin, checkpoints=checkpoint_schedule(checkpoints))
    assert [LABELS[p] for p in pred] == ["B", "C", "A", "B", "A", "A", "C", "C"]


def test_a_single_allowed_label_stops_at_the_first_test():
    model = _model(["lower@-1", "bias"], {"y": ["C"]})
    layout, atoms = model.layout([["y", "x"]])
    pred, used = tag(model, layout, atoms, 100.0, checkpoints=(1,))
    assert [LABELS[p] for p in pred] == ["C", "A"] and used.tolist() == [1, 2]


def test_dictionary_round_trip_and_old_models(tmp_path):
    model = _model(["bias"], {"x": ["B", "C"], "y": ["C"]})
    model.save(tmp_path / "m")
    saved = read_json(tmp_path / "m" / "vocab.json")["dictionary"]
    assert saved["words"] == ["x", "y"] and saved["sets"] == [[1, 2], [2]] and saved["word_sets"] == [1, 2]
    loaded = TemplatedModel.load(tmp_path / "m")
    layout, atoms = loaded.layout([["x", "y", "w"]])
    assert [LABELS[p] for p in tag(loaded, layout, atoms)[0]] == ["B", "C", "A"]
    _model(["bias"]).save(tmp_path / "old")
    assert "dictionary" not in read_json(tmp_path / "old" / "vocab.json")      # the format of older models
    assert TemplatedModel.load(tmp_path / "old").dictionary is None
    vocab = read_json(tmp_path / "m" / "vocab.json")
    for key, value in (("sets", [[1, 3], [2]]), ("sets", [[1, 2], []]), ("word_sets", [1, 3]), ("word_sets", [1])):
        damaged = copy.deepcopy(vocab)
        damaged["dictionary"][key] = value
        write_json(tmp_path / "m" / "vocab.json", damaged)
        with pytest.raises(ModelError):
            TemplatedModel.load(tmp_path / "m")


def test_training_keeps_the_dictionary_that_helps_on_dev():
    # a pass that always says Masc; "table" was Fem once in train, so only a dictionary of forms seen
    # once gets it right on dev ("livre": Masc either way)
    attributes = Attributes.build(["table", "livre"], {})
    labels = ["Gender=Fem", "Gender=Masc"]
    model = TemplatedModel(labels, attributes, ["ptag@0", "bias"], [np.zeros(0, np.int64)] * 2,
                           [np.zeros((1, 2)), np.array([[0.0, 1.0]])], first_labels=["NOUN\t_"])
    sent = lambda forms, feats: SimpleNamespace(forms=forms, feats=feats)
    train = [sent(["table", "livre", "livre"], ["Gender=Fem", "Gender=Masc", "Gender=Masc"])]
    dev = [sent(["table", "livre"], ["Gender=Fem", "Gender=Masc"])]
    margin = choose_feats_margin(model, dev, [["NOUN\t_", "NOUN\t_"]], None, train=train)
    assert model.dictionary is not None and model.dictionary.min_count == 1 and margin == 0.5
    assert model.dictionary.entries == {"table": ["Gender=Fem"], "livre": ["Gender=Masc"]}
    choose_feats_margin(model, dev, [["NOUN\t_", "NOUN\t_"]], None)        # no training data: no dictionary
    assert model.dictionary is None


# Made-up plural nouns whose gender nothing but the word tells (one ending, both genders), each seen
# twice in train: fewer times than the FEATS pass keeps a word's own features (3), so only a
# dictionary gets their gender right. Odd nouns feminine.
NOUNS = ["bafons", "bifons", "bofons", "bufons", "dafons", "difons", "dofons", "dufons", "gafons", "gifons",
         "gofons", "gufons"]


def _gender(i):
    return "Gender=Fem|Number=Plur" if i % 2 else "Gender=Masc|Number=Plur"


def _sentence(noun, feats, verb="arrivent"):
    rows = [("les", "DET", "Definite=Def|Number=Plur|PronType=Art"), (noun, "NOUN", feats),
            (verb, "VERB", "Mood=Ind|Number=Plur|Person=3|Tense=Pres|VerbForm=Fin"), (".", "PUNCT", "_")]
    return "\n".join(f"{k}\t{f}\t_\t{u}\t_\t{x}\t0\troot\t_\t_" for k, (f, u, x) in enumerate(rows, 1)) + "\n\n"


def test_trainer_keeps_a_dictionary_for_words_whose_features_only_the_word_tells(tmp_path):
    from click.testing import CliRunner

    from nlpipe.cli.train import train_pos
    from nlpipe.io.conllu import FEATS, parse_string
    from nlpipe.registry import load_stage

    train = "".join(_sentence(n, _gender(i), v) for v in ("arrivent", "partent") for i, n in enumerate(NOUNS))
    dev = "".join(_sentence(n, _gender(i), "dorment") for i, n in enumerate(NOUNS))
    (tmp_path / "train.conllu").write_text(train, encoding="utf-8")
    (tmp_path / "dev.conllu").write_text(dev, encoding="utf-8")
    r = CliRunner().invoke(train_pos, ["--train", str(tmp_path / "train.conllu"), "--dev", str(tmp_path / "dev.conllu"),
                                       "--out", str(tmp_path / "m"), "--order", "given", "--no-clusters",
                                       "--epochs", "6", "--min-count", "1"])
    assert r.exit_code == 0, r.output
    # without a dictionary the pass says one gender for every noun: half of them wrong (dev 87.50)
    assert "dictionary none, margin 0.75: dev UFeats 87.50" in r.output
    config = read_json(tmp_path / "m" / "config.json")
    # the forms seen once and twice give the same dev scores: the smaller dictionary (twice) is kept
    assert config["model"]["feats_dictionary"] == 2
    assert config["training"]["scores"]["dev_ufeats"] == 100.0
    tagger = load_stage("pos", str(tmp_path / "m"))
    (sent,) = tagger.annotate(parse_string(_sentence("bifons", "_", "chantent")))
    assert sent.words[1][FEATS] == "Gender=Fem|Number=Plur"
