"""Every score nlpipe reports, as plain functions over sentences and label sequences.

Word-level scores (the thirteen metrics of the CoNLL 2018 shared task, :func:`aligned_scores`,
:func:`ud_scores`) follow the definitions of its script ``conll18_ud_eval.py``: both files are turned
into one character stream (FORMs without whitespace), tokens and sentences are character spans, and
syntactic words are aligned through these spans (inside multiword tokens by the longest common
subsequence of their lower-cased forms). Both files are read side by side, a sentence at a time, so
memory does not grow with them. A score then counts aligned words whose values agree and reports
precision (over predicted words), recall (over gold words) and F1; with identical tokenization all
three equal plain accuracy. Relations are compared without subtypes (the part before ``:``),
FEATS only on the universal features, and a gold LEMMA ``_`` accepts any lemma. CLAS, MLAS and
BLEX count only words whose relation is a content one (:data:`CONTENT_DEPRELS`); MLAS also wants
the UPOS and universal FEATS of the word and of its functional children (:data:`FUNCTIONAL_DEPRELS`),
BLEX its lemma.

Span scores (NER) follow ``conlleval``: tags are read into spans by :func:`nlpipe.tags.spans` (its
start/end-of-chunk rules, so ``I-X`` after ``O`` starts a chunk; IOB1, BIO and BIOES all decode with
the same rules) and a predicted chunk is correct when type, start and end equal a gold chunk.
Tags come from MISC through :mod:`nlpipe.io.misc`. SRL arguments follow
``srl-eval.pl`` (CoNLL-2005): per gold proposition, arguments are matched by span and label, ``V``
is not counted, ``C-X`` pieces join the latest ``X`` argument into one discontinuous argument
that is correct only when all its pieces match, and ``R-X`` is a label of its own.

Counts live in :class:`Score`; fractions are in [0, 1] (callers print percentages).
"""
from __future__ import annotations

import unicodedata
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Callable, Deque, Dict, Hashable, Iterable, List, Optional, Sequence, Set, Tuple

from nlpipe.io.conllu import DEPREL, FEATS, FORM, HEAD, ID, LEMMA, MISC, UPOS, XPOS, Sentence
from nlpipe.io.misc import predicates, srl_tags
from nlpipe.errors import InputError, NlpipeError
from nlpipe.tags import spans


@dataclass(frozen=True)
class Score:
    """Counts behind precision, recall, F1 and (for aligned words) accuracy."""

    correct: int
    gold: int
    system: int
    aligned: Optional[int] = None

    @property
    def precision(self) -> float:
        return self.correct / self.system if self.system else 0.0

    @property
    def recall(self) -> float:
        return self.correct / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        total = self.gold + self.system
        return 2 * self.correct / total if total else 0.0

    @property
    def accuracy(self) -> float:
        """Correct over aligned words (over gold items when there is no alignment)."""
        n = self.gold if self.aligned is None else self.aligned
        return self.correct / n if n else 0.0

    def __add__(self, other: "Score") -> "Score":
        aligned = None if self.aligned is None and other.aligned is None else \
            (self.aligned or 0) + (other.aligned or 0)
        return Score(self.correct + other.correct, self.gold + other.gold, self.system + other.system, aligned)


# ---------------------------------------------------------------------------------------------
# The CoNLL 2018 shared task metrics

UD_METRICS = ("Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "UAS", "LAS",
              "CLAS", "MLAS", "BLEX")

# The shared task's split of the 37 universal relations (subtypes removed first).
CONTENT_DEPRELS = frozenset({
    "nsubj", "obj", "iobj", "csubj", "ccomp", "xcomp", "obl", "vocative", "expl", "dislocated", "advcl",
    "advmod", "discourse", "nmod", "appos", "nummod", "acl", "amod", "conj", "fixed", "flat", "compound",
    "list", "parataxis", "orphan", "goeswith", "reparandum", "root", "dep"})
FUNCTIONAL_DEPRELS = frozenset({"aux", "cop", "mark", "det", "clf", "case", "cc"})
# (punct is neither: it counts in UAS/LAS only.)

