"""The rule tokenizer: EWT word conventions, CoNLL-U output details, paragraphs, errors and the CLI."""
from __future__ import annotations

import io
import json
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpipe.cli import main
from nlpipe.io.conllu import FORM, MISC, parse_string, read_file, to_string
from nlpipe.errors import InputError, ModelError
from nlpipe.io.model_dir import read_config
from nlpipe.registry import MODELS_DIR, load_stage
from nlpipe.stages.tokenize import load_rules

from conftest import FIXTURES, run_cli


@pytest.fixture(scope="module")
def tok():
    return load_stage("tokenize", "tokenize-rules-ewt")


def forms(sentence):
    """Surface tokens as strings; a multiword token as 'surface=word+word'."""
    out = []
    rows = sentence.rows
    i = 0
    while i < len(rows):
        r = rows[i]
        if "-" in r[0]:
            a, b = map(int, r[0].split("-"))
            words = [w[FORM] for w in rows[i + 1:i + 2 + b - a]]
            out.append(f"{r[FORM]}={'+'.join(words)}")
            i += 2 + b - a
        else:
            out.append(r[FORM])
            i += 1
    return out


def one(tok, text):
    sents = tok.tokenize_text(text)
    assert len(sents) == 1, [s.text() for s in sents]
    return forms(sents[0])


@pytest.mark.parametrize("text,expected", [
    ("I don't know.", ["I", "don't=do+n't", "know", "."]),
    ("We can't, won't or cannot.", ["We", "can't=ca+n't", ",", "won't=wo+n't", "or", "cannot=can+not", "."]),
    ("I'm sure it's Bush's.", ["I'm=I+'m", "sure", "it's=it+'s", "Bush's=Bush+'s", "."]),
    ("They’ve said you’ll see", ["They’ve=They+’ve", "said", "you’ll=you+’ll", "see"]),
    ("DON'T dont", ["DON'T=DO+N'T", "dont=do+nt"]),
    ("o'clock rock'n'roll", ["o'clock", "rock'n'roll"]),
    ("the parents' cars in '72", ["the", "parents'=parents+'", "cars", "in", "'72"]),
    ("of 'sit-abouts' here", ["of", "'", "sit", "-", "abouts'=abouts+'", "here"]),
    ("at 5pm for 2k and the 5th", ["at", "5", "pm", "for", "2", "k", "and", "the", "5th"]),
])
def test_contractions_are_multiword_tokens(tok, text, expected):
    assert one(tok, text) == expected


@pytest.mark.parametrize("text,expected", [
    ("a long-term e-mail", ["a", "long", "-", "term", "e-mail"]),
    ("non-human pre-war mother-in-law's", ["non-human", "pre-war", "mother", "-", "in", "-", "law's=law+'s"]),
    ("Call 713-853-3989 or 646-8420 in 1998-2005",
     ["Call", "713-853-3989", "or", "646-8420", "in", "1998", "-", "2005"]),
    ("see http://example.org/a_b?c=1, or mail me@example.org.",
     ["see", "http://example.org/a_b?c=1", ",", "or", "mail", "me@example.org", "."]),
    ("Dr. Smith met the U.S. team e.g. at 7:30 for $1,000.50 (50%) etc. in May",
     ["Dr.", "Smith", "met", "the", "U.S.", "team", "e.g.", "at", "7:30", "for", "$", "1,000.50",
      "(", "50", "%", ")", "etc.", "in", "May"]),
    # at the end of a sentence EWT splits the abbreviation's period off
    ("They came from the U.S. We ate, drank etc.", ["They", "came", "from", "the", "U.S", ".",
                                                   "We", "ate", ",", "drank", "etc", "."]),
    ("Wait... what?!! \"Yes\" 'no' “maybe” :)",
     ["Wait", "...", "what", "?!!", '"', "Yes", '"', "'", "no", "'", "“", "maybe", "”", ":)"]),
])
def test_ewt_word_conventions(tok, text, expected):
    out = [f for s in tok.tokenize_text(text) for f in forms(s)]
    assert out == expected


