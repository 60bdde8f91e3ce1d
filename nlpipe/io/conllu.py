"""Lossless, streaming CoNLL-U reading and writing.

A :class:`Sentence` keeps every byte of its source: comment lines verbatim, each token line split
on tabs (so writing is ``"\\t".join``), the line ending used, and the exact text between its last
token line and the next sentence (normally one blank line; possibly none at the end of a file).
Reading and writing a file with no stage applied therefore gives back the same bytes.

Stages change only the columns they own, through :attr:`Sentence.words` (syntactic words, not
multiword-token ranges or empty nodes) and the MISC helpers below (``Key=Value`` entries; the
``NE=``/``Pred=``/``SRL=`` codecs are :mod:`nlpipe.io.misc`). :meth:`Sentence.line_of` is the file
line of a word, :func:`boundary` and ``Sentence.starts_document``/``starts_paragraph`` tell where
documents and paragraphs start, and ``to_tokenlist``/``from_tokenlist`` convert to and from the
``conllu`` package's ``TokenList``.

Lines may carry more than 10 columns (CoNLL-U Plus files such as Universal PropBank); the extra
columns are passed through. Every token line of a sentence must have the same number of columns.
"""
from __future__ import annotations

import io
from typing import IO, Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from nlpipe.errors import InputError
from nlpipe.io.inputs import BOM, number, open_input, read_lines
from nlpipe.io.inputs import shown as _show

ID, FORM, LEMMA, UPOS, XPOS, FEATS, HEAD, DEPREL, DEPS, MISC = range(10)
COLUMNS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")


