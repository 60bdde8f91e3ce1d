"""Character-level segmentation data: labels and character ids (multiword tokens: :mod:`nlpipe.models.multiword`).

Shared by training (:mod:`nlpipe.train.tokenize`) and inference
(:mod:`nlpipe.models.segmenter_numpy`); no torch here.

Every character of a paragraph gets one label: :data:`INSIDE` (no boundary after it),
:data:`TOKEN_END` (a token ends after it) or :data:`SENT_END` (a token and a sentence end after it).
Whitespace characters carry no decision (:data:`IGNORE` in training). Training paragraphs are built
exactly as ``nlpipe eval tokenize`` builds its input (:func:`nlpipe.io.raw_text.raw_text`).
"""
from __future__ import annotations

import unicodedata
from collections import Counter
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.io.conllu import FORM, Sentence
from nlpipe.io.raw_text import raw_text
from nlpipe.models.rules_tokenizer import SentenceSplitter, WordTokenizer

INSIDE, TOKEN_END, SENT_END = 0, 1, 2
N_LABELS = 3
IGNORE = -100

PAD, SPACE = 0, 1
# Characters outside the vocabulary fall back to a bucket for their Unicode category.
CATEGORY_BUCKETS = ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
                    "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "C")
N_FIXED = 2 + len(CATEGORY_BUCKETS)


_ZWJ = 0x200D


def _is_glue(code: int) -> bool:
    return (unicodedata.category(chr(code))[0] == "M" or code == _ZWJ or 0x1F3FB <= code <= 0x1F3FF
            or 0xE0020 <= code <= 0xE007F)


class CharVocab:
    """Character -> id: 0 padding, 1 any whitespace, then one id per Unicode category bucket for
    unknown characters, then the known characters."""

    def __init__(self, chars: Sequence[str]):
        self.chars = list(chars)
        self._index: Dict[int, int] = {ord(c): N_FIXED + i for i, c in enumerate(self.chars)}
        self._bucket = {cat: 2 + i for i, cat in enumerate(CATEGORY_BUCKETS)}

    def __len__(self) -> int:
        return N_FIXED + len(self.chars)

    def _id(self, code: int) -> int:
        known = self._index.get(code)
        if known is not None:
            return known
        c = chr(code)
        if c.isspace():
            return SPACE
        return self._bucket.get(unicodedata.category(c), self._bucket["C"])  # C* and the rare non-space Z*

    def encode(self, text: str) -> Tuple[np.ndarray, np.ndarray]:
        """(ids, glue) of the characters of ``text``: int32 ids (whitespace of any kind is
        :data:`SPACE`) and a bool mask of characters that must stay in the token of the character
        before them (combining marks, emoji modifiers and zero-width joiner sequences)."""
        if not text:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=bool)
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
        uniq, inverse = np.unique(codes, return_inverse=True)
        inverse = inverse.reshape(-1)
        ids = np.fromiter((self._id(int(u)) for u in uniq), dtype=np.int32, count=len(uniq))[inverse]
        glue = np.fromiter((_is_glue(int(u)) for u in uniq), dtype=bool, count=len(uniq))[inverse]
        glue[1:] |= codes[:-1] == _ZWJ
        return ids, glue

    def ids(self, text: str) -> np.ndarray:
        """Ids of the characters of ``text`` (see :meth:`encode`)."""
        return self.encode(text)[0]

    @classmethod
    def build(cls, texts: Iterable[str], min_count: int = 2) -> "CharVocab":
        counts: Counter = Counter()
        for t in texts:
            counts.update(t)
        return cls(sorted(c for c, n in counts.items() if n >= min_count and not c.isspace()))


class RuleFeatures:
    """An input feature from the rule tokenizer: per character, 1 if a rule token ends after it,
    plus 2 if a Punkt sentence ends after it (when a sentence splitter is given)."""

    def __init__(self, words: WordTokenizer, sentences: Optional[SentenceSplitter] = None):
        self.words = words
        self.sentences = sentences
        self.n_values = 4 if sentences is not None else 2

    def __call__(self, text: str) -> np.ndarray:
        bits = np.zeros(len(text), dtype=np.int32)
        ends = [e for _, e, _ in self.words.tokens(text)]
        if ends:
            bits[np.array(ends, dtype=np.int64) - 1] = 1
        if self.sentences is not None:
            ends = [e for _, e in self.sentences.bounds(text)]
            if ends:
                bits[np.array(ends, dtype=np.int64) - 1] += 2
        return bits


# ---------------------------------------------------------------------------------------------
# Training examples

def labelled_paragraphs(sentences: Sequence[Sentence], name: str = "<train>") -> List[Tuple[str, np.ndarray]]:
    """(paragraph text, int8 labels per character) of gold sentences, as ``nlpipe eval`` sees them.

    Raises ValueError when a sentence's token forms do not match its ``# text``.
    """
    text = raw_text(sentences)
    labels = np.full(len(text), INSIDE, dtype=np.int8)
    pos = 0
    n = len(text)
    for sent in sentences:
        tokens = sent.tokens
        for k, tok in enumerate(tokens):
            form = "".join(tok[FORM].split())
            for ch in form:
                while pos < n and text[pos].isspace():
                    pos += 1
                if pos >= n or text[pos] != ch:
                    raise ValueError(f"{name}: sentence at line {sent.line}: token '{tok[FORM]}' does not "
                                     f"match its # text")
                pos += 1
            if form:
                labels[pos - 1] = SENT_END if k == len(tokens) - 1 else TOKEN_END
    out = []
    start = 0
    for para in text.rstrip("\n").split("\n\n"):
        out.append((para, labels[start:start + len(para)]))
        start += len(para) + 2
    return out
