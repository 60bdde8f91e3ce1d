"""Corpus readers (CoNLL-2003, UNER, CoNLL-2012 props, UP) and SRL frames in MISC (spans end exclusive)."""
from __future__ import annotations

import io
from typing import List

import pytest

from nlpipe.io.conllu import MISC, Sentence, parse_string, read_file
from nlpipe.io.formats import (AlignReport, JoinReport, align_conll2012, doc_key, parse_brackets, read_conll2003,
                               read_conll2012, read_up, read_uner)
from nlpipe.io.misc import Frame, frames_from_misc, frames_to_misc, ne_tags
from nlpipe.tags import spans
from nlpipe.errors import InputError

from conftest import FIXTURES

CORP = FIXTURES / "corpora"


def _read(reader, name: str, **kw):
    path = CORP / name
    with open(path, encoding="utf-8", newline="\n") as f:
        return list(reader(f, str(path), **kw))


def _error(reader, text: str, **kw) -> InputError:
    with pytest.raises(InputError) as e:
        list(reader(io.StringIO(text, newline="\n"), "bad.txt", **kw))
    return e.value


# --------------------------------------------------------------------------------------------
# CoNLL-2003

def test_conll2003_documents_and_bio():
    sents = _read(read_conll2003, "sample.conll2003")
    assert [s.newdoc for s in sents] == [True, True]
    assert sents[0].words[:3] == ["Anna", "met", "Berlin"]
    assert sents[0].pos[1] == "VBD" and sents[0].chunks[1] == "I-VP"
    assert sents[0].tags == ["B-PER", "O", "B-ORG", "I-ORG", "O", "O", "B-LOC", "B-LOC", "O"]
    assert sents[0].line == 3 and sents[1].line == 15
    raw = _read(read_conll2003, "sample.conll2003", bio=False)
    assert raw[0].tags[6:8] == ["I-LOC", "B-LOC"]


@pytest.mark.parametrize("text,line,what", [
    ("A NN I-NP O\nB NN O\n", 2, "expected 4 space-separated columns"),
    ("A NN I-NP O\nB NN I-NP X-PER\n", 2, "bad NE tag 'X-PER'"),
    ("A NN I-NP O\n-DOCSTART- -X- -X- O\n", 2, "-DOCSTART- inside a sentence"),
    ("-DOCSTART- -X- -X- O\nA NN I-NP O\n", 2, "expected a blank line after -DOCSTART-"),
])
def test_conll2003_errors(text, line, what):
    e = _error(read_conll2003, text)
    assert (e.path, e.line) == ("bad.txt", line) and what in e.message


# --------------------------------------------------------------------------------------------
# UNER

def test_uner_reader():
    sents = _read(read_uner, "sample.iob2")
    assert [s.sent_id for s in sents] == ["doc-a-0001", "doc-a-0002"]
    assert sents[0].tags == ["B-PER", "O", "O", "B-LOC", "I-LOC", "O"]
    assert sents[0].comments[0] == "# newdoc id = doc-a"


def test_uner_draft_tags_need_mapping():
    e = _error(read_uner, (CORP / "draft.iob2").read_text())
    assert e.line == 5 and "draft tag 'B-O'" in e.message
    sents = _read(read_uner, "draft.iob2", map_draft=True)
    assert sents[0].tags == ["O", "B-ORG", "O", "O", "O", "O"]


@pytest.mark.parametrize("text,line,what", [
    ("# sent_id = 1\n1\tA\tO\t-\n", 2, "expected 5 (or 3) tab-separated columns, found 4"),
    ("1\tA\tO\t-\t-\nx\tB\tO\t-\t-\n", 2, "token index must be an integer"),
    ("1\tA\tO\t-\t-\n3\tB\tO\t-\t-\n", 2, "expected token index 2"),
    ("1\tA\tO\t-\t-\n# x\n", 2, "comment line inside a sentence"),
    ("1\tA\tPER\t-\t-\n", 1, "bad NE tag 'PER'"),
    ("# sent_id = 1\n", 2, "comment lines with no token lines"),
])
def test_uner_errors(text, line, what):
    e = _error(read_uner, text)
    assert e.line == line and what in e.message


def test_join_uner_by_sent_id():
    report = JoinReport()
    uner = _read(read_uner, "sample.iob2")
    uner[1].words[0] = "Hey"  # a retokenised sentence is skipped, not forced
    out = list(join_uner_fixture(uner, report))
    assert [ne_tags(s) for s in out] == [["O", "O"], ["B-PER", "O", "O", "B-LOC", "I-LOC", "O"],
                                             ["O", "O", "O"]]
    assert out[1].words[3][MISC] == "NE=B-LOC" and out[1].words[4][MISC] == "SpaceAfter=No|NE=I-LOC"
    assert (report.sentences, report.joined, report.mismatched, report.missing) == (3, 1, 1, 1)