def test_space_after_and_text(tok):
    s = tok.tokenize_text("He said: \"don't\" (twice).\n")[0]
    assert s.meta("text") == "He said: \"don't\" (twice)."
    no_space = [r[FORM] for r in s.tokens if r[MISC] == "SpaceAfter=No"]
    assert no_space == ["said", '"', "don't", "(", "twice", ")"]
    # SpaceAfter goes on the range line; the words of a multiword token have MISC "_"
    assert [r[MISC] for r in s.words if r[FORM] in ("do", "n't")] == ["_", "_"]
    assert s.text() == s.meta("text")


def test_output_is_valid_conllu_and_round_trips(tok):
    sents = tok.tokenize_text("First one. Second one!\n\nThird paragraph here")
    text = to_string(sents)
    assert to_string(parse_string(text)) == text
    assert all(len(r) == 10 for s in sents for r in s.rows)
    assert all(r[2:9] == ["_"] * 7 for s in sents for r in s.rows)


def test_paragraphs_newdoc_newpar_and_sent_ids(tok):
    sents = tok.tokenize_text("One sentence here. And another one.\n  \nno final punctuation\n\n\n"
                              "Last paragraph", "dir/my notes.txt")
    assert [s.meta("text") for s in sents] == ["One sentence here.", "And another one.",
                                               "no final punctuation", "Last paragraph"]
    assert [s.sent_id for s in sents] == [f"my_notes-{i}" for i in range(1, 5)]
    assert [s.meta("newdoc") for s in sents] == ["", None, None, None]
    assert [s.meta("newpar") for s in sents] == ["", None, "", ""]


def test_line_breaks_inside_a_paragraph_become_spaces_in_text(tok):
    sents = tok.tokenize_text("A sentence that\r\nspans two lines.\r\n\r\nNext.\r\n")
    assert [s.meta("text") for s in sents] == ["A sentence that spans two lines.", "Next."]
    assert all("\r" not in r[FORM] for s in sents for r in s.rows)


def test_tabs_and_bom(tok):
    sents = tok.tokenize_text("\ufeffTab\tseparated\twords.\n")
    assert forms(sents[0]) == ["Tab", "separated", "words", "."]
    assert sents[0].meta("text") == "Tab\tseparated\twords."
    assert sents[0].prefix == ""


def test_web_text_sentence_ends(tok):
    sents = tok.tokenize_text("It closed on Sunday... You voted. Great :) See you. Thanks, Sam")
    assert [s.meta("text") for s in sents] == ["It closed on Sunday...", "You voted.", "Great :)",
                                               "See you.", "Thanks,", "Sam"]


def test_sentence_split_never_cuts_a_token(tok):
    sents = tok.tokenize_text("Really!! Yes.")
    assert "!!" in [f for s in sents for f in forms(s)]


def _nonspace(s: str) -> str:
    return "".join(s.split())


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=80)
       | st.text(alphabet="ab.-'’!? \n\t\r:/@$,0123456789nt", max_size=80))
def test_forms_concatenate_to_the_input_without_whitespace(tok, text):
    sents = tok.tokenize_text(text)
    tokens = "".join(r[FORM] for s in sents for r in s.tokens)
    assert tokens == _nonspace(text.lstrip("\ufeff"))
    for s in sents:
        assert _nonspace(s.meta("text")) == "".join(r[FORM] for r in s.tokens)
        assert all(r[FORM] and _nonspace(r[FORM]) == r[FORM] for r in s.rows)
        # words of a multiword token spell its surface form
        for r in s.tokens:
            if "-" in r[0]:
                a, b = map(int, r[0].split("-"))
                assert "".join(w[FORM] for w in s.words[a - 1:b]) == r[FORM]


def test_streaming_yields_a_paragraph_before_reading_the_next(tok):
    def lines():
        yield "First paragraph. Two sentences.\n"
        yield "\n"
        raise AssertionError("read too far")

    sents = tok.tokenize(lines(), "x")
    assert [next(sents).meta("text"), next(sents).meta("text")] == ["First paragraph.", "Two sentences."]


LONG_PARAGRAPH = ("It rained. Dr. Smith came in\nlate, wet through. \"Why?\" she asked.\nNobody knew...\n"
                  "Then it stopped\n\nA new paragraph. With U.S.\nagencies in it.\nThe end\n")


