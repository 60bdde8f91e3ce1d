"""The accurate POS tagger (``nlpipe train pos --arch bilstm``, arch ``bilstm-tagger.v1``): training on a
tiny synthetic treebank, numpy inference against torch's, the model folder, the chain."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nlpipe.cli.train import train_pos
from nlpipe.io.conllu import FEATS, FORM, LEMMA, UPOS, XPOS, parse_string
from nlpipe.registry import load_stage

from conftest import run_cli

torch = pytest.importorskip("torch")

# word -> (UPOS, XPOS, FEATS, LEMMA): every word has one analysis, so a tagger can learn them all.
LEXICON = {
    "the": ("DET", "DT", "Definite=Def|PronType=Art", "the"),
    "a": ("DET", "DT", "Definite=Ind|PronType=Art", "a"),
    "dog": ("NOUN", "NN", "Number=Sing", "dog"), "dogs": ("NOUN", "NNS", "Number=Plur", "dog"),
    "cat": ("NOUN", "NN", "Number=Sing", "cat"), "cats": ("NOUN", "NNS", "Number=Plur", "cat"),
    "bird": ("NOUN", "NN", "Number=Sing", "bird"), "birds": ("NOUN", "NNS", "Number=Plur", "bird"),
    "sees": ("VERB", "VBZ", "Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin", "see"),
    "chased": ("VERB", "VBD", "Mood=Ind|Tense=Past|VerbForm=Fin", "chase"),
    "likes": ("VERB", "VBZ", "Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin", "like"),
    "big": ("ADJ", "JJ", "Degree=Pos", "big"), "small": ("ADJ", "JJ", "Degree=Pos", "small"),
    ".": ("PUNCT", ".", "_", "."), "Rex": ("PROPN", "NNP", "Number=Sing", "Rex"),
}
DETS, NOUNS, VERBS, ADJS = ["the", "a"], ["dog", "dogs", "cat", "cats", "bird", "birds"], \
    ["sees", "chased", "likes"], ["big", "small"]


def treebank(n: int, seed: int) -> str:
    """``n`` random sentences ``(DET (ADJ) NOUN | Rex) VERB DET (ADJ) NOUN .`` in CoNLL-U."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = ["Rex"] if rng.random() < 0.2 else [rng.choice(DETS)] + [rng.choice(ADJS)] * (rng.random() < 0.4) \
            + [rng.choice(NOUNS)]
        words += [rng.choice(VERBS), rng.choice(DETS)] + [rng.choice(ADJS)] * (rng.random() < 0.4) + \
            [rng.choice(NOUNS), "."]
        rows = [f"# sent_id = s{i}"]
        for k, w in enumerate(words, 1):
            upos, xpos, feats, lemma = LEXICON[w]
            rows.append(f"{k}\t{w}\t{lemma}\t{upos}\t{xpos}\t{feats}\t0\tdep\t_\t_")
        out.append("\n".join(rows) + "\n")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("pos-bilstm")
    (d / "train.conllu").write_text(treebank(200, 1), encoding="utf-8")
    (d / "dev.conllu").write_text(treebank(30, 2), encoding="utf-8")
    r = CliRunner().invoke(train_pos, ["--arch", "bilstm", "--train", str(d / "train.conllu"), "--dev",
                                       str(d / "dev.conllu"), "--out", str(d / "model"), "--hidden", "16",
                                       "--epochs", "30", "--lr", "0.02", "--batch-tokens", "100", "--vectors", "none",
                                       "--json", "--char-filters", "16", "--lemma-head"])
    assert r.exit_code == 0, r.output
    return d / "model"


