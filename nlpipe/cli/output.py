"""How a command prints its result: a summary for people on stdout, or one JSON object with ``--json``."""
from __future__ import annotations

import json
from typing import Any, Dict

import click


def echo_result(result: Dict[str, Any], summary: str, as_json: bool) -> None:
    """``summary`` on stdout; with ``as_json``, ``result`` as one JSON object on stdout and the
    summary on stderr (so that stdout stays machine-readable and people still see it)."""
    from nlpipe.io.outputs import echo

    if as_json:
        click.echo(summary, err=True)
        echo(json.dumps(result, sort_keys=True))
    else:
        echo(summary)


def warn(message: str) -> None:
    click.echo(f"nlpipe: warning: {message}", err=True)


def warn_missing_model_roots() -> None:
    """A warning for each folder of ``$NLPIPE_MODELS`` that is not there."""
    from nlpipe.registry import MODELS_PATH, missing_model_roots

    for root in missing_model_roots():
        warn(f"${MODELS_PATH} names {root}, which is not a folder")
