"""`nlpipe eval` end to end: --pred files, --model runs (with stand-in stages), errors, a corpus check.

Expected numbers come from the fixtures in tests/fixtures/metrics; test_metrics.py works them out.
"""
from __future__ import annotations

import json
import random

import pytest

from nlpipe.runtime import evaluate as ev
from nlpipe.cli import main
from nlpipe.io.conllu import DEPREL, HEAD, MISC, UPOS, XPOS, misc_get, read_file, to_string
from nlpipe.errors import NlpipeError

from conftest import FIXTURES, run_cli

M = FIXTURES / "metrics"


def f(name):
    return str(M / name)


def cli_json(capsys, *args):
    main(["eval", *args, "--json"])
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


# ---------------------------------------------------------------------------------------------
# --pred

def test_eval_pos_json(capsys):
    r, err = cli_json(capsys, "pos", "--gold", f("pos_gold.conllu"), "--pred", f("pos_pred.conllu"),
                      "--train", f("pos_train.conllu"))
    assert (r["stage"], r["upos"], r["xpos"], r["words"]) == ("pos", 75.0, 87.5, 8)
    assert (r["unseen_upos"], r["unseen_xpos"], r["unseen_words"]) == (0.0, 100.0, 2)
    assert "words_f1" not in r  # same tokenization: plain accuracy
    assert err.strip() == "pos: UPOS 75.00  XPOS 87.50  (8 words); unseen words (2): UPOS 0.00  XPOS 100.00"