class Sentence:
    """One CoNLL-U sentence.

    Attributes:
        comments: comment lines without their line ending, e.g. ``"# sent_id = 1"``.
        rows: every token line (words, multiword-token ranges, empty nodes) as a list of columns.
        end: the exact text after the last token line's content (``eol * 2`` normally).
        eol: the line ending of this sentence's lines (``"\\n"`` or ``"\\r\\n"``).
        prefix: text before the first comment (a byte-order mark at the start of a file).
        line: 1-based line number of the sentence's first line in its source (0 if built in code).
    """

    __slots__ = ("comments", "rows", "end", "eol", "prefix", "line", "_words")

    def __init__(self, comments: Optional[List[str]] = None, rows: Optional[List[List[str]]] = None,
                 end: str = "\n\n", eol: str = "\n", prefix: str = "", line: int = 0):
        self.comments = comments if comments is not None else []
        self.rows = rows if rows is not None else []
        self.end = end
        self.eol = eol
        self.prefix = prefix
        self.line = line
        self._words: Optional[List[List[str]]] = None

    @property
    def words(self) -> List[List[str]]:
        """Syntactic word rows (integer IDs) in order; mutating a row changes the sentence."""
        if self._words is None:
            self._words = [r for r in self.rows if r[ID].isdigit()]
        return self._words

    def invalidate(self) -> None:
        """Call after adding or removing rows so that :attr:`words` is recomputed."""
        self._words = None

    @property
    def tokens(self) -> List[List[str]]:
        """Surface token rows: multiword-token ranges and the words not inside a range."""
        out: List[List[str]] = []
        covered = 0
        for r in self.rows:
            i = r[ID]
            if "-" in i:
                out.append(r)
                covered = int(i.split("-")[1])
            elif i.isdigit() and int(i) > covered:
                out.append(r)
        return out

    def forms(self) -> List[str]:
        return [w[FORM] for w in self.words]

    def meta(self, key: str) -> Optional[str]:
        """Value of a ``# key = value`` comment (``None`` if absent; ``""`` for a bare ``# key``).

        ``newdoc`` and ``newpar`` also match their ``# newdoc id = X`` form (value ``X``).
        """
        for c in self.comments:
            body = c[1:].strip()
            if body == key:
                return ""
            k, sep, v = body.partition("=")
            if sep:
                k = k.strip()
                if k == key or (k == key + " id" and key in ("newdoc", "newpar")):
                    return v.strip()
        return None

    def set_meta(self, key: str, value: Optional[str]) -> None:
        """Set (or with ``None`` remove) a ``# key = value`` comment, keeping its position."""
        for n, c in enumerate(self.comments):
            body = c[1:].strip()
            if body == key or body.partition("=")[0].strip() == key and "=" in body:
                if value is None:
                    del self.comments[n]
                else:
                    self.comments[n] = f"# {key} = {value}"
                return
        if value is not None:
            self.comments.append(f"# {key} = {value}")

    @property
    def sent_id(self) -> Optional[str]:
        return self.meta("sent_id")

    @property
    def starts_document(self) -> bool:
        """Whether a ``# newdoc`` comment (``# newdoc id = X`` too) opens this sentence."""
        return any(boundary(c) == "newdoc" for c in self.comments)

    @property
    def starts_paragraph(self) -> bool:
        """Whether a ``# newpar`` or ``# newdoc`` comment opens this sentence (a document starts a paragraph)."""
        return any(boundary(c) is not None for c in self.comments)

    def line_of(self, row: Union[int, List[str]]) -> Optional[int]:
        """File line of a token row (the row itself, or its index in :attr:`rows`); ``None`` for a
        sentence not read from a file."""
        if not self.line:
            return None
        if not isinstance(row, int):
            row = next((k for k, r in enumerate(self.rows) if r is row), None)
            if row is None:
                raise ValueError("line_of: the row is not one of this sentence's rows")
        return self.line + len(self.comments) + row

    @property
    def text(self) -> "Text":
        """The sentence text: ``# text`` if present, else rebuilt from tokens and SpaceAfter (an
        attribute like :attr:`sent_id`; ``text()`` still works)."""
        t = self.meta("text")
        if t is not None:
            return Text(t)
        parts = []
        for tok in self.tokens:
            parts.append(tok[FORM])
            if misc_get(tok[MISC], "SpaceAfter") != "No":
                parts.append(" ")
        return Text("".join(parts).rstrip(" "))

    def to_string(self) -> str:
        lines = self.comments + ["\t".join(r) for r in self.rows]
        return self.prefix + self.eol.join(lines) + self.end

    def to_tokenlist(self) -> Any:
        """This sentence as a ``conllu.TokenList`` (the ``conllu`` package's parsed form: integer or
        tuple IDs and HEADs, FEATS/MISC/DEPS parsed, ``_`` as ``None``), comments as its metadata.

        :meth:`from_tokenlist` gives back the same lines, except what a ``TokenList`` cannot hold:
        comments are rewritten as ``# key = value`` (or ``# key``) and a repeated key keeps its last
        value; a FEATS/MISC entry ``Key=`` (empty value) comes back as ``Key``; a repeated FEATS/MISC
        key keeps its last value; the line ending is ``\n``, the byte-order mark and the text after the
        sentence (extra blank lines) are not kept. Unlike ``conllu.parse``, a MISC value containing
        ``=`` (``Cxn=free=rc-obj``) is kept whole. Columns after the tenth are named by the sentence's
        ``# global.columns`` comment, else ``col11``, ``col12`` ...
        """
        from conllu.models import Metadata, Token, TokenList
        from conllu.parser import DEFAULT_FIELD_PARSERS, DEFAULT_FIELDS

        names = list(DEFAULT_FIELDS)
        meta = Metadata()
        for c in self.comments:
            key, sep, value = c[1:].partition("=")
            key = key.strip()
            if key == "global.columns":
                names = [n.lower() for n in value.split()]
            if key:
                meta[key] = value.strip() if sep else None
        tokens = []
        for row in self.rows:
            fields = names + [f"col{k + 1}" for k in range(len(names), len(row))]
            tok = Token()
            for k, (name, cell) in enumerate(zip(fields, row)):
                if k in (FEATS, MISC):
                    tok[name] = _pairs(cell)
                elif name in DEFAULT_FIELD_PARSERS:
                    tok[name] = DEFAULT_FIELD_PARSERS[name](row, k)
                else:
                    tok[name] = cell
            tokens.append(tok)
        return TokenList(tokens, meta, default_fields=names)

    @classmethod
    def from_tokenlist(cls, tokenlist: Any, path: str = "<tokenlist>") -> "Sentence":
        """A sentence from a ``conllu.TokenList`` (its ``serialize()`` read by :func:`read_conllu`, so a
        malformed one is an :class:`InputError`); see :meth:`to_tokenlist` for what is not kept."""
        sentences = parse_string(tokenlist.serialize(), path)
        if len(sentences) != 1:
            raise InputError(path, None, f"expected one sentence, found {len(sentences)}")
        sentences[0].line = 0
        return sentences[0]

    def __len__(self) -> int:
        return len(self.words)

    def __iter__(self) -> Iterator["Word"]:
        """The syntactic words as :class:`Word` views with named fields (``for word in sentence``)."""
        return (Word(row) for row in self.words)

    def __getitem__(self, i: int) -> "Word":
        """The ``i``-th syntactic word (0-based, as in :attr:`words`) as a :class:`Word` view."""
        return Word(self.words[i])

    def __eq__(self, other: object) -> bool:
        """Equal sentences have the same comments and token lines (how the file ends lines, a
        byte-order mark, blank lines after the sentence and the line it was read from do not count)."""
        if not isinstance(other, Sentence):
            return NotImplemented
        return self.comments == other.comments and self.rows == other.rows

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        return f"Sentence({self.sent_id!r}, {len(self.words)} words)"


