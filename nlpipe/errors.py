"""Exceptions that the command line turns into one-line messages and exit code 2."""
from __future__ import annotations

from typing import Optional


class NlpipeError(Exception):
    """Any error caused by the user's input, options or model files (never a bug)."""


class InputError(NlpipeError):
    """Malformed input: carries the file name and 1-based line number."""

    def __init__(self, path: str, line: Optional[int], message: str):
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


class ModelError(NlpipeError):
    """A model directory that is missing, truncated, of another version or of another stage."""
