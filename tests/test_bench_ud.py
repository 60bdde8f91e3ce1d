"""bench/ud.py: the gold-token input, argument handling, model folders, tables; and bench/peers.py's
UDPipe 1 training and running on a made-up treebank (skipped without ufal.udpipe)."""
import json
import sys
from pathlib import Path

import pytest

from nlpipe.io.conllu import parse_string, read_file, to_string

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
ud = pytest.importorskip("ud")
peers = pytest.importorskip("peers")

# made up: a multiword token (2-3), an empty node (3.1), SpaceAfter=No and another MISC entry
SENT = (
    "# sent_id = a1\n"
    "# text = Ann's cat sleeps.\n"
    "1\tAnn\tAnn\tPROPN\tNNP\tNumber=Sing\t3\tnmod:poss\t3:nmod:poss\tSpaceAfter=No\n"
    "2-3\tscat\t_\t_\t_\t_\t_\t_\t_\tGloss=x\n"
    "2\t's\t's\tPART\tPOS\t_\t1\tcase\t1:case\t_\n"
    "3\tcat\tcat\tNOUN\tNN\tNumber=Sing\t4\tnsubj\t4:nsubj\t_\n"
    "3.1\tsleeps\tsleep\tVERB\tVBZ\t_\t_\t_\t4:conj\t_\n"
    "4\tsleeps\tsleep\tVERB\tVBZ\tMood=Ind\t0\troot\t0:root\tSpaceAfter=No|Foo=bar\n"
    "5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t4:punct\t_\n\n"
)


