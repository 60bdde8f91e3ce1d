"""Exceptions that the command line turns into one-line messages and exit code 2."""
from __future__ import annotations

import errno
from typing import Optional


class NlpipeError(Exception):
    """Any error caused by the user's input, options or model files (never a bug)."""


# The path a stage names in an InputError: a stage sees sentences, not files. The pipeline, which
# knows the file, puts its name in instead (see :meth:`InputError.at`).
STAGE_INPUT = "<input>"


class InputError(NlpipeError):
    """Malformed input: carries the file name and 1-based line number."""

    def __init__(self, path: str, line: Optional[int], message: str):
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")

    def at(self, path: str) -> "InputError":
        """This error naming ``path`` where a stage wrote :data:`STAGE_INPUT` (else itself)."""
        return InputError(path, self.line, self.message) if self.path == STAGE_INPUT else self


class ModelError(NlpipeError):
    """A model directory that is missing, truncated, of another version or of another stage."""


class EncodingError(InputError):
    """Input that is not UTF-8 (an :class:`InputError`; commands with ``--encoding-errors`` add a hint)."""

    def at(self, path: str) -> "InputError":
        return EncodingError(path, self.line, self.message) if self.path == STAGE_INPUT else self

    def hint(self, text: str) -> "EncodingError":
        """This error with ``text`` in place of its generic hint."""
        return EncodingError(self.path, self.line, self.message.partition(";")[0] + "; " + text)


class OutputClosed(Exception):
    """The reader of the output went away (``nlpipe ... | head``): the run ends quietly."""


def out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` is the system refusing memory in a library's own words (``ulimit -v``: a shared
    library that cannot be mapped, torch's allocator) rather than as a MemoryError."""
    if isinstance(e, MemoryError) or getattr(e, "errno", None) == errno.ENOMEM:
        return True
    text = str(e)
    return any(words in text for words in ("failed to map segment", "annot allocate memory", "an't allocate memory",
                                           "DefaultCPUAllocator"))
