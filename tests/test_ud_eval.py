"""The CoNLL 2018 shared task metrics (metrics.ud_scores, `nlpipe eval ud`) on hand-written fixtures.

Every expected number is worked out by hand in the comments from the rules of the task's script
``conll18_ud_eval.py``: words aligned by characters, relations without subtypes, universal FEATS
only, a gold LEMMA ``_`` accepting any lemma, CLAS/MLAS/BLEX over content relations, MLAS also over
the functional children (aux cop mark det clf case cc) of each content word.
"""
from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import pytest

from nlpipe import metrics
from nlpipe.errors import NlpipeError
from nlpipe.io.conllu import parse_string, read_file

from conftest import FIXTURES, REPO, run_cli

UD = FIXTURES / "ud"


def seg(name: str) -> metrics.Segmentation:
    return metrics.Segmentation(read_file(str(UD / name)), name)


def conllu(rows: str) -> metrics.Segmentation:
    """A Segmentation from space-separated rows (ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL), one
    sentence per block."""
    lines = []
    for line in rows.strip("\n").split("\n"):
        lines.append("\t".join(line.split() + ["_", "_"]) if line.strip() else "")
    return metrics.Segmentation(parse_string("\n".join(lines) + "\n\n"))


def counts(score: metrics.Score):
    return (score.correct, score.gold, score.system, score.aligned)


def test_universal_features_only_sorted():
    # Typo is a UD feature but not one of the task's universal ones; Number[psor] is layered.
    assert metrics.universal_feats("Typo=Yes|Number=Plur|Case=Nom") == "Case=Nom|Number=Plur"
    assert metrics.universal_feats("Number[psor]=Plur") == ""
    assert metrics.universal_feats("_") == ""
    assert metrics.universal_feats("PronType=Int,Rel") == "PronType=Int,Rel"


def test_all_metrics_same_tokenization():
    # 8 words, same tokens. Differences of tags_pred from tags_gold, word by word:
    #   The      FEATS reordered (same once sorted); det -> nmod:poss (LAS wrong; now a content word)
    #   dogs     FEATS + Typo=Yes (not universal: same); nsubj -> nsubj:pass (same without subtype)
    #   were     Number=Plur -> Sing (UFeats wrong)
    #   barking  LEMMA bark -> barking
    #   loudly   FEATS _ -> Number[psor]=Plur (no universal feature on either side: same)
    #   at       UPOS ADP -> SCONJ
    #   cats     nothing
    #   .        XPOS . -> ','; HEAD 4 -> 7
    # UPOS, XPOS, UFeats, Lemmas, UAS: one error each -> 7/8. AllTags: at, ., were -> 5/8.
    # LAS: The (relation), . (head) -> 6/8.
    # Content words: gold dogs, barking, loudly, cats (4); system also The (nmod) -> 5.
    # CLAS: all 4 gold content words right -> P 4/5, R 4/4.
    # MLAS: dogs loses its functional child The (det in gold, nmod in system); barking's child
    #   were has other FEATS; cats' child at has another UPOS; loudly is right -> 1: P 1/5, R 1/4.
    # BLEX: barking's lemma is wrong -> 3: P 3/5, R 3/4.
    r = metrics.ud_scores(seg("tags_gold.conllu"), seg("tags_pred.conllu"))
    assert list(r) == [m.lower() for m in metrics.UD_METRICS]
    assert counts(r["tokens"]) == (8, 8, 8, None)
    assert counts(r["sentences"]) == (1, 1, 1, None)
    assert counts(r["words"]) == (8, 8, 8, None)
    for name in ("upos", "xpos", "ufeats", "lemmas", "uas"):
        assert counts(r[name]) == (7, 8, 8, 8), name
        assert r[name].f1 == r[name].accuracy == 7 / 8
    assert counts(r["alltags"]) == (5, 8, 8, 8)
    assert counts(r["las"]) == (6, 8, 8, 8)
    assert counts(r["clas"]) == (4, 4, 5, 4)
    assert counts(r["mlas"]) == (1, 4, 5, 4)
    assert counts(r["blex"]) == (3, 4, 5, 4)
    assert (r["clas"].precision, r["clas"].recall, r["clas"].accuracy) == (4 / 5, 1.0, 1.0)
    assert r["clas"].f1 == pytest.approx(8 / 9)
    assert r["mlas"].f1 == pytest.approx(2 / 9)
    assert r["mlas"].accuracy == 1 / 4
    assert r["blex"].f1 == pytest.approx(2 / 3)