def _column(index: int, doc: str) -> property:
    """A :class:`Word` field over one column: ``None`` for ``_``, and ``None`` writes ``_``."""

    def get(self: "Word") -> Optional[str]:
        value = self.row[index]
        return None if value == "_" else value

    def set(self: "Word", value: Optional[str]) -> None:
        self.row[index] = "_" if value is None else value

    return property(get, set, doc=doc)


class Word:
    """A view of one word's row with named fields; reading and setting them reads and writes the row.

    Columns left ``_`` read as ``None`` (FORM excepted: it is always the form). ``head`` is an int
    (0: the root), ``ne`` the ``NE=`` BIO tag (``O`` outside entities), ``pred`` the ``Pred=``
    roleset of a predicate, ``roles`` maps a predicate's word ID to this word's BIO tag in its
    frame (``SRL=``; written and checked by :mod:`nlpipe.io.misc`).
    """

    __slots__ = ("row",)

    def __init__(self, row: List[str]):
        self.row = row

    lemma = _column(LEMMA, "LEMMA")
    upos = _column(UPOS, "UPOS")
    xpos = _column(XPOS, "XPOS")
    feats = _column(FEATS, "FEATS, e.g. ``Number=Sing|Person=3``")
    deprel = _column(DEPREL, "DEPREL")
    deps = _column(DEPS, "DEPS")
    misc = _column(MISC, "MISC")

    @property
    def id(self) -> int:
        return int(self.row[ID])

    @property
    def form(self) -> str:
        return self.row[FORM]

    @property
    def head(self) -> Optional[int]:
        return None if self.row[HEAD] == "_" else int(self.row[HEAD])

    @property
    def ne(self) -> str:
        return misc_get(self.row[MISC], "NE") or "O"

    @property
    def pred(self) -> Optional[str]:
        return misc_get(self.row[MISC], "Pred")

    @property
    def roles(self) -> Dict[int, str]:
        return {int(p): tag for p, tag in srl_entries(misc_get(self.row[MISC], "SRL")) if p.isdigit()}

    @property
    def space_after(self) -> bool:
        return misc_get(self.row[MISC], "SpaceAfter") != "No"

    def __eq__(self, other: object) -> bool:
        return self.row == other.row if isinstance(other, Word) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Word({self.row[ID]}, {self.row[FORM]!r})"


def srl_entries(value: Optional[str]) -> List[Tuple[str, str]]:
    """The ``(predicate word ID, tag)`` pairs of an ``SRL=`` value such as ``2:B-ARG0,6:I-ARG1``
    (``None``: none), as written; :func:`nlpipe.io.misc.srl_tags` checks them."""
    if not value:
        return []
    return [(pid, tag) for pid, _, tag in (entry.partition(":") for entry in value.split(","))]


class Text(str):
    """A sentence's text; calling it gives itself, for code written when ``text`` was a method."""

    def __call__(self) -> str:
        return str(self)


def boundary(comment: str) -> Optional[str]:
    """``"newdoc"`` or ``"newpar"`` when a comment line opens a document or paragraph (``# newdoc``,
    ``#newpar``, ``# newdoc id = d1``), else ``None``."""
    words = comment[1:].replace("=", " ").split(None, 1)
    return words[0] if words and words[0] in ("newdoc", "newpar") else None


# --------------------------------------------------------------------------------------------
# MISC helpers. Entries are split at the first "=" only, so "Cxn=free=rc-obj" keeps its value.

def misc_get(misc: str, key: str) -> Optional[str]:
    """Value of ``key`` in a MISC field, or ``None``."""
    if misc == "_" or key not in misc:
        return None
    for entry in misc.split("|"):
        k, sep, v = entry.partition("=")
        if k == key:
            return v if sep else ""
    return None