# The features the shared task scores; any other (language-specific, or layered like
# ``Number[psor]``) is dropped before comparing.
UNIVERSAL_FEATURES = frozenset({
    "PronType", "NumType", "Poss", "Reflex", "Foreign", "Abbr", "Gender", "Animacy", "Number", "Case",
    "Definite", "Degree", "VerbForm", "Mood", "Tense", "Aspect", "Voice", "Evident", "Polarity", "Person",
    "Polite"})


def universal_feats(feats: str) -> str:
    """FEATS reduced to :data:`UNIVERSAL_FEATURES`, sorted; ``""`` when none is left (``_`` too)."""
    return "|".join(sorted(f for f in feats.split("|") if f.split("=", 1)[0] in UNIVERSAL_FEATURES))


def base_deprel(deprel: str) -> str:
    """A relation without its subtype: ``nsubj:pass`` -> ``nsubj``."""
    return deprel.split(":")[0]


# The scores :func:`aligned_scores` counts: the thirteen of :data:`UD_METRICS` (lower-cased), UAS and LAS
# without punctuation, and UPOS and XPOS on words unseen in a training file (when one is given).
_WORD_METRICS = ("upos", "xpos", "ufeats", "alltags", "lemmas", "uas", "las")
_CONTENT_METRICS = ("clas", "mlas", "blex")
_NOPUNCT_METRICS = ("uas_nopunct", "las_nopunct")
_UNSEEN_METRICS = ("unseen_upos", "unseen_xpos")


# ---------------------------------------------------------------------------------------------
# Character alignment (conll18_ud_eval.py semantics), streamed
#
# Both files are read a sentence at a time. The words not yet aligned and the characters not yet
# compared are all that is held (besides the system sentence being scored), so memory is bounded by
# the longest sentence, not by the files. The alignment itself is the script's: a walk over both word
# lists in character order, with multiword blocks aligned by LCS.

def _no_spaces(form: str) -> str:
    # Unicode category Zs, as the shared-task script does; tabs/newlines cannot occur in a FORM.
    return "".join(c for c in form if unicodedata.category(c) != "Zs")


class _Word:
    """One syntactic word: its character span (a multiword token's whole span when ``multi``), its
    index in its file, its head's (-1 root, -2 ``_``) and the values the scores compare."""

    __slots__ = ("index", "start", "end", "multi", "form", "head", "upos", "xpos", "feats", "lemma", "rel",
                 "content", "punct", "unseen", "children", "match")

    def __init__(self, index: int, start: int, end: int, multi: bool, row: List[str], head: int,
                 train_forms: Optional[Set[str]]):
        self.index, self.start, self.end, self.multi, self.head = index, start, end, multi, head
        self.form = row[FORM]
        self.upos, self.xpos, self.lemma = row[UPOS], row[XPOS], row[LEMMA]
        self.feats = universal_feats(row[FEATS])
        self.rel = base_deprel(row[DEPREL])
        self.content = self.rel in CONTENT_DEPRELS
        self.punct = self.upos == "PUNCT"
        self.unseen = train_forms is not None and self.form not in train_forms
        self.children: List["_Word"] = []   # functional children, in word order
        self.match: Optional["_Word"] = None  # a system word's aligned gold word (no cycle: gold has none)


class _Sentence:
    """What one sentence adds to its file: words, token spans with their lines, characters."""

    __slots__ = ("words", "tokens", "span", "chars")

    def __init__(self, sent: Sentence, sno: int, pos: int, first_word: int, path: str,
                 train_forms: Optional[Set[str]]):
        self.words: List[_Word] = []
        self.tokens: List[Tuple[int, int, int, Optional[int]]] = []  # (start, end, sentence number, line)
        chars: List[str] = []
        start = pos
        mwt_end = 0  # last word ID covered by the current multiword token
        span = (pos, pos)
        for ri, row in enumerate(sent.rows):
            i = row[ID]
            if "." in i:
                continue
            if "-" in i or int(i) > mwt_end:
                form = _no_spaces(row[FORM])
                if not form:
                    raise InputError(path, sent.line_of(ri), "empty FORM (only spaces)")
                chars.append(form)
                span = (pos, pos + len(form))
                self.tokens.append((pos, pos + len(form), sno, sent.line_of(ri)))
                pos += len(form)
            if "-" in i:
                mwt_end = int(i.split("-")[1])
                continue
            h = row[HEAD]
            head = -2 if not h.isdigit() else -1 if h == "0" else first_word + int(h) - 1
            self.words.append(_Word(first_word + len(self.words), span[0], span[1], int(i) <= mwt_end, row,
                                    head, train_forms))
        for w in self.words:
            if w.head >= 0 and w.rel in FUNCTIONAL_DEPRELS:
                self.words[w.head - first_word].children.append(w)
        self.span = (start, pos) if pos > start else None
        self.chars = "".join(chars)


