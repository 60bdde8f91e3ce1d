"""``nlpipe train pos --arch bilstm``: vocabularies, word vectors, the per-batch loss and the dev scorer
of :class:`~nlpipe.models.bilstm_tagger.TaggerModel` (its heads: the joint tag, the FEATS string where
the treebank has FEATS, the lemma rule with ``lemma_head``); the loop is
:class:`nlpipe.train.loop.Trainer`; then the lemmatizer, and where lemmas come from.

Adam with an exponential learning-rate decay per epoch, gradient clipping and a moving average of the
weights; after every epoch the dev file is tagged by the stage and the epoch with the best dev
score (UPOS + XPOS + UFeats, UFeats where the treebank has FEATS) is kept. A FEATS dictionary (the
linear tagger's: the FEATS a training form had) is chosen on dev, or none. The lemmatizer
(:func:`nlpipe.train.morph.train_lemmatizer`, the linear tagger's) learns its rules from the gold tags
of train (this tagger's own tags on its training data are nearly all right) and its known-lemma
bonus from this tagger's tags on dev. With a linear tagger given (``linear``), the weight of its
log-probabilities in the product of the two is chosen on dev first (:data:`LINEAR_WEIGHTS`; 0 leaves
it out), and the tagger is copied into the folder.
"""
from __future__ import annotations

import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, IO, List, Optional, Sequence

import numpy as np

from nlpipe.errors import NlpipeError
from nlpipe.io.conllu import UPOS, XPOS, read_file
from nlpipe.io.model_dir import UNDETERMINED, builds_model
from nlpipe.io.provenance import training_block
from nlpipe.linear.attributes import Attributes, ambiguity_classes
from nlpipe.linear.dictionary import dictionary_entries
from nlpipe.models.bilstm_tagger import (CHAR_FILTERS_WITHOUT_VECTORS, DEFAULT_HYPER, LEMMA_DIR, LEMMA_SOURCES,
                                         TaggerModel)
from nlpipe.models.lemmatizer import lemma_rule
from nlpipe.nn.batching import length_batches
from nlpipe.nn.device import resolve_device
from nlpipe.nn.precision import check_precision
from nlpipe.nn.features import affix_keys, word_key
from nlpipe.runtime.evaluate import strip_stage
from nlpipe.stages.pos import LABEL_SEP, PosTagger
from nlpipe.stages.pos_bilstm import BiLSTMPosTagger, LinearPrior
from nlpipe.train.feats_by_tag import choose_feats_by_tag, feats_by_tag_rows
from nlpipe.train.linear_fit import FitOptions
from nlpipe.train.loop import Trainer, seed_everything, stage_scores
from nlpipe.train.morph import MorphSentence, has_column, read_morph, train_lemmatizer
from nlpipe.train.pos import FEATS_DICTIONARY_COUNTS, read_tagged
from nlpipe.train.speed import record_speed
from nlpipe.train.vectors import load_vectors, record, vocabulary

MIN_WORD = 2     # training words seen fewer times share the unknown row of the trained word table
MIN_AFFIX = 2
MIN_CHAR = 2
MIN_RULE = 2     # lemma rules of the lemma head: those of this many training words or more
LINEAR_WEIGHTS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)   # of the linear tagger, tried on dev
LINEAR_DIR = "linear"


def build_vocab(forms: Sequence[str], tags: Sequence[str], feats: Sequence[str], rules: Sequence[str],
                vector_words: Sequence[str], top: int) -> Dict[str, List[str]]:
    """The vocabularies: trained words (keys seen :data:`MIN_WORD` times), vector words (the keys of
    the training words and of the ``top`` first ``vector_words`` that have a vector), affixes,
    characters, the joint tags, the FEATS strings (``feats`` empty: no FEATS head) and the lemma rules
    (``rules``, one a word; empty: no lemma head)."""
    counts = Counter(word_key(f) for f in forms)
    with_vector = {word_key(w) for w in vector_words}
    affixes = Counter(a for f in set(forms) for a in affix_keys(f))
    chars = Counter(c for f in forms for c in f)
    return {"words": sorted(k for k, c in counts.items() if c >= MIN_WORD),
            "vectors": [k for k in vocabulary(forms, vector_words, top) if k in with_vector],
            "affixes": sorted(a for a, c in affixes.items() if c >= MIN_AFFIX),
            "chars": sorted(ch for ch, c in chars.items() if c >= MIN_CHAR),
            "tags": sorted(set(tags)), "feats": sorted(set(feats)),
            "lemmas": sorted(r for r, c in Counter(rules).items() if c >= MIN_RULE)}


