"""Which writing system a text is in, against the one its models' language is written in.

``annotate``, ``tokenize`` and the filters warn once per input when most letters of its first words
(:data:`SAMPLE` letters) are in another script than the models' language uses: English models on
Greek or Cyrillic text run without an error and give nonsense.
"""
from __future__ import annotations

import unicodedata
from collections import Counter
from typing import Dict, Optional

SAMPLE = 500       # letters looked at
SHARE = 0.5        # a warning when less than this share of them is in the language's script
MIN_LETTERS = 20   # fewer letters in a whole input: no warning

# language code -> the script of its letters (Unicode character names start with it)
SCRIPTS: Dict[str, str] = {
    **{code: "LATIN" for code in (
        "af ca cs cy da de en es et eu fi fr ga gd gl hr hu id is it la lt lv mt nl no nb nn pl pt ro sk sl "
        "sq sv sw tr vi wo yo").split()},
    **{code: "CYRILLIC" for code in "be bg kk mk ru sr uk".split()},
    "el": "GREEK", "grc": "GREEK", "he": "HEBREW", "ar": "ARABIC", "fa": "ARABIC", "ur": "ARABIC",
    "hy": "ARMENIAN", "ka": "GEORGIAN", "hi": "DEVANAGARI", "mr": "DEVANAGARI", "ta": "TAMIL", "te": "TELUGU",
    "th": "THAI", "ko": "HANGUL", "zh": "CJK",
}


def script(ch: str) -> Optional[str]:
    """The script of a letter (``"LATIN"``, ``"GREEK"`` ...), ``None`` for other characters."""
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else None


class ScriptCheck:
    """Counts the scripts of the first :data:`SAMPLE` letters fed; :meth:`feed` returns one warning,
    once, when they are mostly not in the script of ``language`` (unknown languages: never)."""

    def __init__(self, language: Optional[str], name: str):
        self.expected = SCRIPTS.get(language or "")
        self.language = language
        self.name = name
        self.counts: Counter = Counter()
        self.done = self.expected is None

    def feed(self, text: str) -> Optional[str]:
        if self.done:
            return None
        seen = sum(self.counts.values())
        for ch in text:
            s = script(ch)
            if s is not None:
                self.counts[s] += 1
                seen += 1
                if seen == SAMPLE:
                    return self.finish()
        return None

    def finish(self) -> Optional[str]:
        """The warning, if any, from what was fed (called by :meth:`feed`, and at the end of an input)."""
        if self.done:
            return None
        self.done = True
        seen = sum(self.counts.values())
        if seen < MIN_LETTERS or self.counts[self.expected] >= SHARE * seen:
            return None
        main, n = self.counts.most_common(1)[0]
        return (f"{self.name}: {100 * n // seen}% of the letters are {main.title()}, but the models are for "
                f"'{self.language}', written in {self.expected.title()} script; give models of the text's "
                f"language (--model, --models)")