def test_gold_tokens_keep_ids_forms_and_spaceafter_only():
    gold = parse_string(SENT)
    out = ud.gold_tokens(gold)
    assert to_string(out) == (
        "# sent_id = a1\n"
        "# text = Ann's cat sleeps.\n"
        "1\tAnn\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
        "2-3\tscat\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "2\t's\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "3\tcat\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "4\tsleeps\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
        "5\t.\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    assert gold[0].words[0][3] == "PROPN"            # the gold sentences are untouched
    assert ud.words(out) == 5


def test_parse_model_pairs():
    assert ud.parse_model_pairs(["pos=/m/pos", "parse=/m/p=x"]) == {"pos": "/m/pos", "parse": "/m/p=x"}
    for bad, message in ((["pos"], "expected STAGE=DIR"), (["=dir"], "expected STAGE=DIR"),
                         (["tagger=/m"], "unknown stage 'tagger'"), (["pos=/a", "pos=/b"], "given twice")):
        with pytest.raises(ud.BenchError, match=message):
            ud.parse_model_pairs(bad)


def _model(folder: Path, name: str, stage: str, also=()) -> None:
    (folder / name).mkdir(parents=True)
    (folder / name / "config.json").write_text(json.dumps({"stage": stage, "also_stages": list(also)}))


def test_models_in_maps_stages_to_model_folders(tmp_path):
    _model(tmp_path, "tokenize", "tokenize")
    _model(tmp_path, "a-tagger", "pos")
    _model(tmp_path, "parse-transition", "parse")
    _model(tmp_path, "parse", "parse")
    _model(tmp_path, "srl", "srl", also=["predicates"])
    (tmp_path / "notes").mkdir()                     # no config.json: not a model
    found = ud.models_in(tmp_path)
    assert {s: p.name for s, p in found.items()} == {"tokenize": "tokenize", "pos": "a-tagger", "parse": "parse",
                                                     "srl": "srl", "predicates": "srl"}


def test_models_in_errors(tmp_path):
    with pytest.raises(ud.BenchError, match="not a directory"):
        ud.models_in(tmp_path / "missing")
    with pytest.raises(ud.BenchError, match="no model folders"):
        ud.models_in(tmp_path)
    (tmp_path / "pos").mkdir()
    (tmp_path / "pos" / "config.json").write_text("{not json")
    with pytest.raises(ud.BenchError, match="config.json: not JSON"):
        ud.models_in(tmp_path)


def test_ud_stages_per_mode():
    have = ["srl", "parse", "tokenize", "ner", "pos"]
    assert ud.ud_stages("raw", have) == ["tokenize", "pos", "parse"]
    assert ud.ud_stages("gold", have) == ["pos", "parse"]
    assert ud.ud_stages("gold", have, asked=["parse", "pos", "tokenize"]) == ["pos", "parse"]


def test_speed_fields_ratio_to_nlpipe():
    times = {"nlpipe": {"seconds": 2.0, "cpu_seconds": 1.0}, "udpipe": {"seconds": 4.0, "cpu_seconds": 4.0}}
    assert ud.speed_fields(times, 1000) == {
        "nlpipe": {"seconds": 2.0, "cpu_seconds": 1.0, "tokens_per_s": 500.0, "cpu_tokens_per_s": 1000.0,
                   "ratio": 1.0, "cpu_ratio": 1.0},
        "udpipe": {"seconds": 4.0, "cpu_seconds": 4.0, "tokens_per_s": 250.0, "cpu_tokens_per_s": 250.0,
                   "ratio": 0.5, "cpu_ratio": 0.25}}
    alone = ud.speed_fields({"udpipe": times["udpipe"]}, 1000)["udpipe"]
    assert alone["ratio"] is None and alone["cpu_ratio"] is None and alone["tokens_per_s"] == 250.0


def test_table_puts_systems_side_by_side():
    names = {"nlpipe": "nlpipe", "udpipe": "UDPipe 1"}
    scores = {"nlpipe": {"UPOS": 95.0, "Lemmas": 97.125}, "udpipe": {"UPOS": 94.5, "Lemmas": 96.0}}
    speed = {"nlpipe": {"seconds": 2.0, "tokens_per_s": 12500.0, "ratio": 1.0,
                        "cpu_seconds": 1.5, "cpu_tokens_per_s": 16666.7, "cpu_ratio": 1.0},
             "udpipe": {"seconds": 5.0, "tokens_per_s": 5000.0, "ratio": 0.4}}
    assert ud.table("T", names, scores, ["UPOS", "Lemmas", "LAS"], speed) == "\n".join([
        "T", "",
        "| Metric | nlpipe | UDPipe 1 |",
        "|---|---:|---:|",
        "| UPOS | 95.00 | 94.50 |",
        "| Lemmas | 97.12 | 96.00 |",
        "| LAS | - | - |",
        "| seconds (whole run) | 2.00 | 5.00 |",
        "| tokens/s | 12,500 | 5,000 |",
        "| vs nlpipe | 1.00x | 0.40x |",
        "| CPU seconds | 1.50 | - |",
        "| tokens/s of CPU time | 16,667 | - |",
        "| vs nlpipe (CPU) | 1.00x | - |"])


def test_one_core_uses_taskset_when_present(monkeypatch):
    monkeypatch.setattr(ud.shutil, "which", lambda name: "/usr/bin/taskset")
    assert ud.one_core(["python", "x"]) == ["taskset", "-c", "0", "python", "x"]
    monkeypatch.setattr(ud.shutil, "which", lambda name: None)
    assert ud.one_core(["python", "x"]) == ["python", "x"]


@pytest.mark.parametrize("args, message", [
    (["--model", "pos"], "--model 'pos': expected STAGE=DIR"),
    (["--repeat", "0"], "--repeat must be at least 1"),
    (["--modes", "gold,text"], "--modes: unknown text"),
    (["--treebank", "xx_none"], "xx_none-ud-test.conllu: no such file"),
    (["--stages", "pos,lemmas"], "--stages: unknown lemmas"),
    (["--models", "/nonexistent/models"], "--models /nonexistent/models: not a directory"),
])
def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys, args, message):
    (tmp_path / "en_t-ud-test.conllu").write_text(SENT)
    argv = ["--treebank", "en_t", "--corpus", str(tmp_path), "--work", str(tmp_path / "w"), "--no-peers"] + args
    assert ud.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_treebank_file_names():
    assert peers.treebank_files(Path("/c"), "fr_sequoia")["dev"] == Path("/c/fr_sequoia-ud-dev.conllu")
    assert peers.udpipe_path(Path("/p"), "fr_sequoia") == Path("/p/udpipe1-fr_sequoia.udpipe")
    assert peers.udpipe_path(Path("/p")) == Path("/p/udpipe1-en_ewt.udpipe")


# two made-up sentences repeated: enough for UDPipe 1 to train a tagger and a parser in a second
TREEBANK = (
    "# text = Dogs bark.\n"
    "1\tDogs\tdog\tNOUN\tNNS\tNumber=Plur\t2\tnsubj\t_\tSpaceAfter=No\n"
    "2\tbark\tbark\tVERB\tVBP\tMood=Ind\t0\troot\t_\tSpaceAfter=No\n"
    "3\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_\n\n"
    "# text = A cat sleeps.\n"
    "1\tA\ta\tDET\tDT\tDefinite=Ind\t2\tdet\t_\t_\n"
    "2\tcat\tcat\tNOUN\tNN\tNumber=Sing\t3\tnsubj\t_\t_\n"
    "3\tsleeps\tsleep\tVERB\tVBZ\tMood=Ind\t0\troot\t_\tSpaceAfter=No\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n\n"
)


