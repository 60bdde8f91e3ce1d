"""``--probs`` through the chain: each stage's confidences in MISC, and nothing else changed."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from conftest import run_cli
from nlpipe.io.conllu import FORM, LEMMA, MISC, misc_get, misc_set, parse_string
from nlpipe.models.neural_numpy import softmax
from nlpipe.registry import load_stage

PROB_KEYS = ("SentEndProb", "UPOSProb", "XPOSProb", "LemmaProb", "HeadProb", "NEProb", "PredProb")
TEXT = "Mary saw the blorfed dogs in Paris. They ran away quickly\n\nA second paragraph without an end\n"
WORDS = ["I", "grokked", "the", "blorfs", "quickly", "."]


def conllu(*sentences: list) -> str:
    return "".join("".join(f"{i}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_\n" for i, w in enumerate(s, 1)) + "\n"
                   for s in sentences)


def rows(out: bytes) -> list:
    return [line.split("\t") for line in out.decode("utf-8").splitlines() if line[:1].isdigit()]


def without_probs(table: list) -> list:
    """The rows with every confidence taken out of MISC."""
    out = []
    for r in table:
        r = list(r)
        for key in PROB_KEYS:
            r[MISC] = misc_set(r[MISC], key, None)
        out.append(r)
    return out


def probs_of(table: list, key: str) -> list:
    return [None if misc_get(r[MISC], key) is None else float(misc_get(r[MISC], key)) for r in table]


# -- pos ----------------------------------------------------------------------------------------

def test_pos_probs_add_only_confidences(tmp_path):
    src = tmp_path / "in.conllu"
    src.write_text(conllu(WORDS, ["Paris", "is", "nice", "."]), encoding="utf-8")
    plain, probs = run_cli("pos", str(src)), run_cli("pos", "--probs", str(src))
    assert plain.returncode == 0 and probs.returncode == 0, probs.stderr
    a, b = rows(plain.stdout), rows(probs.stdout)
    assert without_probs(b) == a
    for key in ("UPOSProb", "XPOSProb"):
        values = probs_of(b, key)
        assert all(v is not None and 0.0 <= v <= 1.0 for v in values)
    the = next(r for r in b if r[FORM] == "the")
    assert float(misc_get(the[MISC], "UPOSProb")) > 0.9          # an unambiguous word
    # a made-up word's lemma comes from the rule classifier, a known word's from the lexicon (no score)
    lemma_p = {r[FORM]: p for r, p in zip(b, probs_of(b, "LemmaProb"))}
    assert lemma_p["the"] is None and lemma_p["Paris"] is None
    assert lemma_p["grokked"] is not None and 0.0 < lemma_p["grokked"] <= 1.0
    # three decimals, like HeadProb=
    assert all(len(misc_get(r[MISC], "UPOSProb").split(".")[1]) == 3 for r in b)


@pytest.mark.parametrize("margin", [None, -1.0])
def test_pos_chosen_pair_is_the_most_probable(margin):
    stage = load_stage("pos", "pos-ewt-fast", margin=margin, probs=True)    # the linear tagger
    forms = WORDS + ["Paris", "is", "nice", "."]
    lengths = [len(WORDS), 4]
    plain, _, _, _ = stage.tag_ids(forms, lengths)
    out = stage.second if stage.second is not None else stage.model
    scores = np.full((len(forms), out.num_labels), np.nan, dtype=np.float32)
    pred, _, _, _ = stage.tag_ids(forms, lengths, scores)
    assert (pred == plain).all()                      # asking for the scores changes no tag
    assert not np.isnan(scores).any()                 # every word's row was filled
    p = softmax(stage.prob_scale * scores.astype(np.float64))
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert (p.argmax(axis=1) == pred).all()
    upos, xpos = stage.tag_probs(pred, scores)
    joint = p[np.arange(len(pred)), pred]
    assert (upos >= joint - 1e-6).all() and (xpos >= joint - 1e-6).all() and (upos <= 1 + 1e-6).all()


def test_dfs_scores_hold_each_words_argmax_in_every_branch():
    """First pass (word-type phase), second pass (grouped lead, tag rounds), with and without
    checkpoints: the row handed back is the one the label was the argmax of."""
    from nlpipe.linear.dfs import checkpoint_schedule, tag

    stage = load_stage("pos", "pos-ewt-fast")
    forms = WORDS * 3 + ["Paris", "is", "nice", "."]
    lengths = [len(WORDS)] * 3 + [4]
    layout, atoms = stage.model.layout_flat(forms, lengths)
    for margin in (None, 0.0, 0.75, 3.0):
        for checkpoints in (None, checkpoint_schedule("2,4,8,16,32")):
            scores = np.zeros((len(forms), stage.model.num_labels), dtype=np.float32)
            pred, _ = tag(stage.model, layout, atoms, margin, None, checkpoints, label_scores=scores)
            assert (pred == tag(stage.model, layout, atoms, margin, None, checkpoints)[0]).all()
            assert (scores.argmax(axis=1) == pred).all()
            first = layout.scatter(stage._to_second[pred], stage.second.num_labels)
            s2 = np.zeros((len(forms), stage.second.num_labels), dtype=np.float32)
            pred2, _ = tag(stage.second, layout, atoms, margin, None, checkpoints, first=first, label_scores=s2)
            assert (s2.argmax(axis=1) == pred2).all()


def test_lemma_probabilities_sum_over_the_rules_that_make_the_lemma():
    stage = load_stage("pos", "pos-ewt-fast")
    lem = stage.lemmatizer
    forms = ["I", "grokked", "the", "blorfs"]
    pred, _, layout, atoms = stage.tag_ids(forms, [4])
    tags = layout.scatter(pred, stage.second.num_labels)
    lemmas = lem.lemmatize(forms, pred, layout, atoms, tags)
    choices = lem.rule_choices(forms, pred, layout, atoms, tags)
    assert set(choices) == {1, 3}                     # the lexicon knows "I" and "the"
    got = lem.probabilities(forms, pred, layout, atoms, tags, lemmas, scale=2.0)
    for i, (sc, made) in choices.items():
        e = np.exp(2.0 * (sc - sc.max()))
        want = sum(x for x, m in zip(e, made) if m == lemmas[i]) / e.sum()
        assert got[i] == pytest.approx(want)
        assert made[int(np.argmax(sc))] == lemmas[i]  # the written lemma is the best rule's
    assert got[0] is None and got[2] is None


def test_fit_scale_recovers_a_known_temperature():
    from nlpipe.train.calibrate import fit_scale

    rng = np.random.default_rng(0)
    scores = rng.normal(size=(4000, 5))
    p = softmax(3.0 * scores)
    labels = (p.cumsum(axis=1) > rng.random((4000, 1))).argmax(axis=1)
    gold = np.zeros(scores.shape, dtype=bool)
    gold[np.arange(4000), labels] = True
    assert fit_scale(scores, gold) == pytest.approx(3.0, rel=0.1)


# -- tokenize -------------------------------------------------------------------------------------

def test_tokenize_probs_mark_each_sentence_end(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text(TEXT, encoding="utf-8")
    plain, probs = run_cli("tokenize", str(src)), run_cli("tokenize", "--probs", str(src))
    assert probs.returncode == 0, probs.stderr
    assert without_probs(rows(probs.stdout)) == rows(plain.stdout)
    sentences = [s for s in probs.stdout.decode("utf-8").split("\n\n") if s.strip()]
    assert len(sentences) >= 3
    for s in sentences:
        table = [line.split("\t") for line in s.splitlines() if line[:1].isdigit()]
        values = probs_of(table, "SentEndProb")
        assert values[-1] is not None and all(v is None for v in values[:-1])
        assert 0.5 < values[-1] <= 1.0                # the model ends a sentence above one half
    assert sentences[-1].endswith("SentEndProb=1.000")   # a paragraph's end is certain


def test_sentence_end_probability_folds_in_the_threshold():
    tok = load_stage("tokenize", None)
    tok.threshold = 0.5
    got = tok.end_probs(np.array([[0.0, 1.0, 3.0], [0.0, 2.0, 2.5], [0.0, 4.0, 1.0]]),
                        np.array([False, False, True]))
    np.testing.assert_allclose(got, [1 / (1 + np.exp(-1.5)), 0.5, 1.0])


def test_probs_refused_where_a_model_has_none(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("A dog ran.\n", encoding="utf-8")
    r = run_cli("tokenize", "--method", "rules", "--probs", str(src))
    assert r.returncode == 2 and r.stdout == b""
    assert r.stderr.decode().count("\n") == 1 and "gives no confidences" in r.stderr.decode()


# -- predicates and srl ------------------------------------------------------------------------------

def test_predicates_probs_on_the_predicates_only(tmp_path):
    src = tmp_path / "in.conllu"
    src.write_text(conllu(["The", "dog", "chased", "a", "cat", "and", "barked", "."]), encoding="utf-8")
    plain, probs = run_cli("predicates", str(src)), run_cli("predicates", "--probs", str(src))
    assert probs.returncode == 0, probs.stderr
    a, b = rows(plain.stdout), rows(probs.stdout)
    assert without_probs(b) == a
    marked = [misc_get(r[MISC], "Pred") is not None for r in b]
    values = probs_of(b, "PredProb")
    assert any(marked) and [v is not None for v in values] == marked
    assert all(0.0 <= v <= 1.0 for v in values if v is not None)
    # srl predicting its predicates writes the same; with the input's predicates it adds none
    srl = run_cli("srl", "--probs", str(src))
    assert probs_of(rows(srl.stdout), "PredProb") == values
    given = run_cli("srl", "--probs", "--predicates-from-input", "-", input=plain.stdout)
    assert given.returncode == 0, given.stderr
    assert all(v is None for v in probs_of(rows(given.stdout), "PredProb"))


# -- annotate --------------------------------------------------------------------------------------

def test_annotate_probs_writes_what_the_filters_probs_write(tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("Mary met John in Paris.\n", encoding="utf-8")
    r = run_cli("annotate", "--probs", str(src))
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode("utf-8")
    for key in ("UPOSProb=", "XPOSProb=", "HeadProb=", "NEProb="):
        assert out.count(key) == 6, key
    assert out.count("SentEndProb=") == 1 and out.count("PredProb=") == out.count("Pred=")
    nl = f"{sys.executable} -m nlpipe.cli"
    pipe = subprocess.run(f"{nl} tokenize --probs {src} | {nl} pos --probs | {nl} parse --probs | {nl} ner --probs"
                          f" | {nl} srl --probs --parse-from-input", shell=True, capture_output=True, timeout=600)
    assert pipe.returncode == 0, pipe.stderr
    assert pipe.stdout == r.stdout
    plain = run_cli("annotate", str(src))
    assert without_probs(rows(r.stdout)) == rows(plain.stdout)


def test_annotate_probs_runs_a_stage_without_confidences_with_a_warning(tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("Mary met John.\n", encoding="utf-8")
    r = run_cli("annotate", "--probs", "--stages", "tokenize,pos,parse", "-m", "parse=parse-transition-ewt", str(src))
    assert r.returncode == 0, r.stderr
    assert "parse-transition-ewt gives no confidences" in r.stderr.decode()
    out = r.stdout.decode("utf-8")
    assert "HeadProb=" not in out and out.count("UPOSProb=") == 4
