"""The CoNLL-U reader/writer: lossless round trips, column access, MISC helpers, and every error path."""
from __future__ import annotations

import io

import pytest
from hypothesis import given, settings, strategies as st

from nlpipe.io.conllu import (FORM, HEAD, MISC, UPOS, Sentence, boundary, misc_get, misc_set, parse_string,
                              read_conllu, to_string, write_conllu)
from nlpipe.errors import InputError

from conftest import FIXTURES


def roundtrip(text: str) -> str:
    return to_string(parse_string(text))


def test_fixture_round_trip_is_byte_identical():
    data = (FIXTURES / "special.conllu").read_bytes()
    text = data.decode("utf-8")
    assert roundtrip(text).encode("utf-8") == data


@pytest.mark.parametrize("variant", [
    lambda t: t[:-1],                           # no blank line after the last sentence
    lambda t: t[:-2],                           # no final newline at all
    lambda t: t + "\n",                         # an extra blank line at the end
    lambda t: t.replace("\n\n# sent_id = fixture-2", "\n\n\n# sent_id = fixture-2"),  # two blank lines
    lambda t: t.replace("\n", "\r\n"),          # CRLF line endings
    lambda t: "\ufeff" + t,                     # byte-order mark
])
def test_round_trip_variants(variant):
    text = variant((FIXTURES / "special.conllu").read_text(encoding="utf-8"))
    assert roundtrip(text) == text


def test_words_tokens_and_meta():
    s1, s2 = parse_string((FIXTURES / "special.conllu").read_text(encoding="utf-8"))
    assert [w[FORM] for w in s1.words] == ["I", "do", "n't", "know", ",", "naïve", "café", "—", "ok", "?"]
    assert [t[FORM] for t in s1.tokens] == ["I", "don't", "know", ",", "naïve", "café", "—", "ok", "?"]
    assert s1.sent_id == "fixture-1"
    assert s1.meta("newpar") == ""
    assert s1.meta("newdoc") == "fixture-doc1"
    assert s2.meta("newpar") is None
    assert s1.meta("translit") == "odd comment = with = signs"
    assert s1.text() == "I don't know, naïve café — ok?"
    assert s2.words[0][FORM] == "😀"


def test_stage_changes_only_its_columns():
    text = (FIXTURES / "special.conllu").read_text(encoding="utf-8")
    sents = parse_string(text)
    for s in sents:
        for w in s.words:
            w[UPOS] = "X"
    out = to_string(sents).splitlines()
    for a, b in zip(text.splitlines(), out):
        ca, cb = a.split("\t"), b.split("\t")
        if len(ca) >= 10 and ca[0].isdigit():
            assert cb[:3] == ca[:3] and cb[4:] == ca[4:] and cb[UPOS] == "X"
        else:
            assert a == b


def test_misc_values_with_equals_are_kept():
    misc = "Translit=naive|Cxn=free=rc-obj"
    assert misc_get(misc, "Cxn") == "free=rc-obj"
    assert misc_set(misc, "NE", "B-PER") == "Translit=naive|Cxn=free=rc-obj|NE=B-PER"
    assert misc_set(misc, "Cxn", None) == "Translit=naive"
    assert misc_set("_", "NE", "O") == "NE=O"
    assert misc_set("NE=O", "NE", None) == "_"
    assert misc_get("SpaceAfter=No", "Space") is None


def test_reader_streams():
    """The reader yields a sentence before reading the rest of its input."""
    text = (FIXTURES / "special.conllu").read_text(encoding="utf-8")
    first_sentence_end = text.index("\n\n") + 2

    class Watch(io.StringIO):
        def __iter__(self):
            return self

        def __next__(self):
            line = self.readline()
            if not line:
                raise StopIteration
            return line

    stream = Watch(text, newline="\n")
    sents = read_conllu(stream, "x")
    next(sents)
    # the reader only had to look one line past the blank line to finish sentence 1
    assert stream.tell() < first_sentence_end + 40


