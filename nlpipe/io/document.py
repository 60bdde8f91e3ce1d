"""A document: the sentences of one text, as the Python pipeline (:class:`nlpipe.Pipeline`) returns them.

The sentences are :class:`~nlpipe.io.conllu.Sentence` objects (10 columns a word, written back as
they are); iterating over a sentence gives :class:`~nlpipe.io.conllu.Word` views with named fields::

    for sentence in doc:
        for word in sentence:
            print(word.form, word.upos, word.head, word.deprel, word.ne)
"""
from __future__ import annotations

from typing import Iterator, List, Optional

from nlpipe.io.conllu import Sentence, Word, to_string
from nlpipe.io.raw_text import raw_text


class Document:
    """The sentences of a text, in order; ``text`` is the text they were read from (else rebuilt:
    a paragraph's sentences joined by a space, paragraphs by a blank line)."""

    def __init__(self, sentences: List[Sentence], text: Optional[str] = None):
        self.sentences = sentences
        self._text = text

    @property
    def text(self) -> str:
        return self._text if self._text is not None else raw_text(self.sentences)

    @property
    def words(self) -> List[Word]:
        """Every sentence's words, in order."""
        return [w for s in self.sentences for w in s]

    def to_conllu(self) -> str:
        """The document as CoNLL-U, what ``nlpipe annotate`` writes for the same text."""
        return to_string(self.sentences)

    def __iter__(self) -> Iterator[Sentence]:
        return iter(self.sentences)

    def __len__(self) -> int:
        return len(self.sentences)

    def __getitem__(self, i: int) -> Sentence:
        return self.sentences[i]

    def __eq__(self, other: object) -> bool:
        return self.sentences == other.sentences if isinstance(other, Document) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Document({len(self.sentences)} sentences)"
