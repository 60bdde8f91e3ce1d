"""Multiword tokens: learned from a treebank's range lines (``3-4 du`` + ``de`` ``le``), expanded at
tokenize time. No torch here.

What is learned (:func:`learn_multiwords`, the model's ``multiwords.json``) comes from the training data
alone, whatever the language:

- a table of seen expansions: lowercased surface form -> the words of its most frequent expansion
  (lowercased); at tokenize time the surface casing is carried onto the words (``Du`` -> ``De le``,
  ``AU`` -> ``À LE``); words that spell their token (``don't`` -> ``do n't``) keep its exact characters;
- suffix rules for unseen forms: a seen multiword form ``s`` whose first word shares a prefix with it
  gives rules "surface suffix -> rewrite" (Italian ``farlo`` -> ``far lo``: ``rlo`` -> ``r`` + ``lo``,
  ...); an unseen form takes the rule of its longest suffix that is a rule, and only when that rule was
  reliable in the training data (most distinct forms ending so were multiword tokens with that rewrite;
  a suffix of a single form is no rule, a contradicted one stops the search);
- a context classifier for ambiguous forms, which are a multiword token only sometimes (French ``des``:
  ``de`` + ``les`` after a noun, the determiner ``des`` elsewhere): an averaged perceptron over the form,
  its neighbouring tokens, their usual UPOS in training and how often the token before was followed by
  the expansion's first word in training (``fin`` by ``de``), trained on the training tokens of those forms and kept for a form only
  where it beats that form's majority decision on the dev tokens.

English models only (``english``): the clitic rule (``X's``, ``Xn't``) and the plural possessive
(``parents'``) split unseen forms, and the table records forms the data keep whole that the rule
would split (as null).
"""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from nlpipe.io.conllu import FORM, ID, UPOS, Sentence
from nlpipe.models.rules_tokenizer import clitic_lengths, split_lengths

FORMAT = 2
# A suffix rule is used when at least RULE_MIN_FORMS distinct training forms support it and at least
# RULE_MIN_SHARE of the distinct training forms with that suffix are multiword tokens with its rewrite.
RULE_MIN_FORMS = 2
RULE_MIN_SHARE = 0.9
# A form is ambiguous when both readings were seen at least AMBIGUOUS_MIN times in training.
AMBIGUOUS_MIN = 3
PERCEPTRON_EPOCHS = 20
# The context classifier knows how often a previous token seen at least LEXICON_MIN times was followed
# by the first word of the ambiguous form's expansion (French: is it followed by "de"?).
LEXICON_MIN = 3
# ... and the usual UPOS in training of the neighbouring words seen at least TAGS_MIN times.
TAGS_MIN = 2


def sentence_tokens(sent: Sentence) -> List[Tuple[str, Optional[List[str]]]]:
    """(token form, its words or None for a one-word token) of each surface token of a sentence."""
    rows = sent.rows
    out: List[Tuple[str, Optional[List[str]]]] = []
    i = 0
    while i < len(rows):
        r = rows[i]
        if "-" in r[ID]:
            a, b = map(int, r[ID].split("-"))
            out.append((r[FORM], [w[FORM] for w in rows[i + 1:i + 2 + b - a]]))
            i += 2 + b - a
            continue
        if r[ID].isdigit():
            out.append((r[FORM], None))
        i += 1
    return out


# ---------------------------------------------------------------------------------------------
# Casing and suffix rules

def cased(form: str, words: Sequence[str]) -> List[str]:
    """The lowercased ``words`` of ``form`` in the form's casing: its exact characters where the words
    spell it, else all capitals for an all-capital form, a capital first word for a capitalized one."""
    if "".join(words) == form.lower() and len(form.lower()) == len(form):
        return split_lengths(form, [len(w) for w in words])
    if form.isupper() and sum(c.isalpha() for c in form) > 1:
        return [w.upper() for w in words]
    if form[:1].isupper():
        return [words[0][:1].upper() + words[0][1:]] + list(words[1:])
    return list(words)


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _rule_keys(form: str, words: Sequence[str]) -> Iterable[Tuple[str, Tuple[str, ...]]]:
    """(suffix, rewrite) pairs of one multiword form: the form minus a stem it shares with its first
    word; the rewrite is the first word minus that stem, then the other words."""
    for j in range(1, min(_common_prefix(form, words[0]), len(form) - 1) + 1):
        yield form[j:], (words[0][j:],) + tuple(words[1:])


