"""``nlpipe annotate``: the whole chain in one process (or ``--jobs`` processes, or a Dask cluster)."""
from __future__ import annotations

from typing import Dict, Optional

import click

from nlpipe.cli import options as O
from nlpipe.errors import NlpipeError


def model_map(models: tuple) -> Dict[str, str]:
    """``("pos=M1", "parse=M2")`` -> ``{"pos": "M1", "parse": "M2"}``."""
    out: Dict[str, str] = {}
    for m in models:
        stage, sep, path = m.partition("=")
        if not sep or not stage or not path:
            raise NlpipeError(f"--model expects STAGE=MODEL, got '{m}'")
        out[stage] = path
    return out


@click.command()
@click.argument("inputs", nargs=-1, metavar="[FILES|-]")
@click.option("-o", "--output", default="-", metavar="OUT",
              help="Output file (default: stdout), or a directory (existing, or ending in /) for one "
                   "NAME.conllu per input; existing outputs there are not redone.")
@click.option("--stages", default=None, metavar="S1,S2",
              help="Comma-separated stages (default: the stages with a model given, plus those with a shipped "
                   "model in the same language; with no model given, every stage with a shipped model).")
@click.option("-m", "--model", "models", multiple=True, metavar="STAGE=M",
              help="Model for one stage (directory or shipped name); repeatable.")
@click.option("--models", "models_folder", default=None, metavar="DIR",
              help="A folder of model folders (as 'nlpipe train pipeline' writes), or the name of one in a "
                   "folder of $NLPIPE_MODELS: its model for each stage (--model overrides one).")
@click.option("--allow-mixed-languages", is_flag=True,
              help="Run models of different languages in one chain (refused by default).")
@click.option("--keep-existing", is_flag=True,
              help="Skip a stage on sentences whose columns for it are already filled (and the parser "
                   "leaves FEATS as they are).")
@click.option("--skip-bad", is_flag=True,
              help="Pass a malformed CoNLL-U sentence through unchanged with a warning and go on.")
@O.INPUT_MODE
@O.ENCODING
@O.ENCODING_ERRORS
@O.OUTPUT_FORMAT
@click.option("--probs", is_flag=True,
              help="Also write the confidences of the stages that give them, as their own --probs do "
                   "(MISC SentEndProb=, UPOSProb=, XPOSProb=, LemmaProb=, HeadProb=, NEProb=, PredProb=); a "
                   "stage whose model gives none (rule tokenizer, transition parser) runs without, with a "
                   "warning.")
@click.option("--overwrite", is_flag=True,
              help="With -o DIR: annotate inputs whose output file exists again (default: not redone).")
@O.JOBS
@O.BATCH
@click.option("--progress/--no-progress", default=None,
              help="Progress on stderr (default: only when stderr is a terminal).")
@click.option("--cluster", default=None, metavar="tcp://HOST:PORT",
              help="Run on a Dask cluster: each input file -> one file in the -o directory.")
@click.option("--retries", type=int, default=2, show_default=True,
              help="With --cluster: times a failed file is tried again.")
@O.DEVICE
def annotate(inputs: tuple, output: str, stages: Optional[str], models: tuple, models_folder: Optional[str],
             allow_mixed_languages: bool, keep_existing: bool, skip_bad: bool, input_mode: str,
             encoding: str, encoding_errors: str, output_format: str, probs: bool, overwrite: bool,
             jobs: Optional[int], batch: int,
             progress: Optional[bool], cluster: Optional[str], retries: int, device: str) -> None:
    """Run the chain in one process on raw text or CoNLL-U (with --input auto: read as CoNLL-U when
    tokenize is not asked or the input looks like CoNLL-U; --input raw, sentences or tokens tokenize
    the text whatever --stages says). Models of different languages are refused."""
    from nlpipe.runtime.chain import plan_chain
    from nlpipe.runtime.pipeline import run_annotate

    chosen = model_map(models)
    asked = [s.strip() for s in stages.split(",") if s.strip()] if stages else None
    if models_folder is not None:
        from nlpipe.cli.output import warn_missing_model_roots
        from nlpipe.registry import pipeline_models

        warn_missing_model_roots()

        found = {s: str(p) for s, p in pipeline_models(models_folder).items() if not asked or s in asked}
        chosen = {**found, **chosen}
    names = plan_chain(asked, chosen, allow_mixed_languages)
    extra = {"probs": True} if probs else {}
    if cluster is not None:
        from nlpipe.runtime.distributed import run_cluster

        if input_mode != "auto" or overwrite or output_format != "conllu":
            raise NlpipeError("--cluster reads its inputs as --input auto, writes CoNLL-U and never "
                              "overwrites; leave --input, --to and --overwrite out")
        from nlpipe.io.inputs import is_utf8

        if not is_utf8(encoding) or encoding_errors != "strict":
            raise NlpipeError("--cluster reads its inputs as UTF-8 and refuses bytes that are not; leave "
                              "--encoding and --encoding-errors out")

        run_cluster(cluster, list(inputs), output, names, models=chosen, keep_existing=keep_existing,
                    skip_bad=skip_bad, batch=batch, retries=retries, progress=progress, device=device, **extra)
        return
    run_annotate(list(inputs) or ["-"], output, names, models=chosen, keep_existing=keep_existing,
                 skip_bad=skip_bad, jobs=1 if jobs is None else jobs, batch=batch, progress=progress,
                 input_mode=input_mode, overwrite=overwrite, output_format=output_format, device=device,
                 encoding_errors=encoding_errors, encoding=encoding, **extra)