def join_uner_fixture(uner, report):
    from nlpipe.io.formats import join_uner

    return join_uner(read_file(str(CORP / "uner-ud.conllu")), uner, report)


def test_ne_tags_bad_misc_names_the_line():
    s = parse_string("# sent_id = 1\n1\ta\t_\t_\t_\t_\t0\troot\t_\tNE=PER\n\n", "x.conllu")[0]
    with pytest.raises(InputError) as e:
        ne_tags(s, "x.conllu")
    assert str(e.value).startswith("x.conllu:2: bad NE tag 'PER'")


# --------------------------------------------------------------------------------------------
# CoNLL-2012 props

def test_conll2012_reader():
    sents = _read(read_conll2012, "sample.gold_conll")
    assert [(doc_key(s.doc_id), s.index, len(s.words)) for s in sents] == [
        ("weblog-blog_one", 0, 8), ("weblog-blog_one", 1, 8), ("email-mail_two", 0, 2),
        ("email-mail_two", 1, 6), ("email-mail_two", 2, 6)]
    first = sents[0]
    assert first.pos[1] == "VBD" and first.parse[0] == "(TOP(S(NP*)" and first.line == 1
    assert first.frames == [Frame(1, "sell", "sell.01", [(0, 1, "ARG0"), (1, 2, "V"), (2, 5, "ARG1"),
                                                         (5, 7, "ARG2")])]
    broke, left = sents[1].frames
    assert (broke.pred, broke.lemma, broke.roleset) == (1, "break", "break_up.08")
    assert (1, 3, "V") in broke.spans and left.pred == 6
    assert sents[2].frames == []


def test_parse_brackets_nested_and_multiple():
    assert parse_brackets(["(A*", "(B*)", "*)", "(C(D*))"], "x", 1) == \
        [(0, 3, "A"), (1, 2, "B"), (3, 4, "C"), (3, 4, "D")]


_BASE = "d\t0\t{}\tw\tNN\t*\t-\t-"


@pytest.mark.parametrize("lines,line,what", [
    (["d\t0\t0\tw\tNN\t*\t-"], 1, "expected at least 8 tab-separated columns"),
    ([_BASE.format(0), _BASE.format(1) + "\t*"], 2, "expected 8 tab-separated columns like the line above"),
    ([_BASE.format(0), _BASE.format("one")], 2, "token index must be an integer, found 'one'"),
    ([_BASE.format(0), _BASE.format(2)], 2, "expected token index 1"),
    (["d\tx\t0\tw\tNN\t*\t-\t-"], 1, "sentence index must be an integer"),
    ([_BASE.format(0), "e\t0\t1\tw\tNN\t*\t-\t-"], 2, "document/sentence changes inside a sentence"),
    ([_BASE.format(0).replace("-\t-", "go\tgo.01") + "\t(V*)", _BASE.format(1) + "\t*)"], 2,
     "unbalanced brackets: ')' in '*)' closes no open span"),
    ([_BASE.format(0).replace("-\t-", "go\tgo.01") + "\t(V*)", _BASE.format(1) + "\t(ARG1*"], 2,
     "unbalanced brackets: span '(ARG1' is never closed"),
    ([_BASE.format(0).replace("-\t-", "go\tgo.01") + "\t(V)"], 1, "bad bracket cell '(V)'"),
    ([_BASE.format(0) + "\t(ARG0*)"], 1, "has no V span"),
])
def test_conll2012_errors(lines, line, what):
    e = _error(read_conll2012, "\n".join(["", "", *lines]) + "\n")
    assert e.path == "bad.txt" and e.line == line + 2 and what in e.message


