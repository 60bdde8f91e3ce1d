"""URLs and e-mail addresses: the tokenizer keeps each one token, and the lemmatizer may keep it as
its own lemma (it is a name, whatever its letters' case)."""
from __future__ import annotations

import re

URL = r"""(?:(?:https?|ftp)://|www\.)[^\s<>"]*[^\s<>".,;:!?)\]'"]"""
# tried only where a run of address characters starts (look-behind), so a long run without "@" is
# scanned once, not once per position (that would be quadratic)
EMAIL = r"(?<![\w.+-])[\w.+-]+@\w[\w-]*(?:\.\w[\w-]*)*"

_WHOLE = re.compile(f"{URL}|{EMAIL}")


def is_web_address(form: str) -> bool:
    """Whether the whole of ``form`` is a URL or an e-mail address."""
    return _WHOLE.fullmatch(form) is not None