class _File:
    """One file being read: the words read but not yet aligned, and its characters not yet compared
    with the other file's (:class:`_Stream` compares them)."""

    def __init__(self, sentences: Iterable[Sentence], path: str, train_forms: Optional[Set[str]],
                 on_sentence: Callable[["_File", _Sentence], None]):
        self.path = path
        self._sentences = iter(sentences)
        self._train_forms = train_forms
        self._on_sentence = on_sentence
        self.nsentences = 0
        self.nwords = 0
        self.pos = 0                  # characters read
        self.words: Deque[_Word] = deque()
        self.first = 0                # index of words[0]
        self.keep_words = True        # whether read words wait for the alignment
        self.keep_text = True         # whether read characters wait for the comparison
        self.eof = False
        self.text = ""                # characters from text_start on (not yet compared, or just compared)
        self.text_start = 0
        self.tokens: Deque[Tuple[int, int, int, Optional[int]]] = deque()  # those ending after text_start

    def read(self) -> bool:
        """Read one more sentence; ``False`` at the end of the file."""
        sent = next(self._sentences, None)
        if sent is None:
            self.eof = True
            return False
        self.nsentences += 1
        s = _Sentence(sent, self.nsentences, self.pos, self.nwords, self.path, self._train_forms)
        self.nwords += len(s.words)
        self.pos += len(s.chars)
        if self.keep_words:
            self.words.extend(s.words)
        if self.keep_text:
            self.text += s.chars
            self.tokens.extend(s.tokens)
        self._on_sentence(self, s)
        return True

    def word(self, i: int) -> Optional[_Word]:
        """Word ``i`` of the file (reading on as needed); ``None`` past its end."""
        while i >= self.nwords:
            if not self.read():
                return None
        return self.words[i - self.first]

    def release(self, i: int) -> None:
        """Forget the words before word ``i`` (the alignment is past them)."""
        words = self.words
        while self.first < i and words:
            words.popleft()
            self.first += 1

    def forget_text(self, upto: int) -> None:
        """Forget the characters before ``upto`` and the tokens that end by then."""
        self.text = self.text[upto - self.text_start:]
        self.text_start = upto
        while self.tokens and self.tokens[0][1] <= upto:
            self.tokens.popleft()

    def where(self, char: int) -> str:
        """``path:line`` (or ``path, sentence N``) of the token holding character ``char``."""
        best = None
        for start, _, sno, line in self.tokens:
            if start > char:
                break
            best = (sno, line)
        if best is None:
            return self.path
        sno, line = best
        return f"{self.path}:{line}" if line else f"{self.path}, sentence {sno}"


