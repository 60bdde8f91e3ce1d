"""``nlpipe train pipeline`` on a tiny made-up treebank (no XPOS, multiword tokens whose parts do not
spell the surface form), then ``nlpipe annotate --models DIR`` on raw text, the language of every
model in it, and nothing of an English model inside it."""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import List, Tuple

import pytest

from conftest import REPO, run_cli

# The made-up language "Kelic" (code "qkl", from ISO 639-3's private-use range qaa-qtz).
NOUNS = ["balu", "kemi", "tora", "sapin", "gulo", "ravet", "mino", "desak"]
VERBS = ["hatu", "pelim", "kosar", "vindu", "larek"]
ADJS = ["nuri", "tagol", "bresi"]
# (preposition, article) -> the contraction written instead of them, spelling neither part
CONTRACTIONS = {("ko", "la"): "zum", ("ma", "la"): "vai", ("ko", "si"): "pex"}
ARTICLES = ["la", "si"]
PREPS = ["ko", "ma", "tu"]


def sentence(rng: random.Random, n: int, lemmas_feats: bool = True) -> Tuple[str, List[str]]:
    """One sentence ``ART NOUN [ADJ] VERB PREP ART NOUN .``: its ``# text`` and its CoNLL-U lines
    (LEMMA and FEATS ``_`` unless ``lemmas_feats``; the second noun's FEATS say Case=Acc, which its
    place in the tree decides, so that the parsers get FEATS after the parse)."""
    art1, noun1, verb = rng.choice(ARTICLES), rng.choice(NOUNS), rng.choice(VERBS)
    prep, art2, noun2 = rng.choice(PREPS), rng.choice(ARTICLES), rng.choice(NOUNS)
    adj = rng.choice(ADJS) if rng.random() < 0.4 else None
    cap = art1.capitalize()
    # (form, lemma, upos, feats, head, deprel); IDs 1..; the subject noun is word 2, the verb the root
    words = [(cap, art1, "DET", "Definite=Def", 2, "det"), (noun1, noun1, "NOUN", "Number=Sing", None, "nsubj")]
    if adj:
        words.append((adj, adj, "ADJ", "_", 2, "amod"))
    v = len(words) + 1
    words.append((verb, verb, "VERB", "Tense=Pres", 0, "root"))
    words[1] = words[1][:4] + (v,) + words[1][5:]
    p = len(words) + 1
    words += [(prep, prep, "ADP", "_", p + 2, "case"), (art2, art2, "DET", "Definite=Def", p + 2, "det"),
              (noun2, noun2, "NOUN", "Case=Acc|Number=Sing", v, "obl"), (".", ".", "PUNCT", "_", v, "punct")]
    contraction = CONTRACTIONS.get((prep, art2))
    rows, text = [], []
    for i, (form, lemma, upos, feats, head, rel) in enumerate(words, 1):
        if contraction and i == p:
            rows.append(f"{p}-{p + 1}\t{contraction}\t_\t_\t_\t_\t_\t_\t_\t_")
            text.append(contraction)
        elif not (contraction and i == p + 1):
            text.append(form)
        misc = "SpaceAfter=No" if i == len(words) - 1 else "_"
        if contraction and i in (p, p + 1):
            misc = "_"
        if not lemmas_feats:
            lemma, feats = "_", "_"
        rows.append(f"{i}\t{form}\t{lemma}\t{upos}\t_\t{feats}\t{head}\t{rel}\t_\t{misc}")
    raw = " ".join(text[:-1]) + text[-1]
    return raw, [f"# sent_id = s{n}", f"# text = {raw}"] + rows


