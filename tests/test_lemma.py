"""Lemma rules, the lexicon-then-classifier lemmatizer and the FEATS pass of the POS model."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nlpipe.cli.evaluate import eval_command
from nlpipe.cli.train import train_pos
from nlpipe.errors import NlpipeError
from nlpipe.io.conllu import FEATS, LEMMA, UPOS, XPOS, parse_string, to_string
from nlpipe.linear.attributes import Attributes
from nlpipe.models.lemmatizer import Lemmatizer, apply_rule, lemma_rule, rule_applies
from nlpipe.registry import load_stage
from nlpipe.train.linear_fit import build_model
from nlpipe.train.morph import lexicons



def run_cli(command, args, code=0):
    r = CliRunner().invoke(command, args)
    assert r.exit_code == code, r.output
    return r


@pytest.mark.parametrize("form,lemma,rule", [
    ("running", "run", "l\t\t\tning\t"),              # suffix cut
    ("Running", "run", "l\t\t\tning\t"),              # capital dropped: the same rule, lower-cased
    ("Apples", "Apple", "k\t\t\ts\t"),                # a name keeps its capital
    ("studies", "study", "l\t\t\ties\ty"),            # cut and add
    ("gemacht", "machen", "l\tge\t\tt\ten"),          # prefix and suffix
    ("n't", "not", "l\t\t\t't\tot"),                  # the longest shared part is "n"
    ("was", "be", "=\tbe"),                           # nothing shared: the lemma itself
    ("1984", "1984", "l\t\t\t\t"),
])
def test_lemma_rule_by_hand(form, lemma, rule):
    assert lemma_rule(form, lemma) == rule
    assert apply_rule(form, rule) == lemma


def test_rules_apply_only_to_forms_with_their_affixes():
    rule = "l\t\t\ties\ty"
    assert rule_applies("flies", rule)
    assert not rule_applies("fly", rule)
    assert not rule_applies("ies", rule)          # nothing left of the stem
    assert apply_rule("Cats", rule) is None
    assert apply_rule("Flies", rule) == "fly"
    assert apply_rule("Flies", "k\t\t\ties\ty") == "Fly"
    assert apply_rule("anything", "=\tbe") == "be"


def test_lexicons_keep_the_most_frequent_lemma_of_each_form_and_tag():
    forms = ["saw", "saw", "saw", "'s", "'s", "'s", "'s"]
    tags = ["VBD", "VBD", "NN", "VBZ", "VBZ", "VBZ", "POS"]
    lemmas = ["see", "see", "saw", "be", "have", "be", "'s"]
    pairs, single = lexicons(forms, tags, lemmas)
    assert pairs == {"saw\tVBD": "see", "saw\tNN": "saw", "'s\tVBZ": "be", "'s\tPOS": "'s"}
    assert single == {}
    # a form that always had one lemma has it only with the tags it had
    pairs, single = lexicons(["went", "went"], ["VBD", "VBN"], ["go", "go"])
    assert pairs == {"went\tVBD": "go", "went\tVBN": "go"} and single == {}
    # joint UPOS<TAB>XPOS tags also key the lexicon by their UPOS
    pairs, _ = lexicons(["left", "left"], ["VERB\tVBD", "ADJ\tJJ"], ["leave", "left"])
    assert pairs == {"left\tVERB\tVBD": "leave", "left\tVERB": "leave", "left\tADJ\tJJ": "left", "left\tADJ": "left"}


def test_a_known_form_with_a_tag_it_never_had_is_lemmatized_by_the_rules():
    """Lemmatizer.lookup over lexicons(): the tag it had gives the lexicon's lemma, another tag none
    (the rule classifier's turn); a lexicon of an earlier model (form -> lemma) answers for any tag."""
    pairs, single = lexicons(["Holocaust"], ["NOUN\tNN"], ["holocaust"])
    labels = ["NOUN\tNN", "PROPN\tNNP"]
    rules = build_model(["l\t\t\t\t"], Attributes.build(["Holocaust"], {}), ("bias",), [np.zeros(0, np.int64)],
                        labels)
    lemmatizer = Lemmatizer(pairs, single, rules)
    assert lemmatizer.lookup("Holocaust", 0) == "holocaust" and lemmatizer.lookup("Holocaust", 1) is None
    assert Lemmatizer({}, {"Holocaust": "holocaust"}, rules).lookup("Holocaust", 1) == "holocaust"


def _row(i, form, lemma, upos, xpos, feats):
    return f"{i}\t{form}\t{lemma}\t{upos}\t{xpos}\t{feats}\t0\troot\t_\t_"


# A made-up treebank: regular -ing and -s verbs and plural nouns, names, numbers, punctuation
VERBS = ["walk", "talk", "jump", "play", "look", "call", "open", "help", "kick", "pull"]
NOUNS = ["cat", "dog", "car", "book", "tree", "bird", "lamp", "door", "cup", "hat"]
NAMES = ["Anna", "Boris", "Clara", "Dmitri", "Elsa", "Femi"]


def _treebank(verbs, nouns, names, repeat=3) -> str:
    """Blocks of "NAME is VERBing NUMBER NOUNs ." and "VERBs the NOUN !" sentences (in blocks, so
    that both kinds fall in every jack-knife fold)."""
    sents = []
    for r in range(repeat):
        for k, (v, n) in enumerate(zip(verbs, nouns)):
            name = names[(k + r) % len(names)]
            rows = [_row(1, name, name, "PROPN", "NNP", "Number=Sing"),
                    _row(2, "is", "be", "AUX", "VBZ", "Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin"),
                    _row(3, v + "ing", v, "VERB", "VBG", "Tense=Pres|VerbForm=Part"),
                    _row(4, str(10 + k + r), str(10 + k + r), "NUM", "CD", "NumForm=Digit|NumType=Card"),
                    _row(5, n + "s", n, "NOUN", "NNS", "Number=Plur"),
                    _row(6, ".", ".", "PUNCT", ".", "_")]
            sents.append("\n".join(rows))
        for k, (v, n) in enumerate(zip(verbs, nouns)):
            rows = [_row(1, (v + "s").capitalize(), v, "VERB", "VBZ",
                         "Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin"),
                    _row(2, "the", "the", "DET", "DT", "Definite=Def|PronType=Art"),
                    _row(3, n, n, "NOUN", "NN", "Number=Sing"),
                    _row(4, "!", "!", "PUNCT", ".", "_")]
            sents.append("\n".join(rows))
    return "\n\n".join(sents) + "\n\n"


@pytest.fixture(scope="module")
def morph_model(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("morph")
    (d / "train.conllu").write_text(_treebank(VERBS[:8], NOUNS[:8], NAMES[:4]), encoding="utf-8")
    (d / "dev.conllu").write_text(_treebank(VERBS[8:], NOUNS[8:], NAMES[4:], repeat=1), encoding="utf-8")
    run_cli(train_pos, ["--train", str(d / "train.conllu"), "--dev", str(d / "dev.conllu"), "--out", str(d / "m"),
                        "--order", "given", "--no-clusters", "--epochs", "6", "--min-count", "1"])
    return d / "m"


def test_tagger_writes_lemmas_and_feats_of_unseen_words(morph_model):
    tagger = load_stage("pos", str(morph_model))
    text = "\n".join([_row(1, "Zoltan", "_", "_", "_", "_"), _row(2, "is", "_", "_", "_", "_"),
                      _row(3, "singing", "_", "_", "_", "_"), _row(4, "77", "_", "_", "_", "_"),
                      _row(5, "hats", "_", "_", "_", "_"), _row(6, ".", "_", "_", "_", "_")]) + "\n\n"
    (sent,) = tagger.annotate(parse_string(text))
    assert [w[LEMMA] for w in sent.words] == ["Zoltan", "be", "sing", "77", "hat", "."]
    assert [w[FEATS] for w in sent.words][2:5] == ["Tense=Pres|VerbForm=Part", "NumForm=Digit|NumType=Card",
                                                   "Number=Plur"]
    text = "\n".join([_row(1, "Sings", "_", "_", "_", "_"), _row(2, "the", "_", "_", "_", "_"),
                      _row(3, "cup", "_", "_", "_", "_"), _row(4, "!", "_", "_", "_", "_")]) + "\n\n"
    (sent,) = tagger.annotate(parse_string(text))
    assert [w[LEMMA] for w in sent.words] == ["sing", "the", "cup", "!"]      # sentence-initial capital dropped
    assert sent.words[0][FEATS] == "Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin"


def test_no_morph_leaves_lemma_and_feats(tmp_path):
    (tmp_path / "t.conllu").write_text(_treebank(VERBS[:4], NOUNS[:4], NAMES[:2]), encoding="utf-8")
    run_cli(train_pos, ["--train", str(tmp_path / "t.conllu"), "--dev", str(tmp_path / "t.conllu"),
                        "--out", str(tmp_path / "m"), "--order", "given", "--no-clusters", "--no-morph"])
    assert not (tmp_path / "m" / "morph").exists()
    tagger = load_stage("pos", str(tmp_path / "m"))
    (sent,) = tagger.annotate(parse_string(_row(1, "walks", "LEM", "_", "_", "F=1") + "\n\n"))
    assert sent.words[0][LEMMA] == "LEM" and sent.words[0][FEATS] == "F=1"
    assert sent.words[0][UPOS] != "_" and sent.words[0][XPOS] != "_"


def test_morph_without_lemma_or_feats_in_training_data_is_refused(tmp_path):
    text = "\n".join(_row(1, "a", "_", "DET", "DT", "_").split("\n")) + "\n\n"
    (tmp_path / "t.conllu").write_text(text, encoding="utf-8")
    r = CliRunner().invoke(train_pos, ["--train", str(tmp_path / "t.conllu"), "--dev", str(tmp_path / "t.conllu"),
                                       "--out", str(tmp_path / "m"), "--order", "given", "--no-clusters", "--morph"])
    assert isinstance(r.exception, NlpipeError)
    assert "no word has FEATS or LEMMA" in str(r.exception) and "t.conllu" in str(r.exception)
    assert not (tmp_path / "m").exists()


def test_eval_pos_reports_ufeats_alltags_lemmas(morph_model, tmp_path):
    gold = tmp_path / "gold.conllu"
    gold.write_text(_treebank(VERBS[8:], NOUNS[8:], NAMES[4:], repeat=1), encoding="utf-8")
    r = run_cli(eval_command, ["pos", "--gold", str(gold), "--model", str(morph_model)])
    assert "UFeats" in r.output and "AllTags" in r.output and "Lemmas" in r.output


def _lemmatizer(rules, known=(), bonus=0.0, by_form_tag=None, by_form=None):
    from nlpipe.linear.attributes import Attributes
    from nlpipe.models.lemmatizer import TEMPLATES, Lemmatizer
    from nlpipe.train.linear_fit import build_model
    import numpy as np
    tags = ["VERB\tVBG", "NOUN\tNN"]
    model = build_model(rules, Attributes.build(["x"], {}), TEMPLATES, [np.zeros(0, np.int64)] * len(TEMPLATES), tags)
    return Lemmatizer(by_form_tag or {}, by_form or {}, model, known, bonus)


def test_a_known_lemma_wins_a_tie_between_rules():
    import numpy as np
    rules = ["l\t\t\ting\t", "l\t\t\ting\te"]
    lem = _lemmatizer(rules, known={"provoke"}, bonus=0.5)
    assert lem.choose("provoking", np.zeros(2, np.float32)) == "provoke"
    assert lem.choose("provoking", np.array([1.0, 0.0], np.float32)) == "provok"   # lead 1.0 > bonus 0.5
    assert _lemmatizer(rules).choose("provoking", np.array([0.0, 0.1], np.float32)) == "provoke"
    assert lem.choose("xyz", np.zeros(2, np.float32)) == "xyz"                     # no rule applies


def test_the_candidates_of_a_form_are_the_rules_that_apply_to_it():
    rules = ["l\t\t\ting\t", "l\t\t\ting\te", "l\tge\t\tt\ten", "l\tg\t\tt\t", "l\tun\t\t\t",
             "l\t\t\t\t", "=\tbe", "k\t\t\ts\t", "l\tge\t\t\t", "l\tgem\t\tcht\t"]
    lem = _lemmatizer(rules)
    forms = ["running", "gemacht", "gesagt", "Gemacht", "unting", "ge", "get", "s", "Apples", "ünting", "x", "gemcht"]
    for form in forms:
        low = form.lower()
        expected = [r for r, rule in enumerate(rules)
                    if rule.startswith("=") or len(low) == len(form) and rule_applies(low, rule)]
        assert lem.candidates(form).tolist() == expected, form


def test_lexicon_backs_off_from_the_whole_tag_to_upos_to_the_form():
    lem = _lemmatizer(["l\t\t\t\t"], by_form_tag={"left\tVERB\tVBG": "leave", "left\tNOUN": "left"},
                      by_form={"went": "go"})
    assert lem.lookup("left", 0) == "leave"
    assert lem.lookup("left", 1) == "left"          # NOUN<TAB>NN unseen: NOUN
    assert lem.lookup("went", 1) == "go"
    assert lem.lookup("gone", 0) is None


def test_one_choice_per_form_and_tag_until_the_cache_is_cleared():
    import numpy as np
    rules = ["l\t\t\ting\t", "l\t\t\ting\te"]
    lem = _lemmatizer(rules, known={"provoke"}, bonus=0.5)
    forms = ["provoking", "provoking", "provoking"]
    layout, atoms = lem.rules.layout([forms])
    tags = np.array([0, 0, 1])
    first = layout.scatter(tags, len(lem.tag_labels))
    # all weights zero: a tie the bonus breaks; the classifier reads only the word and its tag, so
    # it chooses once per (form, tag) until its weights change (clear_cache) or its bonus does
    assert lem.lemmatize(forms, tags, layout, atoms, first) == ["provoke"] * 3
    lem.rules.weights[-1][0] = [0.25, 0.0]           # the bias now favours the first rule (in place)
    assert lem.lemmatize(forms, tags, layout, atoms, first) == ["provoke"] * 3   # chosen before
    lem.clear_cache()
    assert lem.lemmatize(forms, tags, layout, atoms, first) == ["provoke"] * 3   # 0.5 bonus > 0.25 lead
    lem.known_bonus = 0.0                             # a new bonus forgets the choices made
    assert lem.lemmatize(forms, tags, layout, atoms, first) == ["provok"] * 3


def test_web_addresses_are_their_own_lemma_where_training_said_so(tmp_path):
    import numpy as np
    from nlpipe.train.morph import web_addresses_keep_form

    # the only rule lower-cases, as the classifier learns from training URLs without capitals;
    # with web_addresses the URLs and e-mail addresses the lexicon does not know keep their form
    forms = ["Http://Example.com/A", "Bob.Smith@Example.ORG", "www.Example.com", "Hello", "http://x.com/A"]
    tags = np.zeros(len(forms), dtype=np.int64)
    for keep, expected in ((False, [f.lower() for f in forms]),
                           (True, ["Http://Example.com/A".lower(), "Bob.Smith@Example.ORG", "www.Example.com",
                                   "hello", "http://x.com/A"])):
        lem = _lemmatizer(["l\t\t\t\t"], by_form={"http://x.com/A": "http://x.com/a"})
        lem.web_addresses = keep
        layout, atoms = lem.rules.layout([forms])
        first = layout.scatter(tags, len(lem.tag_labels))
        want = list(expected)
        want[4] = "http://x.com/a"                    # the lexicon comes first
        assert lem.lemmatize(forms, tags, layout, atoms, first) == want, keep
        # "Http://" (capital H) is no URL to the tokenizer's pattern either: the rule lower-cases it
        assert (lem.lookup("www.Example.com", 0) == "www.Example.com") == keep
    lem.save(tmp_path / "lem")
    assert Lemmatizer.load(tmp_path / "lem").web_addresses
    # training: nine in ten of its web addresses their own lemma, or more
    urls = ["http://a.com/X"] * 9 + ["me@b.org"]
    assert web_addresses_keep_form(urls + ["dogs"], urls + ["dog"])
    assert not web_addresses_keep_form(urls, urls[:8] + ["http://a.com/x", "ME@b.org"])      # 8 in 10
    assert not web_addresses_keep_form(["dogs"], ["dog"])
    assert web_addresses_keep_form(urls + ["x@y.com"], urls + ["_"])    # "_" has no lemma to compare


def test_a_lexicon_saved_before_web_addresses_loads_without_them(tmp_path):
    import json

    lem = _lemmatizer(["l\t\t\t\t"])
    lem.save(tmp_path / "lem")
    lexicon = json.loads((tmp_path / "lem" / "lexicon.json").read_text())
    assert "web_addresses" not in lexicon
    assert not Lemmatizer.load(tmp_path / "lem").web_addresses


@pytest.mark.parametrize("templates", [None, ("s2@0+ptag@0", "s1@-1", "bias")])
def test_lemmatizing_words_gives_the_lemmas_of_the_whole_layout(templates):
    # lemmatize_words works out the classifier's attributes itself: for the words the lexicon does not
    # know alone when the templates read only the word and its tag, else for every word in context
    import numpy as np
    from nlpipe.linear.attributes import Attributes
    from nlpipe.models.lemmatizer import TEMPLATES, Lemmatizer
    from nlpipe.train.linear_fit import build_model

    rules = ["l\t\t\ting\t", "l\t\t\ting\te", "l\t\t\ts\t", "k\t\t\t\t"]
    templates = templates or TEMPLATES
    model = build_model(rules, Attributes.build(["x"], {}), templates, [np.zeros(0, np.int64)] * len(templates),
                        ["VERB\tVBG", "NOUN\tNN"])
    rng = np.random.default_rng(0)
    for w in model.weights:
        for k in range(len(w)):
            w[k] = rng.standard_normal(w[k].shape).astype(w[k].dtype)
    sentences = [["Making", "cakes", "went"], ["baking"], ["the", "cakes", "Making", "bikes"]]
    forms = [f for s in sentences for f in s]
    tags = np.array([0, 1, 0, 0, 1, 1, 0, 1])
    lem = Lemmatizer({}, {"went": "go"}, model)
    assert lem._per_pair == (templates is TEMPLATES)
    layout, atoms = lem.rules.layout(sentences)
    expected = lem.lemmatize(forms, tags, layout, atoms, layout.scatter(tags, 2))
    lem.clear_cache()
    assert lem.lemmatize_words(forms, tags, [len(s) for s in sentences]) == expected
    assert expected[2] == "go"


def test_a_lower_case_or_capitals_form_takes_the_lemma_of_its_other_writing_where_asked(tmp_path):
    import numpy as np

    # the lexicon knows "Mexico" and "MEXICO" as names with the lemma "Mexico", "Apple" (a name) and
    # "APPLE" (a noun) with different lemmas, and "Paris"/"PARIS" with lemmas that disagree
    by_form_tag = {"Mexico\tNOUN": "Mexico", "MEXICO\tNOUN": "Mexico", "Apple\tNOUN": "Apple",
                   "APPLE\tVERB": "apple", "Paris\tNOUN": "Paris", "PARIS\tNOUN": "paris",
                   "Mexico\tNOUN\tNN": "Mexico"}
    forms = ["mexico", "MEXICO", "MeXiCo", "apple", "APPLE", "paris", "Apple", "mexicos"]
    tags = np.array([1, 1, 1, 1, 0, 1, 1, 1])          # 0: VERB<TAB>VBG, 1: NOUN<TAB>NN
    lem = _lemmatizer(["l\t\t\t\t"], by_form_tag=by_form_tag)
    layout, atoms = lem.rules.layout([forms])
    plain = lem.lemmatize(forms, tags, layout, atoms, layout.scatter(tags, 2))
    assert plain == ["mexico", "Mexico", "mexico", "apple", "apple", "paris", "Apple", "mexicos"]
    lem.cased_variants = True
    assert lem.lemmatize(forms, tags, layout, atoms, layout.scatter(tags, 2)) == \
        ["Mexico", "Mexico", "mexico", "Apple", "apple", "paris", "Apple", "mexicos"]
    assert lem.lookup("mexico", 1) == "Mexico" and lem.lookup("mexico", 0) is None
    lem.save(tmp_path / "lem")
    assert Lemmatizer.load(tmp_path / "lem").lookup("apple", 1) == "Apple"