def _pairs(field: str) -> Optional[dict]:
    """A FEATS or MISC field as ``{key: value}`` the way ``conllu`` holds it (``_``: ``None``; ``Key``: ``""``)."""
    if field == "_":
        return None
    out = {}
    for entry in field.split("|"):
        k, sep, v = entry.partition("=")
        out[k] = (None if v == "_" else v) if sep else ""
    return out


def misc_set(misc: str, key: str, value: Optional[str]) -> str:
    """Return MISC with ``key`` set to ``value`` (removed when ``None``); other entries keep their order.
    A ``|`` in ``value`` (a roleset made from an odd LEMMA, say) becomes ``_``: it would end the entry
    and start another (``Pred=zorb|ne=b-per.01``)."""
    if value is not None and "|" in value:
        value = value.replace("|", "_")
    entries = [] if misc == "_" or misc == "" else misc.split("|")
    out = []
    done = False
    for entry in entries:
        k = entry.partition("=")[0]
        if k == key:
            if value is not None and not done:
                out.append(f"{key}={value}")
                done = True
        else:
            out.append(entry)
    if value is not None and not done:
        out.append(f"{key}={value}")
    return "|".join(out) if out else "_"


def misc_prob(misc: str, key: str, p: float) -> str:
    """Return MISC with the confidence ``key`` (``HeadProb``, ``UPOSProb`` ...) set to the probability
    ``p``, written with three decimals as every stage's ``--probs`` writes it."""
    return misc_set(misc, key, f"{p:.3f}")


# --------------------------------------------------------------------------------------------
# Reading

def _check_id(cols: List[str], expect: int, path: str, lineno: int) -> int:
    """Validate a non-word ID (range or empty node); return the next expected word ID."""
    i = cols[ID]
    a, dash, b = i.partition("-")
    if dash:
        first, last = number(a), number(b)
        if not (first == expect and last is not None and last > first):
            raise InputError(path, lineno, f"bad multiword-token range '{_show(i)}' (expected {expect}-N)")
        return expect
    a, dot, b = i.partition(".")
    if dot:
        if not (number(a) == expect - 1 and number(b) is not None):
            raise InputError(path, lineno, f"bad empty-node ID '{_show(i)}' (expected {expect - 1}.N)")
        return expect
    if number(i) is not None:
        raise InputError(path, lineno, f"expected word ID {expect}, found {_show(i)}")
    raise InputError(path, lineno, f"ID must be an integer, a range N-M or a decimal N.M, found '{_show(i)}'")


def _finish(sent: Sentence, n: int, path: str) -> None:
    """Check HEAD values and multiword-token ranges against the sentence's ``n`` words (the
    reader calls it only where one of them, or no word at all, makes the sentence wrong: it
    raises the error about the first such line)."""
    if n == 0:
        raise InputError(path, sent.line_of(0), "sentence has no word lines (integer IDs)")
    for off, r in enumerate(sent.rows):
        i = r[ID]
        if number(i) is not None:
            h = r[HEAD]
            if h != "_" and (number(h) or 0) > n:
                raise InputError(path, sent.line_of(off), f"HEAD {_show(h)} is outside the sentence "
                                                          f"(it has {n} words)")
        elif "-" in i and (number(i.partition("-")[2]) or 0) > n:
            raise InputError(path, sent.line_of(off), f"multiword token {_show(i)} covers words the sentence "
                                                      f"lacks ({n} words)")


def read_conllu(stream: IO[str], path: str = "<stdin>") -> Iterator[Sentence]:
    """Yield sentences from a text stream opened with ``newline="\\n"`` (see :func:`open_input`).

    An empty input (no bytes, or only a byte-order mark) has no sentences. Raises :class:`InputError` naming ``path`` and the line for malformed input; every sentence
    yielded before the error is complete and valid.
    """
    yield from _sentences(read_lines(stream, path), path)


