"""The ``nlpipe`` command: thin click wrappers that parse options and call into the package.

Every command reads its input file (``-`` or nothing: stdin) and writes to ``-o`` (nothing: stdout).
Errors in input, options or models print one line ``nlpipe: error: ...`` and exit with code 2.
"""
from __future__ import annotations

import json
import sys
from typing import Any, Callable, Dict, Optional

import click

from nlpipe import __version__
from nlpipe.errors import NlpipeError

INPUT = click.argument("input", required=False, default="-", metavar="[INPUT]")
OUTPUT = click.option("-o", "--output", default="-", metavar="OUT", help="Output file (default: stdout).")
MODEL = click.option("--model", "-m", default=None, metavar="M",
                     help="Model directory or shipped model name (default: the shipped default).")
DEVICE = click.option("--device", type=click.Choice(["cpu", "cuda", "auto"]), default="cpu",
                      show_default=True, help="Where neural models run.")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="nlpipe")
def cli() -> None:
    """Fast NLP pipeline over CoNLL-U: tokenize, tag, parse, find entities and semantic roles.

    \b
    nlpipe tokenize < a.txt | nlpipe pos | nlpipe parse | nlpipe ner | nlpipe srl > a.conllu
    nlpipe annotate a.txt -o a.conllu
    """


# ----------------------------------------------------------------------------------------------
# Annotation stages

@cli.command()
@INPUT
@OUTPUT
@MODEL
@click.option("--method", type=click.Choice(["trained", "rules"]), default=None,
              help="trained: the character model (the default when shipped); rules: Punkt sentences + "
                   "Treebank-style words (no trained model, fastest).")
@click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict",
              show_default=True, help="What to do with bytes that are not UTF-8.")
def tokenize(input: str, output: str, model: Optional[str], method: Optional[str],
             encoding_errors: str) -> None:
    """Split raw text into sentences and tokens (CoNLL-U out)."""
    from nlpipe.runtime.pipeline import run_tokenize

    run_tokenize(input, output, model=model, method=method, encoding_errors=encoding_errors)


def _stage_command(stage: str, help_text: str, *options: Callable) -> click.Command:
    """A filter command ``nlpipe STAGE [INPUT] [-o OUT] [--model M] [--device D]``; the extra click
    ``options`` are passed on to the stage's loader as keyword arguments."""

    def command(input: str, output: str, model: Optional[str], device: str, **extra: Any) -> None:
        from nlpipe.runtime.pipeline import run_stage

        run_stage(stage, input, output, model=model, device=device, **extra)

    for option in reversed((INPUT, OUTPUT, MODEL, DEVICE) + options):
        command = option(command)
    return cli.command(name=stage, help=help_text)(command)


_stage_command(
    "pos", "Tag UPOS and XPOS (CoNLL-U in, CoNLL-U out).",
    click.option("--margin", type=float, default=None, metavar="m",
                 help="Dynamic feature selection: a word stops adding feature templates once its best tag "
                      "leads by m (smaller = faster, less accurate; default: the model's; negative: all "
                      "templates)."),
    click.option("--checkpoints", default=None, metavar="S",
                 help="Where the margin is tested: 'all' (after every template), 'pow2', or counts such as "
                      "2,4,8,16,32 (default: the model's)."),
    click.option("--first-margin", type=float, default=None, metavar="m1",
                 help="Two-pass models: the first pass's margin (default: --margin if given, else the "
                      "model's)."),
    click.option("--first-checkpoints", default=None, metavar="S1",
                 help="Two-pass models: the first pass's checkpoints (default: --checkpoints if given, else "
                      "the model's)."))
_stage_command(
    "ner", "Mark named entities as MISC NE=B-PER etc.",
    click.option("--probs", is_flag=True, help="Also write each token's tag probability as MISC NEProb=."))


