"""nlpipe.tags: split, spans (end exclusive), conversions, scheme detection, validity and the repair.

Expectations are worked out by hand from conlleval's chunk rules; the brute-force checks enumerate
every sequence of up to four tags.
"""
import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st

from nlpipe.tags import (bio_constraints, detect_scheme, follows, is_tag, is_valid, label_order, repair,
                         repair_ids, spans, spans_to_bio, spans_to_bioes, split_tag, to_bio, to_bioes)

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def test_split_tag():
    assert split_tag("B-PER") == ("B", "PER")
    assert split_tag("I-ARGM-TMP") == ("I", "ARGM-TMP")   # only the first "-" separates
    assert split_tag("S-LOC") == ("S", "LOC")
    assert split_tag("O") == ("O", "")
    for bad in ("PER", "X-PER", "B-", "BI-PER", "", "o"):
        with pytest.raises(ValueError):
            split_tag(bad)


def test_label_order_groups_by_type():
    assert sorted(["I-PER", "B-PER", "B-LOC", "I-LOC", "B-C-ARG0"], key=label_order) == \
        ["B-C-ARG0", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def test_is_tag():
    assert is_tag("O") and is_tag("E-LOC") and is_tag("B-C-ARG1")
    assert not is_tag("PER") and not is_tag("B-") and not is_tag("X-PER")
    assert not is_tag("S-LOC", prefixes="BI")


@pytest.mark.parametrize("tags,expected", [
    ("B-PER I-PER O", [(0, 2, "PER")]),
    ("I-PER I-PER O", [(0, 2, "PER")]),                       # I- at the start starts a span
    ("O I-PER", [(1, 2, "PER")]),                              # closed at the end of the sequence
    ("B-LOC I-LOC I-ORG", [(0, 2, "LOC"), (2, 3, "ORG")]),    # a label change splits
    ("I-PER B-PER I-PER", [(0, 1, "PER"), (1, 3, "PER")]),    # IOB1: B- between same-label spans
    ("B-PER B-PER", [(0, 1, "PER"), (1, 2, "PER")]),
    ("S-PER S-PER B-LOC E-LOC O", [(0, 1, "PER"), (1, 2, "PER"), (2, 4, "LOC")]),
    ("B-LOC E-LOC I-LOC", [(0, 2, "LOC"), (2, 3, "LOC")]),    # after E- anything starts anew
    ("O E-PER", [(1, 2, "PER")]),
    ("S-X I-X", [(0, 1, "X"), (1, 2, "X")]),
    ("O O", []),
    ("", []),
])
def test_spans_follow_conlleval(tags, expected):
    assert spans(tags.split()) == expected


def test_spans_to_tags():
    sp = [(0, 1, "PER"), (2, 5, "LOC"), (5, 7, "LOC")]
    assert spans_to_bio(sp, 8) == ["B-PER", "O", "B-LOC", "I-LOC", "I-LOC", "B-LOC", "I-LOC", "O"]
    assert spans_to_bioes(sp, 8) == ["S-PER", "O", "B-LOC", "I-LOC", "E-LOC", "B-LOC", "E-LOC", "O"]


def test_iob1_to_bio():
    iob1 = ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG", "I-MISC"]
    assert to_bio(iob1) == ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "B-ORG", "B-MISC"]


def test_bio_bioes_both_ways():
    bio = ["B-PER", "I-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC"]
    bioes = ["B-PER", "I-PER", "E-PER", "O", "S-LOC", "B-LOC", "E-LOC"]
    assert to_bioes(bio) == bioes
    assert to_bio(bioes) == bio
    assert to_bioes(["I-PER", "O", "I-LOC", "I-LOC"]) == ["S-PER", "O", "B-LOC", "E-LOC"]   # from IOB1
    # an invalid BIOES sequence keeps its conlleval spans: S-X then I-X are two spans
    assert to_bio(["S-X", "I-X"]) == ["B-X", "B-X"]


def test_detect_scheme():
    assert detect_scheme([["B-X", "I-X", "O"], ["O"]]) == "bio"
    assert detect_scheme([["B-X", "I-X"], ["O", "I-Y"]]) == "iob1"
    assert detect_scheme([["I-X", "I-Y"]]) == "iob1"
    assert detect_scheme([["B-X", "I-X"], ["S-Y"]]) == "bioes"
    assert detect_scheme([["O", "B-X", "E-X"]]) == "bioes"
    assert detect_scheme([]) == "bio"


