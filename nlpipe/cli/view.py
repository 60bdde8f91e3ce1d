"""``nlpipe view FILE [--sent ID] [--html OUT]``: the parse, entities and roles of CoNLL-U as an HTML page."""
from __future__ import annotations

from typing import Optional

import click

from nlpipe.cli import options as O


@click.command()
@O.INPUT
@click.option("--sent", default=None, metavar="ID", help="Only the sentence with this sent_id.")
@click.option("--html", "output", default="-", metavar="OUT",
              help="The HTML file to write (default: stdout); self-contained, viewable offline.")
def view(input: str, sent: Optional[str], output: str) -> None:
    """Draw each sentence of a CoNLL-U file (its dependency arcs, named entities and each predicate's
    roles) in a self-contained HTML page."""
    from nlpipe.errors import NlpipeError
    from nlpipe.io.conllu import read_file
    from nlpipe.io.outputs import check_output, open_output
    from nlpipe.io.view import page

    check_output(output)
    sentences = list(read_file(input))
    if sent is not None and not any(s.sent_id == sent for s in sentences):
        raise NlpipeError(f"{input}: no sentence with sent_id {sent}")
    with open_output(output) as out:
        out.write(page(sentences, input if input != "-" else "stdin", sent))