def vector_matrix(keys: Sequence[str], vector_words: Sequence[str], matrix: np.ndarray, dim: int) -> np.ndarray:
    """``[2 + len(keys), dim]`` rows of the vector table (padding and unknown rows zero): each key's
    vector, from the first (most frequent) spelling of the vectors with that key."""
    index: Dict[str, int] = {}
    for i, w in enumerate(vector_words):
        index.setdefault(word_key(w), i)
    out = np.zeros((2 + len(keys), dim), dtype=np.float32)
    if keys:
        out[2:] = matrix[[index[k] for k in keys]]
    return out


def dev_scores(model: TaggerModel, gold: List[Any], lemmatizer: Any = None, lemma_from: str = "lemmatizer"
               ) -> Dict[str, float]:
    """UPOS, XPOS (UFeats, AllTags, Lemmas where the model writes them) of the stage on gold sentences."""
    stage = BiLSTMPosTagger(model, lemmatizer, workers=1, lemma_from=lemma_from)
    r = stage_scores(stage, "pos", gold)
    names = ("upos", "xpos") + (("ufeats", "alltags") if model.labels["feats"] else ()) + \
        (("lemmas",) if "lemma" in stage.provides else ())
    return {k: round(r[k], 2) for k in names if k in r}


class TaggerTrainer(Trainer):
    """The tagger's batches, loss and dev scores."""

    name, key, shown = "pos", "UPOS+XPOS+UFeats", ("upos", "xpos", "ufeats")

    def __init__(self, model: TaggerModel, forms: List[List[str]], gold: List[Dict[str, List[str]]],
                 dev: List[Any], batch_tokens: int):
        self.model, self.net = model, model.net
        self.forms, self.gold, self.dev, self.batch_tokens = forms, gold, dev, batch_tokens
        self.shown = tuple(k for k in ("upos", "xpos", "ufeats") if k != "ufeats" or model.labels["feats"])

    def batches(self, rng: Any) -> List[List[int]]:
        return length_batches([len(f) for f in self.forms], self.batch_tokens, rng)

    def loss(self, batch: List[int]) -> Any:
        a = self.model.arrays([self.forms[i] for i in batch])
        a.update(self.model.label_arrays([self.gold[i] for i in batch], a["mask"].shape[1]))
        t = self.model.tensors(a)
        return self.net.loss(self.net(t), {k: t[k] for k in self.net.heads}, t["mask"])

    def value(self, scores: Dict[str, float]) -> float:
        return scores["upos"] + scores["xpos"] + scores.get("ufeats", 0.0)

    def dev_scores(self) -> Dict[str, float]:
        return dev_scores(self.model, self.dev)


def _joint(tagged: Sequence[Any]) -> List[List[str]]:
    return [list(s[1]) for s in tagged]


