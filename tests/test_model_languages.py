"""Which models a chain runs by language (nlpipe.runtime.chain: default stages, mixed languages) and
which models a folder of models holds (nlpipe.registry: --models DIR, NLPIPE_MODELS), on model
folders that hold only a config.json."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nlpipe.errors import ModelError, NlpipeError
from nlpipe.io.model_dir import write_config
from nlpipe.registry import MODELS_DIR, models_under, pipeline_models, user_model_roots
from nlpipe.runtime.chain import check_languages, default_stages, plan_chain

EVERY_SHIPPED = ["tokenize", "pos", "parse", "ner", "predicates", "srl"]


def model(path: Path, stage: str, language: str, **extra) -> str:
    write_config(path, {"stage": stage, "arch": "none.v1", "language": language, **extra,
                        "training": {"data": {}, "command": "made by hand", "nlpipe_version": "0",
                                     "date": None, "scores": {"dev_las": 80.0}}})
    return str(path)


@pytest.fixture(autouse=True)
def shipped_models_present():
    if not all((MODELS_DIR / m / "config.json").is_file() for m in ("pos-ewt", "tokenize-char-ewt", "srl-lisa-ewt")):
        pytest.skip("the shipped models are not installed")


def test_default_stages_follow_the_language_of_the_models_given(tmp_path):
    fr_pos, fr_parse = model(tmp_path / "pos", "pos", "fr"), model(tmp_path / "parse", "parse", "fr")
    assert default_stages({"pos": fr_pos, "parse": fr_parse}) == ["pos", "parse"]   # no English NER, SRL, tokenizer
    assert default_stages({"parse": fr_parse}) == ["parse"]
    en_pos = model(tmp_path / "en", "pos", "en")
    assert default_stages({"pos": en_pos}) == EVERY_SHIPPED        # English: the shipped models fill in
    und_pos = model(tmp_path / "und", "pos", "und")
    assert default_stages({"pos": und_pos}) == EVERY_SHIPPED       # trained without --lang: as before
    assert default_stages({}) == EVERY_SHIPPED


def test_mixed_languages_are_refused_in_one_line_unless_allowed(tmp_path):
    fr_pos, de_parse = model(tmp_path / "pos", "pos", "fr"), model(tmp_path / "parse", "parse", "de")
    with pytest.raises(NlpipeError) as e:
        plan_chain(None, {"pos": fr_pos, "parse": de_parse})
    assert str(e.value) == (f"the models are of different languages: pos {fr_pos} (fr), parse {de_parse} (de); "
                            "give models of one language (--model STAGE=M, --models DIR, --stages) or "
                            "--allow-mixed-languages")
    assert "\n" not in str(e.value)
    assert plan_chain(None, {"pos": fr_pos, "parse": de_parse}, allow_mixed=True) == ["pos", "parse"]
    with pytest.raises(NlpipeError, match=r"ner ner-uner-ewt \(en\)"):   # a stage asked for, its default English
        plan_chain(["pos", "ner"], {"pos": fr_pos})
    assert plan_chain(["pos", "ner"], {"pos": fr_pos}, allow_mixed=True) == ["pos", "ner"]


def test_an_undetermined_language_goes_with_any(tmp_path):
    und = model(tmp_path / "pos", "pos", "und")
    check_languages(["tokenize", "pos", "parse"], {"pos": und})
    fr = model(tmp_path / "parse", "parse", "fr")
    check_languages(["pos", "parse"], {"pos": und, "parse": fr})


def test_a_folder_of_models_gives_one_model_per_stage(tmp_path):
    root = tmp_path / "fr"
    model(root / "tokenize", "tokenize", "fr")
    model(root / "pos", "pos", "fr")
    model(root / "parse", "parse", "fr")
    model(root / "parse-transition", "parse", "fr")
    model(root / "roles", "srl", "fr", also_stages=["predicates"])
    (root / "notes").mkdir()
    assert pipeline_models(str(root)) == {"tokenize": root / "tokenize", "pos": root / "pos", "parse": root / "parse",
                                          "predicates": root / "roles", "srl": root / "roles"}
    (root / "parse").rename(root / "parse-b")      # two parsers, neither named parse
    with pytest.raises(ModelError) as e:
        pipeline_models(str(root))
    assert str(e.value) == (f"{root}: several models for stage parse (parse-b, parse-transition) and none named "
                            "parse; choose one with --model parse=PATH")
    with pytest.raises(ModelError, match="no model folders"):
        pipeline_models(str(tmp_path / "fr" / "notes"))
    with pytest.raises(ModelError, match="no such folder of models"):
        pipeline_models(str(tmp_path / "nowhere"))


def test_nlpipe_models_path_and_folders_of_pipelines(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    model(a / "fr" / "pos", "pos", "fr")
    model(b / "de-pos", "pos", "de")
    monkeypatch.setenv("NLPIPE_MODELS", f"{a}{os.pathsep}{b}")
    assert user_model_roots(["c"]) == [a, b, Path("c")]
    assert models_under(a) == [a / "fr" / "pos"] and models_under(b) == [b / "de-pos"]
    assert models_under(b / "de-pos") == [b / "de-pos"]
    assert pipeline_models("fr") == {"pos": a / "fr" / "pos"}          # a name found in $NLPIPE_MODELS


def test_nlpipe_models_lists_user_folders_and_refuses_a_missing_one(tmp_path, monkeypatch, capsys):
    from nlpipe.cli import main

    model(tmp_path / "de" / "pos", "pos", "de")
    fast = model(tmp_path / "de" / "pos-fast", "pos", "de")
    config = json.loads((tmp_path / "de" / "pos-fast" / "config.json").read_text())
    config["training"]["speed"] = {"words_per_cpu_second": 41234, "on": "by hand"}
    (tmp_path / "de" / "pos-fast" / "config.json").write_text(json.dumps(config))
    monkeypatch.setenv("NLPIPE_MODELS", f"{tmp_path / 'gone'}{os.pathsep}{tmp_path}")   # a missing one: a warning
    main(["models"])
    lines = [x.split() for x in capsys.readouterr().out.splitlines() if str(tmp_path) in x]
    assert lines == [[str(tmp_path / "de" / "pos"), "pos", "de", "none.v1", "-", "dev_las", "80.0"],
                     [fast, "pos", "de", "none.v1", "41234", "dev_las", "80.0"]]
    with pytest.raises(SystemExit) as e:
        main(["models", "--models", str(tmp_path / "nope")])
    assert e.value.code == 2
    assert capsys.readouterr().err == (f"nlpipe: warning: $NLPIPE_MODELS names {tmp_path / 'gone'}, which is not a "
                                       f"folder\nnlpipe: error: --models {tmp_path / 'nope'}: no such folder\n")


def test_every_trainer_takes_the_language():
    import click

    from nlpipe.cli import cli

    train = cli.get_command(click.Context(cli), "train")
    for name in ("tokenize", "pos", "parse", "ner", "srl", "pipeline"):
        command = train.get_command(click.Context(train), name)
        assert "--lang" in [o for p in command.params for o in getattr(p, "opts", [])], name
