"""Rule-based English tokenization following UD English EWT conventions.

Sentences come from an nltk Punkt model whose parameters are plain JSON (never a pickle); words come
from one regular expression plus EWT's splitting rules:

- clitics become multiword tokens: ``don't`` -> ``do`` + ``n't``, ``can't`` -> ``ca`` + ``n't``,
  ``I'm`` -> ``I`` + ``'m``, ``Bush's`` -> ``Bush`` + ``'s`` (also with ``’``);
- a plural possessive apostrophe is a word of its multiword token: ``parents'`` -> ``parents`` + ``'``;
- learned unit suffixes split from numbers: ``5pm`` -> ``5`` ``pm``;
- a learned lexicon splits apostrophe-less forms EWT splits (``dont``, ``cannot``, ``gonna``);
- hyphenated words are split at the hyphen (``long - term``) unless the first part is a prefix EWT keeps
  attached (``e-mail``, ``non-human``) or the parts are digits (phone numbers);
- URLs, e-mail addresses, numbers (``1,000.5``, ``7:30``, ``11/28/2000``) and learned abbreviations
  (``Dr.``, ``U.S.``) stay whole, except that an abbreviation ending a sentence gives up its period;
- a run of one punctuation character (``...``, ``!!!``) or of ``?``/``!`` (``?!``) is one token.

Rules learned from a treebank of another language (each off unless its ``words.json`` turns it on):
elisions split off the next word (French ``l'`` + ``homme``, ``qu'`` + ``il``); hyphenated words kept
whole, with learned suffixes split off (``dit`` + ``-il``, ``a`` + ``-t-il``); forms kept whole
that the rules would split (``l'on``, ``°C``); a bracketed ending kept in its word (``traité(e)``,
``AUTRE(S)``).

Every non-whitespace character of the input ends up in exactly one token, in order.
"""
from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Pattern, Sequence, Tuple

from nlpipe.models.web_address import EMAIL, URL

if TYPE_CHECKING:
    from nltk.tokenize.punkt import PunktParameters


def punkt_module() -> Any:
    """nltk's Punkt module, imported when a sentence splitter is first built (nltk takes about 0.3 s
    to import: a command that reads CoNLL-U never needs it)."""
    from nltk.tokenize import punkt

    try:
        from nltk import redos
    except ImportError:  # nltk before 3.9.3
        redos = None
    if redos is not None:
        # nltk caps every regex scan at a few seconds of wall-clock time (a guard against patterns its
        # users supply). The cap covers a whole lazy scan, so Punkt's own (linear) patterns fail with a
        # TimeoutError on a long paragraph on a slow or busy machine: a 5 MB line did. Punkt is the only
        # part of nltk that nlpipe runs, on patterns nltk itself ships.
        redos.DEFAULT_TIMEOUT = None
    return punkt

# A token: (start, end, word pieces or None). Offsets index the text given to WordTokenizer.tokens.
Token = Tuple[int, int, Optional[List[str]]]

_TOKEN_PATTERN = r"""
  %s(?P<url>""" + URL + r""")
| (?P<email>""" + EMAIL + r""")
%s| (?P<word>\w+(?:(?:[-'’&]|\.(?=\w)|[,:/](?=\d))\w+)*)(?:(?P<dot>\.(?![.?!]))|(?P<apos>['’](?!\w)))?
| (?P<emo>[:;=]-?[()DPp](?!\w))
| (?P<mixed>[?!]+\.?|\.[?!]+)
| (?P<punct>(?P<pc>[^\w\s])(?P=pc)*)
"""
# English only: "b/c", "w/o" and decades ('90s) are single tokens.
_ENGLISH_ALTERNATIVES = r"""| (?P<slash>(?i:b/c|w/o|w/)(?!\w))
| (?P<tag>(?<!\w)\#[^\W\d_]\w*)
| (?P<year>(?<!\w)['’]\d\d(?:s)?(?!\w))
"""
# Learned from the data (``spaced_numbers``): digit groups separated by single spaces are one token
# (French "500 000").
_SPACED_NUMBER = r"""| (?P<spaced>(?<![\w.,])\d{1,3}(?:\ \d{3})+(?:,\d+)?(?!\w))
"""
_TAG = r"""| (?P<tag>(?<!\w)\#[^\W\d_]\w*)
"""
# Learned (``paren_endings``): a bracketed ending of one to three letters stays in its word (``traité(e)``).
_PAREN_ENDING = r"""(?P<paren>[^\W\d_]+\([^\W\d_]{1,3}\)[^\W\d_]*(?!\w))
| """


