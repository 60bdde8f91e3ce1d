"""Word vectors for every trainer (nlpipe.train.vectors, ``--vectors``): word2vec/GloVe text files,
``none``, the English-only GloVe default, what the training block records, and treebanks without
XPOS, LEMMA or FEATS."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nlpipe.cli.train import train_parse, train_pos
from nlpipe.errors import InputError, NlpipeError
from nlpipe.io.conllu import XPOS, parse_string, to_string
from nlpipe.registry import load_stage
from nlpipe.train import biaffine as B
from nlpipe.train import vectors as V

from conftest import run_cli

# word2vec text: "N DIM" first, then a word and DIM numbers a line, most frequent first
WORD2VEC = "4 3\nle 0.1 0.2 0.3\nchat -1 0 1\nChien 2 2 2\n2024 0.5 0.5 0.5\n"
# GloVe text: no first line; the word "New York" holds a space
GLOVE = "le 0.1 0.2 0.3\nchat -1 0 1\nNew York 1 1 1\n"

# A made-up treebank without XPOS, LEMMA and FEATS, with two multiword tokens.
NO_XPOS = """\
# sent_id = f1
# text = Le chat dort.
1\tLe\t_\tDET\t_\t_\t2\tdet\t_\t_
2\tchat\t_\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tdort\t_\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No
4\t.\t_\tPUNCT\t_\t_\t3\tpunct\t_\t_

# sent_id = f2
# text = Il parle du chien.
1\tIl\t_\tPRON\t_\t_\t2\tnsubj\t_\t_
2\tparle\t_\tVERB\t_\t_\t0\troot\t_\t_
3-4\tdu\t_\t_\t_\t_\t_\t_\t_\t_
3\tde\t_\tADP\t_\t_\t5\tcase\t_\t_
4\tle\t_\tDET\t_\t_\t5\tdet\t_\t_
5\tchien\t_\tNOUN\t_\t_\t2\tobl\t_\tSpaceAfter=No
6\t.\t_\tPUNCT\t_\t_\t2\tpunct\t_\t_

# sent_id = f3
# text = Elle va au marché.
1\tElle\t_\tPRON\t_\t_\t2\tnsubj\t_\t_
2\tva\t_\tVERB\t_\t_\t0\troot\t_\t_
3-4\tau\t_\t_\t_\t_\t_\t_\t_\t_
3\tà\t_\tADP\t_\t_\t5\tcase\t_\t_
4\tle\t_\tDET\t_\t_\t5\tdet\t_\t_
5\tmarché\t_\tNOUN\t_\t_\t2\tobl\t_\tSpaceAfter=No
6\t.\t_\tPUNCT\t_\t_\t2\tpunct\t_\t_