def learn_suffix_rules(mwt: Dict[str, Tuple[str, ...]], forms: Iterable[str]) -> Dict[str, Any]:
    """Suffix -> [rewrite words] (reliable) or None (contradicted by the data), from the multiword forms
    ``mwt`` (lowercased form -> words) and all distinct lowercased training token forms ``forms``."""
    support: Dict[str, Counter] = defaultdict(Counter)
    for form, words in mwt.items():
        for key, rewrite in _rule_keys(form, words):
            support[key][rewrite] += 1
    ending: Counter = Counter()
    lengths = {len(k) for k in support}
    for form in set(forms) | set(mwt):
        for n in lengths:
            if n < len(form) and form[-n:] in support:
                ending[form[-n:]] += 1
    rules: Dict[str, Any] = {}
    for key, counts in sorted(support.items()):
        rewrite, n = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        if n >= RULE_MIN_FORMS and n >= RULE_MIN_SHARE * ending[key]:
            rules[key] = list(rewrite)
        elif ending[key] >= RULE_MIN_FORMS:     # contradicted; a suffix of too few forms is no evidence
            rules[key] = None
    return rules


# ---------------------------------------------------------------------------------------------
# The context classifier for ambiguous forms

def context_features(forms: Sequence[str], i: int, then: str = "rare",
                     tags: Optional[Dict[str, str]] = None) -> List[str]:
    """Features of token ``i`` of a sentence's token forms: the form's capital, its neighbours
    (lowercased: words, pairs, affixes, shape, their usual UPOS in training from ``tags``), ``then``
    (how often the previous token is followed by the first word of the form's expansion,
    :func:`then_bucket`: French "fin" by "de"), each also conjoined with the lowercased form."""
    low = [f.lower() for f in forms]
    tags = tags or {}

    def tag(k: int) -> str:
        return tags.get(low[k], "unk") if 0 <= k < len(low) else "edge"

    def at(k: int) -> str:
        return low[k] if 0 <= k < len(low) else ("<s>" if k < 0 else "</s>")

    p1, p2, n1, n2 = at(i - 1), at(i - 2), at(i + 1), at(i + 2)
    prev = forms[i - 1] if i > 0 else ""
    nxt = forms[i + 1] if i + 1 < len(forms) else ""
    shape = "cap" if nxt[:1].isupper() else "digit" if nxt[:1].isdigit() else "low" if nxt[:1].isalpha() else "other"
    base = [f"p1={p1}", f"p2={p2}", f"n1={n1}", f"n2={n2}", f"p1s={p1[-3:]}", f"p1s2={p1[-2:]}",
            f"p1s1={p1[-1:]}", f"n1s={n1[-3:]}", f"n1s2={n1[-2:]}", f"n1s1={n1[-1:]}", f"n1p={n1[:3]}",
            f"p1n1={p1}_{n1}", f"p2p1={p2}_{p1}", f"n1n2={n1}_{n2}", f"n1shape={shape}",
            f"p1cap={prev[:1].isupper()}", f"cap={forms[i][:1].isupper()}", f"then={then}",
            f"p1tag={tag(i - 1)}", f"p2tag={tag(i - 2)}", f"n1tag={tag(i + 1)}", f"p1n1tag={tag(i - 1)}_{tag(i + 1)}",
            "bias"]
    f = low[i]
    return base + [f"{f} {b}" for b in base]     # tokens hold no space: the form ends at the first


def then_bucket(followed: int, seen: int) -> str:
    """How often a word was followed by a given word in training, coarsely ("rare": seen too seldom)."""
    if seen < LEXICON_MIN:
        return "rare"
    r = followed / seen
    return "never" if r == 0 else "low" if r <= 0.05 else "some" if r <= 0.2 else "often" if r <= 0.5 else "mostly"


def _follow_counts(sentences: List[List[Tuple[str, Optional[List[str]]]]],
                   firsts: Iterable[str]) -> Tuple[Counter, Dict[str, Counter]]:
    """(times each lowercased token form has a next token, first word -> form -> times the next token
    starts with that word)."""
    wanted = set(firsts)
    seen: Counter = Counter()
    followed: Dict[str, Counter] = defaultdict(Counter)
    for sent in sentences:
        for k in range(len(sent) - 1):
            prev = sent[k][0].lower()
            form, words = sent[k + 1]
            first = (words[0] if words else form).lower()
            seen[prev] += 1
            if first in wanted:
                followed[first][prev] += 1
    return seen, followed


def _score(weights: Dict[str, float], feats: Sequence[str]) -> float:
    return sum(weights.get(x, 0.0) for x in feats)