@cli.command(name="parse", help="Predict HEAD and DEPREL (CoNLL-U with POS in).")
@INPUT
@OUTPUT
@MODEL
@DEVICE
@click.option("--parser", type=click.Choice(["biaffine", "transition"]), default="biaffine", show_default=True,
              help="Which shipped parser to use when --model is not given.")
@click.option("--projective", is_flag=True, help="Projective trees (Eisner) instead of Chu-Liu-Edmonds.")
@click.option("--probs", is_flag=True, help="Also write each word's head probability as MISC HeadProb=.")
@click.option("--margin", type=float, default=None, help="Transition parser: dynamic feature selection margin "
              "(a negative value: every template; default: the model's).")
def parse(input: str, output: str, model: Optional[str], device: str, parser: str, projective: bool,
          probs: bool, margin: Optional[float]) -> None:
    from nlpipe.runtime.pipeline import run_stage
    from nlpipe.registry import MODELS_DIR

    if model is None and parser == "transition":
        model = "parse-transition-ewt"
        if not (MODELS_DIR / model).is_dir():
            raise NlpipeError("no model for the transition parser yet (use --parser biaffine)")
    extra: Dict[str, Any] = {} if margin is None else {"margin": margin}
    if parser == "transition":
        extra["batch"] = 4096     # the transition parser advances whole chunks in lockstep: bigger is faster
    run_stage("parse", input, output, model=model, device=device, projective=projective, probs=probs, **extra)


_stage_command("predicates", "Mark predicates as MISC Pred=lemma.NN.")
_stage_command(
    "srl", "Label semantic roles as MISC SRL=<pred-id>:<role> (predicts predicates first when the input has "
           "no Pred=).",
    click.option("--parse-from-input", is_flag=True,
                 help="Use the input's HEAD column (e.g. from 'nlpipe parse', or gold) as the syntactic "
                      "attention head instead of the model's own parse."),
    click.option("--predicates-from-input", is_flag=True,
                 help="Label the predicates marked Pred= in the input instead of predicting them."))


@cli.command()
@click.argument("inputs", nargs=-1, metavar="[FILES|-]")
@click.option("-o", "--output", default="-", metavar="OUT",
              help="Output file (default: stdout), or a directory (existing, or ending in /) for one "
                   "NAME.conllu per input; existing outputs there are not redone.")
@click.option("--stages", default=None, metavar="S1,S2",
              help="Comma-separated stages (default: every stage with a shipped model).")
@click.option("--model", "models", multiple=True, metavar="STAGE=M",
              help="Model for one stage (directory or shipped name); repeatable.")
@click.option("--keep-existing", is_flag=True,
              help="Skip a stage on sentences whose columns for it are already filled.")
@click.option("--skip-bad", is_flag=True,
              help="Pass a malformed CoNLL-U sentence through unchanged with a warning and go on.")
@click.option("--jobs", "-j", type=int, default=1, show_default=True,
              help="Worker processes (each loads the models once); output order is kept.")
@click.option("--batch", type=int, default=256, show_default=True, metavar="N",
              help="Sentences per chunk handed to the stages (and to a worker).")
@click.option("--progress/--no-progress", default=None,
              help="Progress on stderr (default: only when stderr is a terminal).")
@click.option("--cluster", default=None, metavar="tcp://HOST:PORT",
              help="Run on a Dask cluster: each input file -> one file in the -o directory.")
@click.option("--retries", type=int, default=2, show_default=True,
              help="With --cluster: times a failed file is tried again.")