@pytest.mark.parametrize("cap", [1, 20, 40, 1 << 20])
def test_a_long_paragraph_is_read_in_pieces_with_the_same_sentences(tok, monkeypatch, cap):
    # Beyond MAX_PARAGRAPH characters a paragraph is cut at a line end and its last sentence carried
    # into the next piece: the output is byte for byte that of the whole paragraph (sentences across
    # lines, abbreviations before a line break, # newpar only where a paragraph starts).
    whole = to_string(tok.tokenize_text(LONG_PARAGRAPH, "x"))
    assert whole.count("# newpar") == 2 and "# text = Dr. Smith came in late, wet through." in whole
    monkeypatch.setattr(type(tok), "MAX_PARAGRAPH", cap)
    assert to_string(tok.tokenize_text(LONG_PARAGRAPH, "x")) == whole


def test_a_text_without_blank_lines_is_tokenized_as_it_is_read(tok, monkeypatch):
    # With no blank line the paragraph never ends; its sentences still come out a piece at a time.
    monkeypatch.setattr(type(tok), "MAX_PARAGRAPH", 100)
    read = [0]

    def lines():
        for i in range(1000):
            read[0] += 1
            yield f"Sentence number {i} is here.\n"

    sents = tok.tokenize(lines(), "x")
    assert next(sents).meta("text") == "Sentence number 0 is here."
    assert read[0] < 10
    assert sum(1 for _ in sents) == 999


def test_nul_byte_is_an_input_error(tok):
    with pytest.raises(InputError, match=r"^x:2: binary data"):
        tok.tokenize_text("fine\nbad\x00\n", "x")


def test_empty_and_blank_input_give_no_sentences(tok):
    assert tok.tokenize_text("") == []
    assert tok.tokenize_text("\n \n\t\n") == []


# ---------------------------------------------------------------------------------------------
# Command line: files, stdin, encodings, errors