def train_context(examples: List[Tuple[List[str], bool]], seed: int = 1) -> Dict[str, float]:
    """Averaged-perceptron weights trained to a margin: a positive score means a multiword token."""
    weights: Dict[str, float] = defaultdict(float)
    totals: Dict[str, float] = defaultdict(float)
    stamps: Dict[str, int] = defaultdict(int)
    rng = random.Random(seed)
    order = list(range(len(examples)))
    t = 0
    for _ in range(PERCEPTRON_EPOCHS):
        rng.shuffle(order)
        for k in order:
            t += 1
            feats, gold = examples[k]
            step = 1.0 if gold else -1.0
            if step * _score(weights, feats) >= 1.0:      # updates until a margin of 1 (hinge loss)
                continue
            for x in feats:
                totals[x] += (t - stamps[x]) * weights[x]
                stamps[x] = t
                weights[x] += step
    averaged = {}
    for x, w in weights.items():
        avg = (totals[x] + (t - stamps[x]) * w) / max(t, 1)
        if abs(avg) > 1e-6:
            averaged[x] = round(avg, 6)
    return dict(sorted(averaged.items()))


# ---------------------------------------------------------------------------------------------
# Learning

def learn_multiwords(sentences: Iterable[Sentence], dev: Iterable[Sentence] = (),
                     english: bool = False) -> Dict[str, Any]:
    """The ``multiwords.json`` object learned from gold sentences (``dev``: where a context classifier
    must beat the majority decision to be kept; ``english``: the English clitic rule applies).

    The table maps a form to its words, or to null where the training data keep the form whole and a
    suffix rule or the clitic rule would split it.
    """
    sentences = list(sentences)
    train_tokens = [sentence_tokens(s) for s in sentences]
    expansions: Dict[str, Counter] = defaultdict(Counter)
    plain: Counter = Counter()
    for sent in train_tokens:
        for form, words in sent:
            if words:
                expansions[form.lower()][tuple(w.lower() for w in words)] += 1
            else:
                plain[form.lower()] += 1
    table: Dict[str, Optional[List[str]]] = {}
    ambiguous: Dict[str, List[str]] = {}
    for form, counts in expansions.items():
        words, _ = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        n_mwt = sum(counts.values())
        if n_mwt >= plain[form]:
            table[form] = list(words)
        if min(n_mwt, plain[form]) >= AMBIGUOUS_MIN:
            ambiguous[form] = list(words)
    rules = learn_suffix_rules({f: tuple(w) for f, w in table.items()}, plain)
    expand = MultiwordExpander({"format": FORMAT, "table": table, "suffix_rules": rules}, english)
    for form in sorted(plain):
        if form not in table and expand(form) is not None:
            table[form] = None
    context = _learn_context(train_tokens, [sentence_tokens(s) for s in dev], ambiguous, table, _usual_tags(sentences))
    return {"format": FORMAT, "table": dict(sorted(table.items())), "suffix_rules": rules, **context}


Tokens = List[List[Tuple[str, Optional[List[str]]]]]


def _usual_tags(sentences: Iterable[Sentence]) -> Dict[str, str]:
    """Lowercased word form -> its most frequent UPOS, for forms seen at least :data:`TAGS_MIN` times
    with a UPOS."""
    counts: Dict[str, Counter] = defaultdict(Counter)
    for sent in sentences:
        for r in sent.rows:
            if r[ID].isdigit() and r[UPOS] != "_":
                counts[r[FORM].lower()][r[UPOS]] += 1
    return {w: max(c.items(), key=lambda kv: (kv[1], kv[0]))[0] for w, c in sorted(counts.items())
            if sum(c.values()) >= TAGS_MIN}


def _examples(sentences: Tokens, forms: Dict[str, List[str]], then: Any,
              tags: Dict[str, str]) -> List[Tuple[str, List[str], bool]]:
    """(form, features, is a multiword token) of each occurrence of ``forms``; ``then(form, i, sent)``
    gives the lexicon bucket of the token before."""
    out = []
    for sent in sentences:
        surface = [f for f, _ in sent]
        for i, (form, words) in enumerate(sent):
            low = form.lower()
            if low in forms:
                out.append((low, context_features(surface, i, then(low, i, sent), tags), words is not None))
    return out