class _Stream:
    """The alignment of a gold and a system file read side by side.

    :meth:`run` aligns their words, checking that both spell the same characters as it reads, and
    hands each system sentence to ``on_system`` once all its words are aligned (``_Word.match``: the
    gold word); ``on_gold`` gets each gold sentence as it is read. Raises :class:`NlpipeError` naming
    both files and lines when the texts differ.
    """

    def __init__(self, gold: Iterable[Sentence], system: Iterable[Sentence], gold_path: str, system_path: str,
                 on_gold: Callable[[_Sentence], None], on_system: Callable[[_Sentence], None],
                 train_forms: Optional[Set[str]] = None):
        self._on_gold, self._on_system = on_gold, on_system
        self.gold = _File(gold, gold_path, train_forms, self._read)
        self.system = _File(system, system_path, train_forms, self._read)
        self.waiting: Deque[_Sentence] = deque()   # system sentences not yet wholly aligned
        self.checked = 0                           # characters equal in both files so far
        self._reporting = False

    def _read(self, f: _File, s: _Sentence) -> None:
        if f is self.gold:
            self._on_gold(s)
        else:
            self.waiting.append(s)
            if not f.keep_words:    # the alignment is over
                self._settle(f.nwords)
        if not self._reporting:
            self._compare()

    def _compare(self) -> None:
        g, s = self.gold, self.system
        a, b = g.text, s.text
        n = min(len(a), len(b))
        if a[:n] != b[:n]:
            k = next(i for i in range(n) if a[i] != b[i])
            self._differ(self.checked + k)
        self.checked += n
        g.forget_text(self.checked)
        s.forget_text(self.checked)
        for f, other in ((g, s), (s, g)):
            if other.eof and not other.text and f.text:   # f runs on past the other's end: an error
                f.keep_text = False
                f.tokens.clear()

    def _differ(self, k: int) -> None:
        """Raise the error of texts that differ at character ``k`` (reading both files to their end)."""
        self._reporting = True
        g, s = self.gold, self.system
        for f in (g, s):
            while len(f.text) < k - f.text_start + 20 and f.read():
                pass
        where = f"{g.where(k)} ('{g.text[k - g.text_start:k - g.text_start + 20]}') and " \
                f"{s.where(k)} ('{s.text[k - s.text_start:k - s.text_start + 20]}')"
        for f in (g, s):
            f.keep_words = f.keep_text = False
            while f.read():
                pass
        raise NlpipeError(f"the texts differ at {where} {self._counts()}; score files with the same text")

    def _counts(self) -> str:
        g, s = self.gold, self.system
        return f"({g.nsentences} sentences in {g.path}, {s.nsentences} in {s.path})"

    def _settle(self, si: int) -> None:
        """Hand on the system sentences whose words all lie before word ``si``."""
        while self.waiting and (not self.waiting[0].words or self.waiting[0].words[-1].index < si):
            self._on_system(self.waiting.popleft())

    def run(self) -> None:
        """Align the two files to their ends."""
        gold, system = self.gold, self.system
        gi = si = 0
        while True:
            g, s = gold.word(gi), system.word(si)
            if g is None or s is None:
                break
            if g.multi or s.multi:
                gs, ss, gi, si = self._multiword_block(gi, si)
                if gi > gs and si > ss:
                    self._align_by_lcs(gs, gi, ss, si)
            elif g.start == s.start and g.end == s.end:
                s.match = g
                gi += 1
                si += 1
            elif g.start <= s.start:
                gi += 1
            else:
                si += 1
            gold.release(gi)
            system.release(si)
            self._settle(si)
        self._compare()
        for f in (gold, system):
            f.keep_words = False
            f.release(f.nwords)
            while f.read():
                pass
        self._settle(system.nwords)
        if gold.text or system.text:
            short = system if not system.text else gold
            raise NlpipeError(f"{short.path} ends early: its text is a prefix of the other file's "
                              f"{self._counts()}; score files with the same text")

    def _multiword_block(self, gi: int, si: int) -> Tuple[int, int, int, int]:
        """The smallest stretch of words, starting at (gi, si), that no multiword token sticks out of."""
        word_g, word_s = self.gold.word, self.system.word
        g, s = word_g(gi), word_s(si)
        assert g is not None and s is not None
        if g.multi:
            end = g.end
            if not s.multi and s.start < g.start:
                si += 1
        else:
            end = s.end
            if g.start < s.start:
                gi += 1
        gs, ss = gi, si
        while True:
            g, s = word_g(gi), word_s(si)
            if _past(g, end) and _past(s, end):
                return gs, ss, gi, si
            if g is not None and (s is None or g.start <= s.start):
                if g.multi:
                    end = max(end, g.end)
                gi += 1
            else:
                assert s is not None
                if s.multi:
                    end = max(end, s.end)
                si += 1

    def _align_by_lcs(self, gs: int, ge: int, ss: int, se: int) -> None:
        """Align words gs..ge-1 with ss..se-1 by the longest common subsequence of lower-cased forms."""
        gw = [self.gold.words[i - self.gold.first] for i in range(gs, ge)]
        sw = [self.system.words[i - self.system.first] for i in range(ss, se)]
        gf = [w.form.lower() for w in gw]
        sf = [w.form.lower() for w in sw]
        n, m = len(gf), len(sf)
        # table[i][j] = LCS length of gf[i:] and sf[j:]
        table = [[0] * (m + 1) for _ in range(n + 1)]
        for i in range(n - 1, -1, -1):
            for j in range(m - 1, -1, -1):
                if gf[i] == sf[j]:
                    table[i][j] = 1 + table[i + 1][j + 1]
                else:
                    table[i][j] = max(table[i + 1][j], table[i][j + 1])
        i = j = 0
        while i < n and j < m:
            if gf[i] == sf[j]:
                sw[j].match = gw[i]
                i += 1
                j += 1
            elif table[i][j] == table[i + 1][j]:
                i += 1
            else:
                j += 1


