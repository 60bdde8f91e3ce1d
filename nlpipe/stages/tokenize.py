"""The tokenize stage: raw text -> CoNLL-U sentences (Punkt sentences + EWT-style words).

Input is read paragraph by paragraph (a paragraph ends at a blank line and always ends a sentence),
so memory is bounded by the longest paragraph. Output follows EWT: ``# newdoc`` at the start of a
file, ``# newpar`` at each paragraph, ``# sent_id = <base name>-<n>``, ``# text`` with the sentence's
characters (line breaks inside a paragraph become spaces), ``SpaceAfter=No`` in MISC (on the range
line of a multiword token) and every other column ``_``.
"""
from __future__ import annotations

import io
import os
from pathlib import Path
from typing import IO, Any, Dict, Iterator, List, Tuple

from ..conllu_io import Sentence
from ..errors import InputError, ModelError
from ..tokenizer_rules import SentenceSplitter, WordTokenizer, load_json

# Line-break characters other tools may split lines on; they must not appear in a `# text` comment.
_LINE_BREAKS = str.maketrans({c: " " for c in "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


class RuleTokenizer:
    """Tokenizer stage object: ``tokenize(stream, name)`` yields CoNLL-U sentences."""

    name = "tokenize"
    requires: frozenset = frozenset()
    provides = frozenset({"tokens", "sentences"})

    def __init__(self, sentences: SentenceSplitter, words: WordTokenizer):
        self.sentences = sentences
        self.words = words

    def tokenize(self, stream: IO[str], name: str) -> Iterator[Sentence]:
        """Yield the sentences of a raw-text stream; ``name`` is used in messages and sent_ids."""
        doc = _doc_name(name)
        n = 0
        for text in _paragraphs(stream, name):
            first = True
            for start, end in self.sentences.bounds(text):
                n += 1
                comments = []
                if n == 1:
                    comments.append("# newdoc")
                if first:
                    comments.append("# newpar")
                    first = False
                comments.append(f"# sent_id = {doc}-{n}")
                comments.append("# text = " + text[start:end].translate(_LINE_BREAKS))
                yield Sentence(comments, self._rows(text, start, end))

    def tokenize_text(self, text: str, name: str = "<string>") -> List[Sentence]:
        """All sentences of a string (for tests and library use)."""
        return list(self.tokenize(io.StringIO(text, newline="\n"), name))

    def _rows(self, text: str, start: int, end: int) -> List[List[str]]:
        rows: List[List[str]] = []
        i = 1
        last = len(text)
        for s, e, pieces in self.words.tokens(text, start, end):
            misc = "SpaceAfter=No" if e < last and not text[e].isspace() else "_"
            if pieces is None:
                rows.append([str(i), text[s:e], "_", "_", "_", "_", "_", "_", "_", misc])
                i += 1
                continue
            j = i + len(pieces) - 1
            rows.append([f"{i}-{j}", text[s:e], "_", "_", "_", "_", "_", "_", "_", misc])
            for p in pieces:
                rows.append([str(i), p, "_", "_", "_", "_", "_", "_", "_", "_"])
                i += 1
        return rows


def _doc_name(name: str) -> str:
    if name in ("-", ""):
        return "stdin"
    if name.startswith("<") and name.endswith(">"):  # "<stdin>", "<string>"
        name = name[1:-1]
    base = os.path.basename(name)
    stem = os.path.splitext(base)[0] or base
    return "_".join(stem.split()) or "doc"


def _lines(stream: IO[str], name: str) -> Iterator[str]:
    """Lines without their line ending; invalid UTF-8 or a NUL byte raises InputError with the line.

    Decoding is done here, line by line, so that the error names the exact line (a text stream
    decodes in blocks and would fail before handing out the lines preceding the bad byte).
    """
    buffer = getattr(stream, "buffer", None)
    errors = getattr(stream, "errors", None) or "strict"
    lines = stream if buffer is None else buffer
    for lineno, raw in enumerate(lines, 1):
        if buffer is None:
            line = raw
        else:
            try:
                line = raw.decode("utf-8", errors)
            except UnicodeDecodeError as e:
                raise InputError(name, lineno, f"invalid UTF-8 (byte 0x{raw[e.start]:02x} at column "
                                 f"{e.start + 1}); use --encoding-errors replace to go on") from None
        if line.endswith("\n"):
            line = line[:-1]
            if line.endswith("\r"):
                line = line[:-1]
        if "\x00" in line:
            raise InputError(name, lineno, "binary data (NUL byte) in input; is this a text file?")
        yield line


def _paragraphs(stream: IO[str], name: str) -> Iterator[str]:
    """Paragraph texts (lines joined by newlines); blank or whitespace-only lines separate them."""
    lines: List[str] = []
    first = True
    for line in _lines(stream, name):
        if first:
            first = False
            if line.startswith("\ufeff"):
                line = line[1:]
        if not line or line.isspace():
            if lines:
                yield "\n".join(lines)
                lines = []
            continue
        lines.append(line)
    if lines:
        yield "\n".join(lines)


def load_rules(model_dir: Path, config: Dict[str, Any], **options: Any) -> RuleTokenizer:
    """Load a ``punkt-treebank.v1`` model: Punkt parameters and word rules as JSON files."""
    files = config.get("model", {})
    try:
        punkt = load_json(Path(model_dir) / files.get("punkt", "punkt.json"))
        words = load_json(Path(model_dir) / files.get("words", "words.json"))
        splitter = SentenceSplitter(punkt, words.get("sentence_closers", []))
        tokenizer = WordTokenizer(words["abbreviations"], words["hyphen_prefixes"], words["splits"],
                                  words.get("joined", {}), words.get("units", []))
    except FileNotFoundError as e:
        raise ModelError(f"{model_dir}: missing model file {os.path.basename(e.filename)}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ModelError(f"{model_dir}: corrupt tokenizer parameters ({type(e).__name__}: {e})") from None
    return RuleTokenizer(splitter, tokenizer)