@DEVICE
def annotate(inputs: tuple, output: str, stages: Optional[str], models: tuple, keep_existing: bool,
             skip_bad: bool, jobs: int, batch: int, progress: Optional[bool], cluster: Optional[str],
             retries: int, device: str) -> None:
    """Run the chain in one process on raw text or CoNLL-U (read as CoNLL-U when tokenize is not
    asked or the input looks like CoNLL-U)."""
    from nlpipe.runtime.pipeline import run_annotate

    model_map: Dict[str, str] = {}
    for m in models:
        stage, sep, path = m.partition("=")
        if not sep or not stage or not path:
            raise NlpipeError(f"--model expects STAGE=MODEL, got '{m}'")
        model_map[stage] = path
    names = [s.strip() for s in stages.split(",") if s.strip()] if stages else None
    if cluster is not None:
        from nlpipe.runtime.distributed import run_cluster

        run_cluster(cluster, list(inputs), output, names, models=model_map, keep_existing=keep_existing,
                    skip_bad=skip_bad, batch=batch, retries=retries, progress=progress, device=device)
        return
    run_annotate(list(inputs) or ["-"], output, names, models=model_map, keep_existing=keep_existing,
                 skip_bad=skip_bad, jobs=jobs, batch=batch, progress=progress, device=device)


# ----------------------------------------------------------------------------------------------
# Training and evaluation