def _past(w: Optional[_Word], end: int) -> bool:
    """Whether word ``w`` lies beyond a multiword block ending at character ``end`` (``None``: the file's end)."""
    if w is None:
        return True
    return w.start >= end if w.multi else w.end > end


class _Spans:
    """Exact matches between two increasing sequences of character spans, counted as they come."""

    def __init__(self) -> None:
        self.pending: Tuple[Deque[Tuple[int, int]], Deque[Tuple[int, int]]] = (deque(), deque())
        self.counts = [0, 0]
        self.correct = 0

    def add(self, side: int, spans: Iterable[Tuple[int, int]]) -> None:
        """Spans of the gold (``side`` 0) or system (1) file, in order."""
        pending = self.pending[side]
        before = len(pending)
        pending.extend(spans)
        self.counts[side] += len(pending) - before
        g, s = self.pending
        while g and s:
            if g[0] == s[0]:
                self.correct += 1
                g.popleft()
                s.popleft()
            elif g[0] < s[0]:
                g.popleft()
            else:
                s.popleft()

    def score(self) -> Score:
        return Score(self.correct, self.counts[0], self.counts[1])


class _Counts:
    """correct, aligned, gold and system counts of one word-level score."""

    __slots__ = ("correct", "aligned", "gold", "system")

    def __init__(self) -> None:
        self.correct = self.aligned = self.gold = self.system = 0

    def pair(self, correct: bool) -> None:
        self.aligned += 1
        self.correct += correct


