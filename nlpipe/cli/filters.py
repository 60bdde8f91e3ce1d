"""The single-stage filters: ``nlpipe tokenize|pos|parse|ner|predicates|srl [INPUT] [-o OUT]``.

Each reads CoNLL-U (tokenize: raw text) and writes CoNLL-U with only its stage's columns changed,
through :func:`nlpipe.runtime.pipeline.run_stage`, the chunked path that ``nlpipe annotate`` and
``nlpipe eval`` run too.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import click

from nlpipe.cli import options as O
from nlpipe.errors import NlpipeError
from nlpipe.nn.syntax_modes import OWN_PARSES

@click.command()
@O.INPUT
@O.OUTPUT
@O.MODEL
@click.option("--method", type=click.Choice(["trained", "rules"]), default=None,
              help="trained: the character model (the default when shipped); rules: Punkt sentences + "
                   "Treebank-style words (no trained model, fastest). With --model, it must be the model's.")
@O.INPUT_MODE
@O.OUTPUT_FORMAT
@O.ENCODING
@O.ENCODING_ERRORS
@O.probs("the probability that each sentence ends where it does, as MISC SentEndProb= on its last token "
         "(trained tokenizer, raw text; 1 at a paragraph's end)")
@O.JOBS
def tokenize(input: str, output: str, model: Optional[str], method: Optional[str], input_mode: str,
             output_format: str, encoding: str, encoding_errors: str, probs: bool, jobs: Optional[int]) -> None:
    """Split raw text into sentences and tokens (CoNLL-U out; CoNLL-U in is written as it is)."""
    from nlpipe.runtime.pipeline import run_tokenize

    run_tokenize(input, output, model=model, method=method, encoding_errors=encoding_errors, mode=input_mode,
                 output_format=output_format, probs=probs, jobs=jobs, encoding=encoding)


def _stage_command(stage: str, help_text: str, *options: Callable) -> click.Command:
    """``nlpipe STAGE [INPUT] [-o OUT] [-m M] [--device D]``; the extra click ``options`` go to the
    stage's loader as keyword arguments."""

    def command(input: str, output: str, model: Optional[str], device: str, output_format: str,
                jobs: Optional[int], **extra: Any) -> None:
        from nlpipe.runtime.pipeline import run_stage

        run_stage(stage, input, output, model=model, device=device, output_format=output_format, jobs=jobs, **extra)

    for option in reversed((O.INPUT, O.OUTPUT, O.MODEL, O.DEVICE, O.OUTPUT_FORMAT, O.JOBS) + options):
        command = option(command)
    return click.command(name=stage, help=help_text)(command)


@click.command(name="pos")
@O.INPUT
@O.OUTPUT
@O.MODEL
@O.DEVICE
@click.option("--fast", is_flag=True,
              help="The fast linear tagger: the model itself where it is one, else the one beside it (the "
                   "shipped NAME-fast, the pos-fast folder of 'nlpipe train pipeline').")
@O.MARGIN
@O.CHECKPOINTS
@O.FIRST_MARGIN
@O.FIRST_CHECKPOINTS
@O.probs("the probabilities of each word's UPOS and XPOS as MISC UPOSProb= and XPOSProb=, and of a lemma the "
         "rule classifier chose as LemmaProb= (a lemma from the lexicon has none)")
@O.OUTPUT_FORMAT
@O.JOBS
def pos(input: str, output: str, model: Optional[str], device: str, fast: bool, output_format: str,
        jobs: Optional[int], **extra: Any) -> None:
    """Tag UPOS and XPOS, and FEATS and LEMMA where the model has them (CoNLL-U in, CoNLL-U out)."""
    from nlpipe.registry import fast_tagger, resolve_model
    from nlpipe.runtime.pipeline import run_stage

    if fast:
        model = str(fast_tagger(resolve_model("pos", model)))
    # the linear tagger scores a batch's words position by position once tag history counts: bigger
    # chunks mean fewer rounds (en_ewt test: 10% less CPU at 4096 sentences than at 256)
    run_stage("pos", input, output, model=model, device=device, output_format=output_format, jobs=jobs,
              batch=4096, **extra)


ner = _stage_command("ner", "Mark named entities as MISC NE=B-PER etc.",
                     O.probs("each word's probability of its entity tag as MISC NEProb="))
predicates = _stage_command("predicates", "Mark predicates as MISC Pred=lemma.NN.",
                            O.probs("each predicate's probability as MISC PredProb="))
srl = _stage_command(
    "srl", "Label semantic roles as MISC SRL=<pred-id>:<role> (predicts predicates first when the input has "
           "no Pred=).",
    click.option("--parse-from-input", is_flag=True,
                 help="Use the input's HEAD column (e.g. from 'nlpipe parse', or gold) as the syntactic "
                      "attention head instead of the model's own parse."),
    click.option("--predicates-from-input", is_flag=True,
                 help="Label the predicates marked Pred= in the input instead of predicting them."),
    O.probs("the probability of each predicate it predicts as MISC PredProb= (those of the input keep "
            "theirs)"),
    click.option("--own-parse", type=click.Choice(OWN_PARSES), default=None,
                 help="Without --parse-from-input, what the syntactic head attends to: each word's best head, "
                      "the best tree (Chu-Liu-Edmonds) or the tree marginals (default: what the model's "
                      "--syntax mode attends to; lisa: argmax)."),
    click.option("--write-parse", is_flag=True,
                 help="Also write HEAD and DEPREL: the model's own best tree, labelled by its label scorer."))


@click.command(name="parse")
@O.INPUT
@O.OUTPUT
@O.MODEL
@O.DEVICE
@click.option("--parser", type=click.Choice(["biaffine", "transition"]), default="biaffine", show_default=True,
              help="Which shipped parser to use when --model is not given.")
@click.option("--projective", is_flag=True, help="Projective trees (Eisner) instead of Chu-Liu-Edmonds.")
@O.probs("each word's probability of its head as MISC HeadProb= (biaffine parser)")
@O.MARGIN
@O.OUTPUT_FORMAT
@click.option("--keep-feats", is_flag=True,
              help="Leave FEATS as the input has them (a parser folder with feats/ re-decides those the tree "
                   "decides; see 'nlpipe train parse-feats').")
@click.option("--int8", is_flag=True,
              help="Biaffine: run the network in int8 on the CPU (torch dynamic quantization): about a seventh "
                   "less CPU time on large inputs, the same dev LAS; torch's start-up (about 2 s) is paid.")
@O.JOBS
def parse(input: str, output: str, model: Optional[str], device: str, parser: str, projective: bool,
          probs: bool, margin: Optional[float], output_format: str, keep_feats: bool, int8: bool,
          jobs: Optional[int]) -> None:
    """Predict HEAD and DEPREL (CoNLL-U with POS in)."""
    from nlpipe.registry import MODELS_DIR
    from nlpipe.runtime.pipeline import run_stage

    if model is None and parser == "transition":
        model = "parse-transition-ewt"
        if not (MODELS_DIR / model).is_dir():
            raise NlpipeError("no model for the transition parser yet (use --parser biaffine)")
    extra: Dict[str, Any] = O.given(margin=margin)
    if int8:
        extra["int8"] = True
    if parser == "transition":
        extra["batch"] = 4096     # the transition parser advances whole chunks in lockstep: bigger is faster
    run_stage("parse", input, output, model=model, device=device, projective=projective, probs=probs,
              feats=not keep_feats, output_format=output_format, jobs=jobs, **extra)