@functools.lru_cache(maxsize=16)
def _token_re(english: bool, spaced_numbers: bool, paren_endings: bool, whole: Tuple[str, ...]) -> Pattern[str]:
    """The token pattern with the alternatives a model's rules turn on; ``whole``: lower-cased forms
    matched first, as whole tokens, in any casing."""
    first = ""
    if whole:
        first = r"(?P<whole>(?<!\w)(?i:%s)(?!\w))" % _trie_pattern(whole) + "\n| "
    if paren_endings:
        first += _PAREN_ENDING
    language = (_SPACED_NUMBER if spaced_numbers else "") + (_ENGLISH_ALTERNATIVES if english else _TAG)
    return re.compile(_TOKEN_PATTERN % (first, language), re.VERBOSE)

def _trie_pattern(words: Iterable[str]) -> str:
    """A pattern matching any of ``words`` (``'`` also as ``’``), longest first, as a trie of nested
    groups: the regex engine tries a few branches per position, not one per word."""
    trie: Dict[str, dict] = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}                                   # a word ends here

    def build(node: Dict[str, dict]) -> str:
        alts = [("['’]" if ch == "'" else re.escape(ch)) + build(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return "(?:" + body + ")?" if "" in node else body

    return build(trie)


_NUMBER_UNIT_RE = re.compile(r"(\d[\d.,:]*)([^\W\d_]+)$")
_CLITIC_RE = re.compile(r"(?i)(n['’]t|['’](?:s|m|re|ve|ll|d))$")
_INITIALS_RE = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]$")
# Phone-number-like digit groups stay whole (EWT: 713-853-3989, 646-8420); ranges (1998-2005) split.
_PHONE_RE = re.compile(r"\d+-\d+-\d+(?:-\d+)*$|\d{3}-\d{4}$|\d{5}-\d{4}$")


class WordTokenizer:
    """Split sentence text into tokens and multiword-token pieces (EWT conventions)."""

    def __init__(self, abbreviations: Iterable[str] = (), hyphen_prefixes: Iterable[str] = (),
                 splits: Optional[Dict[str, Sequence[int]]] = None,
                 joined: Optional[Dict[str, Sequence[int]]] = None, units: Iterable[str] = (),
                 english: bool = True, spaced_numbers: bool = False, elisions: Iterable[str] = (),
                 hyphen_whole: bool = False, hyphen_suffixes: Iterable[str] = (), whole: Iterable[str] = (),
                 paren_endings: bool = False):
        """
        Args:
            abbreviations: lowercased tokens without their final period that keep it (``dr``, ``u.s``).
            hyphen_prefixes: lowercased first parts that stay attached to a hyphen (``e``, ``non``).
            splits: lowercased token -> lengths of its words (``"cannot": [3, 3]``).
            joined: lowercased run-together tokens -> lengths of the tokens EWT splits them into
                (``"alot": [1, 3]``).
            units: lowercased suffixes split off a number (``5pm`` -> ``5`` ``pm``, ``2k``).
            english: apply the English rules (clitics ``n't``/``'s``, the plural possessive ``parents'``,
                ``b/c``, ``'90s``); off, a trailing apostrophe is a token of its own.
            spaced_numbers: digit groups separated by single spaces are one token (``500 000``).
            elisions: lowercased forms ending in an apostrophe that are split off the rest of their
                word (``l'``, ``qu'``; ``’`` is read as ``'``).
            hyphen_whole: hyphenated words stay whole (``hyphen_prefixes`` is then unused) but for
                ``hyphen_suffixes``, lowercased endings split off with their hyphen (``-il``, ``-t-il``).
            whole: lowercased forms kept as one token in any casing (``l'on``, ``°c``).
            paren_endings: a bracketed ending of one to three letters stays in its word (``traité(e)``).
        """
        self.abbreviations = frozenset(abbreviations)
        self.hyphen_prefixes = frozenset(hyphen_prefixes)
        self.splits = dict(splits or {})
        self.joined = dict(joined or {})
        self.units = frozenset(units)
        self.english = english
        self.elisions = frozenset(elisions)
        self.hyphen_whole = bool(hyphen_whole)
        self.hyphen_suffixes = sorted(set(hyphen_suffixes), key=len, reverse=True)   # longest first
        self._re = _token_re(bool(english), bool(spaced_numbers), bool(paren_endings), tuple(sorted(set(whole))))

    @classmethod
    def from_params(cls, words: Dict[str, Any]) -> "WordTokenizer":
        """The word rules of a ``words.json`` parameter file (a rule missing from older files is off)."""
        return cls(words["abbreviations"], words["hyphen_prefixes"], words["splits"], words.get("joined", {}),
                   words.get("units", []), words.get("english", True), words.get("spaced_numbers", False),
                   elisions=words.get("elisions", ()), hyphen_whole=words.get("hyphen_whole", False),
                   hyphen_suffixes=words.get("hyphen_suffixes", ()), whole=words.get("whole", ()),
                   paren_endings=words.get("paren_endings", False))

    def tokens(self, text: str, start: int = 0, end: Optional[int] = None) -> List[Token]:
        """Tokens of ``text[start:end]`` as (start, end, pieces); pieces is None for a plain token."""
        out: List[Token] = []
        append = out.append
        end = len(text) if end is None else end
        for m in self._re.finditer(text, start, end):
            word = m.group("word")
            if word is None:
                append((m.start(), m.end(), None))
                continue
            s = m.start()
            e = s + len(word)
            # EWT splits an abbreviation's period off at the end of a sentence ("etc" + ".")
            if m.group("dot") is not None and m.end() < end:
                low = word.lower()
                if low in self.abbreviations or _INITIALS_RE.match(word):
                    word += "."
                    e += 1
            elif m.group("apos") is not None and word[-1] in "sS" and self.english:
                # plural possessive: "parents'" -> parents + '
                # (the word may have been split at hyphens: attach the apostrophe to its last part)
                self._word(word, s, out)
                w_start, w_end, pieces = out.pop()
                out.append((w_start, e + 1, (pieces or [text[w_start:w_end]]) + [m.group("apos")]))
                continue
            self._word(word, s, out)
            if e < m.end():
                append((e, m.end(), None))
        return out

    def _word(self, word: str, s: int, out: List[Token]) -> None:
        if self.elisions:
            cut = self._elision(word)
            if cut:
                out.append((s, s + cut, None))
                self._word(word[cut:], s + cut, out)
                return
        if self.hyphen_whole and "-" in word:
            low = word.lower()
            for suffix in self.hyphen_suffixes:
                if low.endswith(suffix) and len(low) > len(suffix):
                    cut = len(word) - len(suffix)
                    self._word(word[:cut], s, out)
                    out.append((s + cut, s + len(word), None))
                    return
        elif not self.hyphen_whole and "-" in word and not _PHONE_RE.match(word):
            parts = word.split("-")
            if not (len(parts) == 2 and parts[0].lower() in self.hyphen_prefixes):
                pos = s
                for i, p in enumerate(parts):
                    if i:
                        out.append((pos, pos + 1, None))
                        pos += 1
                    if p:
                        self._word(p, pos, out)
                    pos += len(p)
                return
        low = word.lower()
        if low in self.joined:
            for n in self.joined[low]:
                out.append((s, s + n, None))
                s += n
            return
        if word[0].isdigit():
            m = _NUMBER_UNIT_RE.match(word)
            if m and m.group(2).lower() in self.units:
                out.append((s, s + m.end(1), None))
                out.append((s + m.end(1), s + len(word), None))
                return
        lengths = self.splits.get(low)
        if lengths is None and self.english:
            lengths = clitic_lengths(word)
        out.append((s, s + len(word), None if lengths is None else split_lengths(word, lengths)))

    def _elision(self, word: str) -> int:
        """Length of the learned elision that starts ``word`` and leaves some of it (0: none)."""
        at = next((i for i, ch in enumerate(word) if ch in "'’"), -1)
        if 0 < at < len(word) - 1 and (word[:at].lower() + "'") in self.elisions:
            return at + 1
        return 0


def clitic_lengths(word: str) -> Optional[Tuple[int, int]]:
    """Lengths of the two words of a clitic contraction (``don't`` -> (2, 3)), else None."""
    m = _CLITIC_RE.search(word)
    if m is None or m.start() == 0:
        return None
    return m.start(), len(word) - m.start()


def split_lengths(word: str, lengths: Sequence[int]) -> List[str]:
    """The pieces of ``word`` of the given lengths (which sum to ``len(word)``)."""
    pieces = []
    pos = 0
    for n in lengths:
        pieces.append(word[pos:pos + n])
        pos += n
    return pieces


# Sentence ends Punkt misses in web text and e-mail, each followed by whitespace and a capital:
# an ellipsis, an emoticon, a closing ">" of an address or attachment line (also before a digit).
_EXTRA_ENDS = r"(?:\.\.\.|…)(?=\s+[A-Z])|(?<!\S)[:;=]-?[()DP](?=\s+[A-Z])|>(?=\s+[A-Z0-9])"


class SentenceSplitter:
    """Punkt sentence boundaries from JSON parameters, plus a few rules for web text."""

    def __init__(self, params: Dict[str, list], closers: Iterable[str] = ()):
        """
        Args:
            params: Punkt parameters as written by :func:`punkt_to_json`.
            closers: lowercased words that end a sentence when followed by a comma and a capital
                (``thanks``, ``regards`` closing a letter).
        """
        punkt = punkt_module()
        p = punkt.PunktParameters()
        p.abbrev_types = set(params.get("abbrev_types", []))
        p.collocations = set(tuple(c) for c in params.get("collocations", []))
        p.sent_starters = set(params.get("sent_starters", []))
        for k, v in params.get("ortho_context", {}).items():
            p.ortho_context[k] = int(v)
        self._punkt = punkt.PunktSentenceTokenizer(p)
        extra = _EXTRA_ENDS
        words = sorted(re.escape(w) for w in closers)
        if words:
            extra += r"|(?i:\b(?:" + "|".join(words) + r"),)(?=\s+[A-Z])"
        self._extra = re.compile(extra)

    def bounds(self, text: str) -> List[Tuple[int, int]]:
        """(start, end) of each sentence of a paragraph, without surrounding whitespace.

        Every non-whitespace character is in exactly one sentence, and sentences only start after
        whitespace, so no token is ever cut in two. A sentence longer than :data:`MAX_SENTENCE`
        characters is cut at whitespace (:func:`cut_long`).
        """
        starts = {0}
        for s, _ in self._punkt.span_tokenize(text):
            if s > 0 and text[s - 1].isspace():
                starts.add(s)
        for m in self._extra.finditer(text):
            starts.add(m.end())
        out = []
        ordered = sorted(starts)
        for i, s in enumerate(ordered):
            e = ordered[i + 1] if i + 1 < len(ordered) else len(text)
            piece = text[s:e]
            stripped = piece.strip()
            if stripped:
                lead = len(piece) - len(piece.lstrip())
                out.extend(cut_long(text, s + lead, s + lead + len(stripped)))
        return out


# A run of text with no sentence end (a list, a text without punctuation) would be one sentence
# of any length, whose rows all stay in memory (4 MB of text: 860,000 words, 550 MB). Longer than
# this, it is cut at whitespace; real sentences are far shorter.
MAX_SENTENCE = 20_000


def cut_long(text: str, start: int, end: int) -> Iterator[Tuple[int, int]]:
    """The span ``text[start:end]`` (no whitespace at either end) in pieces of at most
    :data:`MAX_SENTENCE` characters, each cut at the last whitespace in reach (where there is none,
    at the next one: a piece is longer only where a single token is)."""
    while end - start > MAX_SENTENCE:
        limit = start + MAX_SENTENCE
        cut = -1
        for m in _SPACE.finditer(text, start + 1, limit):
            cut = m.start()
        if cut <= start:   # no whitespace in reach: cut at the next one
            found = _SPACE.search(text, limit, end)
            if found is None:
                break
            cut = found.start()
        piece_end = len(text[start:cut].rstrip()) + start
        yield start, piece_end
        nxt = _NOT_SPACE.search(text, cut, end)
        if nxt is None:
            return
        start = nxt.start()
    yield start, end


_SPACE = re.compile(r"\s")
_NOT_SPACE = re.compile(r"\S")


def punkt_to_json(params: PunktParameters) -> Dict[str, list]:
    """Plain-JSON form of Punkt parameters (sorted, so files are reproducible)."""
    return {
        "abbrev_types": sorted(params.abbrev_types),
        "collocations": sorted(list(c) for c in params.collocations),
        "sent_starters": sorted(params.sent_starters),
        "ortho_context": {k: v for k, v in sorted(params.ortho_context.items())},
    }