def aligned_scores(gold: Iterable[Sentence], system: Iterable[Sentence], gold_path: str = "<gold>",
                   system_path: str = "<pred>", train_forms: Optional[Set[str]] = None,
                   heads: bool = True) -> Dict[str, Score]:
    """Every score over character-aligned words, reading both files once, a sentence at a time.

    Keys: ``tokens`` ... ``blex`` (:data:`UD_METRICS`, lower-cased) as ``conll18_ud_eval.py`` counts
    them, ``uas_nopunct`` and ``las_nopunct`` (a system word counts when the gold word it is aligned to
    is not ``PUNCT``, or, unaligned, when it is not ``PUNCT`` itself), with ``train_forms``
    ``unseen_upos`` and ``unseen_xpos`` (words whose FORM is not in it). Tokens, Sentences and Words
    carry no ``aligned`` count, the others do (the script's AligndAcc is :attr:`Score.accuracy`).
    ``heads``: a gold word without HEAD is an error.

    Raises :class:`NlpipeError` naming both files and lines when their texts differ.
    """
    tokens, sentences = _Spans(), _Spans()
    words = _Counts()
    names = _WORD_METRICS + _CONTENT_METRICS + _NOPUNCT_METRICS + (_UNSEEN_METRICS if train_forms is not None else ())
    c = {name: _Counts() for name in names}
    content = [c[name] for name in _CONTENT_METRICS]
    everywhere = [c[name] for name in _WORD_METRICS]
    nopunct = [c[name] for name in _NOPUNCT_METRICS]
    unseen = [c[name] for name in _UNSEEN_METRICS if name in c]
    headless: List[str] = []   # the form of the first gold word without a HEAD

    def on_gold(s: _Sentence) -> None:
        tokens.add(0, (t[:2] for t in s.tokens))
        sentences.add(0, [s.span] if s.span else [])
        words.gold += len(s.words)
        for w in s.words:
            if w.head == -2 and not headless:
                headless.append(w.form)
            if w.content:
                for x in content:
                    x.gold += 1
            if not w.punct:
                for x in nopunct:
                    x.gold += 1
            if w.unseen:
                for x in unseen:
                    x.gold += 1
        for x in everywhere:
            x.gold += len(s.words)

    def on_system(s: _Sentence) -> None:
        tokens.add(1, (t[:2] for t in s.tokens))
        sentences.add(1, [s.span] if s.span else [])
        words.system += len(s.words)
        for x in everywhere:
            x.system += len(s.words)
        sent = s.words
        first = sent[0].index if sent else 0

        def head(w: _Word) -> Hashable:   # the gold word w's system head is aligned to
            if w.head < 0:
                return w.head
            m = sent[w.head - first].match
            return "unaligned" if m is None else m.index

        for w in sent:
            g = w.match
            if w.content:
                for x in content:
                    x.system += 1
            if not (g.punct if g is not None else w.punct):
                for x in nopunct:
                    x.system += 1
            if w.unseen:
                for x in unseen:
                    x.system += 1
            if g is None:
                continue
            words.correct += 1
            upos, xpos, feats = g.upos == w.upos, g.xpos == w.xpos, g.feats == w.feats
            lemma = g.lemma == "_" or g.lemma == w.lemma
            uas = g.head == head(w)
            las = uas and g.rel == w.rel
            for x, ok in zip(everywhere, (upos, xpos, feats, upos and xpos and feats, lemma, uas, las)):
                x.pair(ok)
            if g.content:
                mlas = las and upos and feats and \
                    [(k.index, k.rel, k.upos, k.feats) for k in g.children] == \
                    [(k.match.index if k.match is not None else "unaligned", k.rel, k.upos, k.feats)
                     for k in w.children]
                for x, ok in zip(content, (las, mlas, las and lemma)):
                    x.pair(ok)
            if not g.punct:
                for x, ok in zip(nopunct, (uas, las)):
                    x.pair(ok)
            if g.unseen:
                for x, ok in zip(unseen, (upos, xpos)):
                    x.pair(ok)

    _Stream(gold, system, gold_path, system_path, on_gold, on_system, train_forms).run()
    if heads and headless:
        raise NlpipeError(f"{gold_path}: gold word '{headless[0]}' has no HEAD; UAS/LAS need a gold tree")
    out = {"tokens": tokens.score(), "sentences": sentences.score(),
           "words": Score(words.correct, words.gold, words.system)}
    out.update({name: Score(x.correct, x.gold, x.system, x.aligned) for name, x in c.items()})
    return out


# ---------------------------------------------------------------------------------------------
# Two files in memory (library callers and tests)

class Segmentation:
    """One file's sentences held in memory, for the functions below that take two of them (``nlpipe
    eval`` streams its files through :func:`aligned_scores` instead)."""

    def __init__(self, sentences: Iterable[Sentence], path: str = "<gold>"):
        self.path = path
        self.sentences = list(sentences)

    @property
    def rows(self) -> List[List[str]]:
        """The rows of the syntactic words (no multiword-token ranges, no empty nodes)."""
        return [r for s in self.sentences for r in s.rows if r[ID].isdigit()]


@dataclass
class Alignment:
    """Pairs of aligned word indices (gold, system), words numbered through each file."""

    gold: Segmentation
    system: Segmentation
    pairs: List[Tuple[int, int]] = field(default_factory=list)


def align(gold: Segmentation, system: Segmentation) -> Alignment:
    """Align the syntactic words of two segmentations of the same text.

    Raises :class:`NlpipeError` naming both files and lines when the texts differ.
    """
    al = Alignment(gold, system)

    def on_system(s: _Sentence) -> None:
        al.pairs.extend((w.match.index, w.index) for w in s.words if w.match is not None)

    _Stream(gold.sentences, system.sentences, gold.path, system.path, lambda s: None, on_system).run()
    return al


def word_score(al: Alignment) -> Score:
    """Words F1 of an alignment: aligned words over gold and over system words."""
    return Score(len(al.pairs), len(al.gold.rows), len(al.system.rows))


def _pick(gold: Segmentation, system: Segmentation, names: Sequence[str], heads: bool = False,
          train_forms: Optional[Set[str]] = None) -> Dict[str, Score]:
    r = aligned_scores(gold.sentences, system.sentences, gold.path, system.path, train_forms, heads)
    return {name: r[name] for name in names if name in r}