def _learn_context(train: Tokens, dev: Tokens, ambiguous: Dict[str, List[str]],
                   table: Dict[str, Optional[List[str]]], tags: Dict[str, str]) -> Dict[str, Any]:
    """{"context_forms": ambiguous form -> its words, for the forms the classifier decides,
    "context_weights": the classifier's weights, "context_lexicon": ambiguous form -> previous token
    -> :func:`then_bucket`, "context_tags": word -> its usual UPOS}; the other forms keep their
    majority reading (the table)."""
    none = {"context_forms": {}, "context_weights": {}, "context_lexicon": {}, "context_tags": {}}
    if not ambiguous:
        return none
    seen, followed = _follow_counts(train, (words[0] for words in ambiguous.values()))

    def held_out(form: str, i: int, sent: Any) -> str:
        # the counts without this occurrence, so that a rare previous word does not give the answer away
        if i == 0:
            return "rare"
        prev = sent[i - 1][0].lower()
        first = ambiguous[form][0]
        words = sent[i][1]
        mine = (words[0] if words else sent[i][0]).lower() == first
        return then_bucket(followed[first][prev] - mine, seen[prev] - 1)

    lexicon = {form: {p: then_bucket(followed[words[0]][p], n) for p, n in sorted(seen.items())
                      if n >= LEXICON_MIN} for form, words in ambiguous.items()}

    def known(form: str, i: int, sent: Any) -> str:
        return lexicon[form].get(sent[i - 1][0].lower(), "rare") if i else "rare"

    weights = train_context([(f, y) for _, f, y in _examples(train, ambiguous, held_out, tags)])
    kept = {}
    dev_examples = _examples(dev, ambiguous, known, tags)
    for form in sorted(ambiguous):
        mine = [(f, y) for g, f, y in dev_examples if g == form]
        majority = sum(1 for _, y in mine if y == (table.get(form) is not None))
        correct = sum(1 for f, y in mine if (_score(weights, f) > 0) == y)
        if mine and correct > majority:
            kept[form] = ambiguous[form]
    if not kept:
        return none
    generic = {x: w for x, w in weights.items() if " " not in x or x.split(" ", 1)[0] in kept}
    return {"context_forms": kept, "context_weights": generic, "context_lexicon": {f: lexicon[f] for f in kept},
            "context_tags": tags}


# ---------------------------------------------------------------------------------------------
# Expansion

class MultiwordExpander:
    """Words of tokens: the table, the context classifier for ambiguous forms, the suffix rules for
    unseen forms, and in English models the clitic rule and the plural possessive."""

    def __init__(self, learned: Dict[str, Any], english: bool = False):
        """``learned``: a :func:`learn_multiwords` object, or the older table (lowercased form ->
        word lengths or null) that the first English models shipped."""
        if learned.get("format") == FORMAT and isinstance(learned.get("table"), dict):
            self.table: Dict[str, Optional[List[str]]] = dict(learned["table"])
            self.rules: Dict[str, Optional[List[str]]] = dict(learned.get("suffix_rules") or {})
            self.context_forms: Dict[str, List[str]] = dict(learned.get("context_forms") or {})
            self.weights: Dict[str, float] = dict(learned.get("context_weights") or {})
            self.lexicon: Dict[str, Dict[str, str]] = dict(learned.get("context_lexicon") or {})
            self.tags: Dict[str, str] = dict(learned.get("context_tags") or {})
        else:
            self.table = {f: None if v is None else split_lengths(f, v) for f, v in learned.items()}
            self.rules, self.context_forms, self.weights, self.lexicon, self.tags = {}, {}, {}, {}, {}
        self.english = english
        self._rule_lengths = sorted({len(k) for k in self.rules}, reverse=True)
        self._cache: Dict[str, Optional[List[str]]] = {}

    def __call__(self, form: str) -> Optional[List[str]]:
        """The words of ``form`` out of context, when it is a multiword token; else None."""
        try:
            return self._cache[form]
        except KeyError:
            pass
        words = self._words(form)
        if len(self._cache) < 100_000:
            self._cache[form] = words
        return words

    def sentence(self, forms: Sequence[str]) -> List[Optional[List[str]]]:
        """The words of each token of a sentence (None: a one-word token); ambiguous forms are decided
        by the context classifier."""
        out = [self(f) for f in forms]
        if self.context_forms:
            for i, form in enumerate(forms):
                low = form.lower()
                if low in self.context_forms:
                    then = self.lexicon.get(low, {}).get(forms[i - 1].lower(), "rare") if i else "rare"
                    mwt = _score(self.weights, context_features(forms, i, then, self.tags)) > 0
                    out[i] = cased(form, self.context_forms[low]) if mwt else None
        return out

    def _words(self, form: str) -> Optional[List[str]]:
        low = form.lower()
        if low in self.table:
            words = self.table[low]
            return None if words is None else cased(form, words)
        for n in self._rule_lengths:
            if n < len(low) and low[-n:] in self.rules:
                rewrite = self.rules[low[-n:]]
                if rewrite is None:
                    break
                return cased(form, [low[:-n] + rewrite[0]] + list(rewrite[1:]))
        if not self.english:
            return None
        lengths = clitic_lengths(form)
        if lengths is None and len(form) > 2 and form[-1] in "'’" and form[-2] in "sS" and form[-3].isalpha():
            lengths = (len(form) - 1, 1)
        return None if lengths is None else split_lengths(form, lengths)