def test_different_tokenization_multiword_token_and_missed_sentence_boundary():
    # Text "We can't go. Stay home." as characters: Wecan'tgo.Stayhome. (19).
    # Gold: [We can't(ca n't) go .] [Stay home .] -> 7 tokens, 8 words, 2 sentences [0,10) [10,19).
    # Pred: [We can't(can n't) go . Stay home.] -> 6 tokens, 7 words, 1 sentence [0,19); Stay is
    #   attached to go (parataxis) instead of being a root.
    # Tokens right: We can't go . Stay = 5/7 gold, 5/6 pred. Sentences: none right.
    # Words: We, go, ., Stay align by span; inside can't the LCS of (ca, n't) and (can, n't)
    #   aligns n't; home/. and home. do not -> 5 aligned.
    # UPOS, XPOS, UFeats (all _), AllTags, Lemmas: the 5 aligned words agree -> 5.
    # UAS/LAS: Stay's head (root in gold, go in pred) is wrong -> 4.
    # Content words: gold We(nsubj) n't(advmod) go(root) Stay(root) home(advmod) = 5;
    #   pred We n't go Stay(parataxis) home.(advmod) = 5; aligned gold content words: 4.
    # CLAS: We, n't, go right -> 3. BLEX: the same 3 (lemmas agree).
    # MLAS: go's functional child is ca in gold and can in pred, which is not aligned -> go wrong;
    #   We, n't right -> 2.
    r = metrics.ud_scores(seg("tok_gold.conllu"), seg("tok_pred.conllu"))
    assert counts(r["tokens"]) == (5, 7, 6, None)
    assert counts(r["sentences"]) == (0, 2, 1, None)
    assert r["sentences"].f1 == 0.0
    assert counts(r["words"]) == (5, 8, 7, None)
    assert r["words"].f1 == pytest.approx(2 / 3)
    for name in ("upos", "xpos", "ufeats", "alltags", "lemmas"):
        assert counts(r[name]) == (5, 8, 7, 5), name
        assert r[name].accuracy == 1.0
    assert counts(r["uas"]) == counts(r["las"]) == (4, 8, 7, 5)
    assert r["las"].f1 == pytest.approx(8 / 15)
    assert counts(r["clas"]) == counts(r["blex"]) == (3, 5, 5, 4)
    assert counts(r["mlas"]) == (2, 5, 5, 4)
    assert r["mlas"].accuracy == 0.5


GOLD_LEMMAS = """
1 Hi    _     INTJ  UH _ 0 root
2 there there ADV   RB _ 1 advmod
3 !     _     PUNCT .  _ 1 punct
"""


def test_gold_lemma_underscore_accepts_any_lemma():
    # Hi and ! have LEMMA _ in gold: any predicted lemma counts as right. "there" needs "there";
    # a predicted "_" is no wildcard -> Lemmas 2/3. BLEX over the content words Hi, there -> 1/2.
    system = conllu("""
1 Hi    hello INTJ  UH _ 0 root
2 there _     ADV   RB _ 1 advmod
3 !     !     PUNCT .  _ 1 punct
""")
    r = metrics.ud_scores(conllu(GOLD_LEMMAS), system)
    assert counts(r["lemmas"]) == (2, 3, 3, 3)
    assert counts(r["blex"]) == (1, 2, 2, 2)


GOLD_SUBTYPES = """
1 It        it        PRON  PRP Case=Nom|Number=Sing 3 nsubj:pass
2 was       be        AUX   VBD Tense=Past           3 aux:pass
3 eaten     eat       VERB  VBN VerbForm=Part        0 root
4 yesterday yesterday NOUN  NN  Number=Sing          3 obl:tmod
5 .         .         PUNCT .   _                    3 punct
"""