def tokenization_scores(gold: Segmentation, system: Segmentation) -> Dict[str, Score]:
    """Tokens, sentences and words F1 (``conll18_ud_eval.py``'s first three lines)."""
    return _pick(gold, system, ("tokens", "sentences", "words"))


def tagging_scores(gold: Segmentation, system: Segmentation,
                   train_forms: Optional[Set[str]] = None) -> Dict[str, Score]:
    """Words, UPOS, XPOS, UFeats, AllTags and Lemmas over aligned words (as :func:`ud_scores`);
    with ``train_forms`` also UPOS and XPOS on words whose FORM is unseen."""
    return _pick(gold, system, ("words",) + _WORD_METRICS[:5] + _UNSEEN_METRICS, train_forms=train_forms)


def attachment_scores(gold: Segmentation, system: Segmentation) -> Dict[str, Score]:
    """Words, UAS and LAS over aligned words, also without punctuation (see :func:`aligned_scores`).
    A head is correct when the system head is aligned to the gold head (or both are the root)."""
    return _pick(gold, system, ("words", "uas", "las") + _NOPUNCT_METRICS, heads=True)


def ud_scores(gold: Segmentation, system: Segmentation) -> Dict[str, Score]:
    """All :data:`UD_METRICS` (keys lower-cased: ``tokens`` ... ``blex``) as ``conll18_ud_eval.py``
    counts them. Needs gold HEADs."""
    return _pick(gold, system, [name.lower() for name in UD_METRICS], heads=True)


# ---------------------------------------------------------------------------------------------
# Same-tokenization checks for sentence-level scores (NER, predicates, SRL)

def check_same_words(gold: Sequence[Sentence], system: Sequence[Sentence],
                     gold_path: str = "<gold>", system_path: str = "<pred>", what: str = "these scores") -> None:
    """Raise :class:`NlpipeError` unless both lists have the same sentences of the same word forms."""
    if len(gold) != len(system):
        raise NlpipeError(f"{gold_path} has {len(gold)} sentences but {system_path} has {len(system)}; "
                          f"{what} need the same sentences in both files")
    for n, (g, s) in enumerate(zip(gold, system), 1):
        gf, sf = g.forms(), s.forms()
        if gf == sf:
            continue
        where = f"{system_path}:{s.line}" if s.line else f"{system_path}, sentence {n}"
        if len(gf) != len(sf):
            detail = f"{len(sf)} words where {gold_path} has {len(gf)}"
        else:
            k = next(i for i in range(len(gf)) if gf[i] != sf[i])
            detail = f"word {k + 1} is '{sf[k]}' where {gold_path} has '{gf[k]}'"
        raise NlpipeError(f"{where}: sentence {n} differs from the gold sentence ({detail}); "
                          f"{what} need the gold tokenization")


# ---------------------------------------------------------------------------------------------
# Spans (conlleval)

def differing_cells(a: Sequence[Sentence], b: Sequence[Sentence], columns: Sequence[int] = (HEAD, DEPREL, MISC)
                    ) -> float:
    """Share of the ``columns`` cells that differ between two annotations of the same words (CUDA
    against CPU output, say); a ``ValueError`` when their numbers of words differ."""
    wa = [w for s in a for w in s.words]
    wb = [w for s in b for w in s.words]
    if len(wa) != len(wb):
        raise ValueError(f"{len(wa)} words against {len(wb)}: not the same words")
    cells = [(x[c], y[c]) for x, y in zip(wa, wb) for c in columns]
    return sum(x != y for x, y in cells) / max(1, len(cells))


def span_scores(gold: Iterable[Sequence[str]],
                system: Iterable[Sequence[str]]) -> Tuple[Score, Dict[str, Score], Score]:
    """conlleval over tag sequences: (overall chunk score, per-type chunk scores, tag accuracy)."""
    n_gold: Counter = Counter()
    n_sys: Counter = Counter()
    n_ok: Counter = Counter()
    tags_ok = tags_all = 0
    for g, s in zip(gold, system):
        gc, sc = spans(g), spans(s)
        n_gold.update(c[2] for c in gc)
        n_sys.update(c[2] for c in sc)
        n_ok.update(c[2] for c in set(gc) & set(sc))
        tags_all += len(g)
        tags_ok += sum(a == b for a, b in zip(g, s))
    types = {k: Score(n_ok[k], n_gold[k], n_sys[k]) for k in sorted(set(n_gold) | set(n_sys))}
    overall = Score(sum(n_ok.values()), sum(n_gold.values()), sum(n_sys.values()))
    return overall, types, Score(tags_ok, tags_all, tags_all)


