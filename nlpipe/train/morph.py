"""Training the morphology of the POS model: the lemmatizer, the FEATS pass's templates and the data
both read (the FEATS pass itself is a tagger pass, trained by :func:`nlpipe.train.pos.train_tagger`).

Both read the POS labels around each word (``ptag`` templates). On training sentences those
labels come from taggers that did not see the sentence (the jack-knifed first pass), so the
models learn how far to trust them; on dev they are the finished tagger's.
"""
from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.io.conllu import FEATS, FORM, LEMMA, read_file
from nlpipe.linear.attributes import Attributes
from nlpipe.models.lemmatizer import SEP, TEMPLATES as RULE_TEMPLATES, Lemmatizer, lemma_rule
from nlpipe.models.web_address import is_web_address
from nlpipe.train.linear_fit import FitOptions, build_model, feature_keys, fit, rows_for, vocabulary
from nlpipe.train.loop import Selection

# Templates of the FEATS pass in evaluation order: the word's own tag and form first (most words'
# features follow from them, so they stop early), then the context that decides agreement, case,
# mood and voice (the subject pronoun a word or two to the left, the auxiliary before a participle).
FEATS_TEMPLATES: Tuple[str, ...] = (
    "ptag@0", "lower@0+ptag@0", "s3@0+ptag@0", "lower@-1+ptag@0", "ptag@-1+ptag@0", "ptag@0+ptag@+1",
    "lower@-2+ptag@0", "ptag@-2+ptag@-1+ptag@0", "lower@+1+ptag@0", "ptag@-1+ptag@0+ptag@+1",
    "lower@0", "s1@0", "s2@0", "s3@0", "s4@0", "shape@0+ptag@0", "flags@0", "amb@0",
    "lower@-1", "lower@+1", "lower@-2", "ptag@-1", "ptag@+1", "ptag@-2", "ptag@+2",
    "ptag@-2+lower@-1+ptag@0", "bias",
)


@dataclass
class MorphSentence:
    forms: List[str]
    feats: List[str]
    lemmas: List[str]


def read_morph(path: str) -> List[MorphSentence]:
    """Forms, FEATS and LEMMA of every sentence with words (in the order ``read_tagged`` reads them)."""
    out = []
    for sent in read_file(path):
        if sent.words:
            out.append(MorphSentence([w[FORM] for w in sent.words], [w[FEATS] for w in sent.words],
                                     [w[LEMMA] for w in sent.words]))
    return out


def has_column(sentences: Sequence[MorphSentence], column: str) -> bool:
    """Whether the treebank fills ``column`` ("feats" or "lemmas") at all (not every word ``_``)."""
    return any(v != "_" for s in sentences for v in getattr(s, column))


def lexicons(forms: Sequence[str], tags: Sequence[str], lemmas: Sequence[str]) -> Tuple[Dict[str, str], Dict[str, str]]:
    """(``form<TAB>tag`` -> the most frequent lemma of that pair, for whole tags and for their first
    field alone (the UPOS of ``UPOS<TAB>XPOS``); no form-alone entries (an empty dict)).

    Every form is looked up with its tag, also one that always had the same lemma: with a tag it
    never had in training its lemma is the rule classifier's (a ``Holocaust`` tagged PROPN keeps its
    capital though train had it only as a NOUN, ``kidnapping`` as a NOUN stays ``kidnapping``).
    Lexicons of earlier models also gave a form with one lemma that lemma whatever its tag."""
    by_pair: Dict[str, Counter] = defaultdict(Counter)
    for f, t, l in zip(forms, tags, lemmas):
        if l != "_":
            by_pair[f + SEP + t][l] += 1
            if SEP in t:
                by_pair[f + SEP + t.split(SEP, 1)[0]][l] += 1
    return {k: c.most_common(1)[0][0] for k, c in by_pair.items()}, {}


def web_addresses_keep_form(forms: Sequence[str], lemmas: Sequence[str]) -> bool:
    """Whether the URLs and e-mail addresses of training are their own lemmas (nine in ten or more of
    those with a lemma; False without any)."""
    pairs = [(f, l) for f, l in zip(forms, lemmas) if l != "_" and is_web_address(f)]
    return bool(pairs) and sum(f == l for f, l in pairs) >= 0.9 * len(pairs)


KNOWN_BONUS = (0.0, 0.25, 0.5, 1.0, 2.0)   # candidates for the known-lemma bonus, chosen on dev


