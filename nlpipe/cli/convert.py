"""``nlpipe convert``: between CoNLL-U, CoNLL-2003 columns, CoNLL-2005/2012 props and plain text."""
from __future__ import annotations

import click

from nlpipe.cli import options as O

SOURCES = ("conllu", "conll2003", "conll2012", "text")
TARGETS = ("conllu", "conll2003", "conll2005", "text", "json", "tree")


@click.command()
@click.option("--from", "src", type=click.Choice(SOURCES), default="conllu", show_default=True,
              help="Input format (conll2012: span props, read into MISC Pred=/SRL=; text: raw text through "
                   "the default tokenizer).")
@click.option("--to", "dst", type=click.Choice(TARGETS), default="conllu", show_default=True,
              help="Output format (conll2005: srl-eval.pl props; text: one sentence a line; json: one object a "
                   "sentence a line; tree: dependency trees drawn in the terminal).")
@O.INPUT
@O.OUTPUT
def convert(src: str, dst: str, input: str, output: str) -> None:
    """Convert between CoNLL-U, CoNLL-2003 columns, CoNLL-2005/2012 props and plain text."""
    from nlpipe.runtime.convert import convert as run_convert

    run_convert(src, dst, input, output)
