"""The trained character tokenizer: labels, multiword tokens, windows, input oddities, CLI and training."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpipe.cli import main
from nlpipe.io.conllu import FORM, MISC, parse_string, read_file, to_string
from nlpipe.errors import ModelError
from nlpipe.models.multiword import MultiwordExpander, learn_multiwords
from nlpipe.models.segmenter import INSIDE, SENT_END, SPACE, TOKEN_END, CharVocab, labelled_paragraphs
from nlpipe.models.segmenter_numpy import SegmenterInference
from nlpipe.io.model_dir import read_config
from nlpipe.registry import MODELS_DIR, load_stage
from nlpipe.stages.tokenize import TrainedTokenizer, load_trained

from conftest import FIXTURES, run_cli
from test_tokenize import forms

MODEL = "tokenize-char-ewt"


@pytest.fixture(scope="module")
def tok():
    return load_stage("tokenize", MODEL)


def _nonspace(s: str) -> str:
    return "".join(s.split())


def _check_invariants(sents, text):
    """Forms spell the input without whitespace; each # text spells its tokens; MWT words spell the token."""
    assert "".join(r[FORM] for s in sents for r in s.tokens) == _nonspace(text.lstrip("\ufeff"))
    for s in sents:
        assert _nonspace(s.meta("text")) == "".join(r[FORM] for r in s.tokens)
        assert all(r[FORM] and _nonspace(r[FORM]) == r[FORM] for r in s.rows)
        for r in s.tokens:
            if "-" in r[0]:
                a, b = map(int, r[0].split("-"))
                assert "".join(w[FORM] for w in s.words[a - 1:b]) == r[FORM]
    if sents:
        out = to_string(sents)
        assert to_string(parse_string(out)) == out


# ---------------------------------------------------------------------------------------------
# Training data and multiword tokens (hand-written fixture)

def test_labelled_paragraphs_follow_the_eval_raw_text():
    sents = list(read_file(str(FIXTURES / "tok_small.conllu")))
    paras = labelled_paragraphs(sents)
    assert [p for p, _ in paras] == ["I don't know. It's Bob's (really)", "Its cannot be e-mail. Its it's fine"]
    text, labels = paras[0]
    ends = {i: int(labels[i]) for i in range(len(text)) if labels[i] != INSIDE}
    # I | don't | know | . || It's | Bob's | ( | really | ) ||
    assert ends == {0: TOKEN_END, 6: TOKEN_END, 11: TOKEN_END, 12: SENT_END, 17: TOKEN_END, 23: TOKEN_END,
                    25: TOKEN_END, 31: TOKEN_END, 32: SENT_END}


def test_labelled_paragraphs_reject_forms_that_do_not_match_the_text():
    sents = list(read_file(str(FIXTURES / "tok_small.conllu")))
    sents[0].words[0][FORM] = "You"
    with pytest.raises(ValueError, match="does not match its # text"):
        labelled_paragraphs(sents, "x.conllu")


def test_multiword_table_is_learned_from_the_data():
    learned = learn_multiwords(read_file(str(FIXTURES / "tok_small.conllu")), english=True)
    table = learned["table"]
    assert table["don't"] == ["do", "n't"] and table["cannot"] == ["can", "not"] and table["bob's"] == ["bob", "'s"]
    assert "its" not in table and "know" not in table      # plain, and no rule would split them
    assert table["it's"] == ["it", "'s"]                   # seen split once, whole once: split wins the tie
    expand = MultiwordExpander(learned, english=True)
    assert expand("DON'T") == ["DO", "N'T"]
    assert expand("Cannot") == ["Can", "not"]
    assert expand("Its") is None
    # unseen forms: the clitic rule and the plural possessive
    assert expand("Mary's") == ["Mary", "'s"]
    assert expand("wouldn’t") == ["would", "n’t"]
    assert expand("parents'") == ["parents", "'"]
    assert expand("'s") is None and expand("x") is None


