"""Run-on training sentences: neighbours of a paragraph joined into one, for the parser.

From raw text the parser reads the tokenizer's sentences, and a missed sentence end hands it two
sentences as one (on en_ewt dev most of the tokenizer's sentence errors are such merges). A parser
trained only on single sentences has never seen one. Here a share of the training sentences is joined
with the next sentence of its paragraph; the second one's root becomes a ``parataxis`` dependent of
the first one's root, as treebanks annotate a run-on sentence (UD guidelines for juxtaposed clauses).
"""
from __future__ import annotations

import random
from typing import List, Sequence

from nlpipe.models.biaffine import Example

RELATION = "parataxis"


def run_on(a: Example, b: Example, relation: str = RELATION) -> Example:
    """``a`` and ``b`` (gold trees) as one sentence: ``b``'s words after ``a``'s, ``b``'s root
    attached to ``a``'s root with ``relation``."""
    if a.heads is None or b.heads is None or a.rels is None or b.rels is None:
        raise ValueError("run-on sentences need gold trees")
    n = len(a.forms)
    root = a.heads.index(0) + 1
    heads = a.heads + [h + n if h else root for h in b.heads]
    rels = a.rels + [relation if h == 0 else r for h, r in zip(b.heads, b.rels)]
    return Example(a.forms + b.forms, a.upos + b.upos, a.xpos + b.xpos, heads, rels)


def join_neighbours(examples: Sequence[Example], starts: Sequence[bool], rate: float, seed: int = 1
                    ) -> List[Example]:
    """The training sentences, each joined with probability ``rate`` to the next one (:func:`run_on`)
    where that one continues its paragraph (``starts[i]``: sentence ``i`` begins a paragraph or a
    document); a sentence is joined at most once. Deterministic for a ``seed``."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate {rate} is not in [0, 1]")
    rng = random.Random(seed)
    out: List[Example] = []
    i = 0
    while i < len(examples):
        if i + 1 < len(examples) and not starts[i + 1] and rate > 0 and rng.random() < rate:
            out.append(run_on(examples[i], examples[i + 1]))
            i += 2
        else:
            out.append(examples[i])
            i += 1
    return out