def test_trains_and_tags_every_column(model_dir):
    config = json.loads((model_dir / "config.json").read_text())
    assert config["stage"] == "pos" and config["arch"] == "bilstm-tagger.v1"
    assert "NOUN\tNNS" in config["labels"] and config["model"]["hidden"] == 16
    scores = config["training"]["scores"]
    assert scores["dev_upos"] >= 98 and scores["dev_xpos"] >= 98 and scores["dev_ufeats"] >= 98
    assert scores["dev_lemmas"] >= 98
    speed = config["training"]["speed"]     # what `nlpipe models` shows
    assert speed["words_per_cpu_second"] > 0 and "dev file's" in speed["on"]
    dev = parse_string((model_dir.parent / "dev.conllu").read_text())
    blank = parse_string((model_dir.parent / "dev.conllu").read_text())
    for s in blank:
        for w in s.words:
            w[UPOS] = w[XPOS] = w[FEATS] = w[LEMMA] = "_"
    tagger = load_stage("pos", str(model_dir))
    assert {"upos", "xpos", "feats", "lemma"} <= tagger.provides
    out = list(tagger.annotate(blank))
    pairs = [(g, p) for gs, ps in zip(dev, out) for g, p in zip(gs.words, ps.words)]
    for column in (UPOS, XPOS, FEATS, LEMMA):
        assert sum(g[column] == p[column] for g, p in pairs) >= 0.98 * len(pairs)