@builds_model("out_dir")
def train(train_path: str, dev_path: str, out_dir: str, epochs: int = 80, max_minutes: Optional[float] = None,
          batch_tokens: int = 1000, lr: float = 2e-3, decay: float = 0.95, seed: int = 1, threads: int = 1,
          device: str = "cpu", vectors: Optional[str] = None, glove_words_file: Optional[str] = None,
          glove_vectors_file: Optional[str] = None, glove_top: int = 40000, hyper: Optional[Dict[str, Any]] = None,
          ema: float = 0.999, patience: Optional[int] = 10, morph: Optional[bool] = None,
          linear: Optional[str] = None, log: IO[str] = sys.stderr, lang: str = UNDETERMINED,
          precision: str = "fp32") -> Dict[str, Any]:
    """Train the BiLSTM tagger; keep the best dev epoch in ``out_dir``; return a summary.

    ``vectors``, ``glove_words_file``, ``glove_vectors_file``: as
    :func:`~nlpipe.train.vectors.load_vectors` takes them (default: GloVe 6B 50d for English ``lang``,
    none otherwise); ``glove_top``: most frequent vector words kept besides the training words.
    ``linear``: a linear tagger (folder or shipped name) whose weight in the product of the two
    taggers is chosen on dev (see the module's docstring).
    ``morph``: a FEATS head and a lemmatizer for the columns the training file fills (None: those it
    fills; False: neither). Training stops after ``epochs``, after ``patience`` epochs without a
    better dev score, or before passing ``max_minutes``. ``precision``: fp32 or bf16
    (:mod:`nlpipe.nn.precision`).
    """
    import torch

    from nlpipe.train.optim import adam

    def say(msg: str) -> None:
        log.write(msg + "\n")
        log.flush()

    start = time.time()
    device = resolve_device(device)
    check_precision(precision, device, say)
    linear_dir, linear_stage = _linear_tagger(linear) if linear else (None, None)
    rng = seed_everything(seed, threads)
    tagged, morph_train = read_tagged(train_path), read_morph(train_path)
    dev_sents = [s for s in read_file(dev_path) if s.words]
    read_tagged(dev_path)           # the dev file needs tags too
    columns = [c for c in ("feats", "lemmas") if has_column(morph_train, c)] if morph is not False else []
    forms = [s[0] for s in tagged]
    flat = [f for s in forms for f in s]
    vecs = load_vectors(vectors, lang, flat, glove_top, glove_words_file, glove_vectors_file, say)
    vector_words, matrix = (vecs.words, vecs.matrix) if vecs is not None else ([], np.zeros((0, 0), np.float32))
    given = hyper or {}
    hyper = dict(DEFAULT_HYPER, **given, vector_dim=0 if vecs is None else vecs.dim)
    if given.get("char_filters") is None:
        hyper["char_filters"] = CHAR_FILTERS_WITHOUT_VECTORS if vecs is None else 0
    if not hyper["char_filters"]:
        hyper["char_dim"] = 0
    rules = [[lemma_rule(f, l) if l != "_" else "" for f, l in zip(m.forms, m.lemmas)] for m in morph_train] \
        if "lemmas" in columns and hyper["lemma_head"] else [[] for _ in morph_train]
    vocab = build_vocab(flat, [t for s in tagged for t in s[1]],
                        [f for s in morph_train for f in s.feats] if "feats" in columns else [],
                        [r for s in rules for r in s if r], vector_words, glove_top)
    model = TaggerModel(vocab, hyper, device)
    if linear_stage is not None:
        try:
            LinearPrior(linear_stage, model.labels["tags"], 1.0)
        except ValueError as e:
            raise NlpipeError(f"--linear {linear}: {e}") from None
    if vecs is not None:
        model.net.set_vectors(vector_matrix(vocab["vectors"], vector_words, matrix, vecs.dim))
    source = record(vecs, top=glove_top)
    del vecs, matrix, vector_words
    gold = [{"tags": s[1], "feats": m.feats, "lemmas": r} for s, m, r in zip(tagged, morph_train, rules)]
    n_params = sum(p.numel() for p in model.net.parameters() if p.requires_grad)
    say(f"pos: {len(tagged)} training sentences, {len(vocab['words'])} words, {len(vocab['vectors'])} with vectors, "
        f"{len(vocab['tags'])} tags, {len(vocab['feats'])} FEATS, {len(vocab['lemmas'])} lemma rules, "
        f"{n_params} trained parameters")
    opt = adam([p for p in model.net.parameters() if p.requires_grad], lr=lr, betas=(0.9, 0.9))
    trainer = TaggerTrainer(model, forms, gold, dev_sents, batch_tokens)
    run = trainer.fit(opt, epochs, rng, say, clip=5.0, ema=ema, ema_warmup=bool(ema), patience=patience,
                      max_minutes=max_minutes, start=start, precision=precision,
                      scheduler=torch.optim.lr_scheduler.ExponentialLR(opt, decay))
    weight = 0.0
    if linear_stage is not None:
        weight = choose_linear_weight(model, linear_stage, dev_sents, say)
        if weight:
            shutil.copytree(linear_dir, Path(out_dir) / LINEAR_DIR)
    feats_dictionary = feats_by_tag = None
    if "feats" in columns:
        pairs = [(f, x) for s in morph_train for f, x in zip(s.forms, s.feats)]
        feats_dictionary = choose_feats_dictionary(model, pairs, dev_sents, say)
        rows = feats_by_tag_rows((t, x) for s, m in zip(tagged, morph_train) for t, x in zip(s[1], m.feats))
        feats_by_tag = choose_feats_by_tag(model, rows, lambda: dev_scores(model, dev_sents), say)
    lemmatizer = lemma_from = None
    if "lemmas" in columns:
        lemmatizer = _train_lemmatizer(model, tagged, morph_train, dev_sents, dev_path, seed, say)
        lemmatizer.save(Path(out_dir) / LEMMA_DIR)
        lemma_from = choose_lemma_source(model, lemmatizer, dev_sents, say)
    scores = dev_scores(model, dev_sents, lemmatizer, lemma_from or "lemmatizer")
    say("pos: dev " + " ".join(f"{k} {v:.2f}" for k, v in scores.items()))
    training = training_block({"train": train_path, "dev": dev_path}, scores, seed=seed, epochs_run=len(run.history),
                              best_epoch=run.best_epoch, minutes=round(run.minutes, 1), ema=ema or None,
                              batch_tokens=batch_tokens, lr=lr, decay=decay, threads=threads,
                              precision=precision,
                              vectors=source, feats_dictionary=feats_dictionary, feats_by_tag=feats_by_tag,
                              linear=str(linear) if linear else None, linear_weight=weight if linear else None,
                              history=run.history)
    model.save(Path(out_dir), training, lang, LEMMA_DIR if lemmatizer is not None else None, lemma_from,
               {"dir": LINEAR_DIR, "weight": weight} if weight else None)
    speed = record_speed("pos", Path(out_dir), dev_sents)
    say(f"pos: speed {speed['words_per_cpu_second']} words per CPU second")
    return {"best": dict(run.best, **scores), "minutes": round(run.minutes, 1), "model": str(out_dir)}