OK = "1\tok\tok\tX\tX\t_\t0\troot\t_\t_\n\n"
BAD = [
    ("1\tI\tI\tPRON\n", 1, "expected 10 tab-separated columns, found 4: '1\\tI\\tI\\tPRON'"),
    ("Ünïcödé — raw text\n", 1, "found 1: 'Ünïcödé — raw text' (raw text? tokenize it first"),
    ("1\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_\nx\tbad\t_\t_\t_\t_\t0\t_\t_\t_\n", 2, "ID must be an integer"),
    ("1\tI\tI\tPRON\tPRP\t_\tzero\troot\t_\t_\n", 1, "HEAD must be an integer"),
    ("1\tI\tI\tPRON\tPRP\t_\t5\troot\t_\t_\n", 1, "HEAD 5 is outside the sentence"),
    ("1\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_\n3\tx\tx\tX\tX\t_\t1\tdep\t_\t_\n", 2, "expected word ID 2"),
    ("# sent_id = 1\nthis is stray text\n", 2, "expected 10 tab-separated columns"),
    ("1\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_\n# late comment\n", 2, "comment line inside a sentence"),
    ("1\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_\t_\n2\tx\tx\tX\tX\t_\t1\tdep\t_\t_\n", 2, "expected 11"),
    ("1\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t\x00\n", 1, "NUL byte"),
    ("\n1\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_\n", 1, "blank line"),
    ("# only a comment\n", 1, "no token lines"),
    ("1-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n", 1, "no word lines"),
    ("1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n1\tdo\t_\t_\t_\t_\t0\troot\t_\t_\n", 1, "covers words"),
    ("2-1\tx\t_\t_\t_\t_\t_\t_\t_\t_\n", 1, "bad multiword-token range"),
    # the same checks on a sentence that another one follows
    ("1\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_\n2\tx\tx\tX\tX\t_\t3\tdep\t_\t_\n\n" + OK, 2, "HEAD 3 is outside"),
    ("1-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n1\tdo\t_\t_\t_\t_\t0\troot\t_\t_\n\n" + OK, 1, "covers words"),
    ("# a\n1.1\tx\t_\t_\t_\t_\t_\t_\t_\t_\n\n" + OK, 2, "bad empty-node ID"),
    ("1\tI\tI\tPRON\tPRP\t_\t10\troot\t_\t_\n\n" + OK, 1, "HEAD 10 is outside"),
]


@pytest.mark.parametrize("text,line,message", BAD)
def test_errors_name_file_and_line(text, line, message):
    with pytest.raises(InputError) as e:
        parse_string(text, "bad.conllu")
    assert e.value.path == "bad.conllu"
    assert e.value.line == line
    assert message in e.value.message
    assert str(e.value).startswith(f"bad.conllu:{line}: ")


@pytest.mark.parametrize("text,line,message", BAD)
def test_a_stream_and_a_string_fail_alike(text, line, message):
    with pytest.raises(InputError) as e:
        list(read_conllu(io.TextIOWrapper(io.BytesIO(text.encode("utf-8")), encoding="utf-8", newline="\n"),
                         "bad.conllu"))
    assert (e.value.line, e.value.message) == (line, parse_error(text).message)


def parse_error(text: str) -> InputError:
    with pytest.raises(InputError) as e:
        parse_string(text, "bad.conllu")
    return e.value


def test_a_stream_and_a_string_read_alike():
    text = ("\ufeff# a\r\n1\tI\t_\t_\t_\t_\t_\t_\t_\t_\r\n\r\n\n"
            "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n1\tdo\t_\t_\t_\t_\t0\t_\t_\t_\n2\tn't\t_\t_\t_\t_\t1\t_\t_\t_")
    stream = io.TextIOWrapper(io.BytesIO(text.encode("utf-8")), encoding="utf-8", newline="\n")
    a, b = list(read_conllu(stream, "x")), parse_string(text, "x")
    assert [(s.comments, s.rows, s.end, s.eol, s.prefix, s.line) for s in a] == \
           [(s.comments, s.rows, s.end, s.eol, s.prefix, s.line) for s in b]
    assert to_string(b) == text


def test_an_empty_document_has_no_sentences():
    assert parse_string("", "empty.conllu") == []
    assert parse_string("\ufeff", "bom-only.conllu") == []


def test_sentences_before_an_error_are_complete():
    good = "1\tI\tI\tPRON\tPRP\t_\t0\troot\t_\t_\n\n"
    sents = read_conllu(io.StringIO(good + "1\tbad\n", newline="\n"), "x")
    first = next(sents)
    assert to_string([first]) == good
    with pytest.raises(InputError):
        next(sents)


def test_built_sentence_writes_standard_layout():
    s = Sentence(["# sent_id = a"], [["1", "Hi", "_", "_", "_", "_", "_", "_", "_", "_"]])
    buf = io.StringIO()
    write_conllu([s], buf)
    assert buf.getvalue() == "# sent_id = a\n1\tHi\t_\t_\t_\t_\t_\t_\t_\t_\n\n"


field = st.text(alphabet=st.characters(blacklist_characters="\t\n\r\x00", blacklist_categories=("Cs",)),
                min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(field, field, field), min_size=1, max_size=5), min_size=1, max_size=4),
       st.booleans())
def test_random_sentences_round_trip(sentences, final_newline):
    parts = []
    for words in sentences:
        lines = [f"# text = {' '.join(w[0] for w in words)}"]
        for i, (form, lemma, misc) in enumerate(words, 1):
            lines.append(f"{i}\t{form}\t{lemma}\tX\t_\t_\t{i - 1}\tdep\t_\t{misc}")
        parts.append("\n".join(lines) + "\n\n")
    text = "".join(parts)
    if not final_newline:
        text = text[:-2]
    assert roundtrip(text) == text