def test_an_unseen_word_gets_a_tag_and_a_lemma(model_dir):
    s = parse_string("1\tthe\t_\t_\t_\t_\t_\t_\t_\t_\n2\tzebras\t_\t_\t_\t_\t_\t_\t_\t_\n"
                     "3\tsees\t_\t_\t_\t_\t_\t_\t_\t_\n4\tRex\t_\t_\t_\t_\t_\t_\t_\t_\n5\t.\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    out = list(load_stage("pos", str(model_dir)).annotate(s))[0].words
    assert all(w[UPOS] != "_" and w[XPOS] != "_" and w[LEMMA] != "_" for w in out)
    assert out[2][UPOS] == "VERB" and out[2][LEMMA] == "see"


def test_the_cpu_path_runs_without_torch_and_equals_the_torch_network(model_dir):
    from nlpipe.io.model_dir import read_config
    from nlpipe.models.bilstm_tagger import TaggerModel

    config = read_config(model_dir, "pos")
    on_numpy = TaggerModel.load(model_dir, config, "cpu", numpy=True)
    on_torch = TaggerModel.load(model_dir, config, "cpu")
    assert on_numpy.inference is not None and on_torch.inference is None
    sents = [[w.split("\t")[1] for w in s.strip().splitlines()[1:]] for s in treebank(20, 3).split("\n\n") if s.strip()]
    assert on_numpy.predict(sents) == on_torch.predict(sents)


@pytest.mark.parametrize("rank", [0, 5])
def test_numpy_scores_equal_torch_scores_on_a_random_model(rank):
    from nlpipe.models.bilstm_tagger import DEFAULT_HYPER, TaggerModel

    torch.manual_seed(0)
    vocab = {"words": ["dog", "cat", "sees"], "vectors": ["dog", "bird"], "affixes": ["s1:g", "p1:d", "s2:es"],
             "chars": list("adeginorst"), "tags": ["NOUN\tNN", "VERB\tVBZ", "PUNCT\t."], "feats": ["_", "Number=Sing"]}
    hyper = dict(DEFAULT_HYPER, hidden=12, word_dim=10, affix_dim=6, vector_dim=5, layers=3, char_dim=4,
                 char_filters=7, char_width=3, rank=rank)
    model = TaggerModel(vocab, hyper)
    # with a rank, layers 2 and 3 read the one below through a [5, 24] projection
    assert sorted(k for k in model.net.state_dict() if ".proj." in k) == \
        ([] if not rank else ["lstm.proj.1.weight", "lstm.proj.2.weight"])
    with torch.no_grad():
        for p in model.net.parameters():
            p.normal_(0, 0.5)
    params = {k: v.numpy().copy() for k, v in model.net.state_dict().items()}
    twin = TaggerModel(vocab, hyper, params=params)
    sents = [["The", "dog", "sees", "birds", "."], ["Cats", "."], ["A", "dog", "sees", "a", "bird", "at", "night"]]
    a = model.arrays(sents)
    model.net.eval()
    with torch.no_grad():
        expected = {k: v.numpy() for k, v in model.net(model.tensors(a)).items()}
    real = a["mask"]
    for inputs in (a, twin.arrays(sents)):      # characters as ids; the CNN's output kept per form
        got = twin.inference.scores(inputs, a["lengths"])
        assert set(got) == {"tags", "feats"}
        for k in got:
            np.testing.assert_allclose(got[k][real], expected[k][real], atol=1e-4, rtol=1e-4)


def test_a_feats_dictionary_restricts_the_forms_it_lists_and_no_other():
    from nlpipe.models.bilstm_tagger import DEFAULT_HYPER, TaggerModel

    torch.manual_seed(2)
    vocab = {"words": ["dog", "cat", "sees"], "vectors": ["dog"], "affixes": ["s1:g"],
             "tags": ["NOUN\tNN", "VERB\tVBZ"],
             "feats": ["_", "Number=Plur", "Number=Sing", "Tense=Past"]}
    hyper = dict(DEFAULT_HYPER, hidden=8, word_dim=6, affix_dim=4, vector_dim=3, char_dim=0)
    plain = TaggerModel(vocab, hyper)
    with torch.no_grad():
        for p in plain.net.parameters():
            p.normal_(0, 0.5)
    params = {k: v.numpy().copy() for k, v in plain.net.state_dict().items()}
    # "dog" (any case) may only be Number=Plur or Tense=Past; a label the head lacks is ignored
    listed = dict(vocab, feats_dictionary=[["dog", "Tense=Past", "Number=Plur", "Gender=Fem"]])
    sents = [["Dog", "sees", "cat"], ["cat", "dog", "DOG", "sees", "dogs"]]
    before = TaggerModel(vocab, hyper, params=params).predict(sents)
    dogs = [vocab["feats"][f] for s, row in zip(sents, before["feats"]) for form, f in zip(s, row)
            if form.lower() == "dog"]
    assert set(dogs) - {"Number=Plur", "Tense=Past"}      # without the dictionary some "dog" gets another FEATS
    for model in (TaggerModel(listed, hyper, params=params), TaggerModel(listed, hyper)):
        if model.inference is None:
            model.net.load_state_dict({k: torch.from_numpy(v) for k, v in params.items()})
        got = model.predict(sents)
        for s, row, old in zip(sents, got["feats"], before["feats"]):
            for form, f, g in zip(s, row, old):
                if form.lower() == "dog":
                    assert vocab["feats"][f] in ("Number=Plur", "Tense=Past")
                else:
                    assert f == g
        assert got["tags"] == before["tags"]
    assert "feats_dictionary" not in TaggerModel(vocab, hyper, params=params).vocab


def test_a_rank_trains_a_smaller_second_layer(tmp_path):
    d = tmp_path
    (d / "train.conllu").write_text(treebank(120, 1), encoding="utf-8")
    (d / "dev.conllu").write_text(treebank(20, 2), encoding="utf-8")
    r = CliRunner().invoke(train_pos, ["--arch", "bilstm", "--train", str(d / "train.conllu"), "--dev",
                                       str(d / "dev.conllu"), "--out", str(d / "model"), "--hidden", "16",
                                       "--rank", "6", "--epochs", "3", "--batch-tokens", "100", "--vectors", "none"])
    assert r.exit_code == 0, r.output
    assert json.loads((d / "model" / "config.json").read_text())["model"]["rank"] == 6
    tagger = load_stage("pos", str(d / "model"))
    assert tagger.model.inference.lstm.proj[1].shape == (32, 6)
    (s,) = parse_string("1\tRex\t_\t_\t_\t_\t_\t_\t_\t_\n2\tsees\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    (out,) = list(tagger.annotate([s]))
    assert all(w[UPOS] != "_" for w in out.words)
    bad = CliRunner().invoke(train_pos, ["--arch", "bilstm", "--train", str(d / "train.conllu"), "--dev",
                                         str(d / "dev.conllu"), "--out", str(d / "m2"), "--rank", "0"])
    assert bad.exit_code == 2 and "--rank" in bad.output


def test_feats_follow_the_tag_where_the_folder_lists_them(model_dir, tmp_path):
    from nlpipe.io.model_dir import read_config
    from nlpipe.models.bilstm_tagger import TaggerModel
    from nlpipe.train.feats_by_tag import choose_feats_by_tag, feats_by_tag_rows, main

    config = read_config(model_dir, "pos")
    sents = [["the", "dogs", "sees", "a", "cat", "."], ["Rex", "likes", "birds", "."]]
    # a contrived table: NNS words may only be singular, VBZ words may only have no FEATS
    rows = feats_by_tag_rows([("NOUN\tNNS", "Number=Sing"), ("VERB\tVBZ", "_"), ("NOUN\tNNS", "Number=Sing")])
    assert rows == [["NOUN\tNNS", "Number=Sing"], ["VERB\tVBZ", "_"]]
    feats_of = {}
    for numpy in (True, False):
        model = TaggerModel.load(model_dir, config, "cpu", numpy=numpy)
        free = model.predict(sents)
        model.set_feats_by_tag(rows)
        held = model.predict(sents)
        assert free["tags"] == held["tags"]
        names = [[model.labels["feats"][i] for i in row] for row in held["feats"]]
        assert names[0][1] == names[1][2] == "Number=Sing" and names[0][2] == names[1][1] == "_"
        assert [[model.labels["feats"][i] for i in row] for row in free["feats"]][0][1] == "Number=Plur"
        assert names[0][4] == "Number=Sing" and names[0][0] == "Definite=Def|PronType=Art"   # tags not listed
        feats_of[numpy] = held
        model.set_feats_by_tag([])
        assert model.predict(sents) == free and "feats_by_tag" not in model.vocab
    assert feats_of[True] == feats_of[False]

    said = []
    model = TaggerModel.load(model_dir, config, "cpu", numpy=True)
    assert not choose_feats_by_tag(model, rows, lambda: {"ufeats": 90.0, "alltags": 80.0}, said.append)
    assert "feats_by_tag" not in model.vocab and "left out" in said[-1]
    # UFeats a little lower, AllTags higher: FEATS that agree with the tags are kept
    scores = iter([{"ufeats": 90.0, "alltags": 80.0}, {"ufeats": 89.9, "alltags": 80.3}])
    assert choose_feats_by_tag(model, rows, lambda: next(scores), said.append)
    assert model.vocab["feats_by_tag"] == rows and "kept" in said[-1]
    scores = iter([{"ufeats": 90.0, "alltags": 80.0}, {"ufeats": 90.2, "alltags": 79.7}])
    assert not choose_feats_by_tag(model, rows, lambda: next(scores), said.append)

    # an existing folder: the rows go into vocab.json where dev gains (this tiny dev has nothing to gain)
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(model_dir, copy)
    (tmp_path / "train.conllu").write_text(treebank(50, 1), encoding="utf-8")
    (tmp_path / "dev.conllu").write_text(treebank(20, 2), encoding="utf-8")
    main([str(copy), str(tmp_path / "train.conllu"), str(tmp_path / "dev.conllu")])
    assert json.loads((copy / "config.json").read_text())["training"]["feats_by_tag"] is False
    assert "feats_by_tag" not in json.loads((copy / "vocab.json").read_text())


def test_training_records_whether_feats_follow_the_tag(model_dir):
    assert isinstance(json.loads((model_dir / "config.json").read_text())["training"]["feats_by_tag"], bool)


def test_weights_that_do_not_fit_the_config_are_a_model_error(model_dir, tmp_path):
    import shutil

    from nlpipe.errors import ModelError

    broken = tmp_path / "m"
    shutil.copytree(model_dir, broken)
    config = json.loads((broken / "config.json").read_text())
    config["model"]["hidden"] = 17
    (broken / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError):
        load_stage("pos", str(broken))


def test_the_chain_runs_the_tagger_the_folder_holds(model_dir):
    r = run_cli("annotate", "--stages", "tokenize,pos", "-m", f"pos={model_dir}", "--input", "tokens",
                input=b"the big dogs chased a cat .\n")
    assert r.returncode == 0, r.stderr.decode()
    rows = [l.split("\t") for l in r.stdout.decode().splitlines() if l and not l.startswith("#")]
    assert [(x[1], x[3], x[4], x[2]) for x in rows][:3] == [("the", "DET", "DT", "the"), ("big", "ADJ", "JJ", "big"),
                                                            ("dogs", "NOUN", "NNS", "dog")]
    sentence = "".join(f"{k}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_\n" for k, w in enumerate("Rex sees a cat .".split(), 1))
    r = run_cli("pos", "-m", str(model_dir), input=(sentence + "\n").encode())
    assert r.returncode == 0, r.stderr.decode()
    assert "\tsee\tVERB\tVBZ\tMood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin\t" in r.stdout.decode()


def test_tagging_on_the_cpu_never_imports_torch(model_dir):
    import subprocess
    import sys

    code = ("import sys\nfrom nlpipe.registry import load_stage\nfrom nlpipe.io.conllu import parse_string\n"
            f"t = load_stage('pos', {str(model_dir)!r})\n"
            "s = list(t.annotate(parse_string('1\\tRex\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\n\\n')))\n"
            "assert s[0].words[0][3] != '_', s[0].words[0]\n"
            "assert 'torch' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()


@pytest.mark.parametrize("source", ["lemmatizer", "head", "lexicon+head", "forms+head"])
def test_every_lemma_source_lemmatizes_dev(model_dir, source):
    from nlpipe.io.model_dir import read_config
    from nlpipe.models.bilstm_tagger import TaggerModel
    from nlpipe.models.lemmatizer import Lemmatizer
    from nlpipe.stages.pos_bilstm import BiLSTMPosTagger

    config = read_config(model_dir, "pos")
    assert config["model"]["lemma_from"] in ("lemmatizer", "head", "lexicon+head", "forms+head")
    stage = BiLSTMPosTagger(TaggerModel.load(model_dir, config, numpy=True), Lemmatizer.load(model_dir / "lemma"),
                            lemma_from=source)
    assert stage.lemma_from == source
    dev = parse_string((model_dir.parent / "dev.conllu").read_text())
    gold = [w[LEMMA] for s in dev for w in s.words]
    for s in dev:
        for w in s.words:
            w[LEMMA] = "_"
    got = [w[LEMMA] for s in stage.annotate(dev) for w in s.words]
    assert sum(g == p for g, p in zip(gold, got)) >= 0.98 * len(gold)


def test_without_morphology_feats_and_lemma_stay_as_they_are(tmp_path):
    (tmp_path / "train.conllu").write_text(treebank(60, 4), encoding="utf-8")
    r = CliRunner().invoke(train_pos, ["--arch", "bilstm", "--train", str(tmp_path / "train.conllu"), "--dev",
                                       str(tmp_path / "train.conllu"), "--out", str(tmp_path / "m"), "--hidden", "8",
                                       "--epochs", "2", "--char-filters", "0", "--vectors", "none", "--no-morph"])
    assert r.exit_code == 0, r.output
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert config["model"]["char_dim"] == 0 and config["model"]["lemma"] is None
    s = parse_string("1\tRex\tREX\t_\t_\tFoo=Bar\t_\t_\t_\t_\n2\tsees\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    tagger = load_stage("pos", str(tmp_path / "m"))
    assert "lemma" not in tagger.provides
    out = list(tagger.annotate(s))[0].words
    assert [(w[LEMMA], w[FEATS]) for w in out] == [("REX", "Foo=Bar"), ("_", "_")]
    assert all(w[UPOS] != "_" and w[XPOS] != "_" for w in out)


@pytest.mark.parametrize("vectors, char_filters", [(False, 64), (True, 0)])
def test_the_character_cnn_is_on_by_default_only_without_word_vectors(tmp_path, vectors, char_filters):
    (tmp_path / "train.conllu").write_text(treebank(30, 5), encoding="utf-8")
    vec = tmp_path / "v.txt"
    vec.write_text("".join(f"{w} {i % 3} {i % 5 - 2} 0.5\n" for i, w in enumerate(LEXICON)), encoding="utf-8")
    r = CliRunner().invoke(train_pos, ["--arch", "bilstm", "--train", str(tmp_path / "train.conllu"), "--dev",
                                       str(tmp_path / "train.conllu"), "--out", str(tmp_path / "m"), "--epochs", "1",
                                       "--vectors", str(vec) if vectors else "none", "--no-morph"])
    assert r.exit_code == 0, r.output
    model = json.loads((tmp_path / "m" / "config.json").read_text())["model"]
    assert model["char_filters"] == char_filters and model["hidden"] == 192
    assert model["vector_dim"] == (3 if vectors else 0)


# ---------------------------------------------------------------------------------------------
# The product with a linear tagger (config model.linear, train pos --arch bilstm --linear)

@pytest.fixture(scope="module")
def proper_linear(model_dir, tmp_path_factory) -> Path:
    """A linear tagger trained where every common noun is tagged PROPN/NNP: it disagrees with the
    BiLSTM tagger on every noun."""
    d = tmp_path_factory.mktemp("linear")
    for name, n, seed in (("train", 200, 1), ("dev", 30, 2)):
        text = treebank(n, seed)
        for noun in NOUNS:
            text = text.replace(f"\t{noun}\t{LEXICON[noun][3]}\tNOUN\t{LEXICON[noun][1]}\t",
                                f"\t{noun}\t{LEXICON[noun][3]}\tPROPN\tNNP\t")
        (d / f"{name}.conllu").write_text(text, encoding="utf-8")
    r = CliRunner().invoke(train_pos, ["--train", str(d / "train.conllu"), "--dev", str(d / "dev.conllu"), "--out",
                                       str(d / "model"), "--epochs", "2", "--order", "baseline", "--json"])
    assert r.exit_code == 0, r.output
    return d / "model"


def _with_linear(model_dir: Path, linear: Path, folder: Path, weight: float) -> Path:
    import shutil

    shutil.copytree(model_dir, folder)
    shutil.copytree(linear, folder / "linear")
    config = json.loads((folder / "config.json").read_text())
    config["model"]["linear"] = {"dir": "linear", "weight": weight}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _tags(model: Path, text: str) -> list:
    return [(w[UPOS], w[XPOS]) for s in load_stage("pos", str(model)).annotate(parse_string(text)) for w in s.words]


def test_the_linear_tagger_joins_the_bilstm_by_its_weight(model_dir, proper_linear, tmp_path):
    dev = (model_dir.parent / "dev.conllu").read_text()
    bilstm, linear = _tags(model_dir, dev), _tags(proper_linear, dev)
    nouns = [i for i, (upos, _) in enumerate(bilstm) if upos == "NOUN"]
    assert nouns and all(linear[i] == ("PROPN", "NNP") for i in nouns)
    assert _tags(_with_linear(model_dir, proper_linear, tmp_path / "w0", 0.0), dev) == bilstm
    assert _tags(_with_linear(model_dir, proper_linear, tmp_path / "w1000", 1000.0), dev) == linear


def test_a_linear_tagger_that_does_not_help_on_dev_is_left_out(model_dir, proper_linear, tmp_path):
    d = model_dir.parent
    r = CliRunner().invoke(train_pos, ["--arch", "bilstm", "--train", str(d / "train.conllu"), "--dev",
                                       str(d / "dev.conllu"), "--out", str(tmp_path / "m"), "--hidden", "16",
                                       "--epochs", "30", "--lr", "0.02", "--batch-tokens", "100", "--vectors", "none",
                                       "--linear", str(proper_linear), "--json"])
    assert r.exit_code == 0, r.output
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert "linear" not in config["model"] and not (tmp_path / "m" / "linear").exists()
    assert config["training"]["linear_weight"] == 0.0 and config["training"]["linear"] == str(proper_linear)


def test_linear_tagger_errors(model_dir, tmp_path):
    d = model_dir.parent
    r = run_cli("train", "pos", "--arch", "bilstm", "--train", str(d / "train.conllu"), "--dev",
                str(d / "dev.conllu"), "--out", str(tmp_path / "m"), "--linear", str(model_dir))
    assert r.returncode == 2
    assert r.stderr.decode() == (f"nlpipe: error: --linear {model_dir}: not a linear tagger "
                                 f"(nlpipe train pos --arch dfs)\n")
    assert not (tmp_path / "m").exists()
    broken = _with_linear(model_dir, model_dir, tmp_path / "broken", 0.2)   # a BiLSTM where the linear should be
    from nlpipe.errors import ModelError

    with pytest.raises(ModelError, match="config model.linear: .* is no linear tagger"):
        load_stage("pos", str(broken))


def test_the_product_is_the_same_with_batches_tagged_in_threads(model_dir, proper_linear, tmp_path):
    folder = _with_linear(model_dir, proper_linear, tmp_path / "w", 0.5)
    text = treebank(300, 5)

    def tags(workers: int) -> list:
        stage = load_stage("pos", str(folder), workers=workers, batch_tokens=20)
        return [(w[UPOS], w[XPOS]) for s in stage.annotate(parse_string(text)) for w in s.words]

    import sys

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)     # switch threads often
    try:
        assert tags(4) == tags(1)
    finally:
        sys.setswitchinterval(interval)


def test_the_product_is_the_same_whether_the_linear_tagger_sees_a_sentence_alone_or_the_whole_chunk(
        model_dir, proper_linear, tmp_path):
    """The stage runs the linear tagger once over a chunk; a sentence's tags are those of the model
    given only that sentence (the prior then computed for it alone)."""
    folder = _with_linear(model_dir, proper_linear, tmp_path / "w", 0.5)
    text = treebank(60, 7)
    stage = load_stage("pos", str(folder), workers=1)
    chunk = [(w[UPOS], w[XPOS]) for s in stage.annotate(parse_string(text)) for w in s.words]
    alone = []
    for s in parse_string(text):
        ids = stage.model.predict([[w[FORM] for w in s.words]])["tags"][0]
        alone += [tuple(stage.model.labels["tags"][t].split("\t")) for t in ids]
    assert chunk == alone
    assert chunk != _tags(model_dir, text)       # the linear tagger changes some tags
    linear = stage.model.tag_prior.linear        # loaded for its tags alone: no FEATS pass, no lemmatizer
    assert linear.feats is None and linear.lemmatizer is None
    assert load_stage("pos", str(folder / "linear")).lemmatizer is not None


def test_probs_add_only_confidences(model_dir, proper_linear, tmp_path):
    """--probs adds MISC UPOSProb and XPOSProb to every word (LemmaProb where the rule classifier
    chose the lemma) and changes nothing else; the product's are a softmax: at most 1."""
    from nlpipe.io.conllu import MISC

    folder = _with_linear(model_dir, proper_linear, tmp_path / "w", 0.5)
    text = treebank(40, 3)
    plain = [list(w) for s in load_stage("pos", str(folder)).annotate(parse_string(text)) for w in s.words]
    probs = [list(w) for s in load_stage("pos", str(folder), probs=True).annotate(parse_string(text))
             for w in s.words]
    for a, b in zip(plain, probs):
        fields = dict(kv.split("=", 1) for kv in b[MISC].split("|") if "=" in kv)
        assert 0.0 < float(fields.pop("UPOSProb")) <= 1.0 and 0.0 < float(fields.pop("XPOSProb")) <= 1.0
        fields.pop("LemmaProb", None)
        assert b[:MISC] == a[:MISC] and fields == dict(kv.split("=", 1) for kv in a[MISC].split("|") if "=" in kv)


def test_numpy_predict_with_a_prior_and_a_feats_dictionary_equals_torch_predict():
    # numpy scores each distinct form's input once and only the words' rows (no padding); the labels,
    # the product with a prior and the FEATS a dictionary allows ("dog": plural only) are torch's
    from nlpipe.models.bilstm_tagger import DEFAULT_HYPER, TaggerModel

    torch.manual_seed(3)
    vocab = {"words": ["dog", "cat", "sees"], "vectors": ["dog", "bird"], "affixes": ["s1:g", "p1:d", "s2:es"],
             "tags": ["NOUN\tNN", "VERB\tVBZ", "PUNCT\t."], "feats": ["_", "Number=Sing", "Number=Plur"],
             "feats_dictionary": [["dog", "Number=Plur"]]}
    hyper = dict(DEFAULT_HYPER, hidden=12, word_dim=10, affix_dim=6, vector_dim=5, layers=2, char_dim=0)
    model = TaggerModel(vocab, hyper)
    with torch.no_grad():
        for p in model.net.parameters():
            p.normal_(0, 0.5)
    twin = TaggerModel(vocab, hyper, params={k: v.numpy().copy() for k, v in model.net.state_dict().items()})
    sents = [["The", "dog", "sees", "dog", "."], ["Cats", "."], ["A", "dog", "sees", "a", "bird", "at", "night"]]
    rng = np.random.default_rng(0)
    rows = [rng.standard_normal((len(s), 3)).astype(np.float32) for s in sents]
    for prior in (None, lambda: rows):
        expected, got = model.predict(sents, prior, scores=True), twin.predict(sents, prior, scores=True)
        assert got["tags"] == expected["tags"] and got["feats"] == expected["feats"]
        assert [len(r) for r in got["tags"]] == [5, 2, 7]
        for g, e in zip(got["tag_scores"], expected["tag_scores"]):
            np.testing.assert_allclose(g, e, atol=1e-4, rtol=1e-4)
        assert all(f == 2 for s, row in zip(sents, got["feats"]) for w, f in zip(s, row) if w == "dog")
