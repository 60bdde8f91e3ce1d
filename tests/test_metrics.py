"""nlpipe.metrics on hand-written fixtures whose right answers are worked out in the comments."""
from __future__ import annotations

import pytest

from nlpipe import metrics
from nlpipe.io.conllu import parse_string, read_file
from nlpipe.io.misc import ne_tags, srl_tags
from nlpipe.tags import detect_scheme
from nlpipe.errors import InputError, NlpipeError

from conftest import FIXTURES

M = FIXTURES / "metrics"


def sents(name):
    return list(read_file(str(M / name)))


def seg(name):
    return metrics.Segmentation(sents(name), name)


def approx(x):
    return pytest.approx(x, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# Score arithmetic

def test_score_fractions_and_empty_counts():
    s = metrics.Score(correct=3, gold=4, system=6)
    assert (s.precision, s.recall, s.f1) == (0.5, 0.75, approx(0.6))
    empty = metrics.Score(0, 0, 0)
    assert (empty.precision, empty.recall, empty.f1, empty.accuracy) == (0.0, 0.0, 0.0, 0.0)
    assert metrics.Score(1, 2, 3) + metrics.Score(1, 1, 1) == metrics.Score(2, 3, 4)


# ---------------------------------------------------------------------------------------------
# POS

def test_pos_accuracy_and_unseen_words():
    # 8 gold words (the MWT "don't" counts as its two words do + n't). Errors in pos_pred:
    # cat UPOS (VERB for NOUN), n't UPOS (ADV for PART), know XPOS (VBP for VB).
    # UPOS 6/8 = 75%, XPOS 7/8 = 87.5%. Train forms lack "cat" and "n't" (it has "not"):
    # unseen UPOS 0/2 (both wrong), unseen XPOS 2/2.
    train = {w[1] for s in sents("pos_train.conllu") for w in s.words}
    r = metrics.tagging_scores(seg("pos_gold.conllu"), seg("pos_pred.conllu"), train)
    assert r["words"] == metrics.Score(8, 8, 8)
    assert r["upos"].f1 == r["upos"].accuracy == 0.75
    assert r["xpos"].f1 == r["xpos"].accuracy == 0.875
    assert (r["unseen_upos"].correct, r["unseen_upos"].gold) == (0, 2)
    assert (r["unseen_xpos"].correct, r["unseen_xpos"].gold) == (2, 2)


def test_pos_with_different_tokenization_is_scored_over_aligned_words():
    # pos_pred_tok merges "sat" + "." into "sat." and writes do / n't as two plain tokens.
    # Gold words 8, system words 7. Aligned: The, cat (same spans); I, know; do, n't (inside the
    # gold MWT, by LCS of forms) = 6; "sat", "." and "sat." stay unaligned.
    # UPOS right on The, I, do, know = 4 -> P 4/7, R 4/8, F1 8/15.
    # XPOS right on The, cat, I, do, n't = 5 -> F1 10/15.
    r = metrics.tagging_scores(seg("pos_gold.conllu"), seg("pos_pred_tok.conllu"))
    assert r["words"] == metrics.Score(6, 8, 7)
    assert r["upos"] == metrics.Score(4, 8, 7, 6)
    assert r["upos"].f1 == approx(8 / 15) and r["upos"].precision == approx(4 / 7)
    assert r["xpos"].f1 == approx(10 / 15)


# ---------------------------------------------------------------------------------------------
# UAS / LAS

def test_attachment_scores_subtypes_and_punctuation():
    # 10 words. Pred errors: dog obj->iobj (label), the(6) head 7->4, "." head 2->4,
    # park obl:in -> obl:tmod (same universal relation: LAS counts it right), "!" punct->discourse.
    # UAS: wrong heads 6 and "." -> 8/10. LAS: also dog and "!" -> 6/10.
    # Without PUNCT ("." and "!"): 8 words; UAS 7/8 (the(6)); LAS 6/8 (the(6), dog).
    r = metrics.attachment_scores(seg("parse_gold.conllu"), seg("parse_pred.conllu"))
    assert r["uas"].accuracy == r["uas"].f1 == 0.8
    assert r["las"].f1 == 0.6
    assert r["uas_nopunct"] == metrics.Score(7, 8, 8, 8)
    assert r["las_nopunct"] == metrics.Score(6, 8, 8, 8)


def test_punctuation_is_decided_by_the_gold_tag_for_aligned_words():
    # The system tags "." as SYM: the gold tag decides, so the system count stays 8.
    pred = sents("parse_pred.conllu")
    pred[0].words[7][3] = "SYM"
    r = metrics.attachment_scores(seg("parse_gold.conllu"), metrics.Segmentation(pred))
    assert r["uas_nopunct"] == metrics.Score(7, 8, 8, 8)


def test_attachment_needs_gold_heads():
    g = metrics.Segmentation(sents("pos_gold.conllu"), "g")
    with pytest.raises(NlpipeError, match="no HEAD"):
        metrics.attachment_scores(g, g)


def test_heads_through_alignment():
    # Gold: "ab" is one MWT of words a b; system has plain tokens a, b. Heads must be compared
    # through the alignment: system b -> a (aligned to gold a) equals gold b -> a.
    gold = parse_string("1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_\n1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n"
                        "2\tb\t_\tX\t_\t_\t1\tdep\t_\t_\n3\tc\t_\tX\t_\t_\t1\tdep\t_\t_\n\n")
    system = parse_string("1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n2\tb\t_\tX\t_\t_\t1\tdep\t_\t_\n"
                          "3\tc\t_\tX\t_\t_\t2\tdep\t_\t_\n\n")
    r = metrics.attachment_scores(metrics.Segmentation(gold), metrics.Segmentation(system))
    assert r["uas"] == metrics.Score(2, 3, 3, 3)  # c attaches to b instead of a


# ---------------------------------------------------------------------------------------------
# Tokenization and alignment

def test_root_of_a_later_sentence_after_a_tokenization_difference():
    # Gold [a bc] [d], system [a b c] [d]: "d" is the root in both, so UAS counts it right even
    # though the word before it ("c" vs "bc") is not aligned. Right heads: a (root) and d = 2.
    gold = parse_string("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tbc\t_\t_\t_\t_\t1\tdep\t_\t_\n\n"
                        "1\td\t_\t_\t_\t_\t0\troot\t_\t_\n\n")
    system = parse_string("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n"
                          "3\tc\t_\t_\t_\t_\t1\tdep\t_\t_\n\n1\td\t_\t_\t_\t_\t0\troot\t_\t_\n\n")
    r = metrics.attachment_scores(metrics.Segmentation(gold), metrics.Segmentation(system))
    assert r["uas"] == metrics.Score(2, 3, 4, 2)


def test_tokenization_with_multiword_token_and_sentence_error():
    # Gold: [I don't(do n't) know .] [Fine .] [Bye now .] -> 9 tokens, 10 words, 3 sentences.
    # Pred: [I do n't know . Fine .] [Bye now.] -> 9 tokens, 9 words, 2 sentences.
    # Tokens right: I know . Fine . Bye = 6 -> F1 12/18. Sentences: only "Bye now." -> 2*1/5.
    # Words: do, n't align inside the gold MWT; "now" and "." do not match "now." -> 8 aligned,
    # F1 16/19.
    r = metrics.tokenization_scores(seg("tok_gold.conllu"), seg("tok_pred.conllu"))
    assert r["tokens"] == metrics.Score(6, 9, 9)
    assert r["sentences"] == metrics.Score(1, 3, 2)
    assert r["sentences"].f1 == approx(0.4)
    assert r["words"] == metrics.Score(8, 10, 9)
    assert r["words"].f1 == approx(16 / 19)


def _words(spec):
    """A one-sentence Segmentation from conll18_ud_eval.py's test notation: "abc a b c" is a
    multiword token abc of words a, b, c; a plain string is a one-word token."""
    lines, n = [], 0
    for item in spec:
        parts = item.split(" ")
        if len(parts) == 1:
            n += 1
            lines.append(f"{n}\t{parts[0]}\t_\t_\t_\t_\t{int(n > 1)}\t_\t_\t_")
        else:
            lines.append(f"{n + 1}-{n + len(parts) - 1}\t{parts[0]}\t_\t_\t_\t_\t_\t_\t_\t_")
            for p in parts[1:]:
                n += 1
                lines.append(f"{n}\t{p}\t_\t_\t_\t_\t{int(n > 1)}\t_\t_\t_")
    return metrics.Segmentation(parse_string("\n".join(lines) + "\n\n"))


# The alignment cases of conll18_ud_eval.py's own unit tests (gold, system, aligned words).
@pytest.mark.parametrize("gold,system,correct", [
    (["a"], ["a"], 1),
    (["a", "b", "c"], ["a", "b", "c"], 3),
    (["abc a b c"], ["a", "b", "c"], 3),
    (["a", "bc b c", "d"], ["a", "b", "c", "d"], 4),
    (["abcd a b c d"], ["ab a b", "cd c d"], 4),
    (["abc a b c", "de d e"], ["a", "bcd b c d", "e"], 5),
    (["abcd"], ["a", "b", "c", "d"], 0),
    (["abc", "d"], ["a", "b", "c", "d"], 1),
    (["a", "bc", "d"], ["a", "b", "c", "d"], 2),
    (["a", "bc b c", "d"], ["a", "b", "cd"], 2),
    (["abc a BX c", "def d EX f"], ["ab a b", "cd c d", "ef e f"], 4),
    (["ab a b", "cd bc d"], ["a", "bc", "d"], 2),
    (["a", "bc b c", "d"], ["ab AX BX", "cd CX a"], 1),
])
def test_alignment_matches_conll18_cases(gold, system, correct):
    g, s = _words(gold), _words(system)
    r = metrics.word_score(metrics.align(g, s))
    assert r == metrics.Score(correct, len(g.rows), len(s.rows))
    assert r.f1 == approx(2 * correct / (len(g.rows) + len(s.rows)))


def test_different_texts_are_an_error_naming_both_files():
    with pytest.raises(NlpipeError, match=r"texts differ at g:\d+ .* and p:\d+") as e:
        metrics.align(metrics.Segmentation(sents("pos_gold.conllu"), "g"),
                      metrics.Segmentation(sents("parse_gold.conllu"), "p"))
    assert "2 sentences in g" in str(e.value)


def test_truncated_prediction_is_an_error():
    g = sents("pos_gold.conllu")
    with pytest.raises(NlpipeError, match=r"p ends early.*\(2 sentences in g, 1 in p\)"):
        metrics.align(metrics.Segmentation(g, "g"), metrics.Segmentation(g[:1], "p"))


def test_spaces_inside_forms_are_ignored():
    gold = parse_string("1\tNew York\t_\t_\t_\t_\t0\troot\t_\t_\n\n")
    system = parse_string("1\tNew\t_\t_\t_\t_\t0\troot\t_\t_\n2\tYork\t_\t_\t_\t_\t1\tflat\t_\t_\n\n")
    r = metrics.tokenization_scores(metrics.Segmentation(gold), metrics.Segmentation(system))
    assert r["tokens"] == metrics.Score(0, 1, 2)
    assert r["sentences"] == metrics.Score(1, 1, 1)


# ---------------------------------------------------------------------------------------------
# Spans (conlleval)

def test_span_f1_on_fixture():
    # Gold chunks: n1 PER(0,2) PER(3,4) LOC(5,8); n2 (IOB1) PER(0,2) PER(2,4) LOC(5,6); n3 ORG(2,4)
    #   -> 7: PER 4, LOC 2, ORG 1.
    # Pred: n1 PER(0,2) [I- after O] LOC(5,7) ORG(7,8) [type change]; n2 PER(0,4) [no B- between
    #   the two persons] LOC(5,6); n3 ORG(1,2) ORG(3,4) [I- after O] -> 7: PER 2, LOC 2, ORG 3.
    # Correct: n1 PER(0,2), n2 LOC(5,6) -> 2. P = R = F1 = 2/7.
    # PER P 1/2 R 1/4 F1 1/3; LOC 1/2 1/2 1/2; ORG 0.
    # Tags equal on 6 + 4 + 2 = 12 of 19 tokens.
    gold = [ne_tags(s) for s in sents("ner_gold.conllu")]
    pred = [ne_tags(s) for s in sents("ner_pred.conllu")]
    overall, types, tags = metrics.span_scores(gold, pred)
    assert overall == metrics.Score(2, 7, 7)
    assert overall.f1 == approx(2 / 7)
    assert types["PER"] == metrics.Score(1, 4, 2) and types["PER"].f1 == approx(1 / 3)
    assert types["LOC"] == metrics.Score(1, 2, 2)
    assert types["ORG"] == metrics.Score(0, 1, 3) and types["ORG"].f1 == 0.0
    assert tags.accuracy == approx(12 / 19)
    assert detect_scheme(gold) == "iob1"


def test_bad_ne_tag_names_file_and_line():
    s = parse_string("# sent_id = 1\n1\tBob\t_\t_\t_\t_\t_\t_\t_\tNE=PER\n\n", "x.conllu")
    with pytest.raises(InputError, match=r"x.conllu:2: bad NE tag 'PER'"):
        ne_tags(s[0], "x.conllu")


# ---------------------------------------------------------------------------------------------
# Predicates and SRL

def test_predicate_scores():
    # Gold predicates s1: 5 say.01, 8 pass.01; s2: 4 leave.01, 6 smile.01; s3: 2 rain.01 -> 5.
    # Pred: 5 say.01, 8 pass.02; 1 Y (spurious), 4 leave.01; 2 rain.01 -> 5; 4 positions right.
    # P = R = F1 = 4/5; senses right on 3 of the 4 found (pass.02); labelled F1 2*3/10.
    r = metrics.predicate_scores(sents("srl_gold.conllu"), sents("srl_pred.conllu"))
    assert r["predicates"] == metrics.Score(4, 5, 5)
    assert r["sense"].accuracy == 0.75
    assert r["labeled"].f1 == approx(0.6)


def test_arguments_join_continuations():
    tags = "B-ARG1 I-ARG1 O B-ARG0 B-V O B-C-ARG1 I-C-ARG1 O".split()
    args = metrics.arguments(tags)
    assert [(a.label, a.pieces) for a in args] == [("ARG1", [(0, 2), (6, 8)]), ("ARG0", [(3, 4)]), ("V", [(4, 5)])]
    # a continuation without its head becomes a plain argument; R- is a label of its own
    assert [(a.label, a.pieces) for a in metrics.arguments("B-C-ARG2 O B-R-ARG0".split())] == \
        [("ARG2", [(0, 1)]), ("R-ARG0", [(2, 3)])]


def test_srl_scores_on_fixture():
    # Propositions are the 5 gold predicates; V is never counted.
    # s1 say: ARG1 = The bill + C-ARG1 "will pass"; pred's C-ARG1 is only "will" -> the whole
    #   discontinuous ARG1 is excess + missed; ARG0 right.            ok 1, excess 1, missed 1
    # s1 pass: ARG1 "The bill" predicted as "bill" (partial span = miss); ARGM-MOD right.
    #                                                                ok 1, excess 1, missed 1
    # s2 leave: ARG0 right; R-ARG0 "who" labelled R-ARG1.            ok 1, excess 1, missed 1
    # s2 smile: no predicted proposition -> its ARG0 is missed.      missed 1
    # s2 Mary: a predicted proposition with no gold one is skipped (srl-eval.pl).
    # s3 rain: only V, predicted the same: a perfect proposition.
    # ok 3, excess 3, missed 4: P 3/6, R 3/7, F1 6/13; 1 perfect proposition of 5.
    overall, roles, props, perfect = metrics.srl_scores(sents("srl_gold.conllu"), sents("srl_pred.conllu"))
    assert overall == metrics.Score(3, 7, 6)
    assert overall.f1 == approx(6 / 13)
    assert (props, perfect) == (5, 1)
    assert roles["ARG0"] == metrics.Score(2, 3, 2) and roles["ARG0"].f1 == approx(0.8)
    assert roles["ARG1"] == metrics.Score(0, 2, 2)
    assert roles["ARGM-MOD"] == metrics.Score(1, 1, 1)
    assert roles["R-ARG0"] == metrics.Score(0, 1, 0) and roles["R-ARG1"] == metrics.Score(0, 0, 1)
    assert "V" not in roles and "C-ARG1" not in roles


def test_discontinuous_argument_right_only_when_all_pieces_match():
    gold = "B-ARG1 O B-C-ARG1".split()
    assert metrics.proposition_counts(gold, gold)[0] == {"ARG1": 1}
    # same outer span but one piece: wrong
    ok, excess, missed = metrics.proposition_counts(gold, "B-ARG1 I-ARG1 I-ARG1".split())
    assert (ok, excess, missed) == ({}, {"ARG1": 1}, {"ARG1": 1})


def test_bad_srl_entry_names_file_and_line():
    s = parse_string("1\tIt\t_\t_\t_\t_\t_\t_\t_\tSRL=9:B-ARG0\n2\trained\t_\t_\t_\t_\t_\t_\t_\tPred=Y\n\n",
                     "y.conllu")
    with pytest.raises(InputError, match=r"y.conllu:1: SRL entry '9:B-ARG0' refers to word 9, which has no Pred="):
        srl_tags(s[0], "y.conllu")


def test_sentence_level_scores_need_the_same_words():
    g = sents("ner_gold.conllu")
    with pytest.raises(NlpipeError, match="g has 3 sentences but p has 2"):
        metrics.check_same_words(g, g[:2], "g", "p")
    other = sents("ner_gold.conllu")
    other[1].words[2][1] = "Rob"
    with pytest.raises(NlpipeError, match=r"sentence 2 differs .*word 3 is 'Rob' where g has 'Bob'"):
        metrics.check_same_words(g, other, "g", "p")


def test_differing_cells_share_of_head_deprel_and_misc():
    a = parse_string("1\tI\t_\t_\t_\t_\t2\tnsubj\t_\t_\n2\tran\t_\t_\t_\t_\t0\troot\t_\tNE=O\n\n")
    b = parse_string("1\tI\t_\t_\t_\t_\t0\tnsubj\t_\t_\n2\tran\t_\t_\t_\t_\t0\troot\t_\tNE=O\n\n")
    assert metrics.differing_cells(a, a) == 0.0
    assert metrics.differing_cells(a, b) == pytest.approx(1 / 6)      # one HEAD of 2 words x 3 columns
    with pytest.raises(ValueError, match="not the same words"):
        metrics.differing_cells(a, parse_string("1\tI\t_\t_\t_\t_\t0\troot\t_\t_\n\n"))
