"""``nlpipe convert``: every input format is read into CoNLL-U sentences, every output written from them.

- ``conllu``: lossless pass-through.
- ``conll2003``: ``word POS chunk NE`` lines; NE tags <-> MISC ``NE=`` (read IOB1 or BIOES is converted to BIO),
  chunk <-> MISC ``Chunk=``, POS <-> XPOS, ``-DOCSTART-`` <-> ``# newdoc``.
- ``conll2012`` (input only): span props -> FORM, XPOS, LEMMA on predicates, MISC ``Pred=``/``SRL=`` (a
  roleset with a ``|``, which MISC cannot hold, is refused).
- ``conll2005`` (output only): srl-eval.pl props, one bracket column per predicate.
- ``text``: raw text in (through the tokenizer), one sentence per line out, blank line between paragraphs.
- ``json``, ``tree`` (output only): JSON Lines and dependency trees, as ``--to`` writes them everywhere
  (:mod:`nlpipe.io.render`).
"""
from __future__ import annotations

from typing import IO, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from nlpipe.io.conllu import FORM, LEMMA, MISC, UPOS, XPOS, Sentence, read_conllu
from nlpipe.io.formats import doc_key, read_conll2003, read_conll2012
from nlpipe.io.inputs import open_input, shown
from nlpipe.io.misc import Frame, frames_from_misc, frames_to_misc, misc_get, misc_set, ne_tags, set_ne_tags
from nlpipe.io.outputs import check_output, open_output
from nlpipe.io.render import Renderer
from nlpipe.errors import InputError, NlpipeError
from nlpipe.tags import Span

DOCSTART = "-DOCSTART- -X- -X- O"


# --------------------------------------------------------------------------------------------
# Readers: text stream -> CoNLL-U sentences

def _row(i: int, form: str, xpos: str, lemma: str = "_") -> List[str]:
    return [str(i), form, lemma, "_", xpos, "_", "_", "_", "_", "_"]


def conll2003_to_conllu(stream: IO[str], path: str) -> Iterator[Sentence]:
    """CoNLL-2003 sentences as CoNLL-U (``# newdoc`` after ``-DOCSTART-``, ``# sent_id`` counting from 1)."""
    for n, ner in enumerate(read_conll2003(stream, path), 1):
        comments = ["# newdoc"] if ner.newdoc else []
        comments += [f"# sent_id = {n}", f"# text = {' '.join(ner.words)}"]
        rows = [_row(i, w, p) for i, (w, p) in enumerate(zip(ner.words, ner.pos), 1)]
        for row, chunk in zip(rows, ner.chunks):
            if chunk != "O":
                row[MISC] = misc_set(row[MISC], "Chunk", chunk)
        sent = Sentence(comments, rows)
        set_ne_tags(sent, ner.tags)
        yield sent


def conll2012_to_conllu(stream: IO[str], path: str) -> Iterator[Sentence]:
    """CoNLL-2012 span props as CoNLL-U: FORM and XPOS from the file, the predicate lemma in LEMMA,
    frames in MISC; ``# newdoc id`` = the doc id, ``# sent_id`` = UD-style document name + index."""
    doc = None
    for s in read_conll2012(stream, path):
        comments = [f"# newdoc id = {s.doc_id}"] if s.doc_id != doc else []
        doc = s.doc_id
        comments += [f"# sent_id = {doc_key(s.doc_id)}-{s.index}", f"# text = {' '.join(s.words)}"]
        rows = [_row(i, w, p) for i, (w, p) in enumerate(zip(s.words, s.pos), 1)]
        for f in s.frames:
            if "|" in f.roleset:   # it would end its MISC entry; MISC has no escape that readers decode
                raise InputError(path, s.line + f.pred, f"roleset '{shown(f.roleset)}' contains '|', which "
                                 f"cannot go into MISC Pred= (it separates MISC entries)")
            rows[f.pred][LEMMA] = f.lemma if f.lemma != "-" else "_"
        sent = Sentence(comments, rows)
        try:
            frames_to_misc(sent, s.frames)
        except ValueError as e:
            raise InputError(path, s.line, f"{e}: BIO in MISC cannot encode nested spans") from None
        yield sent


