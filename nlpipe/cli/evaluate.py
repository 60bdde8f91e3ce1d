"""``nlpipe eval STAGE``: score a predicted file, or run a model the way the commands do and score it."""
from __future__ import annotations

from typing import Optional

import click

from nlpipe.cli import options as O
from nlpipe.cli.output import echo_result, warn
from nlpipe.errors import NlpipeError
from nlpipe.registry import STAGES


@click.command(name="eval")
@click.argument("stage", type=click.Choice(STAGES + ("ud",)))
@click.option("-g", "--gold", required=True, metavar="G", help="Gold CoNLL-U file.")
@click.option("-p", "--pred", default=None, metavar="P", help="Predicted file to score against G.")
@O.MODEL
@click.option("--train", "train_file", default=None, metavar="T",
              help="Training file: also score words unseen in it (pos).")
@click.option("--scheme", type=click.Choice(["auto", "bio", "iob1", "bioes"]), default="auto",
              show_default=True, help="Span encoding of NE tags (ner).")
@click.option("--gold-predicates", is_flag=True,
              help="srl with --model: keep the gold Pred= entries instead of predicting predicates.")
@click.option("--gold-parse", is_flag=True,
              help="srl with --model: the syntactic head attends to the gold HEAD column (LISA + gold parse).")
@O.MARGIN
@O.CHECKPOINTS
@O.FIRST_MARGIN
@O.FIRST_CHECKPOINTS
@O.AS_JSON
@O.DEVICE
def eval_command(stage: str, gold: str, pred: Optional[str], model: Optional[str], train_file: Optional[str],
                 scheme: str, gold_predicates: bool, gold_parse: bool, margin: Optional[float],
                 checkpoints: Optional[str], first_margin: Optional[float], first_checkpoints: Optional[str],
                 as_json: bool, device: str) -> None:
    """Score predictions (--pred) or a model (--model, run as the commands run it) against gold CoNLL-U.

    STAGE ud scores a whole predicted file (--pred) on all the CoNLL 2018 shared task metrics and
    prints their table."""
    from nlpipe.runtime.evaluate import evaluate, summary

    if pred is not None and model is not None:
        raise NlpipeError("give either --pred or --model, not both")
    options = O.given(margin=margin, checkpoints=checkpoints, first_margin=first_margin,
                      first_checkpoints=first_checkpoints)
    for k in options:
        flag = "--" + k.replace("_", "-")
        allowed = ("pos",) if k.startswith("first_") else ("pos", "parse")
        if pred is not None or stage not in allowed:
            raise NlpipeError(f"{flag} applies only to a {' or '.join(allowed)} model that eval runs "
                              "(not to other stages or --pred)")
    result = evaluate(stage, gold, pred=pred, model=model, train=train_file, scheme=scheme, device=device,
                      gold_predicates=gold_predicates, gold_parse=gold_parse, options=options)
    for message in result.get("warnings", []):
        warn(message)
    echo_result(result, summary(result), as_json)