@pytest.mark.slow
def test_udpipe_trains_on_any_treebank_and_runs_on_gold_tokens(tmp_path):
    pytest.importorskip("ufal.udpipe", reason="UDPipe 1 is a benchmark peer only (make bench-peers)")
    for split in ("train", "dev", "test"):
        (tmp_path / f"xx_toy-ud-{split}.conllu").write_text(TREEBANK * 10)
    model = peers.train_udpipe(tmp_path, tmp_path / "peers", "iterations=2", "iterations=1", "none", "xx_toy")
    assert model == tmp_path / "peers" / "udpipe1-xx_toy.udpipe"
    info = json.loads((tmp_path / "peers" / "info.json").read_text())["udpipe-xx_toy"]
    assert info["options"] == "method morphodita_parsito, tokenizer none, tagger iterations=2, parser iterations=1"
    assert set(info["component_seconds"]) == {"tagger", "parser"}
    src, out = tmp_path / "in.conllu", tmp_path / "out.conllu"
    src.write_text(to_string(ud.gold_tokens(parse_string(TREEBANK))))
    ud._run_udpipe(str(model), "gold", "parse", str(src), str(out))
    got = list(read_file(str(out)))
    assert [w[1] for s in got for w in s.words] == ["Dogs", "bark", ".", "A", "cat", "sleeps", "."]
    assert all(w[3] != "_" and w[2] != "_" and w[6] != "_" for s in got for w in s.words)


def test_udpipe_components_from_info():
    assert peers.udpipe_components({"component_seconds": {"tokenizer": 5.0, "tagger": 9.0}}) == ["tokenizer",
                                                                                                 "tagger"]
    assert peers.udpipe_components({"seconds": 3407}) == ["tagger", "parser"]   # trained before tokenizers


def test_available_skips_a_udpipe_model_without_parser_for_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(peers, "installed", lambda module: module == "ufal.udpipe")
    (tmp_path / "udpipe1-en_ewt.udpipe").write_bytes(b"model")
    (tmp_path / "info.json").write_text(json.dumps({"udpipe": {"component_seconds": {"tokenizer": 1, "tagger": 2}}}))
    assert peers.available(tmp_path)["udpipe"]["path"] == tmp_path / "udpipe1-en_ewt.udpipe"
    assert "has no parser" in peers.available(tmp_path, parse=True)["udpipe"]["skipped"]
    assert "spacy is not installed" in peers.available(tmp_path)["spacy"]["skipped"]


def test_nlpipe_commands(tmp_path, monkeypatch):
    py = sys.executable
    nl = ud.NlpipeSystem("en_ewt", None, {"pos": "/m/pos", "parse": "/m/parse"}, None)
    assert nl.annotate("gold", Path("in.conllu"), Path("out")) == [
        py, "-m", "nlpipe", "annotate", "--stages", "pos,parse", "--model", "pos=/m/pos",
        "--model", "parse=/m/parse", "-o", "out", "in.conllu"]
    assert nl.tag("pos", Path("in.conllu"), Path("out")) == [py, "-m", "nlpipe", "pos", "-o", "out", "in.conllu",
                                                             "--model", "/m/pos"]
    assert "shipped models are English" in ud.NlpipeSystem("fr_sequoia", None, {}, None).skipped
    _model(tmp_path, "tokenize", "tokenize")
    _model(tmp_path, "pos", "pos")
    monkeypatch.setattr(ud, "_annotate_has_models_option", lambda: True)
    nl = ud.NlpipeSystem("fr_sequoia", str(tmp_path), {}, None)
    assert nl.skipped is None
    assert nl.annotate("raw", Path("t.txt"), Path("o")) == [
        py, "-m", "nlpipe", "annotate", "--stages", "tokenize,pos", "--models", str(tmp_path), "-o", "o", "t.txt"]
    monkeypatch.setattr(ud, "_annotate_has_models_option", lambda: False)
    nl = ud.NlpipeSystem("fr_sequoia", str(tmp_path), {}, None)
    assert nl.annotate("raw", Path("t.txt"), Path("o")) == [
        py, "-m", "nlpipe", "annotate", "--stages", "tokenize,pos", "--model", f"tokenize={tmp_path / 'tokenize'}",
        "--model", f"pos={tmp_path / 'pos'}", "-o", "o", "t.txt"]


def test_kept_udpipe_parts_keep_their_own_options(tmp_path, capsys):
    (tmp_path / "tagger.json").write_text(json.dumps({"seconds": 12.5, "options": "iterations=2"}))
    assert peers._part_record(tmp_path, "tagger", "iterations=6") == (12.5, "iterations=2")
    assert "trained with 'iterations=2', not 'iterations=6'" in capsys.readouterr().err
    (tmp_path / "parser.seconds").write_text("30.0")            # a part kept before the records
    assert peers._part_record(tmp_path, "parser", "iterations=6") == (30.0, "iterations=6")
    assert peers._part_record(tmp_path, "tokenizer", "epochs=100") == (None, "epochs=100")