def _sentences(lines: Iterable[str], path: str) -> Iterator[Sentence]:
    """:func:`read_conllu` over ``lines`` (each with its line ending, as :func:`read_lines` gives them)."""
    lineno = 0
    sent: Optional[Sentence] = None
    rows: List[List[str]] = []
    end = ""        # the current sentence's text after its last token line's content
    top = 0         # the largest HEAD or multiword-token end in the current sentence
    ncols = 0
    expect = 1
    covered = 0     # the last word of the current sentence's last multiword token
    closed = False  # a blank line followed the current sentence's rows
    prefix = ""
    for raw in lines:
        lineno += 1
        if raw[-1:] == "\n":
            line = raw[:-1]
            nl = "\n"
            if line[-1:] == "\r":
                line = line[:-1]
                nl = "\r\n"
        else:
            line = raw
            nl = ""
        if lineno == 1 and line[:1] == BOM:
            prefix = BOM
            line = line[1:]
            if not line and not nl:  # nothing but a byte-order mark: an empty document
                return
        if not line:
            if sent is None or not rows:
                raise InputError(path, lineno, "blank line where a comment or token line was expected")
            end += nl
            closed = True
            continue
        if closed:
            sent.end = end
            if top >= expect or expect == 1:    # a HEAD or range beyond the words, or no word
                _finish(sent, expect - 1, path)
            yield sent
            sent = None
            closed = False
        if sent is None:
            sent = Sentence([], [], "", "\n" if not nl else nl, prefix, lineno)
            rows = sent.rows
            end = ""
            prefix = ""
            top = 0
            ncols = 0
            expect = 1
            covered = 0
        if line[0] == "#":
            if rows:
                raise InputError(path, lineno, "comment line inside a sentence (expected a blank line first)")
            sent.comments.append(line)
            continue
        if "\r" in line:
            raise InputError(path, lineno, "carriage return inside a line (CR line breaks? convert them to \\n)")
        cols = line.split("\t")
        n = len(cols)
        if "" in cols and "" in cols[:10]:   # CoNLL-U Plus columns after the tenth may be empty
            raise InputError(path, lineno, f"empty {COLUMNS[cols.index('')]} (an empty value is written '_')")
        if n < 10:
            hint = " (raw text? tokenize it first: 'nlpipe tokenize', or the tokenize stage)" if n == 1 else ""
            raise InputError(path, lineno,
                             f"expected 10 tab-separated columns, found {n}: '{_show(line)}'{hint}")
        if cols[ID] == str(expect):
            # word lines of a sentence agree on their column count (CoNLL-U Plus may have more than 10)
            if n != ncols:
                if ncols:
                    raise InputError(path, lineno, f"expected {ncols} tab-separated columns like the "
                                     f"lines above, found {n}")
                ncols = n
            h = cols[HEAD]
            if h != "_":
                head = number(h)
                if head is None:
                    raise InputError(path, lineno, f"HEAD must be an integer or '_', found '{_show(h)}'")
                if head > top:
                    top = head
            expect += 1
        else:
            expect = _check_id(cols, expect, path, lineno)
            i, dash, last = cols[ID].partition("-")
            if dash:
                if expect <= covered:
                    raise InputError(path, lineno, f"multiword token {_show(cols[ID])} overlaps the one before "
                                                   f"(which covers up to word {covered})")
                covered = number(last) or 0
                if covered > top:
                    top = covered
        rows.append(cols)
        end = nl
    if sent is None:  # an empty document
        return
    if not rows:
        raise InputError(path, lineno, "unexpected end of input: comment lines with no token lines")
    sent.end = end
    if top >= expect or expect == 1:
        _finish(sent, expect - 1, path)
    yield sent


def write_conllu(sentences: Iterable[Sentence], out: IO[str]) -> int:
    """Write sentences to a text stream; return the number written."""
    n = 0
    write = out.write
    for s in sentences:
        write(s.to_string())
        n += 1
    return n


def parse_string(text: str, path: str = "<string>") -> List[Sentence]:
    """Read all sentences of a CoNLL-U string (a chunk of a file, a test's input)."""
    stream = io.StringIO(text, newline="\n")
    if "\x00" in text:   # read_lines names the line of the NUL byte
        return list(read_conllu(stream, path))
    return list(_sentences(stream, path))


def to_string(sentences: Iterable[Sentence]) -> str:
    buf = io.StringIO(newline="\n")
    write_conllu(sentences, buf)
    return buf.getvalue()


# --------------------------------------------------------------------------------------------
# Files

def read_file(path: Optional[str]) -> Iterator[Sentence]:
    """Open and stream a CoNLL-U file (stdin for ``None``/``"-"``)."""
    stream, name = open_input(path)
    try:
        yield from read_conllu(stream, name)
    finally:
        if name != "<stdin>":
            stream.close()
