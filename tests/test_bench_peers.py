"""bench/peers.py: what the peers are given (tokens only) and the spaCy tree conversion."""
import sys
from pathlib import Path

import pytest

from nlpipe.io.conllu import DEPREL, FEATS, FORM, HEAD, LEMMA, MISC, UPOS, XPOS, parse_string, to_string

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
peers = pytest.importorskip("peers")

SENT = (
    "# text = Dogs bark loudly.\n"
    "1\tDogs\tdog\tNOUN\tNNS\tNumber=Plur\t2\tnsubj\t_\t_\n"
    "2\tbark\tbark\tVERB\tVBP\tMood=Ind\t0\troot\t_\t_\n"
    "3\tloudly\tloudly\tADV\tRB\t_\t2\tadvmod\t_\tSpaceAfter=No\n"
    "4\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_\n\n"
)


def test_bare_keeps_only_the_tokens():
    gold = parse_string(SENT)
    out = peers.bare(gold)
    for w, g in zip(out[0].words, gold[0].words):
        assert w[FORM] == g[FORM] and w[MISC] == g[MISC]
        assert [w[c] for c in (LEMMA, UPOS, XPOS, FEATS, HEAD, DEPREL)] == ["_"] * 6
    assert gold[0].words[0][UPOS] == "NOUN"          # the gold copy is untouched
    assert "Dogs" in to_string(out)


def test_spacy_doc_round_trip_keeps_tags_and_tree():
    spacy = pytest.importorskip("spacy", reason="spaCy is a benchmark peer only (make bench-peers)")
    gold = parse_string(SENT)
    doc = peers.sentence_doc(gold[0], spacy.blank("en").vocab)
    assert [t.head.i for t in doc] == [1, 1, 1, 1] and doc[1].dep_ == "ROOT"
    assert doc.text == "Dogs bark loudly. "
    out = peers.bare(gold)
    peers.write_doc(out[0], doc, parse=True)
    assert [w[1:8] for w in out[0].words] == [[w[FORM], "_", w[UPOS], w[XPOS], "_", w[HEAD], w[DEPREL]]
                                              for w in gold[0].words]