def write_treebank(path: Path, count: int, seed: int, lemmas_feats: bool = True) -> List[str]:
    """Write ``count`` sentences (a paragraph every 5) and return their texts."""
    rng = random.Random(seed)
    texts, lines = [], []
    for n in range(count):
        raw, rows = sentence(rng, n, lemmas_feats)
        if n % 5 == 0:
            rows.insert(0, "# newpar")
        texts.append(raw)
        lines += rows + [""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return texts


# ---------------------------------------------------------------------------------------------
# One small pipeline, trained once for the tests below

# small trainers, so that the whole pipeline trains in seconds
QUICK = ["--set", "tokenize.epochs=8", "--set", "tokenize.dilations=1,2,4", "--set", "tokenize.length=128",
         "--set", "tokenize.channels=16", "--set", "tokenize.lr=0.01", "--set", "tokenize.ema_decay=0.5", "--set", "pos.epochs=2", "--set", "pos.order=baseline",
         "--set", "pos-bilstm.epochs=2", "--set", "pos-bilstm.hidden=16",
         "--set", 'pos-bilstm.hyper={"word_dim": 16, "affix_dim": 16}',
         "--set", "parse-transition.epochs=2", "--set", "parse.epochs=2",
         "--set", 'parse.hyper={"hidden": 16, "layers": 1, "arc_dim": 32, "rel_dim": 16}']
RAW = "La kemi kosar zum desak. Si balu hatu vai mino.\n"


def nlpipe(*args: str, env: "dict | None" = None) -> Tuple[int, str, str]:
    """``nlpipe ARGS`` in this process: (exit code, stdout, stderr)."""
    import contextlib
    import io
    import os
    import sys

    from nlpipe.cli import main

    out, err = io.BytesIO(), io.StringIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8")   # with a .buffer, as annotate writes bytes
    old_env = dict(os.environ)
    os.environ.update(env or {})
    code = 0
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err):
            try:
                main(list(args))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
            sys.stdout.flush()
    finally:
        os.environ.clear()
        os.environ.update(old_env)
    return code, out.getvalue().decode("utf-8"), err.getvalue()


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(folder of the trained pipeline, training file, stdout of the command)."""
    root = tmp_path_factory.mktemp("qkl")
    write_treebank(root / "train.conllu", 60, seed=1)
    write_treebank(root / "dev.conllu", 15, seed=2)
    (root / "raw.txt").write_text(RAW, encoding="utf-8")
    out = root / "models" / "qkl"
    code, stdout, stderr = nlpipe("train", "pipeline", "--train", str(root / "train.conllu"), "--dev",
                                  str(root / "dev.conllu"), "--lang", "qkl", "--out", str(out), *QUICK)
    assert code == 0, stderr
    return out, root, stdout


def test_every_part_is_trained_in_the_language_given_and_its_dev_scores_printed(trained):
    out, _, stdout = trained
    for part, stage in (("tokenize", "tokenize"), ("pos", "pos"), ("pos-bilstm", "pos"), ("parse", "parse"),
                        ("parse-transition", "parse")):
        config = json.loads((out / part / "config.json").read_text(encoding="utf-8"))
        assert (config["stage"], config["language"]) == (stage, "qkl")
    lines = stdout.splitlines()
    for head, metric in (("tokenize (tokenize", "dev tokens_f1"), ("pos (pos", "dev upos"),
                         ("parse-transition (parse", "dev las"), ("parse (parse", "dev las")):
        at = next(i for i, line in enumerate(lines) if line.startswith(head))
        assert lines[at + 1].strip().startswith("dev ") and any(metric in x for x in lines[at + 1:at + 5])
    assert lines[-1].startswith("pipeline (qkl): ") and lines[-1].endswith(str(out))
    for parser in ("parse-transition (parse", "parse (parse"):   # FEATS after the parse, on stdout too
        at = next(i for i, line in enumerate(lines) if line.startswith(parser))
        block = lines[at + 1:next((i for i in range(at + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))]
        assert any(x.split()[:2] == ["dev", "ufeats_after_parse"] for x in block), block
    pos = json.loads((out / "pos" / "config.json").read_text(encoding="utf-8"))["training"]["scores"]
    assert {"dev_upos", "dev_lemmas", "dev_ufeats"} <= set(pos)   # the treebank has lemmas and features
    tagger = json.loads((out / "pos" / "config.json").read_text(encoding="utf-8"))["model"]
    assert tagger["margin"] == 1.0     # a tagger trained on template prefixes tags at its training margin
    bilstm = json.loads((out / "pos-bilstm" / "config.json").read_text(encoding="utf-8"))["model"]
    # a hyper-parameter set on its own (--set pos-bilstm.hidden=16) and others in one dict (.hyper=...)
    assert (bilstm["hidden"], bilstm["word_dim"], bilstm["affix_dim"]) == (16, 16, 16)
    # the fast tagger trained just before was offered to the BiLSTM one as its linear part
    assert json.loads((out / "pos-bilstm" / "config.json").read_text(encoding="utf-8"))["training"]["linear"] \
        == str(out / "pos")


@pytest.mark.parametrize("parts, given, expected", [
    (("pos", "pos-bilstm"), {}, "pos"),                             # the fast tagger of the same run
    (("pos", "pos-bilstm"), {"pos-bilstm": {"linear": None}}, None),  # --set pos-bilstm.linear=null
    (("pos-bilstm",), {}, "absent"),                                  # a fast tagger left from before: not used
])
def test_the_bilstm_tagger_is_offered_the_pipelines_fast_tagger(tmp_path, monkeypatch, parts, given, expected):
    from nlpipe.train import bilstm_tagger
    from nlpipe.train.pipeline import PipelineOptions, train_bilstm_tagger

    (tmp_path / "pos").mkdir()
    (tmp_path / "pos" / "config.json").write_text("{}", encoding="utf-8")
    seen = {}
    monkeypatch.setattr(bilstm_tagger, "train", lambda train, dev, out, **kw: seen.update(kw))
    train_bilstm_tagger("t", "d", tmp_path / "pos-bilstm", PipelineOptions(parts=parts, part_options=given),
                        None, print)
    assert seen.get("linear", "absent") == (str(tmp_path / "pos") if expected == "pos" else expected)


def test_loading_a_model_exposes_its_language(trained):
    from nlpipe.registry import load_stage

    out, _, _ = trained
    assert load_stage("pos", str(out / "pos")).language == "qkl"
    assert load_stage("pos").language == "en"   # the shipped tagger


def test_annotate_models_runs_the_pipeline_on_raw_text(trained):
    from nlpipe.io.conllu import parse_string

    out, root, _ = trained
    code, stdout, stderr = nlpipe("annotate", "--models", str(out), str(root / "raw.txt"))
    assert code == 0, stderr
    sentences = parse_string(stdout)
    words = [w for s in sentences for w in s.words]
    assert words and all(w[3] in {"DET", "NOUN", "ADJ", "VERB", "ADP", "PUNCT"} for w in words)  # UPOS
    assert all(w[4] == "_" for w in words)                      # the treebank has no XPOS
    assert all(w[6] != "_" and w[7] != "_" for w in words)      # parsed
    assert "NE=" not in stdout and "Pred=" not in stdout        # no English NER or SRL ran
    # the made-up contractions come out as multiword tokens with the treebank's expansions
    assert [s.text() for s in sentences] == ["La kemi kosar zum desak.", "Si balu hatu vai mino."]
    assert "4-5\tzum\t" in stdout and "\n4\tko\t" in stdout and "\n5\tla\t" in stdout
    assert "4-5\tvai\t" in stdout and "\n4\tma\t" in stdout


def test_annotate_models_by_name_from_nlpipe_models(trained, monkeypatch):
    out, root, _ = trained
    code, stdout, stderr = nlpipe("annotate", "--models", "qkl", "--stages", "tokenize,pos", str(root / "raw.txt"),
                                  env={"NLPIPE_MODELS": str(out.parent)})
    assert code == 0, stderr
    assert "\tNOUN\t" in stdout


def test_default_stages_are_those_with_a_model_in_the_language(trained):
    from nlpipe.io.conllu import parse_string

    out, root, _ = trained
    gold = root / "dev.conllu"
    code, stdout, stderr = nlpipe("annotate", "--model", f"pos={out / 'pos'}", "--model", f"parse={out / 'parse'}",
                                  str(gold))
    assert code == 0, stderr
    assert "NE=" not in stdout and "Pred=" not in stdout and "SRL=" not in stdout
    words = [w for s in parse_string(stdout) for w in s.words]
    assert all(w[2] != "_" and w[3] != "_" and w[6] != "_" for w in words)   # LEMMA, UPOS, HEAD


def test_mixed_languages_are_refused_unless_allowed(trained):
    out, root, _ = trained
    args = ("annotate", "--stages", "tokenize,pos", "--model", f"pos={out / 'pos'}", str(root / "raw.txt"))
    code, stdout, stderr = nlpipe(*args)
    assert code == 2 and stdout == ""
    assert stderr == (f"nlpipe: error: the models are of different languages: tokenize tokenize-char-ewt (en), "
                      f"pos {out / 'pos'} (qkl); give models of one language (--model STAGE=M, --models DIR, "
                      "--stages) or --allow-mixed-languages\n")
    code, stdout, stderr = nlpipe(*args, "--allow-mixed-languages")
    assert code == 0, stderr
    assert "\tNOUN\t" in stdout


def test_nlpipe_models_lists_the_user_models_with_language_and_scores(trained):
    out, _, _ = trained
    code, stdout, stderr = nlpipe("models", "--json", env={"NLPIPE_MODELS": str(out.parent)})
    assert code == 0, stderr
    rows = {r["name"]: r for r in json.loads(stdout)}
    assert rows["pos-ewt"]["language"] == "en" and rows["pos-ewt"]["default"]
    mine = {r["path"]: r for r in rows.values() if r["language"] == "qkl"}
    assert sorted(mine) == sorted(str(out / p) for p in ("tokenize", "pos", "pos-bilstm", "parse", "parse-transition"))
    assert {mine[str(out / "parse")]["stage"], mine[str(out / "tokenize")]["stage"]} == {"parse", "tokenize"}
    assert "dev_las" in mine[str(out / "parse")]["scores"]
    assert not mine[str(out / "pos")]["default"]
    code, text, _ = nlpipe("models", "--models", str(out))
    assert code == 0
    line = next(x for x in text.splitlines() if x.split()[0] == str(out / "pos"))
    assert line.split()[1:3] == ["pos", "qkl"] and "dev_upos" in line


def test_no_file_of_an_english_model_in_the_pipeline(trained):
    from nlpipe.registry import MODELS_DIR

    out, root, _ = trained

    def digest(p: Path) -> str:
        return hashlib.sha256(p.read_bytes()).hexdigest()

    english = {digest(p) for p in MODELS_DIR.rglob("*") if p.is_file()}
    mine = [p for p in out.rglob("*") if p.is_file()]
    assert mine and not [p for p in mine if digest(p) in english]
    forms = {line.split("\t")[1].lower() for line in (root / "train.conllu").read_text(encoding="utf-8").splitlines()
             if line and not line.startswith("#")}
    # the tokenizer's word rules and Punkt parameters are learned from this treebank: no English in them
    tokenizer = out / "tokenize"
    rules = json.loads((tokenizer / "rules.json").read_text(encoding="utf-8"))
    assert rules["english"] is False and rules["abbreviations"] == [] and rules["splits"] == {}
    punkt = json.loads((tokenizer / "punkt.json").read_text(encoding="utf-8"))
    words = set(punkt["ortho_context"]) | set(punkt["sent_starters"]) | set(punkt["abbrev_types"])
    assert words and {w.rstrip(".") for w in words} <= forms
    # no GloVe words: every vocabulary word is a word of the training data
    for vocab in out.rglob("vocab.json"):
        words = json.loads(vocab.read_text(encoding="utf-8")).get("words", [])
        assert {w.lower() for w in words} <= forms, vocab


def test_a_treebank_without_xpos_lemmas_or_features_trains_and_they_stay_blank(tmp_path):
    from nlpipe.io.conllu import parse_string

    write_treebank(tmp_path / "t.conllu", 30, seed=4, lemmas_feats=False)
    write_treebank(tmp_path / "d.conllu", 8, seed=5, lemmas_feats=False)
    code, _, stderr = nlpipe("train", "pipeline", "--train", str(tmp_path / "t.conllu"), "--dev", str(tmp_path / "d.conllu"),
                             "--out", str(tmp_path / "m"), "--lang", "qkl", "--parts", "pos,parse-transition", *QUICK)
    assert code == 0, stderr
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["parse-transition", "pos"]
    code, stdout, stderr = nlpipe("annotate", "--models", str(tmp_path / "m"), str(tmp_path / "d.conllu"))
    assert code == 0, stderr
    words = [w for s in parse_string(stdout) for w in s.words]
    assert words and all(w[3] != "_" and w[6] != "_" for w in words)           # UPOS, HEAD
    assert all((w[2], w[4], w[5]) == ("_", "_", "_") for w in words)            # LEMMA, XPOS, FEATS


def test_pipeline_option_errors(tmp_path):
    write_treebank(tmp_path / "t.conllu", 5, seed=3)
    t = str(tmp_path / "t.conllu")
    for extra, message in (
            (["--set", "parse.epochs"], "--set expects PART.OPTION=VALUE (e.g. parse.epochs=2), got 'parse.epochs'"),
            (["--set", "lemma.epochs=2"], "--set lemma...: no part 'lemma' (expected one of: tokenize, pos, "
                                          "pos-bilstm, parse-transition, parse)"),
            (["--parts", "pos,ner"], "unknown part(s) ner (expected some of: tokenize, pos, pos-bilstm, "
                                     "parse-transition, parse)"),
    ):
        code, _, stderr = nlpipe("train", "pipeline", "--train", t, "--dev", t, "--out", str(tmp_path / "m"), *extra)
        assert (code, stderr) == (2, f"nlpipe: error: {message}\n")
    code, _, stderr = nlpipe("train", "pipeline", "--train", t, "--dev", str(tmp_path / "none.conllu"),
                             "--out", str(tmp_path / "m"))
    assert (code, stderr) == (2, f"nlpipe: error: --dev {tmp_path / 'none.conllu'}: no such file\n")
    code, _, stderr = nlpipe("train", "pipeline", "--train", t, "--dev", t, "--out", str(tmp_path / "m"),
                             "--parts", "pos", "--set", "pos.nonsense=1")
    assert code == 2 and stderr.startswith("nlpipe: error: --set pos.nonsense: the pos trainer has no option "
                                           "'nonsense' (it takes: ")
    code, _, stderr = nlpipe("train", "pipeline", "--train", t, "--dev", t, "--out", str(tmp_path / "m"),
                             "--parts", "pos-bilstm", "--set", "pos-bilstm.hiden=64")
    assert code == 2 and stderr.startswith("nlpipe: error: --set pos-bilstm.hiden: the pos-bilstm trainer has no "
                                           "option 'hiden' (it takes: ")
    assert " hidden, " in stderr and not (tmp_path / "m").exists()


def test_the_time_budget_is_shared():
    from nlpipe.train.pipeline import share

    assert share("tokenize", 60.0, 60.0) == 15.0          # a quarter of the budget
    assert share("tokenize", 60.0, 10.0) == 10.0          # never more than is left
    assert share("pos", 60.0, 50.0) is None and share("parse-transition", 60.0, 50.0) is None
    assert share("parse", 60.0, 31.5) == 31.5             # the biaffine parser: what is left
    assert share("parse", 60.0, -3.0) == 1.0              # and at least a minute
    assert share("pos-bilstm", 60.0, 50.0) == 15.0        # the BiLSTM tagger: a quarter too
    assert share("pos-bilstm", 60.0, 4.0) == 4.0


def _with_dev_scores(folder: Path, **scores: float) -> None:
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["training"]["scores"] = {f"dev_{k}": v for k, v in scores.items()}
    path.write_text(json.dumps(config), encoding="utf-8")


@pytest.mark.parametrize("upos, lemmas, bilstm_won", [(92.0, 83.0, True), (80.0, 80.0, False), (85.0, 85.0, False)])
def test_the_tagger_with_the_better_dev_scores_becomes_pos(trained, tmp_path, upos, lemmas, bilstm_won):
    import shutil

    from nlpipe.train.pipeline import keep_better_tagger

    out, _, _ = trained
    for part in ("pos", "pos-bilstm"):
        shutil.copytree(out / part, tmp_path / part)
    # the mean of the scores both have: the fast tagger's 85.0; the BiLSTM's own xpos is left out
    _with_dev_scores(tmp_path / "pos", upos=80.0, lemmas=90.0)
    _with_dev_scores(tmp_path / "pos-bilstm", upos=upos, lemmas=lemmas, xpos=10.0)
    said: List[str] = []
    assert keep_better_tagger(tmp_path, said.append) is bilstm_won
    arch = json.loads((tmp_path / "pos" / "config.json").read_text(encoding="utf-8"))["arch"]
    if bilstm_won:    # 92 + 83 over 2 = 87.5 against 85
        assert arch == "bilstm-tagger.v1" and sorted(p.name for p in tmp_path.iterdir()) == ["pos", "pos-fast"]
        assert json.loads((tmp_path / "pos-fast" / "config.json").read_text(encoding="utf-8"))["arch"] == "dfs-tagger.v1"
        assert said == [f"pos: dev mean of upos, lemmas: BiLSTM 87.50, fast 85.00: the BiLSTM tagger is "
                        f"{tmp_path / 'pos'}, the fast one {tmp_path / 'pos-fast'}"]
    else:             # worse, or a tie: the fast tagger stays
        assert arch == "dfs-tagger.v1" and sorted(p.name for p in tmp_path.iterdir()) == ["pos", "pos-bilstm"]
        assert said[0].endswith(f"the fast tagger stays {tmp_path / 'pos'}")
    shutil.rmtree(tmp_path / "pos")
    assert keep_better_tagger(tmp_path, said.append) is None     # one tagger: nothing to choose


def test_part_options_are_read_as_json_or_text():
    from nlpipe.train.pipeline import parse_part_option

    assert parse_part_option("parse.epochs=2") == ("parse", "epochs", 2)
    assert parse_part_option("pos.two-pass=true") == ("pos", "two_pass", True)
    assert parse_part_option('parse.hyper={"hidden": 8}') == ("parse", "hyper", {"hidden": 8})
    assert parse_part_option("tokenize.dilations=1,2,4") == ("tokenize", "dilations", "1,2,4")
    assert parse_part_option("parse-transition.mode=full") == ("parse-transition", "mode", "full")


def test_pos_fast_runs_the_fast_tagger_beside_a_bilstm_one(trained, tmp_path):
    import shutil

    out, root, _ = trained
    shutil.copytree(out / "pos-bilstm", tmp_path / "pos")    # as the pipeline leaves them when the BiLSTM wins
    shutil.copytree(out / "pos", tmp_path / "pos-fast")
    dev = str(root / "dev.conllu")
    fast = nlpipe("pos", "-m", str(tmp_path / "pos-fast"), dev)
    assert fast[0] == 0 and "\tNOUN\t" in fast[1]
    assert nlpipe("pos", "--fast", "-m", str(tmp_path / "pos"), dev) == fast
    assert nlpipe("pos", "--fast", "-m", str(tmp_path / "pos-fast"), dev) == fast   # a fast tagger is its own
    # the margin options tune the fast tagger: with --fast they apply, without it they are refused
    assert nlpipe("pos", "--fast", "--margin", "-1", "-m", str(tmp_path / "pos"), dev) \
        == nlpipe("pos", "--margin", "-1", "-m", str(tmp_path / "pos-fast"), dev)
    assert nlpipe("pos", "--margin", "0.5", "--first-checkpoints", "2", "-m", str(tmp_path / "pos"), dev) == (
        2, "", f"nlpipe: error: --margin, --first-checkpoints: options of the fast linear tagger, and "
               f"{tmp_path / 'pos'} is not one (give it with -m, or nlpipe pos --fast for the one beside this one)\n")
    code, _, stderr = nlpipe("eval", "pos", "--gold", dev, "-m", str(tmp_path / "pos"), "--checkpoints", "all")
    assert code == 2 and stderr.startswith("nlpipe: error: --checkpoints: options of the fast linear tagger")
    code, _, _ = nlpipe("eval", "pos", "--gold", dev, "-m", str(tmp_path / "pos-fast"), "--checkpoints", "all")
    assert code == 0
    shutil.rmtree(tmp_path / "pos-fast")
    code, stdout, stderr = nlpipe("pos", "--fast", "-m", str(tmp_path / "pos"), dev)
    assert (code, stdout) == (2, "")
    assert stderr == (f"nlpipe: error: --fast: {tmp_path / 'pos'} is not a fast tagger and has none beside it "
                      f"({tmp_path / 'pos-fast'})\n")


@pytest.mark.parametrize("part, module, function", [
    ("tokenize", "tokenize", "train_tokenizer"),
    ("pos-bilstm", "bilstm_tagger", "train_bilstm_tagger"),
    ("parse", "biaffine", "train_biaffine"),
])
def test_the_pipelines_precision_reaches_its_torch_trainers(tmp_path, monkeypatch, part, module, function):
    import importlib

    from nlpipe.train import pipeline

    seen = {}
    monkeypatch.setattr(importlib.import_module(f"nlpipe.train.{module}"), "train",
                        lambda *args, **kw: seen.update(kw))
    getattr(pipeline, function)("t", "d", tmp_path / part, pipeline.PipelineOptions(precision="bf16", parts=(part,)),
                                None, print)
    assert seen["precision"] == "bf16"
