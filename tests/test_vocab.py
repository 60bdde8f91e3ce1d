"""nlpipe.vocab: the id layouts of each kind of vocabulary (the trained weights are indexed by them),
the file round trip and the older file layouts."""
import json

import pytest

from nlpipe.errors import ModelError
from nlpipe.linear.attributes import normalize
from nlpipe.nn.features import AffixVocab, word_key, word_vocab
from nlpipe.nn.features import make_vocab
from nlpipe.vocab import PAD_UNK, UNK_NULL_ROOT, Vocab, label_vocab, read_vocab, write_vocab


def test_neural_words_pad_0_unk_1_by_word_key():
    v = word_vocab(["the", "<unk>", "year-0000", "<pad>", "dog"])
    assert v.entries == ["<pad>", "<unk>", "the", "year-0000", "dog"]
    assert len(v) == 5
    assert list(v.ids(["The", "Year-1996", "DOG", "cat"])) == [2, 3, 4, 1]
    assert v.id("<pad>") == 0          # a word whose key is a special finds the special
    assert v.own_entries() == ["the", "year-0000", "dog"]


def test_biaffine_pad_unk_root():
    words = make_vocab(["<root>", "a", "b"], word_key)
    assert words.entries == ["<pad>", "<unk>", "<root>", "a", "b"]
    assert [words.id(w) for w in ["A", "b", "c", "<root>"]] == [3, 4, 1, 2]
    tags = make_vocab(["NOUN", "VERB"])
    assert [tags.id(t) for t in ["VERB", "noun", "ADJ"]] == [4, 1, 1]   # no key: "noun" is unknown


def test_transition_unknown_0_and_literal_unk_kept():
    v = Vocab(["dog", "<unk>", "the"], UNK_NULL_ROOT, 0, normalize, filter=False)
    assert len(v) == 6
    assert v.id("dog") == 3 and v.id("<unk>") == 4 and v.id("the") == 5
    assert v.id("cat") == 0
    assert v.id("<null>") == 0 and v.id("<root>") == 0    # reserved ids, not names to look up
    assert v.own_entries() == ["dog", "<unk>", "the"]


def test_labels_unknown_0():
    v = label_vocab(["root", "nsubj", "obj"])
    assert v.entries == ["root", "nsubj", "obj"]
    assert list(v.ids(["obj", "root", "amod"])) == [2, 0, 0]


def test_affix_rows():
    v = AffixVocab(["s2:ed", "p1:w"])
    assert v.entries == ["<pad>", "<unk>", "s2:ed", "p1:w"]
    assert v.affix_ids(["walked"]).tolist() == [[3, 1, 1, 1, 2, 1, 1]]


def test_unknown_id_must_be_a_special():
    with pytest.raises(ValueError):
        Vocab(["a"], PAD_UNK, 2)


def test_round_trip_through_a_file(tmp_path):
    v = word_vocab(["the", "dog"])
    write_vocab(tmp_path / "words.txt", v)
    assert (tmp_path / "words.txt").read_text(encoding="utf-8") == "<pad>\n<unk>\nthe\ndog\n"
    back = read_vocab(tmp_path / "words.txt", word_vocab([]))
    assert back == v and back.id("The") == 2
    a = AffixVocab(["p1:x"])
    write_vocab(tmp_path / "affixes.txt", a)
    back_a = read_vocab(tmp_path / "affixes.txt", AffixVocab([]))
    assert isinstance(back_a, AffixVocab) and back_a.affix_ids(["xy"]).tolist()[0][0] == 2


def test_reads_a_file_without_the_specials(tmp_path):
    (tmp_path / "words.txt").write_text("the\ndog\n", encoding="utf-8")
    assert read_vocab(tmp_path / "words.txt", word_vocab([])).entries == ["<pad>", "<unk>", "the", "dog"]


def test_vocab_json_lists_are_the_entries_without_specials(tmp_path):
    # the layout of the biaffine parser's, LISA's and the transition parser's vocab.json
    (tmp_path / "vocab.json").write_text(json.dumps({"words": ["the", "dog"]}), encoding="utf-8")
    words = json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8"))["words"]
    v = make_vocab(words, word_key)
    assert v.entries == ["<pad>", "<unk>", "<root>", "the", "dog"] and v.own_entries() == words


def test_missing_file_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="words.txt"):
        read_vocab(tmp_path / "words.txt", word_vocab([]))


def test_biaffine_label_set_is_stored_once_and_old_models_still_load(tmp_path):
    pytest.importorskip("torch")
    from nlpipe.io.model_dir import read_config
    from nlpipe.io.provenance import training_block
    from nlpipe.models.biaffine import DEFAULT_HYPER, BiaffineModel

    vocab = {"words": ["a", "b"], "affixes": ["p1:a"], "upos": ["X"], "xpos": ["X"], "rels": ["root", "dep"]}
    model = BiaffineModel(vocab, dict(DEFAULT_HYPER, hidden=8, arc_dim=8, rel_dim=4, layers=2))
    model.save(tmp_path / "new", training_block({"train": "t.conllu"}, {}), "en")
    stored = json.loads((tmp_path / "new" / "vocab.json").read_text(encoding="utf-8"))
    assert "rels" not in stored and stored["words"] == ["a", "b"]
    config = read_config(tmp_path / "new")
    assert config["labels"] == ["root", "dep"]
    assert BiaffineModel.load(tmp_path / "new", config).rels == ["root", "dep"]
    # the layout before: the labels in vocab.json as well (they win there)
    (tmp_path / "new" / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    old = BiaffineModel.load(tmp_path / "new", dict(config, labels=[]))
    assert old.rels == ["root", "dep"] and old.rel_vocab.id("dep") == 1


def test_linear_attribute_ids_unk_0_pad_1():
    from nlpipe.linear.attributes import ATTRS, Attributes

    vocabs = [[] for _ in ATTRS]
    vocabs[0] = ["dog", "the"]            # the first attribute: the form
    a = Attributes(vocabs, {})
    assert a.index[0] == {"dog": 2, "the": 3} and a.sizes[0] == 4
    assert a.ids("the")[0] == 3 and a.ids("cat")[0] == 0


def test_an_entry_listed_twice_has_its_last_id():
    v = Vocab(["a", "b", "a"], filter=False)
    assert v.id("a") == 4 and v.id("b") == 3 and len(v) == 5
