"""``--input raw|sentences|tokens|conllu`` on ``nlpipe tokenize`` and ``nlpipe annotate``, as a user types it."""
from __future__ import annotations

from conftest import run_cli
from nlpipe.io.conllu import FORM, UPOS, parse_string

LINES = "Hello world\nI can't go home\nthe end\n\nA new paragraph here\n"


def sentences_of(out: bytes):
    return parse_string(out.decode("utf-8"))


def test_sentences_mode_makes_one_sentence_of_each_line(tmp_path):
    src = tmp_path / "lines.txt"
    src.write_text(LINES, encoding="utf-8")
    r = run_cli("tokenize", "--input", "sentences", str(src))
    assert r.returncode == 0, r.stderr
    sents = sentences_of(r.stdout)
    assert [s.meta("text") for s in sents] == ["Hello world", "I can't go home", "the end", "A new paragraph here"]
    assert [s.sent_id for s in sents] == ["lines-1", "lines-2", "lines-3", "lines-4"]
    assert [s.starts_paragraph for s in sents] == [True, False, False, True]
    # the words are still found by the tokenizer: "can't" is split as the default model does it
    assert sents[1].forms() == ["I", "ca", "n't", "go", "home"]


def test_tokens_mode_keeps_the_tokens_as_they_are(tmp_path):
    src = tmp_path / "toks.txt"
    src.write_text("I can't go home .\nNew   York ,  ok\n", encoding="utf-8")
    r = run_cli("tokenize", "--input", "tokens", str(src))
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode("utf-8")
    assert text == (
        "# newdoc\n# newpar\n# sent_id = toks-1\n# text = I can't go home .\n"
        "1\tI\t_\t_\t_\t_\t_\t_\t_\t_\n2\tcan't\t_\t_\t_\t_\t_\t_\t_\t_\n3\tgo\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "4\thome\t_\t_\t_\t_\t_\t_\t_\t_\n5\t.\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
        "# sent_id = toks-2\n# text = New   York ,  ok\n"
        "1\tNew\t_\t_\t_\t_\t_\t_\t_\t_\n2\tYork\t_\t_\t_\t_\t_\t_\t_\t_\n3\t,\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "4\tok\t_\t_\t_\t_\t_\t_\t_\t_\n\n")


def test_conllu_input_passes_tokenize_unchanged(tmp_path):
    data = "# sent_id = x\n1\tHi\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n2\t!\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
    src = tmp_path / "a.conllu"
    src.write_text(data, encoding="utf-8")
    for mode in ("conllu", "auto"):
        r = run_cli("tokenize", "--input", mode, str(src))
        assert r.returncode == 0, r.stderr
        assert r.stdout.decode("utf-8") == data


def test_raw_mode_still_finds_sentences_across_lines(tmp_path):
    src = tmp_path / "raw.txt"
    src.write_text("It rains. The\nend.\n", encoding="utf-8")
    r = run_cli("tokenize", "--input", "raw", str(src))
    assert [s.meta("text") for s in sentences_of(r.stdout)] == ["It rains.", "The end."]


def test_annotate_tokens_mode_tags_the_given_tokens_without_the_tokenize_stage():
    r = run_cli("annotate", "--input", "tokens", "--stages", "pos", "-", input=b"I can't swim\nDogs bark\n")
    assert r.returncode == 0, r.stderr
    sents = sentences_of(r.stdout)
    assert [s.forms() for s in sents] == [["I", "can't", "swim"], ["Dogs", "bark"]]
    assert all(w[UPOS] != "_" for s in sents for w in s.words)
    assert sents[1].words[0][FORM] == "Dogs" and sents[1].words[0][UPOS] == "NOUN"


def test_annotate_sentences_mode_gives_one_sentence_a_line():
    r = run_cli("annotate", "--input", "sentences", "--stages", "tokenize,pos", "-",
                input=b"the cat sat\nthe dog ran\nbirds fly\n")
    assert r.returncode == 0, r.stderr
    assert [s.meta("text") for s in sentences_of(r.stdout)] == ["the cat sat", "the dog ran", "birds fly"]
    default = run_cli("annotate", "--stages", "tokenize,pos", "-", input=b"the cat sat\nthe dog ran\nbirds fly\n")
    assert len(sentences_of(default.stdout)) == 1   # raw text: lines inside a paragraph are spaces


def test_annotate_refuses_an_unknown_mode():
    r = run_cli("annotate", "--input", "horizontal", "-", input=b"x\n")
    assert r.returncode == 2 and b"horizontal" in r.stderr