def test_cli_file_and_stdin(tmp_path):
    src = tmp_path / "story.txt"
    src.write_text("It works. Doesn't it?\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    main(["tokenize", str(src), "-o", str(out)])
    sents = parse_string(out.read_text(encoding="utf-8"))
    assert [s.sent_id for s in sents] == ["story-1", "story-2"]
    r = run_cli("tokenize", "--method", "rules", input=b"Hello world.\n")
    assert r.returncode == 0, r.stderr
    assert b"# sent_id = stdin-1\n# text = Hello world.\n" in r.stdout


def test_cli_empty_input(tmp_path):
    src = tmp_path / "empty.txt"
    src.write_bytes(b"")
    out = tmp_path / "out.conllu"
    main(["tokenize", str(src), "-o", str(out)])
    assert out.read_bytes() == b""


def test_cli_invalid_utf8_names_file_and_line(tmp_path, capsys):
    src = tmp_path / "bad.txt"
    src.write_bytes(b"Fine line.\n\nSecond fine.\nBroken \xff here.\n")
    with pytest.raises(SystemExit) as e:
        main(["tokenize", str(src), "-o", str(tmp_path / "out.conllu")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"{src}:4: invalid UTF-8" in err and "--encoding-errors replace" in err
    assert not (tmp_path / "out.conllu").exists()


def test_cli_invalid_utf8_on_stdin_and_replace():
    r = run_cli("tokenize", input=b"ok\n\xc3(\n")
    assert r.returncode == 2
    assert r.stderr.startswith(b"nlpipe: error: <stdin>:2: invalid UTF-8") and b"Traceback" not in r.stderr
    r = run_cli("tokenize", "--encoding-errors", "replace", input=b"ok\n\xc3(\n")
    assert r.returncode == 0, r.stderr
    assert "\ufffd" in r.stdout.decode("utf-8")


def test_annotate_defaults_to_tokenizing(tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("Two words.\n", encoding="utf-8")
    out = tmp_path / "a.conllu"
    main(["annotate", "--stages", "tokenize", str(src), "-o", str(out)])
    assert forms(parse_string(out.read_text(encoding="utf-8"))[0]) == ["Two", "words", "."]


# ---------------------------------------------------------------------------------------------
# The shipped model

def test_shipped_model_config():
    config = read_config(MODELS_DIR / "tokenize-rules-ewt", "tokenize")
    assert config["arch"] == "punkt-treebank.v1"
    assert "train" in config["training"]["data"]


def test_missing_or_corrupt_model_files(tmp_path):
    model = tmp_path / "m"
    shutil.copytree(MODELS_DIR / "tokenize-rules-ewt", model)
    config = read_config(model)
    (model / "words.json").write_text('{"abbreviations": []}', encoding="utf-8")
    with pytest.raises(ModelError, match="corrupt"):
        load_rules(model, config)
    (model / "punkt.json").unlink()
    with pytest.raises(ModelError, match="missing model file punkt.json"):
        load_rules(model, config)
    (model / "punkt.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelError, match="corrupt"):
        load_rules(model, config)
    assert json.loads((MODELS_DIR / "tokenize-rules-ewt" / "words.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------
# Corpus checks (EWT dev; skipped with a reason when the corpora are absent)

def _ewt_raw_text(path) -> str:
    """EWT raw text: a paragraph's `# text` joined by one space, a blank line at newpar/newdoc."""
    paragraphs = []
    for s in read_file(str(path)):
        if not paragraphs or any(c.startswith(("# newpar", "# newdoc")) for c in s.comments):
            paragraphs.append([])
        paragraphs[-1].append(s.meta("text"))
    return "\n\n".join(" ".join(p) for p in paragraphs) + "\n"


@pytest.mark.slow
@pytest.mark.corpus
def test_ewt_dev_scores(tok, corpora, tmp_path):
    from nlpipe.runtime.evaluate import evaluate

    gold = corpora / "en_ewt" / "en_ewt-ud-dev.conllu"
    raw = tmp_path / "dev.txt"
    raw.write_text(_ewt_raw_text(gold), encoding="utf-8")
    pred = tmp_path / "dev.conllu"
    main(["tokenize", str(raw), "-o", str(pred)])
    result = evaluate("tokenize", str(gold), pred=str(pred))
    assert result["tokens_f1"] >= 99.0
    assert result["sentences_f1"] >= 85.0
    assert result["words_f1"] >= 98.5


def test_train_tokenize_rules_writes_a_loadable_rule_tokenizer(tmp_path, capsys):
    out = tmp_path / "m"
    main(["train", "tokenize", "--method", "rules", "--train", str(FIXTURES / "tok_small.conllu"),
          "--out", str(out), "--lang", "en", "--json"])
    result = json.loads(capsys.readouterr().out)
    config = read_config(out, "tokenize")
    assert config["arch"] == "punkt-treebank.v1" and result["model"] == str(out)
    assert config["language"] == "en" and config["training"]["sentences"] == 4
    tok = load_stage("tokenize", str(out))
    assert [w[1] for s in tok.tokenize(io.StringIO("I saw it. Then I left."), "x") for w in s.words][:3] == \
        ["I", "saw", "it"]


def test_train_tokenize_trained_needs_dev(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["train", "tokenize", "--train", str(FIXTURES / "tok_small.conllu"), "--out", str(tmp_path / "m")])
    assert e.value.code == 2
    assert capsys.readouterr().err == "nlpipe: error: --dev is needed to train the character segmenter\n"


@pytest.mark.slow
@pytest.mark.corpus
def test_shipped_model_is_rebuilt_by_train_tokenize_rules(corpora, tmp_path):
    import subprocess
    import sys

    from conftest import REPO

    shipped = MODELS_DIR / "tokenize-rules-ewt"
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps(read_config(shipped)["training"]["scores"]), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "nlpipe", "train", "tokenize", "--method", "rules", "--lang", "en", "--train",
                        str(corpora / "en_ewt" / "en_ewt-ud-train.conllu"), "--out", str(tmp_path / "m"),
                        "--scores", str(scores)], capture_output=True, timeout=600, cwd=REPO)
    assert r.returncode == 0, r.stderr
    for name in ("punkt.json", "words.json"):
        assert (tmp_path / "m" / name).read_bytes() == (shipped / name).read_bytes(), name