@pytest.mark.parametrize("tags,bio,bioes", [
    ("B-X I-X O B-Y", True, False),
    ("B-X E-X O S-Y", False, True),
    ("I-X", False, False),
    ("O I-X", False, False),
    ("B-X I-Y", False, False),
    ("B-X I-X I-X", True, False),
    ("B-X I-X E-X", False, True),
    ("B-X", True, False),
    ("S-X", False, True),
    ("O O", True, True),
])
def test_validity(tags, bio, bioes):
    assert is_valid(tags.split(), "bio") == bio
    assert is_valid(tags.split(), "bioes") == bioes


def test_constraints_forbid_i_after_o_and_at_start():
    allowed, start = bio_constraints(LABELS)
    i = {t: n for n, t in enumerate(LABELS)}
    assert not allowed[i["O"], i["I-PER"]]
    assert not allowed[i["B-LOC"], i["I-PER"]]
    assert allowed[i["B-PER"], i["I-PER"]] and allowed[i["I-PER"], i["I-PER"]]
    assert allowed[i["I-PER"], i["B-PER"]] and allowed[i["O"], i["B-LOC"]]
    assert not start[i["I-LOC"]] and start[i["B-LOC"]] and start[i["O"]]
    assert not follows(None, "I-PER") and follows("I-PER", "I-PER") and not follows("O", "I-PER")


@pytest.mark.parametrize("tags, want", [
    (["I-PER", "I-PER", "O"], ["B-PER", "I-PER", "O"]),
    (["O", "I-LOC", "B-PER", "I-LOC", "I-LOC"], ["O", "B-LOC", "B-PER", "B-LOC", "I-LOC"]),
    (["B-PER", "I-PER", "I-LOC"], ["B-PER", "I-PER", "B-LOC"]),
    (["O", "O"], ["O", "O"]),
    ([], []),
])
def test_repair(tags, want):
    assert repair(tags) == want
    ids = np.array([[LABELS.index(t) for t in tags]], dtype=np.int64).reshape(1, len(tags))
    got = repair_ids(ids, np.array([len(tags)]), LABELS)
    assert [LABELS[i] for i in got[0]] == want


def test_repair_ids_leaves_an_i_without_its_b_label():
    labels = ["O", "I-X"]
    assert repair_ids(np.array([[0, 1]]), np.array([2]), labels).tolist() == [[0, 1]]


def _all_sequences(max_len=4):
    for n in range(1, max_len + 1):
        yield from itertools.product(LABELS, repeat=n)


def test_repair_brute_force():
    """Every BIO sequence of up to 4 tags: the repair gives a valid sequence with the same labels
    and the same spans, leaves valid ones alone, agrees with to_bio and with the id version."""
    for seq in _all_sequences():
        seq = list(seq)
        out = repair(seq)
        assert is_valid(out, "bio"), seq
        assert [t[2:] for t in out] == [t[2:] for t in seq]
        assert spans(out) == spans(seq)
        assert out == to_bio(seq)
        if is_valid(seq, "bio"):
            assert out == seq
        ids = np.array([[LABELS.index(t) for t in seq]])
        assert [LABELS[i] for i in repair_ids(ids, np.array([len(seq)]), LABELS)[0]] == out


def test_bioes_brute_force():
    """Every sequence of up to 4 BIOES tags: to_bioes is valid BIOES with the same spans."""
    tags = ["O", "B-X", "I-X", "E-X", "S-X", "B-Y", "E-Y"]
    for n in range(1, 5):
        for seq in itertools.product(tags, repeat=n):
            out = to_bioes(seq)
            assert is_valid(out, "bioes") and spans(out) == spans(seq)
            assert is_valid(to_bio(seq), "bio") and spans(to_bio(seq)) == spans(seq)


_pieces = st.lists(st.tuples(st.integers(1, 3), st.sampled_from(["PER", "LOC", None])), max_size=8)


@given(_pieces)
def test_span_encodings_round_trip(pieces):
    # pieces: (length, label or gap) laid out left to right -> non-overlapping spans
    sp, pos = [], 0
    for length, label in pieces:
        if label:
            sp.append((pos, pos + length, label))
        pos += length
    bio = spans_to_bio(sp, pos)
    assert spans(bio) == sp
    assert spans(spans_to_bioes(sp, pos)) == sp
    assert to_bio(to_bioes(bio)) == bio
    iob1 = [t.replace("B-", "I-") if i == 0 or bio[i - 1][2:] != t[2:] else t for i, t in enumerate(bio)]
    assert to_bio(iob1) == bio
