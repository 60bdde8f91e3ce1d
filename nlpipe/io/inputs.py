"""Reading input: opening a file or stdin, UTF-8 lines checked one by one, and telling formats apart.

Every reader of text (CoNLL-U, the column formats, raw text for the tokenizer, word vectors) takes
its lines from :func:`read_lines` or :func:`binary_lines`, so invalid UTF-8, NUL bytes and endless
lines give the same one-line error everywhere, naming the line where they are. A line is read in
blocks: ``/dev/zero`` or a file with no line break is refused at its first NUL byte or past
:data:`MAX_LINE` bytes, with memory that does not grow with the input.

An empty input (no bytes, or only a byte-order mark) is a valid, empty document for every reader.
"""
from __future__ import annotations

import io
import os
import re
import stat
import sys
from typing import IO, Iterable, Iterator, List, Optional, Tuple

from nlpipe.errors import EncodingError, InputError, NlpipeError

BOM = "\ufeff"
BOM_BYTES = BOM.encode("utf-8")
_TOKEN_LINE = re.compile(rb"(\d+|\d+-\d+|\d+\.\d+)\t([^\t\n]*\t){8}")
MAX_HEAD = 1000  # comment and blank lines looked at before a format is decided
# The longest line read: far beyond any CoNLL-U token line or paragraph of text (the tokenizer's
# tests read a 5 MB line), and small enough that holding it is harmless.
MAX_LINE = 16 << 20
BLOCK = 1 << 16  # bytes read at a time while a line goes on


# Digit strings. Every reader parses a number with number(): str.isdigit() also takes '²' and '٣'
# (which int() then refuses), and int() refuses more than 4300 digits.
MAX_DIGITS = 18
HUGE = 10 ** MAX_DIGITS  # what a longer number counts as: more than any index or count in a file


def number(text: str) -> Optional[int]:
    """The value of ``text`` if it is a number in ASCII digits (``7``, ``007``), else ``None``; one
    of more than :data:`MAX_DIGITS` significant digits counts as :data:`HUGE` (it can only be too
    large for what it counts, and is reported as such)."""
    if not (text.isascii() and text.isdigit()):
        return None
    digits = text.lstrip("0")
    return int(digits or "0") if len(digits) <= MAX_DIGITS else HUGE


def shown(text: str, n: int = 40) -> str:
    """The start of an input's text for a message: at most ``n`` characters, control characters
    escaped, letters kept."""
    text = text if len(text) <= n else text[:n] + "..."
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in text)


def open_input(path: Optional[str], encoding_errors: str = "strict") -> Tuple[IO[str], str]:
    """Open ``path`` (or stdin for ``None``/``"-"``) as UTF-8 text split on ``\\n`` only; returns the
    stream and the name messages use (``<stdin>`` for stdin)."""
    if path is None or path == "-":
        if sys.stdin is None:   # started with stdin closed (`<&-`)
            raise NlpipeError("<stdin>: cannot read (stdin is closed)")
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors=encoding_errors,
                                newline="\n"), "<stdin>"
    try:
        return open(path, encoding="utf-8", errors=encoding_errors, newline="\n"), printable_name(path)
    except FileNotFoundError:
        raise NlpipeError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise NlpipeError(f"{path}: is a directory, expected a file") from None
    except PermissionError:
        raise NlpipeError(f"{path}: permission denied") from None
    except OSError as e:
        raise NlpipeError(f"{path}: cannot read ({e.strerror or e})") from None


def printable_name(path: "str | os.PathLike[str]") -> str:
    """``path`` as valid UTF-8 text for messages and for what a file's name goes into (``# sent_id``):
    bytes of a name that are not UTF-8 (decoded by Python as lone surrogates) become U+FFFD."""
    path = os.fspath(path)
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "replace")


# the first bytes of inputs that are not text, and what to do about them
_NOT_TEXT = ((b"\x1f\x8b", "gzip-compressed; decompress it first (zcat FILE | nlpipe ...)"),
             (b"BZh", "bzip2-compressed; decompress it first (bzcat FILE | nlpipe ...)"),
             (b"\xfd7zXZ\x00", "xz-compressed; decompress it first (xzcat FILE | nlpipe ...)"),
             (b"\x28\xb5\x2f\xfd", "zstd-compressed; decompress it first (zstdcat FILE | nlpipe ...)"),
             (b"PK\x03\x04", "a zip archive; extract the text first"),
             (b"\xff\xfe", "UTF-16 text; convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)"),
             (b"\xfe\xff", "UTF-16 text; convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)"))


def check_input(path: Optional[str], nul: bool = True) -> None:
    """An :class:`InputError` when the start of ``path`` (``None``/``-``: stdin) shows that it is
    not text: compressed, an archive, UTF-16, or (with ``nul``) a NUL byte in its first block; so
    that a command refuses it before it loads its models. Only regular files are looked at, and
    nothing is consumed: a pipe is checked as it is read."""
    name = "<stdin>" if path is None or path == "-" else path
    try:
        if name == "<stdin>":
            if sys.stdin is None or not stat.S_ISREG(os.fstat(0).st_mode):
                return
            head = os.pread(0, BLOCK, os.lseek(0, 0, os.SEEK_CUR))
        else:
            if not stat.S_ISREG(os.stat(path).st_mode):
                return
            with open(path, "rb") as f:
                head = f.read(BLOCK)
    except OSError:
        return   # reported where the input is opened and read
    for magic, what in _NOT_TEXT:
        if head.startswith(magic) and not (magic == b"BZh" and not head[3:4].isdigit()):
            raise InputError(name, None, f"the input is {what}")
    at = head.find(b"\0") if nul else -1
    if at >= 0:
        raise nul_error(name, head.count(b"\n", 0, at) + 1)