# ---------------------------------------------------------------------------------------------
# Predicates and semantic roles

def predicate_scores(gold: Iterable[Sentence], system: Iterable[Sentence]) -> Dict[str, Score]:
    """Predicate identification (position), sense accuracy on found ones and position+sense."""
    found = sense_ok = n_gold = n_sys = 0
    for g, s in zip(gold, system):
        gp, sp = predicates(g), predicates(s)
        n_gold += len(gp)
        n_sys += len(sp)
        for k, v in gp.items():
            if k in sp:
                found += 1
                sense_ok += sp[k] == v
    return {"predicates": Score(found, n_gold, n_sys),
            "sense": Score(sense_ok, found, found, found),
            "labeled": Score(sense_ok, n_gold, n_sys)}


@dataclass
class Argument:
    """One argument of a proposition: its label and its pieces (more than one when continued)."""

    label: str
    pieces: List[Tuple[int, int]]

    @property
    def start(self) -> int:
        return self.pieces[0][0]

    @property
    def end(self) -> int:
        return self.pieces[-1][1]


def arguments(tags: Sequence[str]) -> List[Argument]:
    """Arguments of one proposition's BIO tags, joining ``C-X`` pieces to the latest ``X``."""
    args: List[Argument] = []
    latest: Dict[str, Argument] = {}
    for start, end, label in spans(tags):
        if label.startswith("C-") and label[2:] in latest:
            latest[label[2:]].pieces.append((start, end))
            continue
        if label.startswith("C-"):  # a continuation without its head becomes a plain argument
            label = label[2:]
        arg = Argument(label, [(start, end)])
        args.append(arg)
        latest[label] = arg
    return args


EXCLUDED_ROLES = frozenset({"V"})


def proposition_counts(gold: Sequence[str], system: Sequence[str]) -> Tuple[Counter, Counter, Counter]:
    """(correct, excess, missed) arguments of one proposition by label, V included."""
    by_span = {(a.start, a.end): a for a in arguments(gold)}
    ok: Counter = Counter()
    excess: Counter = Counter()
    for a in arguments(system):
        g = by_span.get((a.start, a.end))
        if g is not None and g.label == a.label and len(g.pieces) == len(a.pieces) and \
                set(g.pieces) == set(a.pieces):
            ok[a.label] += 1
            del by_span[(a.start, a.end)]
        else:
            excess[a.label] += 1
    missed = Counter(a.label for a in by_span.values())
    return ok, excess, missed


def srl_scores(gold: Iterable[Sentence], system: Iterable[Sentence], gold_path: str = "<gold>",
               system_path: str = "<pred>") -> Tuple[Score, Dict[str, Score], int, int]:
    """srl-eval.pl over sentences: (overall, per-role, propositions, perfect propositions).

    Propositions are the gold predicates (matched by position); a system proposition without a
    gold one is skipped, a missing one has all its gold arguments missed. ``V`` is not counted.
    """
    ok: Counter = Counter()
    excess: Counter = Counter()
    missed: Counter = Counter()
    props = perfect = 0
    for g, s in zip(gold, system):
        gt, st = srl_tags(g, gold_path), srl_tags(s, system_path)
        for pid, tags in gt.items():
            o, e, m = proposition_counts(tags, st.get(pid, ["O"] * len(tags)))
            for c in (o, e, m):
                for label in EXCLUDED_ROLES:
                    c.pop(label, None)
            ok.update(o)
            excess.update(e)
            missed.update(m)
            props += 1
            perfect += not e and not m
    labels = sorted(set(ok) | set(excess) | set(missed))
    per_label = {k: Score(ok[k], ok[k] + missed[k], ok[k] + excess[k]) for k in labels}
    n_ok, n_e, n_m = sum(ok.values()), sum(excess.values()), sum(missed.values())
    return Score(n_ok, n_ok + n_m, n_ok + n_e), per_label, props, perfect
