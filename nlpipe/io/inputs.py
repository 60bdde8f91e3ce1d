"""Reading input: opening a file or stdin, UTF-8 lines checked one by one, and telling formats apart.

Every reader of text (CoNLL-U, the column formats, raw text for the tokenizer, word vectors) takes
its lines from :func:`read_lines` or :func:`binary_lines`, so invalid UTF-8, NUL bytes and endless
lines give the same one-line error everywhere, naming the line where they are. A line is read in
blocks: ``/dev/zero`` or a file with no line break is refused at its first NUL byte or past
:data:`MAX_LINE` bytes, with memory that does not grow with the input.

An empty input (no bytes, or only a byte-order mark) is a valid, empty document for every reader.

Input in another encoding (``--encoding NAME`` of tokenize and annotate) is decoded as it is read
(:class:`Transcoded`) into the UTF-8 bytes the readers take; :func:`check_encoding` decodes a whole
file first, in blocks, so that a command refuses it before it loads its models.
"""
from __future__ import annotations

import codecs
import io
import os
import re
import stat
import sys
from typing import IO, Any, Iterable, Iterator, List, Optional, Tuple

from nlpipe.errors import EncodingError, InputError, NlpipeError

DEFAULT_ENCODING = "utf-8"   # of the input (--encoding); the output is always UTF-8
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


def open_input(path: Optional[str], encoding_errors: str = "strict",
               encoding: str = DEFAULT_ENCODING) -> Tuple[IO[str], str]:
    """Open ``path`` (or stdin for ``None``/``"-"``) as text split on ``\\n`` only; returns the
    stream and the name messages use (``<stdin>`` for stdin). The stream reads UTF-8; input in
    another ``encoding`` is decoded into UTF-8 underneath it (its ``buffer`` holds UTF-8 bytes, see
    :class:`Transcoded`)."""
    utf8 = is_utf8(encoding)
    if path is None or path == "-":
        if sys.stdin is None:   # started with stdin closed (`<&-`)
            raise NlpipeError("<stdin>: cannot read (stdin is closed)")
        buffer: IO[bytes] = sys.stdin.buffer
        if not utf8:
            buffer = io.BufferedReader(Transcoded(buffer, encoding, encoding_errors, "<stdin>", close=False))
        return io.TextIOWrapper(buffer, encoding="utf-8", errors=encoding_errors, newline="\n"), "<stdin>"
    try:
        if not utf8:
            name = printable_name(path)
            raw = Transcoded(open(path, "rb"), encoding, encoding_errors, name)
            return io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors=encoding_errors,
                                    newline="\n"), name
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


def check_input(path: Optional[str], nul: bool = True, encoding: str = DEFAULT_ENCODING) -> None:
    """An :class:`InputError` when the start of ``path`` (``None``/``-``: stdin) shows that it is
    not text: compressed, an archive, UTF-16 (unless ``encoding`` is not UTF-8: the user said what
    it is), or (with ``nul``) a NUL byte in its first block, decoded from ``encoding``; so that a
    command refuses it before it loads its models. Only regular files are looked at, and nothing is
    consumed: a pipe is checked as it is read."""
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
    utf8 = is_utf8(encoding)
    for magic, what in _NOT_TEXT:
        if not utf8 and what.startswith("UTF-16"):
            continue
        if head.startswith(magic) and not (magic == b"BZh" and not head[3:4].isdigit()):
            raise InputError(name, None, f"the input is {what}")
    if not nul:
        return
    if utf8:
        at = head.find(b"\0")
        if at >= 0:
            raise nul_error(name, head.count(b"\n", 0, at) + 1)
        return
    text = codecs.getincrementaldecoder(encoding)("replace").decode(head)
    at = text.find("\0")
    if at >= 0:
        raise nul_error(name, text.count("\n", 0, at) + 1)


# ---------------------------------------------------------------------------------------------
# Encodings

CHECK_BLOCK = 1 << 20   # bytes decoded at a time by check_encoding and Transcoded
# What an error in decoding an input says to do, where the command has these options
ENCODING_HINT = ("if the text is in another encoding, name it with --encoding NAME (e.g. --encoding latin-1); "
                 "or use --encoding-errors replace to go on")


def codec_name(name: str) -> str:
    """The canonical name of the text encoding ``name`` (``UTF8``: ``utf-8``, ``latin-1``:
    ``iso8859-1``); an :class:`NlpipeError` for a name Python does not know, or one of a codec that
    is not a text encoding (``base64``)."""
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError):
        raise NlpipeError(f"--encoding {shown(name)}: unknown encoding (a Python codec name, e.g. utf-8, "
                          "latin-1, cp1252, utf-16)") from None
    if not getattr(info, "_is_text_encoding", True):
        raise NlpipeError(f"--encoding {shown(name)}: not a text encoding (e.g. utf-8, latin-1, cp1252, "
                          "utf-16)")
    return info.name


def is_utf8(encoding: str) -> bool:
    """Whether ``encoding`` (a name :func:`codec_name` accepts) is UTF-8 itself, read as UTF-8 is
    everywhere (a byte-order mark at the start ignored), with no decoding step of its own."""
    return encoding == DEFAULT_ENCODING or codec_name(encoding) == "utf-8"