def train_lemmatizer(train: Sequence[MorphSentence], train_tags: Sequence[Sequence[str]],
                     gold_tags: Sequence[Sequence[str]], dev: Sequence[MorphSentence],
                     dev_tags: Sequence[Sequence[str]], tag_labels: Sequence[str], attributes: Attributes,
                     options: FitOptions, log: Callable[[str], None] = lambda s: None) -> Tuple[Lemmatizer, float]:
    """A lemmatizer and its dev accuracy (%, predicted tags): lexicons from the gold tags
    ``gold_tags`` of train; the rule classifier on the distinct (form, tag, rule) triples of train
    with the tags ``train_tags`` (jack-knifed), rules that rewrite the form (not whole-word
    replacements, which only the lexicon knows) seen with two forms or more."""
    t0 = time.time()
    forms = [f for s in train for f in s.forms]
    lemmas = [l for s in train for l in s.lemmas]
    by_pair, by_form = lexicons(forms, [t for s in gold_tags for t in s], lemmas)
    known = {l.lower() for l in lemmas if l != "_"}
    web = web_addresses_keep_form(forms, lemmas)
    tag_ids = {t: i for i, t in enumerate(tag_labels)}
    L1 = len(tag_labels)
    triples = sorted({(f, tag_ids.get(t, L1), lemma_rule(f, l)) for f, t, l in
                      zip(forms, (t for s in train_tags for t in s), lemmas) if l != "_"})
    triples = [x for x in triples if not x[2].startswith("=" + SEP)]
    forms_of = Counter(r for _, _, r in triples)
    labels = sorted(r for r, c in forms_of.items() if c >= 2)
    index = {r: i for i, r in enumerate(labels)}
    triples = [x for x in triples if x[2] in index]
    gold = np.array([index[r] for _, _, r in triples], dtype=np.int64)
    shell = build_model(labels, attributes, RULE_TEMPLATES, [np.zeros(0, np.int64)] * len(RULE_TEMPLATES), tag_labels)
    layout, atoms = shell.layout([[f] for f, _, _ in triples])      # each triple a one-word sentence
    first = np.array([t for _, t, _ in triples], dtype=np.int64)
    keys = feature_keys(RULE_TEMPLATES, attributes, layout, atoms, gold, len(labels), first, L1)
    tables = vocabulary(keys, options.min_count)
    rows = rows_for(keys, tables)
    del keys
    model = build_model(labels, attributes, RULE_TEMPLATES, tables, tag_labels)
    lemmatizer = Lemmatizer(by_pair, by_form, model, known, web_addresses=web)
    allowed = np.zeros((len(triples), len(labels)), dtype=bool)
    for i, (f, _, _) in enumerate(triples):
        allowed[i, lemmatizer.candidates(f)] = True
    log(f"{len(labels)} rules, {len(by_pair)} form+tag and {len(by_form)} form entries, "
        f"{len(triples)} distinct training words")

    dev_layout, dev_atoms = model.layout([s.forms for s in dev])
    dev_ids = model.first_ids(t for s in dev_tags for t in s)
    dev_first = dev_layout.scatter(dev_ids, L1)
    dev_forms = [f for s in dev for f in s.forms]
    dev_gold = [l for s in dev for l in s.lemmas]
    run = Selection("", "accuracy", options.epochs, log, start=t0)
    best: List[np.ndarray] = [w.copy() for w in model.weights]

    def accuracy() -> float:
        lemmatizer.clear_cache()        # the weights or the bonus changed since the last call
        pred = lemmatizer.lemmatize(dev_forms, dev_ids, dev_layout, dev_atoms, dev_first)
        scored = [(p, g) for p, g in zip(pred, dev_gold) if g != "_"]
        return 100 * sum(p == g for p, g in scored) / max(len(scored), 1)

    def on_epoch(epoch: int, loss: float) -> None:
        nonlocal best
        if run.record(epoch + 1, {"accuracy": accuracy()}, loss):
            best = [w.copy() for w in model.weights]

    fit(model.weights, rows, gold, allowed=allowed, on_epoch=on_epoch,
        **options.fit_options(mode="full"))  # type: ignore[arg-type]
    for w, b in zip(model.weights, best):
        w[...] = b
    model.compact()
    lemmatizer = Lemmatizer(by_pair, by_form, model, known, web_addresses=web)
    tried = {}
    for bonus in KNOWN_BONUS:
        lemmatizer.known_bonus = bonus
        tried[bonus] = accuracy()
    lemmatizer.known_bonus = max(tried, key=lambda b: (tried[b], -b))
    log(f"known-lemma bonus {lemmatizer.known_bonus} (dev accuracy by bonus: "
        f"{', '.join(f'{b}: {a:.2f}' for b, a in tried.items())})")
    score = tried[lemmatizer.known_bonus]
    lemmatizer.cased_variants = True
    with_variants = accuracy()
    lemmatizer.cased_variants = with_variants > score        # kept where it gains on dev
    log(f"lemmas of cased variants: dev {with_variants:.2f} against {score:.2f} without: "
        f"{'kept' if lemmatizer.cased_variants else 'not kept'}")
    return lemmatizer, max(score, with_variants)
