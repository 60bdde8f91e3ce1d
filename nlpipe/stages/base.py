"""What every stage shares: the Stage protocol and chunked annotation of a sentence stream.

A stage object has ``name``, ``requires``, ``provides`` and ``annotate(sentences)``, which yields the
same sentences with only the stage's own columns changed. The tokenizer is the one stage whose
input is raw text: it has ``tokenize(stream, name)`` instead of taking sentences.
"""
from __future__ import annotations

from typing import Callable, Iterable, Iterator, List, Protocol

from nlpipe.io.conllu import Sentence


class Stage(Protocol):
    name: str
    requires: frozenset
    provides: frozenset

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        ...


def fill_in_chunks(sentences: Iterable[Sentence], fill: Callable[[List[Sentence]], None],
                   size: int) -> Iterator[Sentence]:
    """Annotate a stream chunk by chunk: ``fill`` annotates up to ``size`` sentences in place (a
    batching stage sorts them by length inside the chunk), then they are yielded in input order."""
    chunk: List[Sentence] = []
    for s in sentences:
        chunk.append(s)
        if len(chunk) >= size:
            fill(chunk)
            yield from chunk
            chunk = []
    if chunk:
        fill(chunk)
        yield from chunk
