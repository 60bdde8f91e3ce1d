"""Multiword tokens learned from range lines whatever their parts (French ``du`` = ``de`` + ``le``), the
context decision for ambiguous forms, suffix rules, the rule tokenizer's word rules learned from any
treebank (elisions, hyphens, bracketed endings, whole forms), and no English rule or file in other
languages."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nlpipe.cli import main
from nlpipe.io.conllu import FORM, read_file
from nlpipe.io.model_dir import read_config
from nlpipe.models.multiword import MultiwordExpander, learn_multiwords, learn_suffix_rules
from nlpipe.models.rules_tokenizer import WordTokenizer
from nlpipe.models.segmenter import CharVocab
from nlpipe.registry import MODELS_DIR, load_stage
from nlpipe.stages.tokenize import TrainedTokenizer

from conftest import FIXTURES

TRAIN = FIXTURES / "fr_mwt_train.conllu"
DEV = FIXTURES / "fr_mwt_dev.conllu"


@pytest.fixture(scope="module")
def learned():
    return learn_multiwords(read_file(str(TRAIN)), read_file(str(DEV)))


def test_the_table_holds_the_expansions_of_the_range_lines(learned):
    # train: du x3 (one "Du"), au x3 (one "AU"), aux x2, des x3 as de+les and x3 as the determiner
    assert learned["table"] == {"au": ["à", "le"], "aux": ["à", "les"], "des": ["de", "les"], "du": ["de", "le"]}


def test_surface_casing_is_carried_onto_the_words(learned):
    expand = MultiwordExpander(learned)
    assert expand("du") == ["de", "le"]
    assert expand("Du") == ["De", "le"]
    assert expand("AU") == ["À", "LE"]
    assert expand("Aux") == ["À", "les"]
    assert expand("voisin") is None and expand("dort") is None


def test_ambiguous_des_is_decided_in_context(learned):
    # dev: "prix des" is de+les, "mangeons des" / "achètent des" are the determiner: the classifier (3 of
    # 3 right) beats the majority reading (1 of 3), so it is kept for "des"
    assert learned["context_forms"] == {"des": ["de", "les"]}
    expand = MultiwordExpander(learned)
    assert expand.sentence("Le prix des maisons monte .".split())[2] == ["de", "les"]
    assert expand.sentence("Nous mangeons des gâteaux .".split())[2] is None
    assert expand.sentence("Le bruit du chat".split()) == [None, None, ["de", "le"], None]


def test_the_stage_writes_range_lines_and_renumbers_words(learned):
    class WhitespaceNet:          # a segmenter that never splits inside a run of non-space characters
        gap = 1

        def scores(self, ids, bits=None, lex=None):
            out = np.zeros((len(ids), 3), dtype=np.float32)
            out[:, 0] = 1.0
            return out

    tok = TrainedTokenizer(WhitespaceNet(), CharVocab([]), MultiwordExpander(learned))
    s1, s2 = tok.tokenize_text("Le prix des maisons au marché .\n\nDu pain aux amis du chat .")
    assert [r[:2] for r in s1.rows] == [["1", "Le"], ["2", "prix"], ["3-4", "des"], ["3", "de"], ["4", "les"],
                                        ["5", "maisons"], ["6-7", "au"], ["6", "à"], ["7", "le"],
                                        ["8", "marché"], ["9", "."]]
    assert [r[FORM] for r in s2.words] == ["De", "le", "pain", "à", "les", "amis", "de", "le", "chat", "."]
    assert [r[0] for r in s2.rows if "-" in r[0]] == ["1-2", "4-5", "7-8"]


def test_the_range_line_carries_space_after():
    tok = TrainedTokenizer(_SplitAfterNet("du"), CharVocab([]), MultiwordExpander({"format": 2, "table": {"du": ["de", "le"]}}))
    (s,) = tok.tokenize_text("du-")
    assert s.rows[0] == ["1-2", "du", "_", "_", "_", "_", "_", "_", "_", "SpaceAfter=No"]
    assert s.rows[1][9] == "_" and s.rows[2][9] == "_"


class _SplitAfterNet:
    """Splits after the characters of a given prefix of the input (for a token glued to the next)."""
    gap = 1

    def __init__(self, prefix):
        self.n = len(prefix)

    def scores(self, ids, bits=None, lex=None):
        out = np.zeros((len(ids), 3), dtype=np.float32)
        out[:, 0] = 1.0
        out[self.n - 1] = [0.0, 1.0, 0.0]
        return out


def test_suffix_rules_split_unseen_forms_only_when_reliable():
    mwt = {"farlo": ("far", "lo"), "darlo": ("dar", "lo")}
    rules = learn_suffix_rules(mwt, ["solo", "bello", "far", "casa"])
    # "arlo" and "rlo": 2 of the 2 forms ending so are multiword tokens -> far+lo; "lo": 2 of 4
    assert rules["arlo"] == ["ar", "lo"] and rules["rlo"] == ["r", "lo"] and rules["lo"] is None
    expand = MultiwordExpander({"format": 2, "table": {k: list(v) for k, v in mwt.items()}, "suffix_rules": rules})
    assert expand("mangiarlo") == ["mangiar", "lo"]
    assert expand("Vederlo") == ["Veder", "lo"]
    assert expand("cielo") is None          # its longest rule suffix, "lo", is not reliable
    assert expand("casa") is None


def test_a_training_form_kept_whole_is_not_split_by_a_suffix_rule():
    from nlpipe.io.conllu import parse_string

    stems = ["far", "dar", "star", "amar", "lavar", "portar", "cantar", "guardar", "mangiar"]
    rows, i = [], 1
    for stem in stems:
        rows += [f"{i}-{i + 1}\t{stem}lo", f"{i}\t{stem}", f"{i + 1}\tlo"]
        i += 2
    rows.append(f"{i}\tparlo")
    text = "# text = " + " ".join(s + "lo" for s in stems) + " parlo\n" + "".join(
        r + "\t_" * 8 + "\n" for r in rows) + "\n"
    learned = learn_multiwords(parse_string(text))
    # "arlo": 9 of the 10 forms ending so are multiword tokens with the rewrite ar + lo (0.9: reliable)
    assert learned["suffix_rules"]["arlo"] == ["ar", "lo"]
    assert learned["table"]["parlo"] is None     # seen whole: the rule would split it
    expand = MultiwordExpander(learned)
    assert expand("parlo") is None
    assert expand("baciarlo") == ["baciar", "lo"]


def test_english_clitic_rules_only_in_english_models():
    english = MultiwordExpander({"format": 2, "table": {}}, english=True)
    other = MultiwordExpander({"format": 2, "table": {}}, english=False)
    assert english("Hauses'") == ["Hauses", "'"] and english("geht's") == ["geht", "'s"]
    # German: a word ending in s before a quote, and an elided "es", stay one word
    assert other("Hauses'") is None and other("geht's") is None
    assert other.sentence(["Hauses'", "Dach"]) == [None, None]


def test_rule_tokenizer_without_english_rules_splits_no_clitic():
    text = "Das Dach des Hauses' und geht's"
    other = WordTokenizer(english=False).tokens(text)
    assert [(text[s:e], p) for s, e, p in other] == [("Das", None), ("Dach", None), ("des", None),
                                                     ("Hauses", None), ("'", None), ("und", None),
                                                     ("geht's", None)]
    english = WordTokenizer().tokens(text)
    assert [p for _, _, p in english if p] == [["Hauses", "'"], ["geht", "'s"]]


def test_a_french_model_folder_holds_nothing_english(tmp_path):
    out = tmp_path / "fr"
    main(["train", "tokenize", "--train", str(TRAIN), "--dev", str(DEV), "--out", str(out), "--lang", "fr",
          "--epochs", "1", "--channels", "4", "--emb", "4", "--dilations", "1,2", "--length", "32",
          "--min-char", "1"])
    config = read_config(out, "tokenize")
    assert config["language"] == "fr" and config["model"]["spaces_in_tokens"] is False   # no token with a space
    assert sorted(p.name for p in out.iterdir()) == ["chars.json", "config.json", "multiwords.json", "punkt.json",
                                                     "rules.json", "weights.npz"]
    # no file of the English models, and no English word rule, abbreviation or Punkt parameter
    english = [p.read_bytes() for m in ("tokenize-char-ewt", "tokenize-rules-ewt")
               for p in (MODELS_DIR / m).iterdir() if p.name != "config.json"]
    assert not [p.name for p in out.iterdir() if p.read_bytes() in english]
    rules = json.loads((out / "rules.json").read_text(encoding="utf-8"))
    assert rules["english"] is False and rules["abbreviations"] == [] and rules["hyphen_prefixes"] == []
    punkt = json.loads((out / "punkt.json").read_text(encoding="utf-8"))
    assert not {"mr", "dr", "etc", "u.s"} & set(punkt["abbrev_types"])
    multiwords = json.loads((out / "multiwords.json").read_text(encoding="utf-8"))
    assert multiwords["table"]["du"] == ["de", "le"] and multiwords["context_forms"] == {"des": ["de", "les"]}
    tok = load_stage("tokenize", str(out))
    assert tok.multiwords.english is False
    assert tok.multiwords("Hauses'") is None


def test_an_english_rule_model_is_refused_for_another_language(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["train", "tokenize", "--train", str(TRAIN), "--dev", str(DEV), "--out", str(tmp_path / "m"),
              "--lang", "fr", "--rules", "tokenize-rules-ewt", "--epochs", "1"])
    assert e.value.code == 2
    assert "--rules tokenize-rules-ewt: a model of language 'en', not 'fr'" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_the_shipped_english_model_keeps_its_clitic_rules():
    tok = load_stage("tokenize", "tokenize-char-ewt")
    assert tok.multiwords.english is True
    assert tok.multiwords("Mary's") == ["Mary", "'s"]


def test_corrupt_multiword_file_is_a_model_error(tmp_path):
    import shutil

    from nlpipe.errors import ModelError
    from nlpipe.stages.tokenize import load_trained

    model = tmp_path / "m"
    shutil.copytree(MODELS_DIR / "tokenize-char-ewt", model)
    (model / "multiwords.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ModelError, match="corrupt segmenter model"):
        load_trained(model, read_config(model))


def test_rule_tokenizer_training_adds_english_seeds_only_for_english(tmp_path):
    for lang in ("fr", "en"):
        main(["train", "tokenize", "--method", "rules", "--train", str(TRAIN), "--out", str(tmp_path / lang),
              "--lang", lang])
    fr = json.loads((tmp_path / "fr" / "words.json").read_text(encoding="utf-8"))
    en = json.loads((tmp_path / "en" / "words.json").read_text(encoding="utf-8"))
    # the fixture has no abbreviation and no hyphen: only the English seeds can add any
    assert fr["english"] is False and fr["abbreviations"] == [] and fr["hyphen_prefixes"] == []
    assert en["english"] is True and {"dr", "etc", "u.s"} <= set(en["abbreviations"])
    tok = load_stage("tokenize", str(tmp_path / "fr"))
    (s,) = tok.tokenize_text("Il dit geht's.")
    assert [r[FORM] for r in s.rows] == ["Il", "dit", "geht's", "."]


def _tagged(sentences):
    """CoNLL-U of sentences given as "form/UPOS" or "form=w1+w2/UPOS1+UPOS2" tokens."""
    out = []
    for spec in sentences:
        rows, i, forms = [], 1, []
        for tok in spec.split():
            form, tags = tok.split("/")
            forms.append(form.split("=")[0])
            if "=" in form:
                surface, words = form.split("=")
                words = words.split("+")
                rows.append(f"{i}-{i + len(words) - 1}\t{surface}" + "\t_" * 8)
                for w, t in zip(words, tags.split("+")):
                    rows.append(f"{i}\t{w}\t_\t{t}" + "\t_" * 6)
                    i += 1
            else:
                rows.append(f"{i}\t{form}\t_\t{tags}" + "\t_" * 6)
                i += 1
        out.append("# text = " + " ".join(forms) + "\n" + "\n".join(rows) + "\n\n")
    from nlpipe.io.conllu import parse_string

    return list(parse_string("".join(out)))


def test_the_context_classifier_knows_the_usual_tag_of_the_word_before():
    mwt, det = "des=de+les/ADP+DET", "des/DET"
    train = _tagged([f"et/CCONJ {w}/NOUN {mwt} {n}/NOUN" for w in ("fin", "prix", "bruit") for n in ("jours", "cas")]
                    + [f"et/CCONJ {w}/VERB {det} {n}/NOUN" for w in ("voit", "prend", "mange") for n in ("gens", "cas")]
                    + ["la/DET table/NOUN tombe/VERB", "une/DET table/NOUN", "il/PRON finit/VERB", "elle/PRON finit/VERB"])
    # "table" and "finit" never stand before "des" in training: their usual tags tell the readings apart
    # (their endings point the other way: "table" ends like "mange", "finit" like "bruit")
    dev = _tagged([f"et/CCONJ table/NOUN {mwt} jardins/NOUN", f"et/CCONJ finit/VERB {det} pommes/NOUN"])
    learned = learn_multiwords(train, dev)
    assert learned["context_tags"]["table"] == "NOUN" and learned["context_tags"]["finit"] == "VERB"
    assert "tombe" not in learned["context_tags"]          # seen once
    expand = MultiwordExpander(learned)
    assert expand.sentence("et table des maisons".split())[2] == ["de", "les"]
    assert expand.sentence("et finit des chemises".split())[2] is None


class _EndsNet:
    """Token ends after the characters before a space, except at the given positions."""
    gap = 1

    def __init__(self, text, inside):
        self.text, self.inside = text, set(inside)

    def scores(self, ids, bits=None, lex=None):
        out = np.zeros((len(ids), 3), dtype=np.float32)
        out[:, 0] = 1.0
        for i in range(len(self.text) - 1):
            if self.text[i + 1].isspace() and i not in self.inside:
                out[i] = [0.0, 1.0, 0.0]
        return out


@pytest.mark.parametrize("text, spaces, expected", [
    ("Il a 500 000 euros .", True, ["Il", "a", "500 000", "euros", "."]),
    ("Il a 500 000 euros .", False, ["Il", "a", "500", "000", "euros", "."]),
    ("Il a 500\n000 euros .", True, ["Il", "a", "500", "000", "euros", "."]),    # only a plain space
    ("Il a 500  000 euros .", True, ["Il", "a", "500", "000", "euros", "."]),    # only a single one
])
def test_a_model_trained_on_tokens_with_spaces_may_keep_a_space_inside(text, spaces, expected):
    tok = TrainedTokenizer(_EndsNet(text, [7]), CharVocab([]), MultiwordExpander({}), spaces=spaces)
    (s,) = tok.tokenize_text(text)
    assert [r[FORM] for r in s.rows] == expected
    assert s.meta("text") == text.replace("\n", " ")


def test_rule_tokenizer_keeps_spaced_digit_groups_when_learned():
    text = "Il a 500 000 euros, 2 000,5 et 12 345 678 en 1998 12 ans."
    spaced = WordTokenizer(english=False, spaced_numbers=True).tokens(text)
    assert [text[s:e] for s, e, _ in spaced] == ["Il", "a", "500 000", "euros", ",", "2 000,5", "et",
                                                 "12 345 678", "en", "1998", "12", "ans", "."]
    plain = WordTokenizer(english=False).tokens(text)
    assert [text[s:e] for s, e, _ in plain][2:4] == ["500", "000"]


def test_spaced_digit_groups_are_learned_from_the_data():
    from nlpipe.io.conllu import parse_string
    from nlpipe.train.punkt import learn_words

    whole = parse_string("# text = 500 000 euros\n1\t500 000" + "\t_" * 8 + "\n2\teuros" + "\t_" * 8 + "\n\n")
    split = parse_string("# text = 500 000 euros\n1\t500" + "\t_" * 8 + "\n2\t000" + "\t_" * 8
                         + "\n3\teuros" + "\t_" * 8 + "\n\n")
    assert learn_words(list(whole))["spaced_numbers"] is True
    assert learn_words(list(split))["spaced_numbers"] is False
    assert learn_words(list(whole) + list(split) + list(split))["spaced_numbers"] is False


def test_default_epochs_follow_the_size_of_the_training_text():
    from nlpipe.train.tokenize import default_epochs

    assert default_epochs(1_000_000) == 30       # 16 would do: at least 30
    assert default_epochs(400_000) == 40         # 16M / 400k
    assert default_epochs(265_912) == 60         # French Sequoia train: 60.2
    assert default_epochs(10_000) == 60          # at most 60


def _conllu(*sentences: str) -> list:
    """Sentences from lines of space-separated tokens; ``~`` glues a token to the next (SpaceAfter=No)."""
    from nlpipe.io.conllu import parse_string

    blocks = []
    for line in sentences:
        toks = line.split(" ")
        rows, text = [], ""
        for i, t in enumerate(toks, 1):
            glued = t.endswith("~")
            form = t.rstrip("~")
            text += form + ("" if glued or i == len(toks) else " ")
            rows.append("\t".join([str(i), form] + ["_"] * 7 + ["SpaceAfter=No" if glued else "_"]))
        blocks.append(f"# text = {text}\n" + "\n".join(rows) + "\n")
    return list(parse_string("\n".join(blocks) + "\n"))


FRENCH_LIKE = _conllu(
    "l'~ homme dit~ -il qu'~ aujourd'hui l'on part .", "d'~ abord l'~ enfant a~ -t-il vu Jean-Claude ?",
    "qu'~ on le traité(e) et l'on voit aujourd'hui le porte-parole .", "puis~ -je dire l'~ avis ?")


def test_french_like_word_rules_are_learned_from_the_data():
    from nlpipe.train.punkt import learn_words

    words = learn_words(FRENCH_LIKE, "fr")
    # l' and qu' are split off three and two times; d' only once
    assert words["elisions"] == ["l'", "qu'"]
    # hyphenated words kept whole (Jean-Claude, porte-parole) twice, split at a hyphen (dit -il,
    # a -t-il, puis -je) three times
    assert words["hyphen_whole"] is False
    assert words["paren_endings"] is True
    # l'on: written twice as one token, which the elision l' would split; l' and qu' alone, which the
    # rules split before a space; aujourd'hui is not split by the rules (aujourd' is no elision),
    # d' is seen once, traité(e) is kept by the bracket rule
    assert words["whole"] == ["l'", "l'on", "qu'"]


def test_hyphenated_words_stay_whole_where_the_treebank_keeps_them():
    from nlpipe.train.punkt import learn_words

    more_whole = FRENCH_LIKE + _conllu("Jean-Pierre et Marie-Claire sont au rendez-vous .")
    words = learn_words(more_whole, "fr")
    assert words["hyphen_whole"] is True
    assert words["hyphen_suffixes"] == ["-il", "-je", "-t-il"]
    # the English treebank convention: split at hyphens (long - term)
    english = _conllu("a long~ -~ term plan", "a short~ -~ lived , well~ -~ known e-mail")
    assert learn_words(english, "en")["hyphen_whole"] is False


def test_rule_tokenizer_applies_the_learned_french_rules():
    rules = WordTokenizer(english=False, elisions=["l'", "qu'", "jusqu'"], hyphen_whole=True,
                          hyphen_suffixes=["-il", "-t-il", "-vous", "-en"], whole=["aujourd'hui", "l'on"],
                          paren_endings=True)
    text = "L’homme dit-il qu'aujourd'hui l'On a-t-il vu AUTRE(S) ami(e)s Jean-Claude, allez-vous-en jusqu'ici."
    assert [text[s:e] for s, e, _ in rules.tokens(text)] == [
        "L’", "homme", "dit", "-il", "qu'", "aujourd'hui", "l'On", "a", "-t-il", "vu", "AUTRE(S)",
        "ami(e)s", "Jean-Claude", ",", "allez", "-vous", "-en", "jusqu'", "ici", "."]
    # without them (an older model's words.json), as before: apostrophes inside a word, hyphens and
    # brackets split
    plain = WordTokenizer.from_params({"abbreviations": [], "hyphen_prefixes": [], "splits": {}, "english": False})
    assert [text[s:e] for s, e, _ in plain.tokens(text)][:8] == [
        "L’homme", "dit", "-", "il", "qu'aujourd'hui", "l'On", "a", "-"]


def test_whole_forms_match_the_longest_in_any_casing_and_apostrophe():
    many = [f"x{i}-y{i}" for i in range(2000)]
    rules = WordTokenizer(english=False, whole=["l'on", "l'onde", "l'", "a.b"] + many)
    text = "L’ONDE, l'on l'ondes x1999-y1999 x1999-y19990 a.bc l' a.b."
    assert [text[s:e] for s, e, _ in rules.tokens(text)] == [
        "L’ONDE", ",", "l'on", "l'ondes", "x1999-y1999", "x1999", "-", "y19990", "a.bc", "l'", "a.b", "."]


@given(st.text(alphabet="lqudaAL'’-()eS °cC.,12 ", max_size=60))
def test_learned_rules_cover_every_character_once(text):
    rules = WordTokenizer(english=False, elisions=["l'", "qu'"], hyphen_whole=True,
                          hyphen_suffixes=["-il", "-t-il", "-a"], whole=["l'a", "°c", "a-(e)"], paren_endings=True)
    spans = [(s, e) for s, e, _ in rules.tokens(text)]
    assert "".join(text[s:e] for s, e in spans) == "".join(text.split())
    assert all(e0 <= s1 for (_, e0), (s1, _) in zip(spans, spans[1:]))
    assert all(s < e and not any(c.isspace() for c in text[s:e]) for s, e in spans)


def test_the_sentence_threshold_search_scores_dev_with_the_network_once(tmp_path, monkeypatch):
    # 20 thresholds are tried after training; the network's scores do not depend on the threshold, so dev
    # is scored once for them (it was 20 times: train pipeline's tokenizer overran its time share by that)
    from nlpipe.models.segmenter_numpy import SegmenterInference

    calls = []
    real = SegmenterInference.scores
    monkeypatch.setattr(SegmenterInference, "scores", lambda self, *a: calls.append(1) or real(self, *a))
    main(["train", "tokenize", "--train", str(TRAIN), "--dev", str(DEV), "--out", str(tmp_path / "m"), "--lang", "fr",
          "--epochs", "1", "--channels", "4", "--emb", "4", "--dilations", "1,2", "--length", "32", "--min-char", "1"])
    per_scoring = len(calls) // 2      # dev scored after the one epoch, then once more for the threshold search
    assert per_scoring >= 1 and len(calls) == 2 * per_scoring