def _linear_tagger(name: str) -> Any:
    """(folder, stage) of the linear tagger ``name`` (a folder or a shipped model's name)."""
    from nlpipe.registry import load_stage, resolve_model

    folder = resolve_model("pos", name)
    stage = load_stage("pos", str(folder))
    if not isinstance(stage, PosTagger):
        raise NlpipeError(f"--linear {name}: not a linear tagger (nlpipe train pos --arch dfs)")
    return folder, stage


def choose_linear_weight(model: TaggerModel, linear: PosTagger, dev_sents: List[Any], say: Any) -> float:
    """Leave in ``model`` the product with ``linear`` whose weight of :data:`LINEAR_WEIGHTS` has the
    best dev UPOS + XPOS (ties: the smaller weight); returns the weight (0: none, no product)."""
    found = {}
    for weight in LINEAR_WEIGHTS:
        model.tag_prior = LinearPrior(linear, model.labels["tags"], weight) if weight else None
        scores = dev_scores(model, dev_sents)
        found[weight] = scores["upos"] + scores["xpos"]
    say("linear: dev UPOS + XPOS by the linear tagger's weight: " +
        ", ".join(f"{w:g} {v:.2f}" for w, v in found.items()))
    best = max(LINEAR_WEIGHTS, key=lambda w: (found[w], -w))
    model.tag_prior = LinearPrior(linear, model.labels["tags"], best) if best else None
    return best


def choose_feats_dictionary(model: TaggerModel, pairs: Sequence[Any], dev_sents: List[Any], say: Any
                            ) -> Optional[int]:
    """Leave in ``model`` the FEATS dictionary of :data:`~nlpipe.train.pos.FEATS_DICTIONARY_COUNTS`
    (forms seen that many times in training, from ``pairs`` of form and FEATS; None: none) with the
    best dev UFeats (ties: no dictionary, else the larger count, the smaller dictionary); returns the count."""
    def use(count: Optional[int]) -> None:
        model.set_feats_dictionary([] if count is None else
                                   [[w, *labels] for w, labels in sorted(dictionary_entries(pairs, count).items())])

    found = {}
    for count in FEATS_DICTIONARY_COUNTS:
        use(count)
        found[count] = dev_scores(model, dev_sents)["ufeats"]
    say("feats: dev UFeats by dictionary (forms seen N+ times): " +
        ", ".join(f"{'none' if c is None else c} {v:.2f}" for c, v in found.items()))
    best = max(found, key=lambda c: (found[c], c is None, c or 0))
    use(best)
    return best


def choose_lemma_source(model: TaggerModel, lemmatizer: Any, dev_sents: List[Any], say: Any) -> str:
    """The source of :data:`~nlpipe.models.bilstm_tagger.LEMMA_SOURCES` with the best dev Lemmas
    (ties: the first)."""
    if not model.labels["lemmas"]:
        return "lemmatizer"
    found = {}
    for source in LEMMA_SOURCES:
        found[source] = dev_scores(model, dev_sents, lemmatizer, source)["lemmas"]
    say("lemmas: dev by source: " + ", ".join(f"{k} {v:.2f}" for k, v in found.items()))
    return max(LEMMA_SOURCES, key=lambda k: (found[k], -LEMMA_SOURCES.index(k)))


def _train_lemmatizer(model: TaggerModel, tagged: Sequence[Any], morph_train: Sequence[MorphSentence],
                      dev_sents: List[Any], dev_path: str, seed: int, say: Any) -> Any:
    """The lemmatizer of :func:`nlpipe.train.morph.train_lemmatizer` over this tagger's labels: word
    attributes and ambiguity classes of the training words, gold train tags, the tagger's dev tags."""
    forms = [f for s in tagged for f in s[0]]
    amb = ambiguity_classes((f, a) for s in tagged for f, a in zip(s[0], s[2]))
    attributes = Attributes.build(forms, amb)
    dev_pred = list(BiLSTMPosTagger(model, workers=1).annotate(strip_stage("pos", dev_sents)))
    dev_tags = [[w[UPOS] + LABEL_SEP + w[XPOS] for w in s.words] for s in dev_pred]
    morph_dev = read_morph(dev_path)
    lemmatizer, _ = train_lemmatizer(morph_train, _joint(tagged), _joint(tagged), morph_dev, dev_tags,
                                     model.labels["tags"], attributes, FitOptions(l2=0.3, seed=seed),
                                     log=lambda m: say(f"lemmas: {m}"))
    return lemmatizer
