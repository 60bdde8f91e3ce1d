"""The plain text of gold sentences, as ``nlpipe eval tokenize`` feeds it to a tokenizer (and the
character segmenter is trained on)."""
from __future__ import annotations

from typing import Iterable, List

from nlpipe.io.conllu import Sentence


def raw_text(sentences: Iterable[Sentence]) -> str:
    """Plain text of gold sentences: a paragraph's sentences joined by one space, paragraphs
    separated by a blank line (``# newpar`` or ``# newdoc`` starts a paragraph)."""
    paragraphs: List[List[str]] = []
    for sent in sentences:
        if not paragraphs or sent.starts_paragraph:
            paragraphs.append([])
        paragraphs[-1].append(sent.text)
    return "".join(" ".join(p) + "\n\n" for p in paragraphs)[:-1] if paragraphs else ""