def test_a_form_kept_whole_in_the_data_is_not_split_by_the_rule():
    table = {"let's": None}                                 # the table format of the shipped English model
    assert MultiwordExpander(table, english=True)("let's") is None
    assert MultiwordExpander({"don't": [2, 3]}, english=True)("Don't") == ["Do", "n't"]
    learned = learn_multiwords(parse_string("# text = Let's go\n1\tLet's\t_\t_\t_\t_\t_\t_\t_\t_\n"
                                            "2\tgo\t_\t_\t_\t_\t_\t_\t_\t_\n\n"), english=True)
    assert learned["table"] == {"let's": None}
    assert MultiwordExpander(learned, english=True)("Let's") is None


# ---------------------------------------------------------------------------------------------
# Character ids and the numpy network

def test_char_ids_buckets_and_glue():
    vocab = CharVocab(["a", "b"])
    ids, glue = vocab.encode("ab \t\u00e9e\u0301 \U0001F44D\U0001F3FD \u200d\u2028x")
    assert ids[0] != ids[1] and ids[2] == SPACE and ids[3] == SPACE
    assert ids[-2] == SPACE                                 # U+2028 is whitespace
    assert ids[4] == vocab.ids("\u00e9")[0] == vocab.ids("\u00fc")[0]   # unknown lowercase letters share a bucket
    assert list(np.flatnonzero(glue)) == [6, 9, 11, 12]       # combining acute, skin tone, ZWJ, after ZWJ
    assert len(vocab.ids("")) == 0


def test_rule_features_mark_rule_token_and_sentence_ends():
    from nlpipe.stages.tokenize import rule_features
    from nlpipe.io.model_dir import read_json as load_json

    rules = MODELS_DIR / "tokenize-rules-ewt"
    words = load_json(rules / "words.json")
    text = "I don't know. Dr. Who came."
    bits = rule_features(words)(text)
    assert [i for i, b in enumerate(bits) if b] == [0, 6, 11, 12, 16, 20, 25, 26]   # I don't know . Dr. Who came .
    both = rule_features(words, load_json(rules / "punkt.json"))(text)
    assert rule_features(words, load_json(rules / "punkt.json")).n_values == 4
    assert [i for i, b in enumerate(both) if b == 3] == [12, 26]                      # sentence (and token) ends
    assert list(both % 2) == list(bits)


def _random_net(seed=0, dilations=(1, 2, 4), emb=4, channels=6, n_chars=40, window=4096):
    rng = np.random.default_rng(seed)
    params = {"emb.weight": rng.normal(size=(n_chars, emb)), "first.weight": rng.normal(size=(channels, emb, 3)),
              "first.bias": rng.normal(size=channels), "out.weight": rng.normal(size=(3, channels)),
              "out.bias": rng.normal(size=3)}
    params["emb.weight"][0] = 0
    for i, _ in enumerate(dilations):
        params[f"block.{i}.weight"] = rng.normal(size=(channels, channels, 3)) * 0.3
        params[f"block.{i}.bias"] = rng.normal(size=channels) * 0.1
    return SegmenterInference(params, dilations, window=window)


def test_windows_give_the_same_scores_as_one_pass():
    ids = np.random.default_rng(1).integers(1, 40, size=5000).astype(np.int32)
    ids[1200:1204] = 0
    whole = _random_net(window=10_000).scores(ids)
    for window in (1, 7, 100, 999):
        np.testing.assert_allclose(_random_net(window=window).scores(ids), whole, rtol=1e-4, atol=1e-4)