@pytest.mark.parametrize("was,yesterday,clas,mlas,las", [
    # subtypes dropped: nsubj = nsubj:pass, aux = aux:pass (was is still a functional child), obl:npmod
    # = obl:tmod. Content words It, eaten, yesterday: all right.
    ("aux", "obl:npmod", 3, 3, 5),
    # was as cop: still functional (not content) so CLAS is 3/3, but eaten's child differs -> MLAS 2.
    ("cop", "obl", 3, 2, 4),
    # yesterday as nmod:tmod: a content relation of another base -> CLAS and MLAS 2, LAS 4.
    ("aux:pass", "nmod:tmod", 2, 2, 4),
    # was as a content relation (advmod): one more system content word, eaten loses its child.
    ("advmod", "obl", 3, 2, 4),
])
def test_content_and_functional_relations_without_subtypes(was, yesterday, clas, mlas, las):
    system = conllu(GOLD_SUBTYPES.replace("aux:pass", was).replace("obl:tmod", yesterday)
                    .replace("nsubj:pass", "nsubj"))
    r = metrics.ud_scores(conllu(GOLD_SUBTYPES), system)
    system_content = 4 if was == "advmod" else 3
    assert counts(r["clas"]) == (clas, 3, system_content, 3)
    assert counts(r["mlas"]) == (mlas, 3, system_content, 3)
    assert counts(r["blex"]) == (clas, 3, system_content, 3)   # lemmas all agree: BLEX = CLAS
    assert counts(r["las"]) == (las, 5, 5, 5)


def test_punct_and_unknown_relations_are_neither_content_nor_functional():
    # "." is punct: not counted in CLAS. "dep" is content; "_" (no relation) is neither.
    gold = conllu("""
1 Go go VERB VB _ 0 root
2 on on ADP  IN _ 1 dep
3 .  .  PUNCT . _ 1 punct
""")
    system = conllu("""
1 Go go VERB VB _ 0 root
2 on on ADP  IN _ 1 _
3 .  .  PUNCT . _ 1 punct
""")
    r = metrics.ud_scores(gold, system)
    assert counts(r["clas"]) == (1, 2, 1, 2)    # Go right; on (dep in gold) has no relation in pred
    assert counts(r["las"]) == (2, 3, 3, 3)


def test_a_system_without_heads_scores_zero_attachment():
    # HEAD _ in the prediction (a tagger's output) is wrong everywhere but still scores the tags.
    gold = conllu(GOLD_LEMMAS)
    system = conllu(GOLD_LEMMAS.replace(" 0 root", " _ _").replace(" 1 advmod", " _ _").replace(" 1 punct", " _ _"))
    r = metrics.ud_scores(gold, system)
    assert counts(r["upos"]) == (3, 3, 3, 3)
    assert counts(r["uas"]) == (0, 3, 3, 3)
    assert counts(r["clas"]) == (0, 2, 0, 2)


def test_gold_without_heads_is_an_error():
    gold = conllu(GOLD_LEMMAS.replace(" 1 advmod", " _ _"))
    with pytest.raises(NlpipeError, match="has no HEAD"):
        metrics.ud_scores(gold, conllu(GOLD_LEMMAS))


# ---------------------------------------------------------------------------------------------
# Streaming: both files are read a sentence at a time

def _copies(name: str, n: int, handed: list = None):
    """The fixture's sentences n times over, handed out one at a time (``handed[0]`` counts them)."""
    sents = list(read_file(str(UD / name)))
    for _ in range(n):
        for s in sents:
            if handed is not None:
                handed[0] += 1
            yield s


def test_streamed_scores_of_copies_are_the_sums_of_one_copy():
    # Each copy of tok_gold/tok_pred aligns on its own (a copy's text ends with "home." in both), so
    # every count is 300 times that of test_different_tokenization_multiword_token_and_missed_...:
    # the multiword token can't, the missed sentence boundary and the head across it in every copy.
    n = 300
    r = metrics.aligned_scores(_copies("tok_gold.conllu", n), _copies("tok_pred.conllu", n), "g", "p")
    one = {"tokens": (5, 7, 6, None), "sentences": (0, 2, 1, None), "words": (5, 8, 7, None),
           "upos": (5, 8, 7, 5), "lemmas": (5, 8, 7, 5), "uas": (4, 8, 7, 5), "las": (4, 8, 7, 5),
           "clas": (3, 5, 5, 4), "blex": (3, 5, 5, 4), "mlas": (2, 5, 5, 4)}
    for name, c in one.items():
        assert counts(r[name]) == tuple(None if x is None else n * x for x in c), name
    # same tokenization (test_all_metrics_same_tokenization) one sentence after another
    r = metrics.aligned_scores(_copies("tags_gold.conllu", n), _copies("tags_pred.conllu", n), "g", "p")
    assert counts(r["alltags"]) == (5 * n, 8 * n, 8 * n, 8 * n)
    assert counts(r["mlas"]) == (1 * n, 4 * n, 5 * n, 4 * n)