def test_align_conll2012_to_ud():
    report = AlignReport()
    with open(CORP / "sample.gold_conll", encoding="utf-8") as f:
        pairs = list(align_conll2012(read_file(str(CORP / "align-ud.conllu")),
                                     read_conll2012(f, "sample.gold_conll"), report))
    ids = [s.sent_id for s, _ in pairs]
    assert ids == ["reviews-zzz-0001", "weblog-blog_one-0001", "weblog-blog_one-0002", "email-mail_two-0001",
                   "email-mail_two-0002", "email-mail_two-0003", "email-mail_two-0004"]
    frames = {s.sent_id: fs for s, fs in pairs}
    assert frames["reviews-zzz-0001"] == [] and frames["email-mail_two-0001"] == []
    assert frames["weblog-blog_one-0001"][0].spans == [(0, 1, "ARG0"), (1, 2, "V"), (2, 5, "ARG1"), (5, 7, "ARG2")]
    # "[WORD]" vs "my home": the span on it alone is dropped, the others keep their UD positions
    call = frames["email-mail_two-0002"][0]
    assert call.spans == [(0, 1, "V"), (1, 2, "ARG1"), (2, 3, "ARGM-LOC"), (5, 6, "ARGM-TMP")]
    # one CoNLL-2012 sentence, two UD sentences: ARG0 "Bye now" is in the other sentence
    see = frames["email-mail_two-0004"]
    assert see == [Frame(0, "see", "see.01", [(0, 1, "V"), (1, 2, "ARG1")])]
    assert frames["email-mail_two-0003"] == []
    assert (report.documents, report.documents_without_props, report.documents_unmatched) == (3, 1, 0)
    assert (report.tokens_unaligned, report.predicates, report.predicates_dropped) == (1, 5, 0)
    assert (report.spans, report.spans_dropped, report.spans_trimmed) == (11, 1, 1)
    assert any("ARG0 0-1" in m for m in report.messages)


