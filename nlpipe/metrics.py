"""Every score nlpipe reports, as plain functions over sentences and label sequences.

Word-level scores (the thirteen metrics of the CoNLL 2018 shared task, :func:`ud_scores`) follow
the definitions of its script ``conll18_ud_eval.py``: both files are turned into one character
stream (FORMs without whitespace), tokens and sentences are character spans, and syntactic words
are aligned through these spans (inside multiword tokens by the longest common subsequence of
their lower-cased forms). A score then counts aligned words whose values agree and reports
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
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Dict, Hashable, Iterable, List, Optional, Sequence, Set, Tuple

from nlpipe.io.conllu import DEPREL, FEATS, FORM, HEAD, ID, LEMMA, UPOS, XPOS, Sentence
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
# Character alignment (conll18_ud_eval.py semantics)

def _no_spaces(form: str) -> str:
    # Unicode category Zs, as the shared-task script does; tabs/newlines cannot occur in a FORM.
    return "".join(c for c in form if unicodedata.category(c) != "Zs")


class Segmentation:
    """One file as a character stream with token, word and sentence spans (end exclusive).

    Words inside a multiword token carry the span of the whole token and ``multi = True``.
    ``heads[i]`` is the index of word i's head in :attr:`rows`, -1 for the root, -2 for ``_``.
    """

    def __init__(self, sentences: Iterable[Sentence], path: str = "<gold>"):
        self.path = path
        self.nsentences = 0
        chars: List[str] = []
        self.tokens: List[Tuple[int, int]] = []
        self.token_lines: List[Tuple[int, int, Optional[int]]] = []  # (sentence number, char start, line)
        self.sentences: List[Tuple[int, int]] = []
        self.start: List[int] = []
        self.end: List[int] = []
        self.multi: List[bool] = []
        self.rows: List[List[str]] = []
        self.heads: List[int] = []
        pos = 0
        for sno, sent in enumerate(sentences, 1):
            self.nsentences += 1
            first_word = len(self.rows)
            sent_start = pos
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
                    self.tokens.append(span)
                    self.token_lines.append((sno, pos, sent.line_of(ri)))
                    pos += len(form)
                if "-" in i:
                    mwt_end = int(i.split("-")[1])
                    continue
                self.start.append(span[0])
                self.end.append(span[1])
                self.multi.append(int(i) <= mwt_end)
                self.rows.append(row)
                h = row[HEAD]
                self.heads.append(-2 if not h.isdigit() else -1 if h == "0" else first_word + int(h) - 1)
            if pos > sent_start:
                self.sentences.append((sent_start, pos))
        self.chars = "".join(chars)

    def where(self, char: int) -> str:
        """``path:line`` (or ``path, sentence N``) of the token holding character ``char``."""
        best = None
        for sno, start, line in self.token_lines:
            if start > char:
                break
            best = (sno, line)
        if best is None:
            return self.path
        sno, line = best
        return f"{self.path}:{line}" if line else f"{self.path}, sentence {sno}"


@dataclass
class Alignment:
    """Pairs of aligned word indices between a gold and a system :class:`Segmentation`."""

    gold: Segmentation
    system: Segmentation
    pairs: List[Tuple[int, int]] = field(default_factory=list)
    to_gold: Dict[int, int] = field(default_factory=dict)  # system word -> gold word

    def add(self, g: int, s: int) -> None:
        self.pairs.append((g, s))
        self.to_gold[s] = g


def _check_same_text(gold: Segmentation, system: Segmentation) -> None:
    if gold.chars == system.chars:
        return
    a, b = gold.chars, system.chars
    k = 0
    n = min(len(a), len(b))
    # find the first difference quickly by halving, then step
    step = 1 << 16
    while k < n:
        m = min(step, n - k)
        if a[k:k + m] == b[k:k + m]:
            k += m
        elif m == 1:
            break
        else:
            step = max(1, m // 2)
    counts = f"({gold.nsentences} sentences in {gold.path}, {system.nsentences} in {system.path})"
    if k == n:
        short = system if len(b) < len(a) else gold
        raise NlpipeError(f"{short.path} ends early: its text is a prefix of the other file's {counts}; "
                          f"score files with the same text")
    raise NlpipeError(f"the texts differ at {gold.where(k)} ('{a[k:k + 20]}') and {system.where(k)} "
                      f"('{b[k:k + 20]}') {counts}; score files with the same text")


def _past(seg: Segmentation, i: int, end: int) -> bool:
    """Whether word i lies beyond a multiword block ending at character ``end``."""
    if i >= len(seg.rows):
        return True
    return seg.start[i] >= end if seg.multi[i] else seg.end[i] > end


def _multiword_block(g: Segmentation, s: Segmentation, gi: int, si: int) -> Tuple[int, int, int, int]:
    """The smallest stretch of words, starting at (gi, si), that no multiword token sticks out of."""
    if g.multi[gi]:
        end = g.end[gi]
        if not s.multi[si] and s.start[si] < g.start[gi]:
            si += 1
    else:
        end = s.end[si]
        if g.start[gi] < s.start[si]:
            gi += 1
    gs, ss = gi, si
    while not _past(g, gi, end) or not _past(s, si, end):
        if gi < len(g.rows) and (si >= len(s.rows) or g.start[gi] <= s.start[si]):
            if g.multi[gi]:
                end = max(end, g.end[gi])
            gi += 1
        else:
            if s.multi[si]:
                end = max(end, s.end[si])
            si += 1
    return gs, ss, gi, si


def _align_by_lcs(al: Alignment, gs: int, ge: int, ss: int, se: int) -> None:
    """Align words gs..ge-1 with ss..se-1 by the longest common subsequence of lower-cased forms."""
    gf = [al.gold.rows[i][FORM].lower() for i in range(gs, ge)]
    sf = [al.system.rows[i][FORM].lower() for i in range(ss, se)]
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
            al.add(gs + i, ss + j)
            i += 1
            j += 1
        elif table[i][j] == table[i + 1][j]:
            i += 1
        else:
            j += 1


def align(gold: Segmentation, system: Segmentation) -> Alignment:
    """Align the syntactic words of two segmentations of the same text.

    Raises :class:`NlpipeError` naming both files and lines when the texts differ.
    """
    _check_same_text(gold, system)
    al = Alignment(gold, system)
    gi = si = 0
    ng, ns = len(gold.rows), len(system.rows)
    while gi < ng and si < ns:
        if gold.multi[gi] or system.multi[si]:
            gs, ss, gi, si = _multiword_block(gold, system, gi, si)
            if gi > gs and si > ss:
                _align_by_lcs(al, gs, gi, ss, si)
        elif gold.start[gi] == system.start[si] and gold.end[gi] == system.end[si]:
            al.add(gi, si)
            gi += 1
            si += 1
        elif gold.start[gi] <= system.start[si]:
            gi += 1
        else:
            si += 1
    return al


def span_score(gold: Sequence[Tuple[int, int]], system: Sequence[Tuple[int, int]]) -> Score:
    """Exact-match score of two lists of character spans (tokens or sentences)."""
    return Score(len(set(gold) & set(system)), len(gold), len(system))


Key = Callable[[int], Hashable]


def word_score(al: Alignment, gold_key: Optional[Key] = None, system_key: Optional[Key] = None,
               gold_keep: Optional[Callable[[int], bool]] = None,
               system_keep: Optional[Callable[[int], bool]] = None) -> Score:
    """Score over aligned words: ``gold_key(g) == system_key(s)`` counts as correct.

    Without keys, the score of the alignment itself (words F1). ``gold_keep``/``system_keep``
    restrict the words counted (an aligned pair counts when its gold word is kept).
    """
    gold_total = len(al.gold.rows) if gold_keep is None else sum(map(gold_keep, range(len(al.gold.rows))))
    system_total = len(al.system.rows) if system_keep is None else \
        sum(map(system_keep, range(len(al.system.rows))))
    aligned = correct = 0
    for g, s in al.pairs:
        if gold_keep is not None and not gold_keep(g):
            continue
        aligned += 1
        if gold_key is None or gold_key(g) == system_key(s):  # type: ignore[misc]
            correct += 1
    if gold_key is None:
        return Score(aligned, gold_total, system_total)
    return Score(correct, gold_total, system_total, aligned)


def _column(seg: Segmentation, col: int) -> Key:
    rows = seg.rows
    return lambda i: rows[i][col]


def tokenization_scores(gold: Segmentation, system: Segmentation,
                        al: Optional[Alignment] = None) -> Dict[str, Score]:
    """Tokens, sentences and words F1 (``conll18_ud_eval.py``'s first three lines)."""
    al = al or align(gold, system)
    return {"tokens": span_score(gold.tokens, system.tokens),
            "sentences": span_score(gold.sentences, system.sentences),
            "words": word_score(al)}


def tagging_scores(gold: Segmentation, system: Segmentation, train_forms: Optional[Set[str]] = None,
                   al: Optional[Alignment] = None) -> Dict[str, Score]:
    """UPOS, XPOS, UFeats, AllTags and Lemmas over aligned words, as :func:`ud_scores` counts them;
    with ``train_forms`` also UPOS and XPOS on words whose FORM is unseen."""
    al = al or align(gold, system)
    out = {"words": word_score(al)}
    for name, col in (("upos", UPOS), ("xpos", XPOS)):
        out[name] = word_score(al, _column(gold, col), _column(system, col))
    for name, (gk, sk) in _morph_keys(gold, system, al).items():
        out[name] = word_score(al, gk, sk)
    if train_forms is not None:
        g_unseen = [r[FORM] not in train_forms for r in gold.rows]
        s_unseen = [r[FORM] not in train_forms for r in system.rows]
        for name, col in (("upos", UPOS), ("xpos", XPOS)):
            out["unseen_" + name] = word_score(al, _column(gold, col), _column(system, col),
                                               g_unseen.__getitem__, s_unseen.__getitem__)
    return out


def _head_keys(al: Alignment) -> Tuple[Key, Key]:
    """(gold head of g, gold word the system head of s is aligned to): equal when the head is right.

    The root is -1 on both sides, an unaligned system head ``"unaligned"``, a system HEAD ``_`` -2.
    Raises :class:`NlpipeError` when a gold word has no HEAD.
    """
    gold = al.gold
    for i, h in enumerate(gold.heads):
        if h == -2:
            raise NlpipeError(f"{gold.path}: gold word '{gold.rows[i][FORM]}' has no HEAD; "
                              f"UAS/LAS need a gold tree")
    to_gold, sh = al.to_gold, al.system.heads

    def s_head(s: int) -> Hashable:
        h = sh[s]
        return h if h < 0 else to_gold.get(h, "unaligned")

    return gold.heads.__getitem__, s_head


def base_deprel(deprel: str) -> str:
    """A relation without its subtype: ``nsubj:pass`` -> ``nsubj``."""
    return deprel.split(":")[0]


def attachment_scores(gold: Segmentation, system: Segmentation,
                      al: Optional[Alignment] = None) -> Dict[str, Score]:
    """UAS and LAS over aligned words, also without punctuation (gold UPOS ``PUNCT``).

    A head is correct when the system head is aligned to the gold head (or both are the root).
    In the punctuation-free variant a system word is left out when it is aligned to a gold
    ``PUNCT`` word, or unaligned and tagged ``PUNCT`` itself.
    """
    al = al or align(gold, system)
    g_head, s_head = _head_keys(al)

    def g_rel(g: int) -> str:
        return base_deprel(gold.rows[g][DEPREL])

    def s_rel(s: int) -> str:
        return base_deprel(system.rows[s][DEPREL])

    g_keep = [r[UPOS] != "PUNCT" for r in gold.rows]
    s_keep = [r[UPOS] != "PUNCT" for r in system.rows]
    for g, s in al.pairs:
        s_keep[s] = g_keep[g]
    out = {"words": word_score(al)}
    for suffix, gk, sk in (("", None, None), ("_nopunct", g_keep.__getitem__, s_keep.__getitem__)):
        out["uas" + suffix] = word_score(al, g_head, s_head, gk, sk)
        out["las" + suffix] = word_score(al, lambda g: (g_head(g), g_rel(g)), lambda s: (s_head(s), s_rel(s)),
                                         gk, sk)
    return out


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


def _morph_keys(gold: Segmentation, system: Segmentation, al: Alignment, g: Optional["_Words"] = None,
                s: Optional["_Words"] = None) -> Dict[str, Tuple[Key, Key]]:
    """Keys of UFeats (universal features only), AllTags (UPOS, XPOS, UFeats) and Lemmas."""
    g = g or _Words(gold)
    s = s or _Words(system)
    grows, srows, to_gold = gold.rows, system.rows, al.to_gold

    def s_lemma(j: int) -> str:  # a gold lemma "_" accepts any lemma
        return "_" if grows[to_gold[j]][LEMMA] == "_" else srows[j][LEMMA]

    return {"ufeats": (g.feats.__getitem__, s.feats.__getitem__),
            "alltags": (lambda i: (g.upos[i], grows[i][XPOS], g.feats[i]),
                        lambda j: (s.upos[j], srows[j][XPOS], s.feats[j])),
            "lemmas": (lambda i: grows[i][LEMMA], s_lemma)}


class _Words:
    """Per-word values the shared-task metrics read from one :class:`Segmentation`."""

    def __init__(self, seg: Segmentation):
        rows = seg.rows
        self.rel = [base_deprel(r[DEPREL]) for r in rows]
        self.feats = [universal_feats(r[FEATS]) for r in rows]
        self.upos = [r[UPOS] for r in rows]
        self.content = [rel in CONTENT_DEPRELS for rel in self.rel]
        # functional children of each word, in word order
        self.children: List[List[int]] = [[] for _ in rows]
        for i, h in enumerate(seg.heads):
            if h >= 0 and self.rel[i] in FUNCTIONAL_DEPRELS:
                self.children[h].append(i)


def ud_scores(gold: Segmentation, system: Segmentation, al: Optional[Alignment] = None) -> Dict[str, Score]:
    """All :data:`UD_METRICS` (keys lower-cased: ``tokens`` ... ``blex``) as ``conll18_ud_eval.py`` counts them.

    Tokens and Sentences compare character spans; every other score is over aligned words and
    carries ``aligned`` (the script's AligndAcc is :attr:`Score.accuracy`). Needs gold HEADs.
    """
    al = al or align(gold, system)
    to_gold = al.to_gold
    g, s = _Words(gold), _Words(system)
    g_head, s_head = _head_keys(al)
    grows, srows = gold.rows, system.rows

    morph = _morph_keys(gold, system, al, g, s)
    g_lemma, s_lemma = morph["lemmas"]

    def g_children(i: int) -> List[Tuple[Hashable, str, str, str]]:
        return [(c, g.rel[c], g.upos[c], g.feats[c]) for c in g.children[i]]

    def s_children(j: int) -> List[Tuple[Hashable, str, str, str]]:
        return [(to_gold.get(c, "unaligned"), s.rel[c], s.upos[c], s.feats[c]) for c in s.children[j]]

    keys: Dict[str, Tuple[Key, Key]] = {
        "upos": (g.upos.__getitem__, s.upos.__getitem__),
        "xpos": (_column(gold, XPOS), _column(system, XPOS)),
        **morph,
        "uas": (g_head, s_head),
        "las": (lambda i: (g_head(i), g.rel[i]), lambda j: (s_head(j), s.rel[j])),
    }
    content = {
        "clas": keys["las"],
        "mlas": (lambda i: (g_head(i), g.rel[i], g.upos[i], g.feats[i], g_children(i)),
                 lambda j: (s_head(j), s.rel[j], s.upos[j], s.feats[j], s_children(j))),
        "blex": (lambda i: (g_head(i), g.rel[i], g_lemma(i)), lambda j: (s_head(j), s.rel[j], s_lemma(j))),
    }
    out = tokenization_scores(gold, system, al)
    for name, (gk, sk) in keys.items():
        out[name] = word_score(al, gk, sk)
    for name, (gk, sk) in content.items():
        out[name] = word_score(al, gk, sk, g.content.__getitem__, s.content.__getitem__)
    return out


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