@pytest.mark.parametrize("n", [10, 2000])
def test_the_aligner_holds_a_bounded_window(n):
    # Whatever the number of copies, the aligner holds the same few words, characters and system
    # sentences, and it has read the gold file only a sentence or two beyond the system one.
    handed = [0]
    stream = None
    most = {"words": 0, "text": 0, "waiting": 0, "ahead": 0}
    systems = [0]

    def look(_):
        g, s = stream.gold, stream.system
        for key, value in (("words", len(g.words) + len(s.words)), ("text", len(g.text) + len(s.text)),
                           ("waiting", len(stream.waiting)), ("ahead", handed[0] - 2 * systems[0])):
            most[key] = max(most[key], value)

    def on_system(sentence):
        systems[0] += 1
        look(sentence)

    stream = metrics._Stream(_copies("tok_gold.conllu", n, handed), _copies("tok_pred.conllu", n), "g", "p",
                             look, on_system)
    stream.run()
    assert systems[0] == n and handed[0] == 2 * n
    # a copy is 8 gold and 7 system words, 19 characters (in each file), one system sentence
    assert most["words"] <= 8 + 7 and most["text"] <= 2 * 19
    assert most["waiting"] == 1 and most["ahead"] <= 2


def test_eval_ud_names_the_lines_where_a_late_text_differs(tmp_path):
    # Three copies; in the third, the prediction spells "Stax" for "Stay": one line, exit 2, naming
    # the line of that token in each file, the text from there and both files' sentence counts.
    gold = tmp_path / "gold.conllu"
    pred = tmp_path / "pred.conllu"
    gold.write_text((UD / "tok_gold.conllu").read_text() * 3)
    text = (UD / "tok_pred.conllu").read_text() * 3
    cut = text.rindex("\tStay\t")
    pred.write_text(text[:cut] + "\tStax\t" + text[cut + 6:])
    gold_line = [i for i, line in enumerate(gold.read_text().split("\n"), 1) if "\tStay\t" in line][2]
    pred_line = [i for i, line in enumerate(pred.read_text().split("\n"), 1) if "\tStax\t" in line][0]
    r = run_cli("eval", "ud", "--gold", str(gold), "--pred", str(pred))
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"texts differ at {gold}:{gold_line} ('yhome.') and {pred}:{pred_line} ('xhome.')" in err
    assert "(6 sentences in" in err and ", 3 in" in err


# ---------------------------------------------------------------------------------------------
# The command

TABLE_TAGS = """\
Metric     | Precision |    Recall |  F1 Score | AligndAcc
-----------+-----------+-----------+-----------+-----------
Tokens     |    100.00 |    100.00 |    100.00 |
Sentences  |    100.00 |    100.00 |    100.00 |
Words      |    100.00 |    100.00 |    100.00 |
UPOS       |     87.50 |     87.50 |     87.50 |     87.50
XPOS       |     87.50 |     87.50 |     87.50 |     87.50
UFeats     |     87.50 |     87.50 |     87.50 |     87.50
AllTags    |     62.50 |     62.50 |     62.50 |     62.50
Lemmas     |     87.50 |     87.50 |     87.50 |     87.50
UAS        |     87.50 |     87.50 |     87.50 |     87.50
LAS        |     75.00 |     75.00 |     75.00 |     75.00
CLAS       |     80.00 |    100.00 |     88.89 |    100.00
MLAS       |     20.00 |     25.00 |     22.22 |     25.00
BLEX       |     60.00 |     75.00 |     66.67 |     75.00
"""