def test_align_reports_documents_missing_from_ud():
    report = AlignReport()
    ud = parse_string("# newdoc id = other-doc\n1\ta\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    srl = read_conll2012(io.StringIO("g/ewt/weblog/00/x.xml\t0\t0\ta\tDT\t*\tbe\tbe.01\t(V*)\n"), "x")
    assert [fs for _, fs in align_conll2012(ud, srl, report)] == [[]]
    assert (report.documents_unmatched, report.predicates_dropped) == (1, 1)


# --------------------------------------------------------------------------------------------
# SRL frames in MISC

def _sentence(n: int) -> Sentence:
    return parse_string("".join(f"{i}\tw{i}\t_\t_\t_\t_\t_\t_\t_\t_\n" for i in range(1, n + 1)) + "\n")[0]


def test_frames_misc_round_trip():
    s = _sentence(6)
    frames = [Frame(1, "break", "break_up.08", [(0, 1, "ARG0"), (1, 3, "V"), (3, 5, "ARG1")]),
              Frame(5, "w6", "-", [(0, 1, "ARG0"), (5, 6, "V")])]
    frames_to_misc(s, frames)
    assert [w[MISC] for w in s.words] == [
        "SRL=2:B-ARG0,6:B-ARG0", "Pred=break_up.08|SRL=2:B-V", "SRL=2:I-V", "SRL=2:B-ARG1", "SRL=2:I-ARG1",
        "Pred=Y"]
    back = frames_from_misc(s)
    assert back[0] == Frame(1, "break_up", "break_up.08", frames[0].spans)
    assert back[1] == Frame(5, "w6", "-", frames[1].spans)


def test_frames_to_misc_rejects_overlap():
    with pytest.raises(ValueError, match="overlapping"):
        frames_to_misc(_sentence(3), [Frame(0, "x", "x.01", [(0, 1, "V"), (1, 3, "A"), (2, 3, "B")])])


@pytest.mark.parametrize("misc,what", [
    ("SRL=5:B-ARG0", "refers to word 5, which has no Pred= entry"),
    ("SRL=1-ARG0", "bad SRL entry '1-ARG0'"),
])
def test_frames_from_misc_errors(misc, what):
    s = parse_string(f"# sent_id = 1\n1\ta\t_\t_\t_\t_\t_\t_\t_\tPred=Y\n2\tb\t_\t_\t_\t_\t_\t_\t_\t{misc}\n\n")[0]
    with pytest.raises(InputError) as e:
        frames_from_misc(s, "x.conllu")
    assert e.value.line == 3 and what in e.value.message


# --------------------------------------------------------------------------------------------
# Universal PropBank

def test_up_reader():
    sents = _read(read_up, "sample-up.conllu")
    assert [s.sentence.sent_id for s in sents] == ["up-1", "up-2", "up-3", "up-4"]
    sell, car = sents[0].frames
    assert sell == Frame(2, "sell", "sell.01", [(0, 1, "ARG0"), (2, 3, "V"), (4, 5, "ARG1")])
    assert car == Frame(4, "car", "car.01", [(4, 5, "V")])
    assert sents[1].frames == [] and sents[2].frames == []
    assert sents[3].frames == [Frame(2, "timing", "twotime.01", [(0, 1, "V"), (2, 3, "C-V")])]


@pytest.mark.parametrize("extra,line,what", [
    ([["go.01", "V"], ["go.02", "_"]], 2, "2 rolesets but only 1 predicate columns"),
    ([["_", "V", "ARG0"], ["_", "_", "_"]], 1, "label 'V' in predicate column 1"),
])
def test_up_errors(extra, line, what):
    rows = "".join("\t".join([str(i + 1), "w", "_", "_", "_", "_", "_", "_", "_", "_", *cols]) + "\n"
                   for i, cols in enumerate(extra))
    e = _error(read_up, "# sent_id = x\n" + rows + "\n")
    assert e.line == line + 1 and what in e.message


# --------------------------------------------------------------------------------------------
# Corpus checks: the readers reproduce the counts in each PROVENANCE.md

def _corpus_file(corpora, name: str):
    path = corpora / name
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return open(path, encoding="utf-8", newline="\n"), str(path)


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("name,sentences,tokens,docs,entities", [
    ("conll2003/eng.train", 14041, 203621, 946, 7140 + 6600 + 6321 + 3438),
    ("conll2003/eng.testa", 3250, 51362, 216, 1842 + 1837 + 1341 + 922),
    ("conll2003/eng.testb", 3453, 46435, 231, 1661 + 1668 + 1617 + 702),
])
def test_corpus_conll2003_counts(corpora, name, sentences, tokens, docs, entities):
    f, path = _corpus_file(corpora, name)
    with f:
        sents = list(read_conll2003(f, path))
    assert (len(sents), sum(len(s.words) for s in sents), sum(s.newdoc for s in sents),
            sum(len(spans(s.tags)) for s in sents)) == (sentences, tokens, docs, entities)


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("name,draft,sentences,tokens,entities", [
    ("uner_en_ewt/en_ewt-ud-dev.iob2", False, 2001, 25149, {"LOC": 399, "PER": 343, "ORG": 224}),
    ("uner_en_ewt/en_ewt-ud-test.iob2", False, 2077, 25097, {"PER": 449, "ORG": 322, "LOC": 317}),
    ("uner_en_ewt/draft_train_0c7ce0de/en_ewt-ud-train.iob2", True, 12543, 204579,
     {"PER": 2873, "LOC": 2698, "ORG": 1434}),
])
def test_corpus_uner_counts(corpora, name, draft, sentences, tokens, entities):
    from collections import Counter

    f, path = _corpus_file(corpora, name)
    with f:
        sents = list(read_uner(f, path, map_draft=draft))
    types = Counter(label for s in sents for _, _, label in spans(s.tags))
    assert (len(sents), sum(len(s.words) for s in sents), dict(types)) == (sentences, tokens, entities)


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("split,sentences,tokens,predicates,arguments,ud_sentences,dropped", [
    ("dev", 1974, 24969, 4977, 9600, 2001, (0, 2)),
    ("test", 2062, 25009, 4799, 9345, 2077, (0, 0)),
])
def test_corpus_propbank_counts_and_alignment(corpora, split, sentences, tokens, predicates, arguments,
                                              ud_sentences, dropped):
    f, path = _corpus_file(corpora, f"propbank_en_ewt/en_ewt-pb-{split}.gold_conll")
    with f:
        sents = list(read_conll2012(f, path))
    assert (len(sents), sum(len(s.words) for s in sents), sum(len(s.frames) for s in sents),
            sum(len(fr.arguments()) for s in sents for fr in s.frames)) == (sentences, tokens, predicates, arguments)
    ud = corpora / "en_ewt" / f"en_ewt-ud-{split}.conllu"
    if not ud.is_file():
        pytest.skip(f"{ud} not found")
    report = AlignReport()
    pairs = list(align_conll2012(read_file(str(ud)), sents, report))
    assert len(pairs) == ud_sentences and report.documents_unmatched == 0
    # PROVENANCE.md (reconstructed/): dev drops 2 arguments, test none
    assert (report.predicates_dropped, report.spans_dropped) == dropped
    assert sum(len(fr.arguments()) for _, fs in pairs for fr in fs) == arguments - dropped[1]


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("name,sentences,predicates,arguments", [
    ("up_en_ewt/en_ewt-up-dev.conllu", 2002, 4977, 9682),
    ("up_en_ewt/en_ewt-up-test.conllu", 2077, 4799, 9435),
    ("up_en_ewt/reconstructed/en_ewt-up-dev.reconstructed.conllu", 2001, 4977, 9597),
    ("up_en_ewt/reconstructed/en_ewt-up-test.reconstructed.conllu", 2077, 4799, 9345),
])
def test_corpus_up_counts(corpora, name, sentences, predicates, arguments):
    f, path = _corpus_file(corpora, name)
    with f:
        sents = list(read_up(f, path))
    assert (len(sents), sum(len(s.frames) for s in sents),
            sum(len(fr.arguments()) for s in sents for fr in s.frames)) == (sentences, predicates, arguments)
