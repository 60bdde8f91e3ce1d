"""``nlpipe models``: the shipped models and the user's (``$NLPIPE_MODELS``, ``--models DIR``) with their
stage, language, architecture, recorded speed and scores."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Sequence

import click


def model_row(path: Path, name: str, shipped: bool) -> Dict[str, Any]:
    """What ``nlpipe models`` shows of one model directory (a shipped one may be its stage's default)."""
    from nlpipe.io.model_dir import read_config
    from nlpipe.models.tree_feats import TreeFeats
    from nlpipe.registry import DEFAULT_MODELS

    config = read_config(path)
    return {
        "name": name,
        "path": str(path),
        "stage": config["stage"],
        "arch": config["arch"],
        "language": config["language"],
        "default": shipped and path.name in DEFAULT_MODELS.get(config["stage"], [])[:1],
        "words_per_cpu_second": ((config.get("training") or {}).get("speed") or {}).get("words_per_cpu_second"),
        # a parser's FEATS after the parse: its own dev scores (UFeats of the tagger, then after it)
        "scores": {**(config.get("training") or {}).get("scores", {}),
                   **(TreeFeats.training_scores(path) if config["stage"] == "parse" else {})},
    }


def list_models(folders: Sequence[str] = ()) -> List[Dict[str, Any]]:
    """One dict per model: the shipped ones (named by their name), then those in the user's folders
    (``NLPIPE_MODELS``, where a folder not there is skipped as in ``PATH``, then ``folders``, where it
    is an error), named by their path."""
    from nlpipe.errors import NlpipeError
    from nlpipe.registry import models_under, shipped_models, user_model_roots

    for folder in folders:
        if not Path(folder).is_dir():
            raise NlpipeError(f"--models {folder}: no such folder")
    rows = [model_row(path, path.name, True) for path in shipped_models()]
    for root in user_model_roots(folders):
        rows += [_user_row(path) for path in models_under(root)]
    return rows


def _user_row(path: Path) -> Dict[str, Any]:
    """A user's model's row; a broken one says what is wrong in ``error`` (the others still list)."""
    from nlpipe.errors import NlpipeError

    try:
        return model_row(path, str(path), False)
    except NlpipeError as e:
        return {"name": str(path), "path": str(path), "stage": "-", "arch": "-", "language": "-", "default": False,
                "words_per_cpu_second": None, "scores": {}, "error": str(e)}


@click.command()
@click.option("--models", "folders", multiple=True, metavar="DIR",
              help="Also list the models in this folder (a model folder, a folder of them such as "
                   "'nlpipe train pipeline' writes, or a folder of those); repeatable. The folders of "
                   "$NLPIPE_MODELS (separated by ':') are listed too.")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON on stdout.")
def models(folders: tuple, as_json: bool) -> None:
    """List the shipped models and the user's (from $NLPIPE_MODELS and --models) with their stage,
    language, architecture, speed and scores (in %), as each model's config.json records them.

    \b
    *          the stage's default model
    dev_...    on the treebank's dev file (the one training selected on); test_...: on its test file
    dev_joint  (pos) UPOS and XPOS both right: the joint label the tagger predicts
    ..._raw_text  from raw text through the shipped tokenizer (else gold tokens)
    words/s    words per CPU second of the stage in process on the dev file's gold input, as
               training measured it (-: not recorded)
    """
    from nlpipe.cli.output import warn_missing_model_roots
    from nlpipe.io.outputs import echo

    warn_missing_model_roots()
    rows = list_models(folders)
    if as_json:
        echo(json.dumps(rows))
        return
    width = max([24] + [len(r["name"]) for r in rows])
    echo(f"  {'name':<{width}} {'stage':<11} {'lang':<4} {'arch':<20} {'words/s':>8} scores (%; 'nlpipe models "
         f"--help' explains them)")
    for r in rows:
        scores = ", ".join(f"{k} {round(v, 2) if isinstance(v, float) else v}" for k, v in r["scores"].items()) or "-"
        if "error" in r:
            scores = f"broken: {r['error']}"
        mark = "*" if r["default"] else " "
        speed = r["words_per_cpu_second"]
        echo(f"{mark} {r['name']:<{width}} {r['stage']:<11} {r['language']:<4} {r['arch']:<20} "
             f"{'-' if speed is None else speed:>8} {scores}")