def _ascii_newlines(encoding: str) -> bool:
    """Whether a line break of ``encoding`` is the byte ``\\n`` (UTF-8, Latin-1, cp1252 ...; not
    UTF-16 or EBCDIC): byte columns can then be counted from it."""
    try:
        return codecs.decode(b"a\nb", encoding) == "a\nb"
    except (UnicodeDecodeError, ValueError):
        return False


class _Decoding:
    """Decodes an input's bytes from ``encoding`` block by block, counting lines and bytes, so that
    a byte that is not valid there is an :class:`EncodingError` naming its line, its byte offset and
    (where a line break is the byte ``\\n``) its column in bytes, as :func:`utf8_error` does for UTF-8."""

    def __init__(self, encoding: str, errors: str, path: str):
        self.encoding = codec_name(encoding)
        self.errors = errors
        self.path = path
        self._decoder = codecs.getincrementaldecoder(self.encoding)(errors)
        self._byte_lines = _ascii_newlines(self.encoding)
        self.offset = 0        # bytes decoded so far
        self.line = 1          # the line at ``offset``
        self.line_start = 0    # the byte offset where that line starts (``_byte_lines`` only)

    def decode(self, data: bytes, final: bool = False) -> str:
        state = self._decoder.getstate()
        try:
            text = self._decoder.decode(data, final)
        except UnicodeDecodeError as e:
            raise self._error(e, data, state) from None
        if self._byte_lines:
            n = data.count(b"\n")
            if n:
                self.line += n
                self.line_start = self.offset + data.rfind(b"\n") + 1
        else:
            self.line += text.count("\n")
        self.offset += len(data)
        return text

    def _error(self, e: UnicodeDecodeError, data: bytes, state: Tuple[bytes, int]) -> "EncodingError":
        # the decoder's error is about the bytes it held back from the block before, then ``data``
        pending = max(0, len(e.object) - len(data))
        at = self.offset - pending + e.start    # the bad byte's offset in the input
        before = max(0, e.start - pending)       # bytes of ``data`` before it
        bad = e.object[e.start]
        if self._byte_lines:
            newlines = data.count(b"\n", 0, before)
            line = self.line + newlines
            start = self.offset + data.rfind(b"\n", 0, before) + 1 if newlines else self.line_start
            where = f"at byte offset {at}, column {at - start + 1}"
        else:
            prefix = codecs.getincrementaldecoder(self.encoding)("replace")
            prefix.setstate(state)
            line = self.line + prefix.decode(data[:before]).count("\n")
            where = f"at byte offset {at}"
        name = "UTF-8" if self.encoding == "utf-8" else self.encoding
        return EncodingError(self.path, line, f"invalid {name} (byte 0x{bad:02x} {where}); {ENCODING_HINT}")


def check_encoding(path: str, encoding: str = DEFAULT_ENCODING, name: Optional[str] = None) -> None:
    """An :class:`EncodingError` (naming the line, the byte offset and the options that go on) when
    the file ``path`` is not valid text in ``encoding``; decoded in blocks of :data:`CHECK_BLOCK`
    bytes, in flat memory, so that a command refuses it before it loads its models. Stdin and files
    that are not regular files (pipes) are left to the reading, which reports the same error; so
    is a file that cannot be opened."""
    if path == "-" or not os.path.isfile(path):
        return
    decoding = _Decoding(encoding, "strict", name or printable_name(path))
    try:
        with open(path, "rb") as f:
            while True:
                block = f.read(CHECK_BLOCK)
                decoding.decode(block, final=not block)
                if not block:
                    return
    except OSError:
        return   # reported where the input is opened and read


class Transcoded(io.RawIOBase):
    """A binary stream of UTF-8: the bytes of ``raw`` decoded from ``encoding`` (``errors``:
    ``strict``, a byte not valid there is an :class:`EncodingError` naming its line; ``replace``:
    U+FFFD) and encoded as UTF-8, so that every reader of UTF-8 takes input in any encoding.
    ``close``: whether closing this closes ``raw`` (not for stdin)."""

    def __init__(self, raw: IO[bytes], encoding: str, errors: str, path: str, close: bool = True):
        super().__init__()
        self._raw = raw
        self._decoding = _Decoding(encoding, errors, path)
        self._out = b""
        self._eof = False
        self._close = close
        self._read = getattr(raw, "read1", raw.read)

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._raw.fileno()

    def readinto(self, b: Any) -> int:
        while not self._out and not self._eof:
            data = self._read(CHECK_BLOCK)   # read1: what a pipe has, not a whole block
            self._eof = not data
            text = self._decoding.decode(data, final=self._eof)
            try:
                self._out = text.encode("utf-8")
            except UnicodeEncodeError as e:   # a codec that gives lone surrogates (raw_unicode_escape)
                d = self._decoding
                raise EncodingError(d.path, d.line, f"U+{ord(e.object[e.start]):04X} (a lone surrogate) "
                                                    f"decoded from {d.encoding} before byte offset "
                                                    f"{d.offset}; {ENCODING_HINT}") from None
        n = min(len(b), len(self._out))
        b[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def close(self) -> None:
        if not self.closed and self._close:
            self._raw.close()
        super().close()


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
