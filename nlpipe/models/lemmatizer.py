"""Lemmas from a lexicon of the training data and, for the other words, a linear classifier over
lemma rules (Straka's UDPipe 1 and spaCy's edit-tree lemmatizer work the same way).

A rule rewrites a form into its lemma: it cuts a prefix and a suffix off the lower-cased form and
puts others in their place, around the longest substring form and lemma share (``running`` ->
``run``: cut ``ning``, add nothing; German ``gemacht`` -> ``machen``: cut ``ge`` and ``t``, add
``en``). Its casing part says whether the lemma keeps the form's casing (``k``: ``Apples`` ->
``Apple``), is lower-cased (``l``: ``Running`` -> ``run``, and every lower-case form) or is the rule's string as it is (``=``:
a lemma that shares nothing with its form, ``n't`` -> ``not``). A rule applies to a form when the
form has its prefix and suffix, so the classifier picks among the rules that apply.

Lemmas of words seen in training come from the lexicon: the lemma of a form with its tag (when
one lemma clearly dominates), else the lemma of the form whatever its tag (when it was always the
same one). The classifier (a :class:`TemplatedModel` over word attributes and the tags of the POS
pass, ``ptag``) lemmatizes everything else.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.io.model_dir import model_errors, read_json, write_json
from nlpipe.linear.attributes import Attributes
from nlpipe.linear.model import TemplatedModel
from nlpipe.linear.templates import Layout
from nlpipe.models.neural_numpy import softmax
from nlpipe.models.web_address import is_web_address

SEP = "\t"
LEXICON_FILE = "lexicon.json"
RULES_DIR = "rules"
TOP = 4      # rules of a word whose lemma is checked against the known lemmas

# Templates of the rule classifier (``ptag``: the POS pass's tag). It only sees words the lexicon
# does not know, so it reads what generalises to them: affixes, shape and the tag, no word identity.
TEMPLATES: Tuple[str, ...] = (
    "s4@0+ptag@0", "s3@0+ptag@0", "s2@0+ptag@0", "s1@0+ptag@0", "s4@0", "s3@0", "s2@0",
    "p1@0+s3@0", "p2@0+s2@0", "shape@0+ptag@0", "flags@0+ptag@0", "ptag@0", "bias",
)


def _common(a: str, b: str) -> Tuple[int, int, int]:
    """(start in a, start in b, length) of the longest common substring (the first one in ``a``)."""
    best = (0, 0, 0)
    prev = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        cur = [0] * (len(b) + 1)
        ai = a[i - 1]
        for j in range(1, len(b) + 1):
            if ai == b[j - 1]:
                cur[j] = prev[j - 1] + 1
                if cur[j] > best[2]:
                    best = (i - cur[j], j - cur[j], cur[j])
        prev = cur
    return best


def lemma_rule(form: str, lemma: str) -> str:
    """The rule that rewrites ``form`` into ``lemma`` (see the module docstring)."""
    low, lem = form.lower(), lemma.lower()
    i, j, n = _common(low, lem)
    if n == 0 or len(low) != len(form):
        return "=" + SEP + lemma
    rule = SEP.join((low[:i], lem[:j], low[i + n:], lem[j + n:]))
    for case in ("l", "k"):   # lower first: "k" then marks the lemmas that keep capitals (names)
        if apply_rule(form, case + SEP + rule) == lemma:
            return case + SEP + rule
    return "=" + SEP + lemma


def _parts(rule: str) -> Tuple[str, ...]:
    return tuple(rule.split(SEP))


def rule_applies(low: str, rule: str) -> bool:
    """Whether ``rule`` can rewrite a form whose lower-cased spelling is ``low``."""
    return _applies(low, _parts(rule))


def _applies(low: str, parts: Tuple[str, ...]) -> bool:
    if parts[0] == "=":
        return True
    cut_pre, cut_suf = parts[1], parts[3]
    return len(low) > len(cut_pre) + len(cut_suf) and low.startswith(cut_pre) and low.endswith(cut_suf)


def apply_rule(form: str, rule: str) -> Optional[str]:
    """The lemma ``rule`` makes of ``form``, or None where it does not apply."""
    return _apply(form, form.lower(), _parts(rule))


def _apply(form: str, low: str, parts: Tuple[str, ...]) -> Optional[str]:
    if parts[0] == "=":
        return parts[1]
    case, cut_pre, add_pre, cut_suf, add_suf = parts
    if len(low) != len(form) or not _applies(low, parts):
        return None
    base = form if case == "k" else low
    return add_pre + base[len(cut_pre):len(base) - len(cut_suf)] + add_suf


class Lemmatizer:
    """Lexicon lookups, then the rule classifier for the words left (see the module docstring)."""

    def __init__(self, by_form_tag: Dict[str, str], by_form: Dict[str, str], rules: TemplatedModel,
                 known: Iterable[str] = (), known_bonus: float = 0.0, web_addresses: bool = False,
                 cased_variants: bool = False):
        """``by_form_tag``: ``form<TAB>tag`` -> lemma, for whole POS labels and for their first
        field (the UPOS of a ``UPOS<TAB>XPOS`` label) alone; ``by_form``: form -> lemma;
        ``rules``: the classifier, whose labels are rules and whose ``ptag`` templates read the POS
        pass's labels; ``known``: the lemmas of the training data (lower-cased): a rule whose lemma
        is one of them gets ``known_bonus`` added to its score (``provoking`` -> ``provoke``, not
        ``provok``); ``web_addresses``: a URL or e-mail address the lexicon does not know is its own
        lemma (:func:`~nlpipe.models.web_address.is_web_address`; the rules would lower-case one
        with capitals, as most in training had none); ``cased_variants``: a form the lexicon does not
        know, written all in lower case or all in capitals, takes the lemma the lexicon gives the
        same word written otherwise with the same UPOS (``mexico`` -> ``Mexico``, ``TEHRAN`` ->
        ``Tehran``), where those writings agree on it."""
        self.by_form_tag = by_form_tag
        self.web_addresses = bool(web_addresses)
        self.by_form = by_form
        self.rules = rules
        self.known = frozenset(known)
        self._chosen: Dict[Tuple[str, int], str] = {}
        self.known_bonus = float(known_bonus)
        # rules by the suffix they cut: those that cut no prefix apply to every longer form
        self._by_suffix: Dict[str, List[int]] = {}
        self._prefixed: Dict[str, Dict[str, List[int]]] = {}    # suffix -> prefix -> rules
        self._anywhere: List[int] = []
        for r, rule in enumerate(rules.labels):
            parts = _parts(rule)
            if parts[0] == "=":
                self._anywhere.append(r)
            elif parts[1]:
                self._prefixed.setdefault(parts[3], {}).setdefault(parts[1], []).append(r)
            else:
                self._by_suffix.setdefault(parts[3], []).append(r)
        self._longest = max((len(s) for s in (*self._by_suffix, *self._prefixed)), default=0)
        # the lengths of the prefixes cut by the rules of each suffix, shortest first
        self._prefix_lengths = {suffix: sorted({len(p) for p in by_prefix})
                                for suffix, by_prefix in self._prefixed.items()}
        # the forms with an entry by form and tag (the others need only ``by_form``)
        self._tagged_forms = frozenset(key.split(SEP, 1)[0] for key in by_form_tag)
        self._parsed = [_parts(rule) for rule in rules.labels]
        self._candidates: Dict[str, np.ndarray] = {}
        # with templates that read only the word and its own tag, a (form, tag) has one lemma
        self._per_pair = all(not t.history and all(off == 0 for _, off in t.static) and set(t.first) <= {0}
                             for t in rules.templates)
        self._coarse = [label.split(SEP, 1)[0] for label in self.tag_labels]
        self.cased_variants = cased_variants

    @property
    def cased_variants(self) -> bool:
        return self._variants is not None

    @cased_variants.setter
    def cased_variants(self, on: bool) -> None:
        self._variants: Optional[Dict[str, str]] = None     # lower-cased form<TAB>UPOS -> lemma
        if on:
            variants: Dict[str, Optional[str]] = {}             # None: the writings disagree
            for key, lemma in self.by_form_tag.items():
                parts = key.split(SEP)
                if len(parts) == 2:         # form<TAB>UPOS (whole labels have an XPOS field too)
                    k = parts[0].lower() + SEP + parts[1]
                    variants[k] = lemma if variants.get(k, lemma) == lemma else None
            self._variants = {k: v for k, v in variants.items() if v is not None}
        self._chosen.clear()

    @property
    def known_bonus(self) -> float:
        return self._known_bonus

    @known_bonus.setter
    def known_bonus(self, bonus: float) -> None:
        self._known_bonus = float(bonus)
        self._chosen.clear()          # the lemmas chosen so far had the old bonus

    def clear_cache(self) -> None:
        """Forget the lemmas chosen so far (after the classifier's weights or the bonus change)."""
        self._chosen.clear()

    @property
    def tag_labels(self) -> List[str]:
        """The POS labels the lemmatizer reads (the tagger's)."""
        return self.rules.first_labels if self.rules.first_labels is not None else self.rules.labels

    def candidates(self, form: str) -> np.ndarray:
        """Ids of the rules that apply to ``form`` (cached per form)."""
        got = self._candidates.get(form)
        if got is None:
            low = form.lower()
            ids = list(self._anywhere)
            if len(low) == len(form):
                n = len(low)
                for k in range(min(self._longest, n - 1) + 1):
                    suffix = low[n - k:] if k else ""
                    ids.extend(self._by_suffix.get(suffix, ()))
                    by_prefix = self._prefixed.get(suffix)
                    if by_prefix is not None:
                        for m in self._prefix_lengths[suffix]:
                            if n <= m + k:
                                break
                            ids.extend(by_prefix.get(low[:m], ()))
            got = np.array(sorted(ids), dtype=np.int64)
            if len(self._candidates) > 200_000:
                self._candidates.clear()
            self._candidates[form] = got
        return got

    def choose(self, form: str, scores: np.ndarray) -> str:
        """The lemma of the best-scoring rule for ``form`` given rule ``scores`` [num_rules], a
        known lemma among the best :data:`TOP` getting ``known_bonus``; the form itself when no
        rule applies."""
        ids = self.candidates(form)
        if not len(ids):
            return form
        sc = scores[ids]
        if len(ids) > 1:
            top = np.argsort(-sc)[:TOP]
            rules, rule_scores = ids[top].tolist(), sc[top].tolist()
        else:
            rules, rule_scores = ids.tolist(), sc.tolist()
        low = form.lower()
        best, best_score = form, -np.inf
        for rule, score in zip(rules, rule_scores):
            lemma = _apply(form, low, self._parsed[rule]) or form
            if lemma.lower() in self.known:
                score += self.known_bonus
            if score > best_score:
                best, best_score = lemma, score
        return best

    def lookup(self, form: str, tag: int) -> Optional[str]:
        """The lexicon's lemma of ``form`` with POS label id ``tag``, or for a form it does not know
        the form itself for a web address or the lemma of a cased variant (see the constructor);
        None: the rule classifier's to choose."""
        lemma = self._lookup_tagged(form, tag) if form in self._tagged_forms else self.by_form.get(form)
        return lemma if lemma is not None else self._unknown(form, tag)

    def _unknown(self, form: str, tag: int) -> Optional[str]:
        """The lemma of a form the lexicon does not know, where the web-address or cased-variant
        rule gives one (see the constructor)."""
        if self.web_addresses and is_web_address(form):
            return form
        if self._variants is not None and (form.islower() or form.isupper()):
            return self._variants.get(form.lower() + SEP + self._coarse[tag])
        return None

    def _lookup_tagged(self, form: str, tag: int) -> Optional[str]:
        """:meth:`lookup` for a form with form+tag entries."""
        get = self.by_form_tag.get
        return get(form + SEP + self.tag_labels[tag]) or get(form + SEP + self._coarse[tag]) \
            or self.by_form.get(form)

    def lemmatize(self, forms: Sequence[str], tags: np.ndarray, layout: Layout, atoms: np.ndarray,
                  first: np.ndarray) -> List[str]:
        """Lemmas of the tokens of a batch: ``forms`` and POS label ids ``tags`` [num_tokens] in
        token order, ``layout``/``atoms`` from ``self.rules.layout_flat`` (or a model with the same
        attributes), ``first`` the POS label ids in the padded layout (padding = number of labels)."""
        return self._lemmatize(forms, tags, lambda at: self.scores(layout.g[at], atoms, first))

    def lemmatize_words(self, forms: Sequence[str], tags: np.ndarray, lengths: Sequence[int]) -> List[str]:
        """:meth:`lemmatize` for the sentences of ``lengths`` words whose forms, concatenated, are
        ``forms`` (tag ids ``tags [num_tokens]``), with the classifier's word attributes worked out
        only where it reads them: when its templates read the word alone, for the words the lexicon
        does not know (each as a sentence of its own), else for every word."""
        n_labels = len(self.tag_labels)

        def scores(at: np.ndarray) -> np.ndarray:
            if self._per_pair:
                layout, atoms = self.rules.layout_flat([forms[i] for i in at.tolist()], [1] * len(at))
                return self.scores(layout.g, atoms, layout.scatter(tags[at], n_labels))
            layout, atoms = self.rules.layout_flat(forms, lengths)
            return self.scores(layout.g[at], atoms, layout.scatter(tags, n_labels))

        return self._lemmatize(forms, tags, scores)

    def _lemmatize(self, forms: Sequence[str], tags: np.ndarray, scores: Callable[[np.ndarray], np.ndarray]
                   ) -> List[str]:
        """:meth:`lemmatize` given ``scores``: the rule scores ``[len(at), num_rules]`` of the tokens
        at indices ``at``."""
        tag_list = tags.tolist()
        tagged, by_form = self._tagged_forms, self.by_form.get    # most forms: by form alone (see lookup)
        tagged_lookup = self._lookup_tagged
        out: List[Optional[str]] = [tagged_lookup(f, t) if f in tagged else by_form(f) for f, t in zip(forms, tag_list)]
        left = [i for i, lemma in enumerate(out) if lemma is None]
        if self.web_addresses or self._variants is not None:
            for i in left:
                out[i] = self._unknown(forms[i], tag_list[i])
            left = [i for i in left if out[i] is None]
        if not self._per_pair:
            if left:
                for i, row in zip(left, scores(np.array(left, dtype=np.int64))):
                    out[i] = self.choose(forms[i], row)
            return out  # type: ignore[return-value]
        chosen = self._chosen
        todo: Dict[Tuple[str, int], int] = {}
        for i in left:
            pair = (forms[i], tag_list[i])
            if pair not in chosen:
                todo.setdefault(pair, i)
        if todo:
            at = list(todo.values())
            if len(chosen) + len(at) > 200_000:
                chosen.clear()
            for pair, i, row in zip(todo, at, scores(np.array(at, dtype=np.int64))):
                chosen[pair] = self.choose(forms[i], row)
        for i in left:
            out[i] = chosen[(forms[i], tag_list[i])]
        return out  # type: ignore[return-value]

    def probabilities(self, forms: Sequence[str], tags: np.ndarray, layout: Layout, atoms: np.ndarray,
                      first: np.ndarray, lemmas: Sequence[str], scale: float = 1.0) -> List[Optional[float]]:
        """The classifier's probability of each token's ``lemmas`` (what :meth:`lemmatize` gave, same
        arguments); None for a lemma from the lexicon (it has no score) or a form no rule applies to.

        A softmax of ``scale`` times the scores of the rules that apply to the form (the known-lemma
        bonus added as :meth:`choose` adds it, so the chosen rule is the most probable); a lemma's
        probability sums those of the rules that make it."""
        out: List[Optional[float]] = [None] * len(forms)
        for i, (sc, made) in self.rule_choices(forms, tags, layout, atoms, first).items():
            p = softmax(scale * sc)
            out[i] = float(p[[m == lemmas[i] for m in made]].sum())
        return out

    def rule_choices(self, forms: Sequence[str], tags: np.ndarray, layout: Layout, atoms: np.ndarray,
                     first: np.ndarray) -> Dict[int, Tuple[np.ndarray, List[str]]]:
        """Token -> (the scores [C] :meth:`choose` compares, bonus included, of the C rules that apply
        to its form, the lemma each makes), for the tokens the lexicon does not know and some rule
        applies to (arguments as :meth:`lemmatize`)."""
        tag_list = tags.tolist()
        left = [i for i, (f, t) in enumerate(zip(forms, tag_list)) if self.lookup(f, t) is None]
        out: Dict[int, Tuple[np.ndarray, List[str]]] = {}
        if not left:
            return out
        for i, row in zip(left, self.scores(layout.g[np.array(left, dtype=np.int64)], atoms, first)):
            form = forms[i]
            ids = self.candidates(form)
            if not len(ids):
                continue
            sc = row[ids]
            low = form.lower()
            made = [_apply(form, low, self._parsed[r]) or form for r in ids.tolist()]
            top = np.argsort(-sc)[:TOP] if len(ids) > 1 else np.arange(1)
            sc = sc.astype(np.float64)
            for k in top.tolist():
                if made[k].lower() in self.known:
                    sc[k] += self.known_bonus
            out[i] = (sc, made)
        return out

    def scores(self, g: np.ndarray, atoms: np.ndarray, first: np.ndarray) -> np.ndarray:
        """Rule scores [len(g), num_rules] of the tokens at padded positions ``g`` (all templates)."""
        m = self.rules
        total = np.zeros((len(g), m.num_labels), dtype=np.float32)
        for j in range(len(m.templates)):     # no template reads tag history: ``first`` stands in for it
            m.add(j, m.token_rows(j, atoms, first, g, first), total)
        return total

    # -- storage ----------------------------------------------------------------------------

    def save(self, model_dir: Path, shared: Optional[Attributes] = None) -> None:
        """``lexicon.json`` and the classifier in ``rules/`` (without its own cluster table, and
        without its word attributes where they are ``shared``, the tagger's)."""
        model_dir = Path(model_dir)
        model_dir.mkdir(parents=True, exist_ok=True)
        lexicon = {"by_form_tag": self.by_form_tag, "by_form": self.by_form, "known": sorted(self.known),
                   "known_bonus": self.known_bonus}
        if self.web_addresses:
            lexicon["web_addresses"] = True
        if self.cased_variants:
            lexicon["cased_variants"] = True
        write_json(model_dir / LEXICON_FILE, lexicon)
        self.rules.save(model_dir / RULES_DIR, with_clusters=False, shared=shared)

    @classmethod
    def load(cls, model_dir: Path, attributes: Optional[Attributes] = None) -> "Lemmatizer":
        """Read what :meth:`save` wrote; ``attributes`` (with their cluster table) are the tagger's
        (None: a lemmatizer saved with its own, beside a tagger without word attributes)."""
        model_dir = Path(model_dir)
        lex = read_json(model_dir / LEXICON_FILE)
        rules = TemplatedModel.load(model_dir / RULES_DIR, None if attributes is None else attributes.clusters,
                                    attributes)
        with model_errors(model_dir, "lemmatizer"):
            return cls(dict(lex["by_form_tag"]), dict(lex["by_form"]), rules, lex["known"], lex["known_bonus"],
                       bool(lex.get("web_addresses", False)), bool(lex.get("cased_variants", False)))