# Each stage module may define ``train_command`` (a click.Command); it is imported only when asked,
# so `nlpipe --help` and the filters stay fast.
class _TrainGroup(click.Group):
    STAGES = ("tokenize", "pos", "parse", "ner", "predicates", "srl")
    TRAINED_WITH = {"predicates": "srl"}   # stages whose model is another stage's (LISA does both)

    def list_commands(self, ctx: click.Context) -> list:
        return list(self.STAGES)

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name not in self.STAGES:
            return None
        import importlib

        try:
            module = importlib.import_module(f"nlpipe.stages.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"nlpipe.stages.{name}":
                raise
            module = None
        command = getattr(module, "train_command", None)
        if command is not None:
            return command

        owner = self.TRAINED_WITH.get(name)
        why = (f"the {owner} model predicts {name} too: train it with 'nlpipe train {owner}'" if owner
               else f"training for stage {name} is not available yet")

        @click.command(name=name, context_settings={"ignore_unknown_options": True}, help=why[0].upper() + why[1:] + ".")
        @click.argument("args", nargs=-1, type=click.UNPROCESSED)
        def unavailable(args: tuple) -> None:
            raise NlpipeError(why)

        return unavailable


@cli.group(cls=_TrainGroup)
def train() -> None:
    """Train a stage's model: nlpipe train STAGE --train T --dev D --out M."""


@cli.command(name="eval")
@click.argument("stage", type=click.Choice(["tokenize", "pos", "parse", "ner", "predicates", "srl", "ud"]))
@click.option("--gold", "-g", required=True, metavar="G", help="Gold CoNLL-U file.")
@click.option("--pred", "-p", default=None, metavar="P", help="Predicted file to score against G.")
@MODEL
@click.option("--train", "train_file", default=None, metavar="T",
              help="Training file: also score words unseen in it (pos).")
@click.option("--scheme", type=click.Choice(["auto", "bio", "iob1", "bioes"]), default="auto",
              show_default=True, help="Span encoding of NE tags (ner).")
@click.option("--gold-predicates", is_flag=True,
              help="srl with --model: keep the gold Pred= entries instead of predicting predicates.")
@click.option("--gold-parse", is_flag=True,
              help="srl with --model: the syntactic head attends to the gold HEAD column (LISA + gold parse).")
@click.option("--margin", type=float, default=None,
              help="pos, transition parser: dynamic feature selection margin (default: the model's; "
                   "negative: every template).")
@click.option("--checkpoints", default=None, metavar="S",
              help="pos, transition parser: where the margin is tested (default: the model's).")
@click.option("--first-margin", type=float, default=None, metavar="m1",
              help="pos, two-pass models: the first pass's margin.")
@click.option("--first-checkpoints", default=None, metavar="S1",
              help="pos, two-pass models: the first pass's checkpoints.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON result on stdout.")
@DEVICE
def eval_(stage: str, gold: str, pred: Optional[str], model: Optional[str], train_file: Optional[str],
          scheme: str, gold_predicates: bool, gold_parse: bool, margin: Optional[float],
          checkpoints: Optional[str], first_margin: Optional[float], first_checkpoints: Optional[str],
          as_json: bool, device: str) -> None:
    """Score predictions (--pred) or a model (--model) against gold CoNLL-U.

    STAGE ud scores a whole predicted file (--pred) on all the CoNLL 2018 shared task metrics and
    prints their table on stdout (on stderr with --json)."""
    from nlpipe.runtime.evaluate import evaluate, summary

    if pred is not None and model is not None:
        raise NlpipeError("give either --pred or --model, not both")
    options = {k: v for k, v in (("margin", margin), ("checkpoints", checkpoints), ("first_margin", first_margin),
                                 ("first_checkpoints", first_checkpoints)) if v is not None}
    for k in options:
        flag = "--" + k.replace("_", "-")
        allowed = ("pos",) if k.startswith("first_") else ("pos", "parse")
        if pred is not None or stage not in allowed:
            raise NlpipeError(f"{flag} applies only to a {' or '.join(allowed)} model that eval runs "
                              "(not to other stages or --pred)")
    result = evaluate(stage, gold, pred=pred, model=model, train=train_file, scheme=scheme, device=device,
                      gold_predicates=gold_predicates, gold_parse=gold_parse, options=options)
    for warning in result.get("warnings", []):
        click.echo(f"nlpipe: warning: {warning}", err=True)
    click.echo(summary(result), err=as_json or stage != "ud")   # eval ud: the table is the output
    if as_json:
        click.echo(json.dumps(result, sort_keys=True))


# ----------------------------------------------------------------------------------------------
# Formats and models

@cli.command()
@click.option("--from", "src", type=click.Choice(["conllu", "conll2003", "conll2012", "text"]),
              default="conllu", show_default=True)
@click.option("--to", "dst", type=click.Choice(["conllu", "conll2003", "conll2005", "text"]),
              default="conllu", show_default=True)
@INPUT
@OUTPUT
def convert(src: str, dst: str, input: str, output: str) -> None:
    """Convert between CoNLL-U, CoNLL-2003 columns, CoNLL-2005/2012 props and plain text."""
    from nlpipe.runtime.convert import convert as do_convert

    do_convert(src, dst, input, output)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def models(as_json: bool) -> None:
    """List the shipped models with their scores."""
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
    if as_json:
        click.echo(json.dumps(rows))
        return
    for r in rows:
        scores = ", ".join(f"{k} {v}" for k, v in r["scores"].items()) or "-"
        mark = "*" if r["default"] else " "
        click.echo(f"{mark} {r['name']:<24} {r['stage']:<11} {r['language']:<4} {r['arch']:<20} {scores}")


# ----------------------------------------------------------------------------------------------

def main(argv: Optional[list] = None) -> None:
    """Entry point: run the click group, turning user errors into one line and exit code 2, and
    SIGINT/SIGTERM/SIGHUP into one line and exit code 128 + n (see nlpipe.runtime.signals)."""
    from nlpipe.errors import OutputClosed
    from nlpipe.runtime.signals import Interrupted, ending_on_signals

    try:
        with ending_on_signals():
            cli.main(args=argv, prog_name="nlpipe", standalone_mode=False)
    except Interrupted as e:
        sys.stderr.write(f"nlpipe: {e}\n")
        sys.exit(e.exit_code)
    except click.exceptions.Abort:  # Ctrl-C where click catches it (a prompt)
        sys.stderr.write("nlpipe: interrupted\n")
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(2)
    except NlpipeError as e:
        sys.stderr.write(f"nlpipe: error: {e}\n")
        sys.exit(2)
    except OutputClosed:  # `nlpipe ... | head`: quiet, like any Unix filter whose reader left
        sys.exit(141)


if __name__ == "__main__":
    main()