# ---------------------------------------------------------------------------------------------
# The line of a word, document and paragraph starts

def test_line_of_a_row_or_an_index():
    s = parse_string("# sent_id = a\n1\tx\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
                     "# sent_id = b\n# text = y z\n1-2\tyz\t_\t_\t_\t_\t_\t_\t_\t_\n"
                     "1\ty\t_\t_\t_\t_\t_\t_\t_\t_\n2\tz\t_\t_\t_\t_\t_\t_\t_\t_\n\n")[1]
    # the second sentence starts on line 4: two comments, then the range on 6, y on 7, z on 8
    assert s.line_of(s.words[0]) == 7 and s.line_of(s.words[1]) == 8
    assert s.line_of(0) == 6 and s.line_of(2) == 8
    built = Sentence([], [["1", "x", "_", "_", "_", "_", "_", "_", "_", "_"]])
    assert built.line_of(built.words[0]) is None


@pytest.mark.parametrize("comment,kind", [
    ("# newdoc", "newdoc"), ("#newdoc", "newdoc"), ("# newdoc id = d1", "newdoc"), ("# newdoc id=d1", "newdoc"),
    ("# newpar", "newpar"), ("# newpar id = p2", "newpar"), ("#  newpar", "newpar"),
    ("# newdocument", None), ("# sent_id = newdoc", None), ("# text = newdoc here", None), ("#", None),
])
def test_boundary_comments(comment, kind):
    assert boundary(comment) == kind


def test_sentence_starts_document_and_paragraph():
    row = "1\tx\t_\t_\t_\t_\t_\t_\t_\t_\n"
    doc, par, plain = parse_string(f"# newdoc id = d\n{row}\n# newpar\n{row}\n# sent_id = 3\n{row}\n")
    assert (doc.starts_document, doc.starts_paragraph) == (True, True)
    assert (par.starts_document, par.starts_paragraph) == (False, True)
    assert (plain.starts_document, plain.starts_paragraph) == (False, False)


# ---------------------------------------------------------------------------------------------
# conllu.TokenList

def test_to_tokenlist_matches_the_conllu_parser():
    conllu = pytest.importorskip("conllu")
    text = (FIXTURES / "tok_small.conllu").read_text(encoding="utf-8")
    mine = [s.to_tokenlist() for s in parse_string(text)]
    theirs = conllu.parse(text)
    assert mine == theirs and [m.metadata for m in mine] == [t.metadata for t in theirs]


def test_to_tokenlist_keeps_misc_values_with_equals_and_ranges_and_empty_nodes():
    pytest.importorskip("conllu")
    s = parse_string((FIXTURES / "special.conllu").read_text(encoding="utf-8"))[0]
    tl = s.to_tokenlist()
    assert tl.metadata["newdoc id"] == "fixture-doc1" and tl.metadata["newpar"] is None
    assert tl[1]["id"] == (2, "-", 3) and tl[1]["form"] == "don't"
    assert tl[0]["head"] == 4 and tl[0]["deps"] == [("nsubj", 4)]
    assert tl[0]["feats"] == {"Case": "Nom", "Number": "Sing", "Person": "1", "PronType": "Prs"}
    nodes = [t for t in tl if t["id"] == (7, ".", 1)]
    assert nodes and nodes[0]["head"] is None and nodes[0]["misc"] == {"CopyOf": "4"}
    naive = [t for t in tl if t["form"] == "naïve"][0]
    assert naive["misc"] == {"Translit": "naive", "Cxn": "free=rc-obj"}   # conllu.parse cuts it to "free"


def test_tokenlist_round_trip_is_lossless_for_standard_files():
    pytest.importorskip("conllu")
    for name in ("special.conllu", "tok_small.conllu"):
        for s in parse_string((FIXTURES / name).read_text(encoding="utf-8")):
            assert Sentence.from_tokenlist(s.to_tokenlist()).to_string() == s.to_string()


def test_tokenlist_round_trip_normalises_what_a_tokenlist_cannot_hold():
    pytest.importorskip("conllu")
    text = ("#sent_id=1\r\n# note\r\n# text = a\r\n1\ta\t_\t_\t_\t_\t0\troot\t_\tX=|Y=_\r\n\r\n\r\n")
    back = Sentence.from_tokenlist(parse_string(text)[0].to_tokenlist())
    assert back.to_string() == "# sent_id = 1\n# note\n# text = a\n1\ta\t_\t_\t_\t_\t0\troot\t_\tX|Y=_\n\n"


def test_from_tokenlist_of_a_malformed_list_is_an_input_error():
    conllu = pytest.importorskip("conllu")
    tl = conllu.parse("1\ta\t_\t_\t_\t_\t5\troot\t_\t_\n\n")[0]
    with pytest.raises(InputError, match="HEAD 5 is outside the sentence"):
        Sentence.from_tokenlist(tl)