def test_eval_ud_prints_the_table_on_stdout():
    # The numbers of test_all_metrics_same_tokenization in percent (e.g. CLAS F1 8/9 = 88.89).
    r = run_cli("eval", "ud", "--gold", str(UD / "tags_gold.conllu"), "--pred", str(UD / "tags_pred.conllu"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == TABLE_TAGS


def test_eval_ud_json():
    # test_different_tokenization_...: Words P 5/7 R 5/8; MLAS 2 of 5 gold, 5 predicted, 4 aligned.
    r = run_cli("eval", "ud", "--gold", str(UD / "tok_gold.conllu"), "--pred", str(UD / "tok_pred.conllu"),
                "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["stage"] == "ud"
    m = out["metrics"]
    assert list(m) == sorted(m) and set(m) == {name.lower() for name in metrics.UD_METRICS}
    assert m["words"]["precision"] == pytest.approx(100 * 5 / 7)
    assert m["words"]["recall"] == pytest.approx(100 * 5 / 8)
    assert "aligned" not in m["words"] and "aligned_accuracy" not in m["tokens"]
    assert {k: m["mlas"][k] for k in ("correct", "gold", "pred", "aligned")} == \
        {"correct": 2, "gold": 5, "pred": 5, "aligned": 4}
    assert m["mlas"]["aligned_accuracy"] == 50.0
    assert r.stderr.decode().startswith("Metric     | Precision")   # the table goes to stderr with --json


def test_eval_ud_needs_a_predicted_file():
    r = run_cli("eval", "ud", "--gold", str(UD / "tags_gold.conllu"))
    assert r.returncode == 2
    assert b"give --pred" in r.stderr


# ---------------------------------------------------------------------------------------------
# en_ewt test against the shared task's script

# conll18_ud_eval.py (v1.2, ufal/conll2018) -c on en_ewt-ud-test.conllu and the raw text with paragraph
# breaks (nlpipe.runtime.evaluate.raw_text) through
#   nlpipe annotate --stages tokenize,pos,parse RAW.txt > PRED.conllu
#   python conll18_ud_eval.py -c en_ewt-ud-test.conllu PRED.conllu
# (correct, gold, predicted, aligned). They change when a shipped tokenize/pos/parse model changes
# (tests/test_shipped_outputs.py says so too): recorded again for the pos-ewt of 2026-11-25 (ac94fcd), which
# writes FEATS and LEMMA (issue 24's table before it: LAS 86.04, MLAS 6.78), with the script's copy
# in stanza 1.4.2 (stanza/utils/conll18_ud_eval.py: v1.2 plus enhanced-dependency rows, which are
# not compared); UFeats, AllTags and MLAS again, with the same copy, when the shipped parsers began to
# re-decide FEATS after the parse (2026-11-27, f49c06f); every row again, with the same copy, when the BiLSTM
# tagger became pos-ewt (2026-11-29, f1300c7); Lemmas and BLEX when its lemmatizer
# began to keep web addresses (2026-11-29, a06e7ea); every row from Words on when the tokenizer's multiword
# tokens were learned again ("its" = "it" + "s" in context) and the lemmatizer began to give lower-case
# and all-capital forms the lemma of their other writings (2026-11-29, 843ae39); UFeats, AllTags and MLAS when
# pos-ewt's FEATS began to follow its tag (2026-11-29, 9cc8494).
EWT_RAW_OFFICIAL = {
    "tokens": (24600, 24740, 24740, None), "sentences": (1768, 2077, 1910, None),
    "words": (24913, 25094, 25095, None), "upos": (24034, 25094, 25095, 24913),
    "xpos": (23910, 25094, 25095, 24913), "ufeats": (24185, 25094, 25095, 24913),
    "alltags": (23629, 25094, 25095, 24913), "lemmas": (24314, 25094, 25095, 24913),
    "uas": (22168, 25094, 25095, 24913), "las": (21614, 25094, 25095, 24913),
    "clas": (12501, 15176, 15137, 15044), "mlas": (11858, 15176, 15137, 15044),
    "blex": (12166, 15176, 15137, 15044),
}

# The same script (-c, en_ewt test as gold) on two files made by _with_lemmas_and_features (filled
# LEMMA and FEATS, changes every k-th word) so that UFeats, Lemmas, MLAS and BLEX are far from 0:
# "raw" from PRED.conllu above, "gold" from en_ewt-ud-test.conllu itself; each written with
# nlpipe.io.conllu.to_string and scored as
#   python conll18_ud_eval.py -c en_ewt-ud-test.conllu DERIVED.conllu
EWT_DERIVED_OFFICIAL = {
    "raw": {"ufeats": (21530, 25094, 25095, 24913), "alltags": (20668, 25094, 25095, 24913),
            "lemmas": (18332, 25094, 25095, 24913), "uas": (21590, 25094, 25095, 24913),
            "las": (18826, 25094, 25095, 24913), "clas": (10951, 15176, 16193, 15044),
            "mlas": (7727, 15176, 16193, 15044), "blex": (7316, 15176, 16193, 15044)},
    "gold": {"ufeats": (21786, 25094, 25094, 25094), "alltags": (21786, 25094, 25094, 25094),
             "lemmas": (18454, 25094, 25094, 25094), "uas": (24438, 25094, 25094, 25094),
             "las": (21855, 25094, 25094, 25094), "clas": (13225, 15176, 16176, 15176),
             "mlas": (9828, 15176, 16176, 15176), "blex": (8804, 15176, 16176, 15176)},
}


def _with_lemmas_and_features(sentences, gold):
    """Every word gets LEMMA = lower-cased FORM and FEATS = the first FEATS of that form in
    ``gold`` (else ``_``); then by running word number k: k % 7 == 0 adds Typo=Yes, k % 11 == 0 drops
    the first feature, k % 13 == 0 writes LEMMA ``_``, k % 5 == 0 takes the gold lemma of the form,
    k % 17 == 0 sets DEPREL to ``dep``, k % 19 == 0 to ``nmod:poss``, and k % 23 == 0 moves the head
    to the grandparent when that is no root (the tree stays a tree)."""
    from nlpipe.io.conllu import DEPREL, FEATS, FORM, HEAD, LEMMA

    feats, lemmas = {}, {}
    for s in gold:
        for w in s.words:
            feats.setdefault(w[FORM], w[FEATS])
            lemmas.setdefault(w[FORM], w[LEMMA])
    k = 0
    for s in sentences:
        words = s.words
        for w in words:
            k += 1
            w[LEMMA] = lemmas.get(w[FORM], "_") if k % 5 == 0 else w[FORM].lower()
            f = [] if feats.get(w[FORM], "_") == "_" else feats[w[FORM]].split("|")
            if k % 7 == 0:
                f.append("Typo=Yes")
            if k % 11 == 0 and f:
                f.pop(0)
            w[FEATS] = "|".join(f) or "_"
            if k % 13 == 0:
                w[LEMMA] = "_"
            if k % 17 == 0:
                w[DEPREL] = "dep"
            if k % 19 == 0:
                w[DEPREL] = "nmod:poss"
            h = int(w[HEAD])
            if k % 23 == 0 and h and words[h - 1][HEAD] != "0":
                w[HEAD] = words[h - 1][HEAD]
    return sentences


@pytest.mark.slow
@pytest.mark.corpus
def test_eval_ud_agrees_with_the_shared_task_script_on_ewt(corpora, tmp_path):
    from nlpipe.io.conllu import to_string
    from nlpipe.runtime.evaluate import raw_text

    gold_path = corpora / "en_ewt" / "en_ewt-ud-test.conllu"
    if not gold_path.is_file():
        pytest.skip(f"{gold_path} not found")
    gold = list(read_file(str(gold_path)))
    raw = tmp_path / "raw.txt"
    raw.write_text(raw_text(gold), encoding="utf-8")
    annotated = subprocess.run([sys.executable, "-m", "nlpipe", "annotate", "--stages", "tokenize,pos,parse",
                                str(raw)], capture_output=True, timeout=900, cwd=REPO)
    assert annotated.returncode == 0, annotated.stderr.decode(errors="replace")[-2000:]
    pred = tmp_path / "pred.conllu"
    pred.write_bytes(annotated.stdout)

    r = run_cli("eval", "ud", "--gold", str(gold_path), "--pred", str(pred), "--json")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)["metrics"]
    for name, (correct, g, p, aligned) in EWT_RAW_OFFICIAL.items():
        assert (m[name]["correct"], m[name]["gold"], m[name]["pred"], m[name].get("aligned")) == \
            (correct, g, p, aligned), name
        assert m[name]["f1"] == pytest.approx(float(Fraction(200 * correct, g + p)))
    # the script's table (F1 to 0.01)
    for name, f1 in (("tokens", 99.43), ("sentences", 88.69), ("words", 99.28), ("upos", 95.77),
                     ("xpos", 95.28), ("ufeats", 96.38), ("lemmas", 96.89), ("las", 86.13), ("clas", 82.48),
                     ("mlas", 78.24), ("blex", 80.27)):
        assert round(m[name]["f1"], 2) == f1, name

    derived = {"raw": _with_lemmas_and_features(list(read_file(str(pred))), gold),
               "gold": _with_lemmas_and_features(list(read_file(str(gold_path))), gold)}
    g_seg = metrics.Segmentation(gold, str(gold_path))
    for which, sents in derived.items():
        path = tmp_path / f"{which}.conllu"
        path.write_text(to_string(sents), encoding="utf-8")
        r = metrics.ud_scores(g_seg, metrics.Segmentation(read_file(str(path)), str(path)))
        for name, expected in EWT_DERIVED_OFFICIAL[which].items():
            assert counts(r[name]) == expected, (which, name)