"""

POS_ARGS = ["--order", "given", "--epochs", "10", "--lr", "0.2", "--l2", "0", "--min-count", "1"]
TINY = {"word_dim": 8, "shape_dim": 2, "affix_dim": 8, "tag_dim": 4, "hidden": 8, "layers": 1,
        "arc_dim": 8, "rel_dim": 4, "dropout": 0.0, "word_dropout": 0.0, "tag_dropout": 0.0}


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- reading vectors files --------------------------------------------------------------------

def test_word2vec_text_with_its_first_line(tmp_path):
    v = V.read_vectors(write(tmp_path / "v.txt", WORD2VEC))
    assert v.words == ["le", "chat", "Chien", "2024"] and v.dim == 3
    assert v.matrix.tolist()[1] == [-1.0, 0.0, 1.0] and v.matrix.dtype == np.float32


def test_glove_text_without_a_first_line_and_a_word_with_a_space(tmp_path):
    v = V.read_vectors(write(tmp_path / "g.txt", GLOVE))
    assert v.words == ["le", "chat", "New York"] and v.dim == 3
    assert v.matrix.tolist()[2] == [1.0, 1.0, 1.0]


def test_gzip_file(tmp_path):
    path = tmp_path / "v.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(WORD2VEC)
    assert V.read_vectors(str(path)).words == ["le", "chat", "Chien", "2024"]


def test_only_the_top_words_and_the_training_words_are_kept(tmp_path):
    path = write(tmp_path / "v.txt", WORD2VEC)
    # top 1 ("le") plus the words whose key (lower-cased, digits as 0) is a training word's: chien, 1999 ~ 2024
    v = V.load_vectors(path, "fr", forms=["CHIEN", "1999"], top=1)
    assert v.words == ["le", "Chien", "2024"]
    assert v.source["words"] == 4     # the file's count, not the kept one


def test_a_short_line_names_file_and_line(tmp_path):
    path = write(tmp_path / "v.txt", "le 0.1 0.2 0.3\nchat 1 2\n")
    with pytest.raises(InputError) as e:
        V.read_vectors(path)
    assert e.value.path == path and e.value.line == 2


def test_a_value_that_is_not_a_number_names_its_line(tmp_path):
    path = write(tmp_path / "v.txt", "2 2\nle 0.1 0.2\nchat 1 x\n")
    with pytest.raises(InputError) as e:
        V.read_vectors(path)
    assert e.value.line == 3


def test_binary_word2vec_is_refused(tmp_path):
    path = tmp_path / "v.bin"
    path.write_bytes(b"2 2\nle \xff\xfe\x00\x01\n")
    with pytest.raises(InputError) as e:
        V.read_vectors(str(path))
    assert e.value.line == 2 and "binary" in str(e.value)


def test_a_wrong_word_count_in_the_first_line(tmp_path):
    with pytest.raises(NlpipeError, match="announces 3 words, the file has 2"):
        V.read_vectors(write(tmp_path / "v.txt", "3 2\nle 1 2\nla 3 4\n"))


def test_an_empty_or_missing_file(tmp_path):
    with pytest.raises(NlpipeError, match="no word vectors"):
        V.read_vectors(write(tmp_path / "v.txt", ""))
    with pytest.raises(NlpipeError, match="cannot read word vectors"):
        V.read_vectors(str(tmp_path / "absent.txt"))


def test_a_bad_vectors_file_exits_2_naming_file_and_line(tmp_path):
    bad = write(tmp_path / "bad.vec", "le 0.1 0.2 0.3\nchat 1 2\n")
    train = write(tmp_path / "t.conllu", NO_XPOS)
    r = run_cli("train", "pos", "--train", train, "--dev", train, "--out", str(tmp_path / "m"), "--vectors", bad)
    assert r.returncode == 2
    assert f"{bad}:2".encode() in r.stderr and len(r.stderr.strip().splitlines()) == 1


# --- which vectors ----------------------------------------------------------------------------

def fake_glove(monkeypatch):
    words, matrix = ["the", "dog"], np.ones((2, 50), np.float32)
    monkeypatch.setattr(V, "load_glove", lambda w=None, v=None: (words, matrix))


def test_none_and_other_languages_mean_no_vectors(monkeypatch):
    fake_glove(monkeypatch)
    assert V.load_vectors("none", "en") is None
    assert V.load_vectors(None, "fr") is None
    assert V.load_vectors(None, "und") is None


def test_english_defaults_to_glove(monkeypatch):
    fake_glove(monkeypatch)
    for lang in ("en", "en-GB"):
        v = V.load_vectors(None, lang)
        assert v.words == ["the", "dog"] and v.source == {"name": V.GLOVE, "dim": 50}


def test_english_without_the_glove_package_trains_without_vectors_and_says_so(monkeypatch):
    def absent(w=None, v=None):
        raise NlpipeError("GloVe 6B 50d is not installed")

    monkeypatch.setattr(V, "load_glove", absent)
    said = []
    assert V.load_vectors(None, "en", log=said.append) is None
    assert "not installed" in said[0]


def test_vectors_and_glove_stand_ins_do_not_combine(tmp_path):
    with pytest.raises(NlpipeError, match="do not combine"):
        V.load_vectors(write(tmp_path / "v.txt", GLOVE), "en", glove_words="w.txt")


# --- POS tagger -------------------------------------------------------------------------------

def train_pos_model(tmp_path, *args: str) -> dict:
    train = write(tmp_path / "t.conllu", NO_XPOS)
    r = CliRunner().invoke(train_pos, ["--train", train, "--dev", train, "--out", str(tmp_path / "m"),
                                       *POS_ARGS, *args])
    assert r.exit_code == 0, r.output
    return json.loads((tmp_path / "m" / "config.json").read_text())


@pytest.mark.parametrize("text", [WORD2VEC, GLOVE])
def test_pos_clusters_from_a_vectors_file_recorded_by_name_and_sha256(tmp_path, text):
    path = write(tmp_path / "v.txt", text)
    config = train_pos_model(tmp_path, "--vectors", path, "--lang", "fr")
    vectors = config["training"]["vectors"]
    assert vectors["path"] == path and vectors["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert vectors["dim"] == 3
    assert config["training"]["clusters"]["words"] >= 2      # le, chat (the training words that have vectors)
    assert (tmp_path / "m" / "clusters.npz").exists()


@pytest.mark.parametrize("args", [["--vectors", "none"], ["--lang", "de"], []])
def test_pos_trains_without_vectors_and_without_the_glove_package(tmp_path, args):
    config = train_pos_model(tmp_path, *args)
    assert config["training"]["vectors"] is None and config["training"]["clusters"] is None
    assert not (tmp_path / "m" / "clusters.npz").exists()


def test_without_xpos_the_ambiguity_classes_read_upos(tmp_path):
    from nlpipe.train.pos import read_tagged

    forms, labels, classes = read_tagged(write(tmp_path / "t.conllu", NO_XPOS))[0]
    assert forms == ["Le", "chat", "dort", "."]
    assert labels == ["DET\t_", "NOUN\t_", "VERB\t_", "PUNCT\t_"]
    assert classes == ["DET", "NOUN", "VERB", "PUNCT"]


def test_pos_without_xpos_leaves_xpos_blank(tmp_path):
    config = train_pos_model(tmp_path, "--vectors", "none")
    assert config["training"]["scores"]["dev_upos"] == 100.0
    tagger = load_stage("pos", str(tmp_path / "m"))
    out = to_string(tagger.annotate(parse_string(NO_XPOS)))
    assert out == NO_XPOS    # UPOS learnt, XPOS, LEMMA and FEATS as they were ("_")


# --- biaffine parser --------------------------------------------------------------------------

def train_biaffine(tmp_path, vectors, lang="fr") -> dict:
    train = write(tmp_path / "t.conllu", NO_XPOS)
    B.train(train, train, str(tmp_path / "m"), epochs=30, batch_tokens=8, lr=1e-2, decay=1.0, ema=0.0,
            threads=1, hyper=TINY, vectors=vectors, lang=lang, log=io.StringIO())
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    config["vocab"] = json.loads((tmp_path / "m" / "vocab.json").read_text())
    return config


TRAINING_WORDS = ["le", "chat", "dort", ".", "il", "parle", "de", "chien", "elle", "va", "à", "marché"]


@pytest.mark.parametrize("vectors", ["none", None])
def test_biaffine_without_vectors_knows_only_its_training_words(tmp_path, vectors):
    config = train_biaffine(tmp_path, vectors)
    assert config["vocab"]["words"] == TRAINING_WORDS
    assert config["training"]["vectors"] is None and config["model"]["word_dim"] == 8


def test_biaffine_with_vectors_takes_their_size_and_words(tmp_path):
    path = write(tmp_path / "v.txt", "2 6\nchat 1 1 1 1 1 1\nmaison 2 2 2 2 2 2\n")
    config = train_biaffine(tmp_path, path)
    assert config["model"]["word_dim"] == 6
    assert config["vocab"]["words"] == TRAINING_WORDS + ["maison"]
    assert config["training"]["vectors"]["path"] == path and config["training"]["vectors"]["top"] == 40000


def test_biaffine_without_xpos_writes_heads_and_keeps_blank_columns(tmp_path):
    train = write(tmp_path / "t.conllu", NO_XPOS)
    r = CliRunner().invoke(train_parse, ["--train", train, "--dev", train, "--out", str(tmp_path / "m"),
                                         "--vectors", "none", "--epochs", "2", "--hidden", "8", "--layers", "1"])
    assert r.exit_code == 0, r.output
    stage = load_stage("parse", str(tmp_path / "m"))
    out = list(stage.annotate(parse_string(NO_XPOS)))
    assert all(w[XPOS] == "_" for s in out for w in s.words)
    assert [r[:6] for s in out for r in s.rows] == [r[:6] for s in parse_string(NO_XPOS) for r in s.rows]


# --- NER and LISA -----------------------------------------------------------------------------

NER_DATA = Path(__file__).resolve().parent / "fixtures" / "ner" / "tiny.conll"
SIX = "2 6\nlisbon 1 2 3 4 5 6\nmadrid 6 5 4 3 2 1\n"


def test_ner_with_a_vectors_file_keeps_its_rows_and_size(tmp_path):
    from nlpipe.cli.train import train_ner

    path = write(tmp_path / "v.txt", SIX)
    out = tmp_path / "m"
    r = CliRunner().invoke(train_ner, ["--train", str(NER_DATA), "--dev", str(NER_DATA), "--out", str(out),
                                       "--epochs", "1", "--width", "8", "--blocks", "1", "--freeze-words",
                                       "--vectors", path])
    assert r.exit_code == 0, r.output
    config = json.loads((out / "config.json").read_text())
    assert config["model"]["word_dim"] == 6 and config["training"]["vectors"]["path"] == path
    words = (out / "words.txt").read_text(encoding="utf-8").split("\n")
    assert "madrid" in words                     # a word of the vectors only
    with np.load(out / "weights.npz") as z:
        np.testing.assert_allclose(z["emb.words.weight"][words.index("lisbon")], [1, 2, 3, 4, 5, 6], atol=1e-2)


def test_ner_without_vectors_knows_only_its_training_words(tmp_path):
    from nlpipe.cli.train import train_ner

    out = tmp_path / "m"
    r = CliRunner().invoke(train_ner, ["--train", str(NER_DATA), "--dev", str(NER_DATA), "--out", str(out),
                                       "--epochs", "1", "--width", "8", "--blocks", "1", "--lang", "pt"])
    assert r.exit_code == 0, r.output
    assert json.loads((out / "config.json").read_text())["training"]["vectors"] is None
    # the fixture's words, by key (lower-cased, digits as 0)
    training = {".", "0000", "acme", "bank", "lisbon", "lopez", "maria", "monday", "oslo", "the", "tom", "and",
                "flew", "hired", "in", "on", "shares", "sold", "to", "visited"}
    words = set((out / "words.txt").read_text(encoding="utf-8").split("\n")) - {"", "<pad>", "<unk>"}
    assert words == training


def test_lisa_with_a_vectors_file_and_without(tmp_path):
    from nlpipe.cli.train import train_srl

    srl_train = str(Path(__file__).resolve().parent / "fixtures" / "srl" / "train.conllu")
    path = write(tmp_path / "v.txt", "1 4\ncat 1 1 1 1\n")
    for name, args in (("with", ["--vectors", path]), ("without", ["--vectors", "none"])):
        out = tmp_path / name
        r = CliRunner().invoke(train_srl, ["--train", srl_train, "--dev", srl_train, "--out", str(out),
                                           "--epochs", "1", "--layers", "2", "--d-model", "16", "--heads", "2",
                                           *args])
        assert r.exit_code == 0, r.output
        config = json.loads((out / "config.json").read_text())
        if name == "with":
            assert config["model"]["word_dim"] == 4 and config["training"]["vectors"]["path"] == path
        else:
            assert config["model"]["word_dim"] == 50 and config["training"]["vectors"] is None
