"""``nlpipe eval STAGE``: score a predicted file, or run a model the way the commands do and score it.

Each stage is its own subcommand with only the options that apply to it (``nlpipe eval pos --help``);
``ud`` scores a predicted file only, so it takes no model.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import click

from nlpipe.cli import options as O
from nlpipe.cli.output import echo_result, warn
from nlpipe.registry import STAGES

GOLD = click.option("-g", "--gold", required=True, metavar="G", help="Gold CoNLL-U file.")
PRED = click.option("-p", "--pred", default=None, metavar="P", help="Predicted file to score against G.")
TRAIN = click.option("--train", "train_file", default=None, metavar="T",
                     help="Training file: also score words unseen in it.")
SCHEME = click.option("--scheme", type=click.Choice(["auto", "bio", "iob1", "bioes"]), default="auto",
                      show_default=True, help="Span encoding of NE tags.")
GOLD_PREDICATES = click.option("--gold-predicates", is_flag=True,
                               help="With --model: keep the gold Pred= entries instead of predicting predicates.")
GOLD_PARSE = click.option("--gold-parse", is_flag=True,
                          help="With --model: the syntactic head attends to the gold HEAD column (LISA + gold parse).")
TAGS = click.option("--tags", type=click.Choice(["gold", "predicted"]), default="gold", show_default=True,
                    help="With --model: the POS tags the parser reads: the gold file's, or the shipped "
                         "tagger's (as in 'nlpipe pos | nlpipe parse').")

# stage -> the options of its subcommand besides --gold, --pred, --json (and --model, --device)
STAGE_OPTIONS: Dict[str, Tuple[Callable, ...]] = {
    "tokenize": (),
    "pos": (TRAIN, O.MARGIN, O.CHECKPOINTS, O.FIRST_MARGIN, O.FIRST_CHECKPOINTS),
    "parse": (TAGS, O.MARGIN, O.CHECKPOINTS),
    "ner": (SCHEME,),
    "predicates": (),
    "srl": (GOLD_PREDICATES, GOLD_PARSE),
    "ud": (),
}
RUN_OPTIONS = ("margin", "checkpoints", "first_margin", "first_checkpoints")   # go to the model's loader


class InOrder(click.Group):
    """A group that lists its commands in the order they were added (the pipeline's)."""

    def list_commands(self, ctx: click.Context) -> List[str]:
        return list(self.commands)


@click.group(name="eval", cls=InOrder)
def eval_command() -> None:
    """Score predictions (--pred) or a model (--model, run as the commands run it) against gold CoNLL-U.

    'nlpipe eval ud' scores a whole predicted file (--pred) on all the CoNLL 2018 shared task metrics
    and prints their table."""


def _subcommand(stage: str) -> click.Command:
    def command(gold: str, pred: Optional[str], as_json: bool, model: Optional[str] = None, device: str = "cpu",
                **extra: Any) -> None:
        from nlpipe.errors import NlpipeError
        from nlpipe.runtime.evaluate import evaluate, summary

        if pred is not None and model is not None:
            raise NlpipeError("give either --pred or --model, not both")
        options = O.given(**{k: extra.pop(k) for k in RUN_OPTIONS if k in extra})
        if options and pred is not None:
            raise NlpipeError(f"--{next(iter(options)).replace('_', '-')} applies to a model that eval runs, "
                              "not to --pred")
        if extra.get("tags", "gold") != "gold" and pred is not None:
            raise NlpipeError("--tags applies to a model that eval runs, not to --pred")
        if "train_file" in extra:
            extra["train"] = extra.pop("train_file")
        result = evaluate(stage, gold, pred=pred, model=model, device=device, options=options, **extra)
        for message in result.get("warnings", []):
            warn(message)
        echo_result(result, summary(result), as_json)

    shared = (GOLD, PRED) + (() if stage == "ud" else (O.MODEL,)) + STAGE_OPTIONS[stage] + (O.AS_JSON,) + \
        (() if stage == "ud" else (O.DEVICE,))
    for option in reversed(shared):
        command = option(command)
    what = ("Score a whole predicted file on every CoNLL 2018 shared task metric (Tokens to BLEX) and print "
            "their table." if stage == "ud" else
            f"Score {stage} predictions (--pred) or a {stage} model (--model, or the default when neither is "
            f"given) against gold CoNLL-U.")
    return click.command(name=stage, help=what)(command)


for _stage in STAGES + ("ud",):
    eval_command.add_command(_subcommand(_stage))