def test_eval_pos_subprocess():
    r = run_cli("eval", "pos", "--gold", f("pos_gold.conllu"), "--pred", f("pos_pred.conllu"), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["upos"] == 75.0
    assert b"UPOS 75.00" in r.stderr


def test_eval_pos_other_tokenization_full_precision_in_json(capsys):
    # F1 over aligned words (see test_metrics): UPOS 8/15, words 12/15.
    r, err = cli_json(capsys, "pos", "--gold", f("pos_gold.conllu"), "--pred", f("pos_pred_tok.conllu"))
    assert r["upos"] == pytest.approx(800 / 15, abs=1e-9)
    assert r["words_f1"] == pytest.approx(80.0)
    assert (r["words"], r["pred_words"], r["aligned_words"]) == (8, 7, 6)
    assert "UPOS 53.33" in err and "words F1 80.00" in err


def test_eval_parse():
    r = ev.evaluate("parse", f("parse_gold.conllu"), pred=f("parse_pred.conllu"))
    assert (r["uas"], r["las"], r["uas_nopunct"], r["las_nopunct"]) == (80.0, 60.0, 87.5, 75.0)
    assert r["nopunct_words"] == 8
    assert "UAS 80.00  LAS 60.00" in ev.summary(r)


@pytest.mark.parametrize("stage,columns,names", [("pos", (UPOS, XPOS), "UPOS/XPOS"), ("parse", (HEAD, DEPREL), "HEAD/DEPREL")])
def test_pred_without_the_scored_columns_gets_a_warning(capsys, tmp_path, stage, columns, names):
    sents = list(read_file(f("parse_gold.conllu")))
    for s in sents:
        for w in s.words:
            for c in columns:
                w[c] = "_"
    bare = tmp_path / "bare.conllu"
    bare.write_text(to_string(sents), encoding="utf-8")
    r, err = cli_json(capsys, stage, "--gold", f("parse_gold.conllu"), "--pred", str(bare))
    warning = f"{bare} has no {names} at all (every word has '_'): not the output of 'nlpipe {stage}'?"
    assert r["warnings"] == [warning] and f"nlpipe: warning: {warning}" in err
    r, err = cli_json(capsys, stage, "--gold", f("parse_gold.conllu"), "--pred", f("parse_gold.conllu"))
    assert "warnings" not in r and "warning" not in err


def test_eval_ner():
    r = ev.evaluate("ner", f("ner_gold.conllu"), pred=f("ner_pred.conllu"))
    assert r["f1"] == pytest.approx(200 / 7, abs=1e-9)
    assert (r["gold"], r["pred"], r["correct"], r["scheme"]) == (7, 7, 2, "iob1")
    assert r["types"]["PER"]["recall"] == 25.0 and r["types"]["ORG"]["f1"] == 0.0
    assert r["tag_accuracy"] == pytest.approx(1200 / 19, abs=1e-9)
    text = ev.summary(r)
    assert "ner: P 28.57  R 28.57  F1 28.57" in text and "PER" in text
    r = ev.evaluate("ner", f("ner_gold.conllu"), pred=f("ner_pred.conllu"), scheme="bio")
    assert r["scheme"] == "bio" and r["correct"] == 2


def test_ner_bio_scheme_rejects_bioes_tags(tmp_path):
    p = tmp_path / "s.conllu"
    p.write_text("1\tBob\t_\t_\t_\t_\t_\t_\t_\tNE=S-PER\n\n")
    with pytest.raises(NlpipeError, match="--scheme bio given but the tags use E-/S-"):
        ev.evaluate("ner", str(p), pred=str(p), scheme="bio")


def test_eval_predicates_and_srl():
    r = ev.evaluate("predicates", f("srl_gold.conllu"), pred=f("srl_pred.conllu"))
    assert (r["precision"], r["recall"], r["f1"], r["sense_accuracy"]) == (80.0, 80.0, 80.0, 75.0)
    assert r["sense_f1"] == pytest.approx(60.0)
    r = ev.evaluate("srl", f("srl_gold.conllu"), pred=f("srl_pred.conllu"))
    assert r["f1"] == pytest.approx(600 / 13, abs=1e-9)
    assert (r["precision"], r["propositions"], r["perfect_propositions"]) == (50.0, 5, 20.0)
    assert r["roles"]["ARG0"]["f1"] == pytest.approx(80.0)
    assert r["predicates"]["f1"] == 80.0
    assert "srl: P 50.00  R 42.86  F1 46.15" in ev.summary(r)


def test_eval_tokenize_pred():
    r = ev.evaluate("tokenize", f("tok_gold.conllu"), pred=f("tok_pred.conllu"))
    assert r["tokens_f1"] == pytest.approx(200 / 3)
    assert r["sentences_f1"] == pytest.approx(40.0)
    assert r["words_f1"] == pytest.approx(1600 / 19)
    assert r["detail"]["sentences"] == {"precision": 50.0, "recall": pytest.approx(100 / 3), "f1": 40.0,
                                        "gold": 3, "pred": 2, "correct": 1}


# ---------------------------------------------------------------------------------------------
# --model, with stand-in stages so that only evaluate.py is under test

class MemoTagger:
    """Tags from a form -> (UPOS, XPOS) table; remembers whether its input still had tags."""

    requires = frozenset()

    def __init__(self, table):
        self.table = table
        self.saw_tags = False

    def annotate(self, sentences):
        for s in sentences:
            for w in s.words:
                self.saw_tags |= w[UPOS] != "_" or w[XPOS] != "_"
                w[UPOS], w[XPOS] = self.table[w[1]]
            yield s


def test_eval_model_strips_gold_columns_and_reports_speed(monkeypatch, capsys):
    gold = list(read_file(f("pos_gold.conllu")))
    table = {w[1]: (w[UPOS], w[XPOS]) for s in gold for w in s.words}
    table["cat"] = ("VERB", "NN")  # one UPOS error of 8
    tagger = MemoTagger(table)
    calls = []

    def fake_load(stage, model=None, **options):
        calls.append((stage, model, options))
        return tagger

    monkeypatch.setattr(ev, "load_stage", fake_load)
    r, err = cli_json(capsys, "pos", "--gold", f("pos_gold.conllu"), "--model", "m1")
    assert calls == [("pos", "m1", {"device": "cpu"})]
    assert not tagger.saw_tags
    assert (r["upos"], r["xpos"], r["model"]) == (87.5, 100.0, "m1")
    assert r["speed"]["tokens_per_s"] > 0 and r["speed"]["sentences_per_s"] > 0
    assert "tokens/s" in err
    # the gold file itself is untouched by the run
    assert list(read_file(f("pos_gold.conllu")))[0].words[1][UPOS] == "NOUN"


def test_eval_model_margin_goes_to_the_loader_and_templates_are_reported(monkeypatch, capsys):
    gold = list(read_file(f("pos_gold.conllu")))
    tagger = MemoTagger({w[1]: (w[UPOS], w[XPOS]) for s in gold for w in s.words})
    tagger.mean_templates = 3.25
    calls = []

    def fake_load(stage, model=None, **options):
        calls.append(options)
        return tagger

    monkeypatch.setattr(ev, "load_stage", fake_load)
    r, err = cli_json(capsys, "pos", "--gold", f("pos_gold.conllu"), "--model", "m1", "--margin", "0.5")
    assert calls == [{"device": "cpu", "margin": 0.5}]
    assert r["margin"] == 0.5 and r["speed"]["mean_templates"] == 3.25
    assert "feature templates per word: 3.2" in err
    calls.clear()
    r, _ = cli_json(capsys, "pos", "--gold", f("pos_gold.conllu"), "--model", "m1", "--margin", "0.5",
                    "--first-margin", "0.6", "--first-checkpoints", "2,4", "--checkpoints", "4")
    assert calls == [{"device": "cpu", "margin": 0.5, "checkpoints": "4", "first_margin": 0.6,
                      "first_checkpoints": "2,4"}]
    assert (r["first_margin"], r["first_checkpoints"], r["checkpoints"]) == (0.6, "2,4", "4")


def test_margin_is_refused_where_it_means_nothing(capsys):
    # each stage's eval has only its own options: --margin is no option of eval ner, --first-margin none of parse
    for args in (["ner", "--gold", f("ner_gold.conllu"), "--model", "x", "--margin", "1"],
                 ["parse", "--gold", f("pos_gold.conllu"), "--model", "x", "--first-margin", "1"]):
        with pytest.raises(SystemExit) as e:
            main(["eval", *args])
        assert e.value.code == 2
        assert f"No such option '{args[-2]}'" in capsys.readouterr().err
    err = one_line_error(capsys, "pos", "--gold", f("pos_gold.conllu"), "--pred", f("pos_pred.conllu"),
                         "--margin", "1")
    assert "--margin applies to a model that eval runs, not to --pred" in err


def test_eval_model_applies_the_filters_length_limit(monkeypatch, capsys):
    # pos_gold.conllu: sentences of 4 and 4 words (test_metrics); a stand-in tagger with a limit of 3
    # words passes both through untagged, as `nlpipe pos` would, and eval says so.
    gold = list(read_file(f("pos_gold.conllu")))
    tagger = MemoTagger({w[1]: (w[UPOS], w[XPOS]) for s in gold for w in s.words})
    tagger.name, tagger.max_len = "pos", 3
    monkeypatch.setattr(ev, "load_stage", lambda stage, model=None, **o: tagger)
    r, err = cli_json(capsys, "pos", "--gold", f("pos_gold.conllu"), "--model", "m1")
    assert r["upos"] == 0.0 and len(r["warnings"]) == 2
    assert "more than the pos model's limit of 3; passed through without pos" in r["warnings"][0]
    assert err.count("nlpipe: warning:") == 2


def test_eval_prints_its_summary_on_stdout_and_json_only_with_json(capsys):
    main(["eval", "pos", "--gold", f("pos_gold.conllu"), "--pred", f("pos_pred.conllu")])
    out, err = capsys.readouterr()
    assert out == "pos: UPOS 75.00  XPOS 87.50  (8 words)\n" and err == ""
    main(["eval", "pos", "--gold", f("pos_gold.conllu"), "--pred", f("pos_pred.conllu"), "--json"])
    out, err = capsys.readouterr()
    assert json.loads(out)["upos"] == 75.0 and err == "pos: UPOS 75.00  XPOS 87.50  (8 words)\n"


def test_strip_stage_columns():
    srl = list(read_file(f("srl_gold.conllu")))
    kept = ev.strip_stage("srl", srl, gold_predicates=True)
    assert all(misc_get(w[MISC], "SRL") is None for s in kept for w in s.words)
    assert [misc_get(w[MISC], "Pred") for w in kept[2].words] == [None, "rain.01", None]
    gone = ev.strip_stage("srl", srl)
    assert all(w[MISC] == "_" for s in gone for w in s.words)
    assert misc_get(srl[2].words[1][MISC], "SRL") == "2:B-V"  # originals unchanged
    parse = ev.strip_stage("parse", list(read_file(f("parse_gold.conllu"))))
    assert {(w[HEAD], w[DEPREL]) for s in parse for w in s.words} == {("_", "_")}
    ner = ev.strip_stage("ner", list(read_file(f("ner_gold.conllu"))))
    assert all(w[MISC] == "_" for s in ner for w in s.words)


def test_eval_srl_model_with_gold_predicates(monkeypatch):
    pred = list(read_file(f("srl_pred.conllu")))
    seen = []

    class FakeSRL:
        requires = frozenset({"predicates"})

        def annotate(self, sentences):
            for s, p in zip(sentences, pred):
                seen.append([misc_get(w[MISC], "Pred") for w in s.words])
                assert all(misc_get(w[MISC], "SRL") is None for w in s.words)
                yield p

    monkeypatch.setattr(ev, "load_stage", lambda stage, model=None, **o: FakeSRL())
    r = ev.evaluate("srl", f("srl_gold.conllu"), model="x", gold_predicates=True)
    assert r["f1"] == pytest.approx(600 / 13, abs=1e-9) and r["gold_predicates"] is True
    assert seen[2] == [None, "rain.01", None]


def test_eval_srl_model_with_gold_parse_asks_for_the_input_heads(monkeypatch):
    pred = list(read_file(f("srl_pred.conllu")))
    options = []

    class FakeSRL:
        requires = frozenset({"tokenize"})

        def annotate(self, sentences):
            yield from pred

    def fake_load(stage, model=None, **o):
        options.append(o)
        return FakeSRL()

    monkeypatch.setattr(ev, "load_stage", fake_load)
    r = ev.evaluate("srl", f("srl_gold.conllu"), model="x", gold_parse=True)
    assert options == [{"device": "cpu", "parse_from_input": True}] and r["gold_parse"] is True
    ev.evaluate("srl", f("srl_gold.conllu"), model="x")
    assert options[1] == {"device": "cpu"}


def test_eval_srl_model_end_to_end_runs_predicates_first(monkeypatch):
    # Without gold predicates both Pred and SRL are blanked; an SRL stage that requires
    # predicates gets the default predicates stage in front of it.
    pred = list(read_file(f("srl_pred.conllu")))
    order = []

    class FakePredicates:
        requires = frozenset()

        def annotate(self, sentences):
            for s in sentences:
                assert all(w[MISC] == "_" for w in s.words)
                order.append("predicates")
                yield s

    class FakeSRL:
        requires = frozenset({"predicates"})

        def annotate(self, sentences):
            for s, p in zip(sentences, pred):
                order.append("srl")
                yield p

    stages = {"predicates": FakePredicates(), "srl": FakeSRL()}
    loaded = []

    def fake_load(stage, model=None, **o):
        loaded.append((stage, model))
        return stages[stage]

    monkeypatch.setattr(ev, "load_stage", fake_load)
    r = ev.evaluate("srl", f("srl_gold.conllu"), model="s")
    assert loaded == [("srl", "s"), ("predicates", None)]
    assert order == ["predicates"] * 3 + ["srl"] * 3   # stage after stage over the chunk, as the filters run
    assert r["gold_predicates"] is False and r["predicates"]["f1"] == 80.0


def test_raw_text_paragraphs():
    # t1 starts a document and a paragraph, t2 continues it, t3 starts a new paragraph.
    assert ev.raw_text(read_file(f("tok_gold.conllu"))) == "I don't know. Fine.\n\nBye now.\n"
    assert ev.raw_text([]) == ""


def test_eval_tokenize_model(monkeypatch):
    texts = []

    class FakeTokenizer:
        def tokenize(self, stream, name):
            texts.append((stream.read(), name))
            return iter(list(read_file(f("tok_pred.conllu"))))

    monkeypatch.setattr(ev, "load_stage", lambda stage, model=None, **o: FakeTokenizer())
    r = ev.evaluate("tokenize", f("tok_gold.conllu"), model="tok")
    assert texts == [("I don't know. Fine.\n\nBye now.\n", f("tok_gold.conllu"))]
    assert r["sentences_f1"] == pytest.approx(40.0) and r["tokens_f1"] == pytest.approx(200 / 3)
    assert "speed" in r and "tokenize: tokens F1 66.67" in ev.summary(r)


# ---------------------------------------------------------------------------------------------
# Errors: one line, exit code 2

def one_line_error(capsys, *args):
    with pytest.raises(SystemExit) as e:
        main(["eval", *args])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nlpipe: error: ") and "Traceback" not in err
    return err


def test_missing_file(capsys, tmp_path):
    err = one_line_error(capsys, "pos", "--gold", str(tmp_path / "nope.conllu"), "--pred", f("pos_pred.conllu"))
    assert "nope.conllu: no such file" in err


def test_mismatched_files_for_pos(capsys):
    err = one_line_error(capsys, "pos", "--gold", f("pos_gold.conllu"), "--pred", f("parse_gold.conllu"))
    assert "texts differ" in err and "pos_gold.conllu:" in err and "parse_gold.conllu:" in err


def test_mismatched_sentence_counts(capsys, tmp_path):
    short = tmp_path / "short.conllu"
    short.write_text(to_string(list(read_file(f("ner_pred.conllu")))[:2]))
    err = one_line_error(capsys, "ner", "--gold", f("ner_gold.conllu"), "--pred", str(short))
    assert "has 3 sentences but" in err and "has 2" in err
    first = tmp_path / "first.conllu"
    first.write_text(to_string(list(read_file(f("pos_pred.conllu")))[:1]))
    err = one_line_error(capsys, "pos", "--gold", f("pos_gold.conllu"), "--pred", str(first))
    assert "ends early" in err and "(2 sentences in" in err and ", 1 in" in err


def test_bad_tag_in_pred_names_line(capsys, tmp_path):
    bad = tmp_path / "bad.conllu"
    bad.write_text((M / "ner_pred.conllu").read_text().replace("NE=B-ORG", "NE=ORG", 1))
    err = one_line_error(capsys, "ner", "--gold", f("ner_gold.conllu"), "--pred", str(bad))
    assert f"{bad}:" in err and "NE tag 'ORG'" in err


def test_pred_and_model_together(capsys):
    err = one_line_error(capsys, "pos", "--gold", f("pos_gold.conllu"), "--pred", f("pos_pred.conllu"), "-m", "x")
    assert "either --pred or --model" in err
    with pytest.raises(NlpipeError, match="either"):
        ev.evaluate("pos", f("pos_gold.conllu"), pred=f("pos_pred.conllu"), model="x")


# ---------------------------------------------------------------------------------------------
# Corpus: nlpipe's scores on a corrupted EWT dev equal direct counting

@pytest.mark.corpus
def test_corrupted_ewt_dev_scores_match_direct_counts(corpora, tmp_path):
    dev = corpora / "en_ewt" / "en_ewt-ud-dev.conllu"
    if not dev.is_file():
        pytest.skip(f"{dev} not found")
    gold = list(read_file(str(dev)))
    pred = list(read_file(str(dev)))
    upos = sorted({w[UPOS] for s in gold for w in s.words})
    xpos = sorted({w[XPOS] for s in gold for w in s.words})
    rels = sorted({w[DEPREL] for s in gold for w in s.words})
    rng = random.Random(20261123)
    changed = 0
    for s in pred:
        n = len(s.words)
        for w in s.words:
            for col, choices in ((UPOS, upos), (XPOS, xpos), (HEAD, [str(h) for h in range(n + 1)]),
                                 (DEPREL, rels)):
                if rng.random() < 0.05:
                    w[col] = rng.choice([c for c in choices if c != w[col]])
                    changed += 1
    corrupt = tmp_path / "corrupt.conllu"
    corrupt.write_text(to_string(pred), encoding="utf-8")

    pairs = [(g, p) for gs, ps in zip(gold, pred) for g, p in zip(gs.words, ps.words)]
    total = len(pairs)
    assert 0.04 < changed / (4 * total) < 0.06

    def pct(n, d):
        return 100.0 * n / d

    nopunct = [(g, p) for g, p in pairs if g[UPOS] != "PUNCT"]
    uas = lambda g, p: g[HEAD] == p[HEAD]  # noqa: E731
    las = lambda g, p: uas(g, p) and g[DEPREL].split(":")[0] == p[DEPREL].split(":")[0]  # noqa: E731
    r = ev.evaluate("pos", str(dev), pred=str(corrupt))
    assert r["words"] == total
    assert r["upos"] == pytest.approx(pct(sum(g[UPOS] == p[UPOS] for g, p in pairs), total), abs=1e-9)
    assert r["xpos"] == pytest.approx(pct(sum(g[XPOS] == p[XPOS] for g, p in pairs), total), abs=1e-9)
    r = ev.evaluate("parse", str(dev), pred=str(corrupt))
    assert r["uas"] == pytest.approx(pct(sum(uas(g, p) for g, p in pairs), total), abs=1e-9)
    assert r["las"] == pytest.approx(pct(sum(las(g, p) for g, p in pairs), total), abs=1e-9)
    assert r["uas_nopunct"] == pytest.approx(pct(sum(uas(g, p) for g, p in nopunct), len(nopunct)), abs=1e-9)
    assert r["las_nopunct"] == pytest.approx(pct(sum(las(g, p) for g, p in nopunct), len(nopunct)), abs=1e-9)
    assert 90.0 < r["uas"] < 99.0


@pytest.mark.parametrize("stage, names, key", [("srl", "semantic roles", "SRL"), ("ner", "entities", "NE"),
                                               ("predicates", "predicates", "Pred")])
def test_gold_without_what_is_scored_gets_a_warning(stage, names, key):
    gold = f("parse_gold.conllu")  # a treebank file: no NE=, Pred= or SRL=
    r = ev.evaluate(stage, gold, pred=gold)
    assert r["warnings"][0] == (f"{gold} has no {names} at all (no word has {key}=): "
                                f"there is nothing to score {stage} against")
