"""The Python pipeline on a string (``nlpipe.Pipeline``), Word views, Sentence value equality, the same
``annotate()`` on every stage object, and the README's Python example, run as a user would."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import nlpipe
from conftest import run_cli
from nlpipe.io.conllu import FEATS, HEAD, LEMMA, UPOS, Sentence, parse_string
from nlpipe.errors import NlpipeError
from nlpipe.registry import STAGES

REPO = Path(__file__).resolve().parent.parent
TEXT = "Barack Obama visited Paris. He can't stay long."


@pytest.fixture(scope="module")
def nlp():
    return nlpipe.Pipeline(lang="en")


def test_a_string_becomes_a_document_of_sentences_of_named_words(nlp):
    doc = nlp(TEXT)
    assert doc.text == TEXT and len(doc) == 2
    first, second = doc
    assert (first.sent_id, first.text) == ("string-1", "Barack Obama visited Paris.")
    assert (second.sent_id, second.text) == ("string-2", "He can't stay long.")
    assert [w.form for w in second] == ["He", "ca", "n't", "stay", "long", "."]
    assert [w.id for w in second] == [1, 2, 3, 4, 5, 6]
    barack, obama, visited, paris, stop = first
    assert (paris.upos, paris.xpos, paris.lemma, paris.feats) == ("PROPN", "NNP", "Paris", "Number=Sing")
    assert (visited.head, visited.deprel, paris.head, paris.deprel) == (0, "root", 3, "obj")
    assert (barack.ne, obama.ne, paris.ne, visited.ne) == ("B-PER", "I-PER", "B-LOC", "O")
    assert (visited.pred, barack.pred) == ("visit.01", None)
    assert (barack.roles, obama.roles, paris.roles, visited.roles) == (
        {3: "B-ARG0"}, {3: "I-ARG0"}, {3: "B-ARG1"}, {})
    assert stop.feats is None and (paris.space_after, stop.space_after) == (False, True)
    assert len(doc.words) == 11


def test_the_document_is_what_annotate_writes_for_the_text(nlp, tmp_path):
    src = tmp_path / "story.txt"
    src.write_text(TEXT + "\n", encoding="utf-8")
    r = run_cli("annotate", str(src))
    assert r.returncode == 0, r.stderr
    assert nlp(TEXT, name=str(src)).to_conllu() == r.stdout.decode("utf-8")


def test_stages_input_mode_and_languages():
    nlp = nlpipe.Pipeline(stages="tokenize,pos", input="tokens")
    doc = nlp("I can't swim\nDogs bark\n")
    assert [[w.form for w in s] for s in doc] == [["I", "can't", "swim"], ["Dogs", "bark"]]
    assert all(w.upos is not None and w.head is None and w.ne == "O" for w in doc.words)
    with pytest.raises(NlpipeError, match="no models for language 'el'.*no such folder of models"):
        nlpipe.Pipeline(lang="el")


def test_word_fields_read_and_write_the_row():
    s = parse_string("1\tDogs\t_\t_\t_\t_\t_\t_\t_\tSRL=2:B-ARG0|NE=B-ORG\n2\tbark\t_\t_\t_\t_\t0\troot\t_\t_\n\n")[0]
    dogs = s[0]
    assert (dogs.form, dogs.upos, dogs.head, dogs.ne, dogs.roles) == ("Dogs", None, None, "B-ORG", {2: "B-ARG0"})
    dogs.upos, dogs.lemma, dogs.feats = "NOUN", "dog", "Number=Plur"
    assert s.words[0][UPOS] == "NOUN" and s.words[0][LEMMA] == "dog" and s.words[0][FEATS] == "Number=Plur"
    dogs.feats = None
    assert s.words[0][FEATS] == "_" and s.words[0][HEAD] == "_"
    assert s[1].head == 0 and s[1] == parse_string("1\tx\t_\t_\t_\t_\t2\t_\t_\t_\n2\tbark\t_\t_\t_\t_\t0\troot\t_\t_\n\n")[0][1]


def test_sentences_compare_by_value_and_text_is_an_attribute():
    a = "# sent_id = s1\n# text = Hi!\n1\tHi\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n2\t!\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
    x, y = parse_string(a)[0], parse_string("\ufeff" + a.replace("\n", "\r\n"))[0]
    assert x == y and not (x != y)                      # line endings and a BOM do not count
    z = parse_string(a.replace("\tHi\t_", "\tHo\t_"))[0]
    assert x != z
    assert x.text == "Hi!" and x.sent_id == "s1" and x.text() == "Hi!"
    assert Sentence([], x.rows).text == "Hi!"            # rebuilt from the tokens
    with pytest.raises(TypeError):
        hash(x)


def test_every_stage_object_has_annotate_and_the_tokenizer_tokenizes_sentences():
    for stage in STAGES:
        assert callable(getattr(nlpipe.load(stage), "annotate", None)), stage
    given = [Sentence(["# sent_id = a", "# text = I can't go."]), Sentence(["# text = Next one"])]
    out = list(nlpipe.load("tokenize").annotate(given))
    assert [[w.form for w in s] for s in out] == [["I", "ca", "n't", "go", "."], ["Next", "one"]]
    assert out[0].comments == ["# sent_id = a", "# text = I can't go."]
    assert out[0].tokens[1][1] == "can't"              # the multiword token's range line
    tagged = list(nlpipe.load("pos").annotate(out))
    assert [w.upos for w in tagged[0]] == ["PRON", "AUX", "PART", "VERB", "PUNCT"]


def test_the_readmes_python_examples_run(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
    assert "# sent_id = string-1" in capsys.readouterr().out
