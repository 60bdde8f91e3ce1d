"""``nlpipe models``: the shipped models with their stage, architecture and scores."""
from __future__ import annotations

import json
from typing import Any, Dict, List

import click


def list_models() -> List[Dict[str, Any]]:
    """One dict per shipped model: name, stage, arch, language, whether it is its stage's default, scores."""
    from nlpipe.io.model_dir import read_config
    from nlpipe.registry import DEFAULT_MODELS, shipped_models

    rows = []
    for path in shipped_models():
        config = read_config(path)
        rows.append({
            "name": path.name,
            "stage": config["stage"],
            "arch": config["arch"],
            "language": config["language"],
            "default": path.name in DEFAULT_MODELS.get(config["stage"], [])[:1],
            "scores": (config.get("training") or {}).get("scores", {}),
        })
    return rows


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON on stdout.")
def models(as_json: bool) -> None:
    """List the shipped models with their scores."""
    rows = list_models()
    if as_json:
        click.echo(json.dumps(rows))
        return
    for r in rows:
        scores = ", ".join(f"{k} {v}" for k, v in r["scores"].items()) or "-"
        mark = "*" if r["default"] else " "
        click.echo(f"{mark} {r['name']:<24} {r['stage']:<11} {r['language']:<4} {r['arch']:<20} {scores}")