def text_to_conllu(stream: IO[str], path: str) -> Iterator[Sentence]:
    """Raw text through the default tokenizer."""
    from nlpipe.runtime.pipeline import load_tokenizer  # loaded only when needed

    return load_tokenizer().tokenize(stream, path)


READERS: Dict[str, Callable[[IO[str], str], Iterable[Sentence]]] = {
    "conllu": read_conllu,
    "conll2003": conll2003_to_conllu,
    "conll2012": conll2012_to_conllu,
    "text": text_to_conllu,
}


# --------------------------------------------------------------------------------------------
# Writers: CoNLL-U sentences -> text stream; each returns the number of sentences written

def write_conll2003(sentences: Iterable[Sentence], out: IO[str], path: str = "<stdin>") -> int:
    """CoNLL-2003 columns ``word POS chunk NE`` (POS: XPOS, else UPOS; chunk ``O`` when unknown; NE as in MISC)."""
    n = 0
    for s in sentences:
        if s.starts_document:
            out.write(DOCSTART + "\n\n")
        tags = ne_tags(s, path)
        lines = []
        for w, tag in zip(s.words, tags):
            pos = w[XPOS] if w[XPOS] != "_" else w[UPOS]
            chunk = misc_get(w[MISC], "Chunk") or "O"
            lines.append(f"{w[FORM].replace(' ', '_')} {pos} {chunk} {tag}\n")
        out.write("".join(lines) + "\n")
        n += 1
    return n


def bracket_column(spans: Iterable[Span], n: int) -> List[str]:
    """CoNLL-2005 bracket cells for spans over ``n`` words: ``(ARG0*``, ``*``, ``*)``, ``(V*)``."""
    opens: List[List[Tuple[int, str]]] = [[] for _ in range(n)]
    closes = [0] * n
    for s, e, label in spans:
        opens[s].append((-e, label))
        closes[e - 1] += 1
    return ["".join("(" + label for _, label in sorted(opens[i])) + "*" + ")" * closes[i] for i in range(n)]


def write_conll2005(sentences: Iterable[Sentence], out: IO[str], path: str = "<stdin>") -> int:
    """srl-eval.pl props: predicate lemma or ``-``, then one bracket column per predicate (tab-separated)."""
    n = 0
    for s in sentences:
        frames: List[Frame] = frames_from_misc(s, path)
        size = len(s.words)
        first = ["-"] * size
        for f in frames:
            first[f.pred] = f.lemma
        columns = [bracket_column(f.spans, size) for f in frames]
        out.write("".join("\t".join([first[i]] + [c[i] for c in columns]) + "\n" for i in range(size)) + "\n")
        n += 1
    return n


def _renderer(fmt: str) -> Callable[[Iterable[Sentence], IO[str], str], int]:
    def write(sentences: Iterable[Sentence], out: IO[str], path: str = "<stdin>") -> int:
        return Renderer(out, fmt).write_sentences(sentences)

    write.__doc__ = f"``--to {fmt}``: see :mod:`nlpipe.io.render`."
    return write


write_text = _renderer("text")   # one sentence a line, a blank line where a paragraph starts


WRITERS: Dict[str, Callable[[Iterable[Sentence], IO[str], str], int]] = {
    "conllu": _renderer("conllu"),
    "conll2003": write_conll2003,
    "conll2005": write_conll2005,
    "text": write_text,
    "json": _renderer("json"),
    "tree": _renderer("tree"),
}


def convert(src: str, dst: str, input_path: Optional[str], output_path: Optional[str]) -> int:
    """Convert ``input_path`` (``None``/``-``: stdin) from ``src`` to ``dst`` into ``output_path``
    (``None``/``-``: stdout); return the number of sentences written."""
    if src not in READERS:
        raise NlpipeError(f"cannot read format '{src}' (expected one of: {', '.join(READERS)})")
    if dst not in WRITERS:
        raise NlpipeError(f"cannot write format '{dst}' (expected one of: {', '.join(WRITERS)})")
    check_output(output_path, [input_path])
    stream, name = open_input(input_path)
    try:
        with open_output(output_path, [input_path]) as out:
            return WRITERS[dst](READERS[src](stream, name), out, name)
    finally:
        if name != "<stdin>":
            stream.close()