def utf8_error(path: str, line: int, raw: bytes, start: int, offset: Optional[int] = None) -> EncodingError:
    """The error for the byte ``raw[start]`` of ``line`` that is not UTF-8 (``offset``: that
    byte's offset in the file, when known)."""
    at = f"at byte offset {offset}, " if offset is not None else ""
    return EncodingError(path, line, f"invalid UTF-8 (byte 0x{raw[start]:02x} {at}column {start + 1}); "
                                     "is this a UTF-8 text file?")


def nul_error(path: str, line: int) -> InputError:
    return InputError(path, line, "binary data (NUL byte) in input; is this a text file?")


def long_line_error(path: str, line: int) -> InputError:
    return InputError(path, line, f"line longer than {MAX_LINE >> 20} MiB; is this a text file "
                                  "with \\n line breaks?")


def binary_lines(buffer: IO[bytes], path: str, nul: bool = True, first_line: int = 1) -> Iterator[bytes]:
    """The lines of a binary stream with their ``\\n``, each read in blocks of :data:`BLOCK` bytes:
    a line longer than :data:`MAX_LINE` is an :class:`InputError`, and so is a NUL byte, found in
    the first block that holds one. ``nul=False`` leaves lines shorter than a block to the caller
    (CoNLL-U chunks, where ``--skip-bad`` passes such a sentence through). Line numbers count from
    ``first_line``."""
    readline = buffer.readline
    lineno = first_line - 1
    try:
        while True:
            raw = readline(BLOCK)
            if not raw:
                return
            lineno += 1
            if len(raw) == BLOCK and raw[-1:] != b"\n":
                parts = [raw]
                size = len(raw)
                while raw and raw[-1:] != b"\n":
                    if b"\0" in raw:
                        raise nul_error(path, lineno)
                    if size > MAX_LINE:
                        raise long_line_error(path, lineno)
                    raw = readline(BLOCK)
                    parts.append(raw)
                    size += len(raw)
                raw = b"".join(parts)
            if nul and b"\0" in raw:
                raise nul_error(path, lineno)
            yield raw
    except OSError as e:   # EIO from a failing disk, EINVAL, EISDIR ...
        raise InputError(path, lineno + 1, f"cannot read ({e.strerror or e})") from None


def decode(data: bytes, path: str, first_line: int = 1, offset: Optional[int] = None) -> str:
    """``data`` (whole lines starting at ``first_line`` of ``path``, at byte ``offset``) as text;
    invalid UTF-8 is an :class:`EncodingError` naming its line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        begin = data.rfind(b"\n", 0, e.start) + 1
        line = first_line + data.count(b"\n", 0, e.start)
        raise utf8_error(path, line, data[begin:], e.start - begin,
                         None if offset is None else offset + e.start) from None


def read_lines(stream: IO[str], path: str) -> Iterator[str]:
    """The lines of ``stream`` with their line endings (split on ``\\n`` only), a byte-order mark
    at the start included.

    A stream with a binary ``buffer`` (files, stdin) is decoded here line by line under the
    stream's ``errors`` setting, so that an error names the exact line (a text stream decodes in
    blocks and would fail before handing out the lines preceding the bad byte). A NUL byte is an
    error too.
    """
    buffer = getattr(stream, "buffer", None)
    lineno = 0
    if buffer is None:
        for line in stream:
            lineno += 1
            if "\x00" in line:
                raise nul_error(path, lineno)
            yield line
        return
    errors = getattr(stream, "errors", None) or "strict"
    offset = 0
    for raw in binary_lines(buffer, path, nul=False):  # a short line's NUL: found once decoded
        lineno += 1
        try:
            line = raw.decode("utf-8", errors)
        except UnicodeDecodeError as e:
            raise utf8_error(path, lineno, raw, e.start, offset + e.start) from None
        if "\x00" in line:
            raise nul_error(path, lineno)
        offset += len(raw)
        yield line


def content_lines(stream: IO[str], path: str) -> Iterator[Tuple[int, str]]:
    """``(line number, line without its ending)`` of :func:`read_lines`, the byte-order mark dropped."""
    for lineno, line in enumerate(read_lines(stream, path), 1):
        if lineno == 1 and line.startswith(BOM):
            line = line[1:]
        if line.endswith("\n"):
            line = line[:-1]
            if line.endswith("\r"):
                line = line[:-1]
        yield lineno, line


def sniff(lines: Iterable[bytes]) -> Tuple[str, List[bytes]]:
    """The format of an input from its first lines, and the lines read to decide.

    Comment (``#``) and blank lines are skipped (up to :data:`MAX_HEAD` of them); the first other
    line decides: ``"conllu"`` for a CoNLL-U token line (an ID, then at least 9 tabs),
    ``"conll2003"`` for ``-DOCSTART-`` or four space-separated fields, ``"columns"`` for other
    tab-separated fields, else ``"text"``. An input of only such lines is ``"empty"`` when it has
    no bytes but a byte-order mark, else ``"text"``. A byte-order mark at the start is ignored.
    """
    head: List[bytes] = []
    for line in lines:
        head.append(line)
        if len(head) == 1 and line.startswith(BOM_BYTES):
            line = line[len(BOM_BYTES):]
        if not line.strip(b"\r\n") or line[:1] == b"#":
            if len(head) >= MAX_HEAD:
                return "text", head
            continue
        if _TOKEN_LINE.match(line):
            return "conllu", head
        body = line.rstrip(b"\r\n")
        if body.startswith(b"-DOCSTART-") or (b"\t" not in body and len(body.split(b" ")) == 4):
            return "conll2003", head
        return ("columns" if b"\t" in body else "text"), head
    empty = b"".join(head) in (b"", BOM_BYTES)
    return ("empty" if empty else "text"), head