def test_paragraphs_in_one_batch_do_not_see_each_other():
    net = _random_net()
    a = np.arange(1, 30, dtype=np.int32)
    b = np.arange(30, 1, -1, dtype=np.int32)
    gap = np.zeros(net.gap, dtype=np.int32)
    both = net.scores(np.concatenate([a, gap, b]))
    np.testing.assert_allclose(both[:len(a)], net.scores(a), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(both[len(a) + net.gap:], net.scores(b), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# The shipped model

def test_shipped_model_is_the_default_and_small():
    config = read_config(MODELS_DIR / MODEL, "tokenize")
    assert config["arch"] == "char-segmenter.v1"
    assert isinstance(load_stage("tokenize"), TrainedTokenizer)
    size = sum(p.stat().st_size for p in (MODELS_DIR / MODEL).iterdir())
    assert size < 5_000_000


def test_tokenizing_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys; from nlpipe.registry import load_stage; "
            "load_stage('tokenize', 'tokenize-char-ewt').tokenize_text('Hi there. Bye.'); "
            "print('torch' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


@pytest.mark.parametrize("text,expected", [
    ("I don't know.", ["I", "don't=do+n't", "know", "."]),
    ("We can't go, it's late.", ["We", "can't=ca+n't", "go", ",", "it's=it+'s", "late", "."]),
    ("Email me at john@example.com today!", ["Email", "me", "at", "john@example.com", "today", "!"]),
])
def test_shipped_model_tokens(tok, text, expected):
    sents = tok.tokenize_text(text)
    assert [f for s in sents for f in forms(s)] == expected


def test_sentences_and_paragraphs(tok):
    sents = tok.tokenize_text("The cat sat on the mat. Then it left the house.\n\nA new paragraph here", "d/x.txt")
    assert [s.meta("text") for s in sents] == ["The cat sat on the mat.", "Then it left the house.",
                                               "A new paragraph here"]
    assert [s.sent_id for s in sents] == ["x-1", "x-2", "x-3"]
    assert [s.meta("newpar") for s in sents] == ["", None, ""]
    assert sents[0].meta("newdoc") == ""


def test_output_comes_a_batch_at_a_time(tok):
    def lines():
        yield "A sentence here. " * (tok.BATCH_CHARS // 17 + 1) + "\n"
        yield "\n"
        raise AssertionError("read too far")

    sents = tok.tokenize(lines(), "x")
    assert next(sents).meta("text") == "A sentence here."


def test_space_after(tok):
    s = tok.tokenize_text("He said: \"no\" (twice).")[0]
    assert [r[FORM] for r in s.tokens if r[MISC] == "SpaceAfter=No"] == ["said", '"', "no", "(", "twice", ")"]


# Input oddities, each with its test ----------------------------------------------------------

def test_crlf_and_tabs(tok):
    text = "A line that\r\ngoes on.\tAnd\ttabs here.\r\n\r\nNext paragraph.\r\n"
    sents = tok.tokenize_text(text)
    _check_invariants(sents, text)
    assert sents[-1].meta("text") == "Next paragraph."
    assert all("\r" not in s.meta("text") and "\n" not in s.meta("text") for s in sents)
    assert "A line that goes on." in sents[0].meta("text")


@pytest.mark.slow
def test_one_megabyte_line_without_space_runs_in_bounded_memory(tok, monkeypatch):
    text = ("abc,def.ghi!" * 90_000)[:1_000_000] + "\n"
    net = tok.net
    seen = []
    run = net._run
    monkeypatch.setattr(net, "_run", lambda ids, bits, lex: seen.append(len(ids)) or run(ids, bits, lex))
    sents = tok.tokenize_text(text)
    assert "".join(r[FORM] for s in sents for r in s.tokens) == text.strip()
    # the network never holds more than one window (with its context) of activations
    assert len(seen) > 200 and max(seen) <= net.window + 2 * net.radius


def test_emoji_and_combining_characters_stay_in_their_token(tok):
    text = "Cafe\u0301 was great\U0001F44D\U0001F3FD! Family \U0001F468\u200d\U0001F469\u200d\U0001F467 fun."
    sents = tok.tokenize_text(text)
    _check_invariants(sents, text)
    for s in sents:
        for r in s.tokens:
            assert r[FORM][0] not in "\u0301\u200d\U0001F3FD", r[FORM]
            assert not r[FORM].endswith("\u200d")
    assert "Cafe\u0301" in [r[FORM] for s in sents for r in s.tokens]


def test_control_characters(tok):
    text = "Bell\x07 here and \x1b[1mbold\x1b[0m text.\x0bNew\x0cpage \x85end\u2028line."
    sents = tok.tokenize_text(text)
    _check_invariants(sents, text)
    for s in sents:
        assert not any(c in s.meta("text") for c in "\x0b\x0c\x85\u2028")


def test_bom_is_dropped(tok):
    sents = tok.tokenize_text("\ufeffHello there.\n")
    assert sents[0].meta("text") == "Hello there."
    assert forms(sents[0]) == ["Hello", "there", "."]


def test_empty_and_blank_input(tok, tmp_path):
    assert tok.tokenize_text("") == []
    assert tok.tokenize_text("\n \n\t\r\n") == []
    src = tmp_path / "empty.txt"
    src.write_bytes(b"")
    r = run_cli("tokenize", "--method", "trained", str(src))
    assert r.returncode == 0, r.stderr
    assert r.stdout == b""


def test_invalid_utf8_names_file_and_byte_offset(tmp_path):
    src = tmp_path / "bad.txt"
    src.write_bytes(b"Fine line.\n\nBroken \xff here.\n")
    r = run_cli("tokenize", "--method", "trained", str(src))
    assert r.returncode == 2
    assert r.stderr.decode() == (f"nlpipe: error: {src}:3: invalid UTF-8 (byte 0xff at byte offset 19, column 8); "
                                 f"if the text is in another encoding, name it with --encoding NAME (e.g. "
                                 f"--encoding latin-1); or use --encoding-errors replace to go on\n")
    r = run_cli("tokenize", "--method", "trained", "--encoding-errors", "replace", str(src))
    assert r.returncode == 0, r.stderr
    assert "Broken \ufffd here." in r.stdout.decode("utf-8")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=120)
       | st.text(alphabet="ab.-'’!? \n\t\r:/@$,0123456789ntAB\u0301\u200d", max_size=120))
def test_forms_concatenate_to_the_input_without_whitespace(tok, text):
    _check_invariants(tok.tokenize_text(text), text)


# ---------------------------------------------------------------------------------------------
# Model files and training

def test_missing_or_corrupt_model_files(tmp_path):
    model = tmp_path / "m"
    shutil.copytree(MODELS_DIR / MODEL, model)
    config = read_config(model)
    (model / "chars.json").write_text('["a"]', encoding="utf-8")
    with pytest.raises(ModelError, match="corrupt segmenter model"):
        load_trained(model, config)
    (model / "weights.npz").write_bytes(b"not a zip")
    with pytest.raises(ModelError, match="corrupt or incompatible model file weights.npz"):
        load_trained(model, config)
    shutil.copy(MODELS_DIR / MODEL / "weights.npz", model / "weights.npz")
    (model / "multiwords.json").unlink()
    with pytest.raises(ModelError, match="missing model file multiwords.json"):
        load_trained(model, config)
    shutil.rmtree(model)
    shutil.copytree(MODELS_DIR / MODEL, model)
    (model / "rules.json").unlink()
    with pytest.raises(ModelError, match="missing model file rules.json"):
        load_trained(model, config)


def test_training_writes_a_loadable_model(tmp_path, monkeypatch):
    import hashlib

    fixture = str(FIXTURES / "tok_small.conllu")
    out = tmp_path / "m"
    args = ["train", "tokenize", "--train", fixture, "--dev", fixture, "--out", str(out), "--epochs", "2",
            "--channels", "8", "--emb", "4", "--dilations", "1,2", "--length", "32", "--min-char", "1"]
    monkeypatch.setattr("sys.argv", ["/somewhere/bin/nlpipe", *args])   # as typed in a shell
    main(args)
    config = read_config(out, "tokenize")
    assert config["arch"] == "char-segmenter.v1" and config["model"]["dilations"] == [1, 2]
    assert config["format"] == 2 and config["language"] == "und"    # no language given
    training = config["training"]
    assert set(training["scores"]) == {"dev_tokens_f1", "dev_sentences_f1", "dev_words_f1"}
    # provenance: the data files by content, the command as typed
    digest = hashlib.sha256((FIXTURES / "tok_small.conllu").read_bytes()).hexdigest()
    assert training["data"] == {"train": {"path": fixture, "sha256": digest},
                                "dev": {"path": fixture, "sha256": digest}}
    assert training["command"] == "nlpipe " + " ".join(args)
    assert training["nlpipe_version"] and training["date"].endswith("Z")
    tok = load_stage("tokenize", str(out))
    text = "I don't know. Its cannot be."
    _check_invariants(tok.tokenize_text(text), text)


def test_training_rejects_a_window_shorter_than_the_receptive_field(tmp_path, capsys):
    fixture = str(FIXTURES / "tok_small.conllu")
    with pytest.raises(SystemExit) as e:
        main(["train", "tokenize", "--train", fixture, "--dev", fixture, "--out", str(tmp_path / "m"),
              "--dilations", "8,8", "--length", "20"])
    assert e.value.code == 2
    assert "--length 20 must exceed twice the receptive field (17)" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


@pytest.mark.slow
@pytest.mark.corpus
def test_ewt_dev_scores(corpora):
    from nlpipe.runtime.evaluate import evaluate

    result = evaluate("tokenize", str(corpora / "en_ewt" / "en_ewt-ud-dev.conllu"), model=MODEL)
    assert result["tokens_f1"] >= 99.3
    assert result["words_f1"] >= 99.1
    assert result["sentences_f1"] >= 88.0


def test_training_runs_keep_paragraphs_or_shuffle_sentences():
    import random

    from nlpipe.train.tokenize import _runs, _units

    sents = list(read_file(str(FIXTURES / "tok_small.conllu")))
    units = _units(sents, "x")
    # s1 s2 | s3 s4: two paragraphs of two sentences
    assert [(t, new_par) for t, _, new_par in units] == [
        ("I don't know.", True), ("It's Bob's (really)", False),
        ("Its cannot be e-mail.", True), ("Its it's fine", False)]
    assert [([t for t, _, _ in run], ends) for run, ends in _runs(units, 0.0, random.Random(1))] == [
        (["I don't know.", "It's Bob's (really)"], True), (["Its cannot be e-mail.", "Its it's fine"], True)]
    # shuffle 1: every sentence a run of its own, in some order; s2 and s4 end their paragraphs
    runs = _runs(units, 1.0, random.Random(1))
    assert all(len(run) == 1 for run, _ in runs)
    assert sorted((run[0][0], ends) for run, ends in runs) == [
        ("I don't know.", False), ("It's Bob's (really)", True), ("Its cannot be e-mail.", False),
        ("Its it's fine", True)]


def test_training_stream_joins_sentences_by_one_space_or_a_gap():
    import random

    from nlpipe.train.tokenize import IGNORE, _stream

    vocab = CharVocab(["a", "b", "."])
    a = ("a.", np.array([TOKEN_END, SENT_END], np.int8), None)
    b = ("b", np.array([SENT_END], np.int8), None)
    joined = [TOKEN_END, SENT_END, IGNORE, SENT_END, IGNORE, IGNORE]    # "a. b", then a gap
    ids, bits, lex, labels = _stream([([a], True), ([b], True)], vocab, None, 2, 1.0, random.Random(1))
    assert len(ids) == 4 + 2 and ids[2] == SPACE and list(ids[4:]) == [0, 0]
    assert list(labels) == joined and not lex.any()
    ids, _, _, labels = _stream([([a], True), ([b], True)], vocab, None, 2, 0.0, random.Random(1))  # two paragraphs
    assert list(ids[2:4]) == [0, 0] and len(ids) == 2 + 2 + 1 + 2
    assert list(labels) == [TOKEN_END, SENT_END, IGNORE, IGNORE, SENT_END, IGNORE, IGNORE]
    # a run cut inside a paragraph is always joined to the next one
    assert list(_stream([([a], False), ([b], True)], vocab, None, 2, 0.0, random.Random(1))[3]) == joined


def test_training_stream_carries_each_sentences_space_joins():
    import random

    from nlpipe.models.space_joins import SpaceJoins
    from nlpipe.train.tokenize import _stream

    vocab = CharVocab(["a", "b", "."])
    # counts: "a." then "b" was split once; the sentences' own values are carried as given
    joins = SpaceJoins({("a.", "b"): [0, 1]}, {"a.": [0, 1]}, {"b": [0, 1]})
    a = ("a.", np.array([TOKEN_END, SENT_END], np.int8), np.array([7, 7], np.int32))
    b = ("b", np.array([SENT_END], np.int8), np.array([9], np.int32))
    _, _, lex, _ = _stream([([a, b], True)], vocab, None, 2, 0.0, random.Random(1), joins)
    # "a. b": on "." the pair never joined, seen once (1 + 1); on the space 1 + 7 + 4 * 1 + 1; then the gap
    assert list(lex) == [7, 2, 13, 9, 0, 0]

