"""End-to-end training of a dynamic-feature-selection tagger from tagged sentences.

Steps: attribute vocabularies and ambiguity classes from the training data, feature keys with gold
tag history, key tables (features seen ``min_count`` times), the template order (given, baseline
or wrapper), then :func:`fit` in one of three modes:

- ``dynamic``: all templates, prefix hinge loss (the model for dynamic feature selection);
- ``full``: all templates, hinge loss on the full score only;
- ``fixed``: the first ``n`` templates of the order, trained like ``full``.

The epoch with the best dev accuracy is kept (:class:`nlpipe.train.loop.Selection`). Below
:func:`train_tagger`: ``nlpipe train pos`` itself (:func:`train_model`: reading the data, word
clusters, the jack-knifed first pass of a two-pass model, dev scores through the stage, saving).
"""
from __future__ import annotations

import shutil
import time
from copy import deepcopy
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.errors import InputError, NlpipeError
from nlpipe.io.conllu import FORM, UPOS, XPOS, read_file
from nlpipe.io.model_dir import UNDETERMINED, builds_model, read_config, write_config
from nlpipe.train.calibrate import pos_scales
from nlpipe.io.provenance import training_block
from nlpipe.metrics import universal_feats
from nlpipe.linear.attributes import Attributes, ambiguity_classes
from nlpipe.linear.clusters import Clusters
from nlpipe.linear.dictionary import LabelDictionary, dictionary_entries
from nlpipe.linear.dfs import checkpoint_schedule, tag, tag_sentences
from nlpipe.linear.model import TemplatedModel
from nlpipe.linear.templates import DEFAULT_TEMPLATES, parse_template, second_pass_order, uses_clusters
from nlpipe.stages.pos import ARCH, LABEL_SEP, PosTagger, load as load_pos
from nlpipe.train.linear_fit import FitOptions, build_model, feature_keys, fit, rows_for, vocabulary
from nlpipe.models.lemmatizer import Lemmatizer
from nlpipe.train.loop import Selection, stage_scores
from nlpipe.train.morph import FEATS_TEMPLATES, has_column, read_morph, train_lemmatizer
from nlpipe.train.speed import measure_speed
from nlpipe.train.template_order import OrderingData, baseline_order, wrapper_order
from nlpipe.train.vectors import clusters as vector_clusters, load_vectors, record

# A tagged sentence: forms, labels to predict, and the tags that define ambiguity classes.
TaggedSentence = Tuple[List[str], List[str], List[str]]


@dataclass
class TrainOptions(FitOptions):
    """Hyper-parameters of tagger training (saved in the model's config)."""

    l2: float = 0.3
    fixed_n: Optional[int] = None
    order: str = "wrapper"               # wrapper | baseline | given
    wrapper_steps: int = 10
    wrapper_sample: int = 30000          # training tokens for ordering runs
    wrapper_dev_sample: int = 8000       # dev tokens for ordering runs
    wrapper_epochs: int = 2
    templates: List[str] = field(default_factory=lambda: list(DEFAULT_TEMPLATES))

    def fit_mode(self) -> str:
        return "full" if self.mode == "fixed" else self.mode


@dataclass
class TrainResult:
    model: TemplatedModel
    dev_accuracy: float
    order_curve: List[float]
    seconds: float
    options: TrainOptions
    best_epoch: int = 0

    def summary(self) -> Dict[str, object]:
        return {"dev_accuracy": round(100 * self.dev_accuracy, 2), "best_epoch": self.best_epoch, "order_curve":
                [round(100 * x, 2) for x in self.order_curve], "seconds": round(self.seconds, 1),
                "options": asdict(self.options)}


def _flatten(sentences: Sequence[TaggedSentence], label_ids: Dict[str, int]) -> Tuple[List[List[str]], np.ndarray]:
    forms = [list(s[0]) for s in sentences]
    gold = np.array([label_ids.get(l, -1) for s in sentences for l in s[1]], dtype=np.int64)
    return forms, gold


def _sample_sentences(n_tokens: int, lengths: Sequence[int], rng: np.random.Generator) -> List[int]:
    """Random sentence indices with about ``n_tokens`` tokens in all (sorted)."""
    order = rng.permutation(len(lengths))
    cum = np.cumsum(np.asarray(lengths)[order])
    return sorted(order[: int(np.searchsorted(cum, n_tokens)) + 1].tolist())


def train_tagger(train: Sequence[TaggedSentence], dev: Sequence[TaggedSentence], options: TrainOptions,
                 order: Optional[Sequence[str]] = None,
                 log: Callable[[str], None] = lambda s: None, clusters: Optional[Clusters] = None,
                 first: Optional[Tuple[Sequence[Sequence[str]], Sequence[Sequence[str]]]] = None,
                 first_labels: Optional[Sequence[str]] = None,
                 runs_at: Optional[Tuple[Optional[float], Optional[str]]] = None) -> TrainResult:
    """Train a tagger; ``order`` (template names) overrides the ordering search; ``clusters`` is the
    word-cluster table the cluster attributes read (without it they are always unknown).
    ``first``: the labels a first tagging pass predicted for every train and dev sentence (for the
    ``ptag`` templates of a second pass; the train ones should come from models that did not see
    the sentence, e.g. jackknifing); ``first_labels``: the label set of that pass when it is not
    this model's (a morphology pass reading the POS tags). ``runs_at``: the (margin, checkpoint
    schedule) the model will run with, at which the best dev epoch is chosen (default: a dynamic
    model at the training margin, tested after every template; other modes with every template)."""
    t0 = time.time()
    if not train:
        raise ValueError("no training sentences")
    if options.mode not in ("dynamic", "full", "fixed"):
        raise ValueError(f"unknown mode {options.mode!r} (dynamic, full or fixed)")
    templates = list(order) if order is not None else list(options.templates)
    for t in templates:
        parse_template(t)
    labels = sorted({l for s in train for l in s[1]})
    label_ids = {l: i for i, l in enumerate(labels)}
    amb = ambiguity_classes((f, a) for s in train for f, a in zip(s[0], s[2]))
    attributes = Attributes.build((f for s in train for f in s[0]), amb, clusters)

    forms, gold = _flatten(train, label_ids)
    shell = build_model(labels, attributes, templates, [np.zeros(0, np.int64)] * len(templates), first_labels)
    layout, atoms = shell.layout(forms)
    first_train = first_dev = None
    if first is not None:
        first_train, first_dev = (shell.first_ids(l for s in f for l in s) for f in first)
        if len(first_train) != len(gold):
            raise ValueError("first-pass labels do not match the training tokens")
    keys = feature_keys(templates, attributes, layout, atoms, gold, len(labels), first_train, shell.first_size)
    tables = vocabulary(keys, options.min_count)
    rows = rows_for(keys, tables)
    del keys
    candidates = build_model(labels, attributes, templates, tables, first_labels)
    log(f"{len(forms)} sentences, {len(gold)} tokens, {len(labels)} labels, {len(templates)} templates, "
        f"{sum(len(t) for t in tables)} features")

    dev_forms, dev_gold = _flatten(dev, label_ids)
    dev_layout, dev_atoms = candidates.layout(dev_forms)
    dev_first = None if first_dev is None else dev_layout.scatter(first_dev, shell.first_size)

    curve: List[float] = []
    index = list(range(len(templates)))
    if first is not None and order is None and options.order != "given":
        raise ValueError("a second pass is trained with --order given (no ordering search)")
    if order is None and options.order != "given":
        rng = np.random.default_rng(options.seed)
        tr = _sample_sentences(options.wrapper_sample, [len(s) for s in forms], rng)
        first = np.concatenate([[0], np.cumsum([len(s) for s in forms])])
        tok = np.concatenate([np.arange(first[i], first[i + 1]) for i in tr])
        dv = _sample_sentences(options.wrapper_dev_sample, [len(s) for s in dev_forms], rng)
        dl, da = candidates.layout([dev_forms[i] for i in dv])
        dfirst = np.concatenate([[0], np.cumsum([len(s) for s in dev_forms])])
        dg = np.concatenate([dev_gold[dfirst[i]:dfirst[i + 1]] for i in dv])
        data = OrderingData(candidates, rows[tok], gold[tok], dl, da, dg)
        fo = options.fit_options(epochs=options.wrapper_epochs)
        if options.order == "wrapper":
            index, curve = wrapper_order(data, fo, options.wrapper_steps, log)
        elif options.order == "baseline":
            index, curve = baseline_order(data, fo, log)
        else:
            raise ValueError(f"unknown ordering {options.order!r} (wrapper, baseline or given)")
    if options.mode == "fixed":
        if not options.fixed_n or options.fixed_n < 1:
            raise ValueError("mode 'fixed' needs n >= 1 templates")
        index = index[: options.fixed_n]

    model = candidates.subset(index)
    model.weights = [w.copy() for w in model.weights]
    sub_rows = np.ascontiguousarray(rows[:, index])

    # A model is judged as it is meant to run (a dynamic one stopping at its margin).
    dev_margin, dev_checkpoints = options.margin if options.mode == "dynamic" else None, None
    if runs_at is not None and options.mode == "dynamic":
        dev_margin, dev_checkpoints = runs_at[0], checkpoint_schedule(runs_at[1])

    run = Selection("", "accuracy", options.epochs, log, start=t0)
    best_weights: List[np.ndarray] = []

    def on_epoch(epoch: int, loss: float) -> None:
        nonlocal best_weights
        pred, used = tag(model, dev_layout, dev_atoms, dev_margin, None, dev_checkpoints, first=dev_first)
        accuracy = 100 * float(np.mean(pred == dev_gold)) if len(dev_gold) else 0.0
        if run.record(epoch + 1, {"accuracy": accuracy, "templates": float(used.mean())}, loss):
            best_weights = [w.copy() for w in model.weights]

    fit(model.weights, sub_rows, gold, on_epoch=on_epoch, **options.fit_options())  # type: ignore[arg-type]
    for w, kept in zip(model.weights, best_weights):    # the best dev epoch's weights
        w[...] = kept
    model.compact()
    pred, _ = tag(model, dev_layout, dev_atoms, dev_margin, None, dev_checkpoints, first=dev_first)
    acc = float(np.mean(pred == dev_gold)) if len(dev_gold) else 0.0
    return TrainResult(model, acc, curve, time.time() - t0, options, run.best_epoch)


# ---------------------------------------------------------------------------------------------
# `nlpipe train pos`: data, dev scores through the stage, the two-pass jackknife, saving

def read_tagged(path: str) -> List[tuple]:
    """(forms, joint labels, XPOS) per sentence of a CoNLL-U file with UPOS and XPOS (a treebank
    without XPOS: ``_``, and UPOS in the third place, for the ambiguity classes)."""
    out = []
    for sent in read_file(path):
        forms, labels, xpos = [], [], []
        for w in sent.words:
            if w[UPOS] == "_" and w[XPOS] == "_":
                raise InputError(path, sent.line_of(w), "word without UPOS/XPOS in training data")
            forms.append(w[FORM])
            labels.append(w[UPOS] + LABEL_SEP + w[XPOS])
            xpos.append(w[UPOS] if w[XPOS] == "_" else w[XPOS])
        if forms:
            out.append((forms, labels, xpos))
    if not out:
        raise NlpipeError(f"{path}: no tagged sentences")
    return out


def read_templates(path: str) -> List[str]:
    """Template specs from a file, one per line (blank lines and ``#`` comments skipped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise NlpipeError(f"{path}: cannot read templates ({e.strerror})") from None
    out = []
    for n, line in enumerate(lines, 1):
        spec = line.split("#", 1)[0].strip()
        if spec:
            try:
                parse_template(spec)
            except ValueError as e:
                raise InputError(path, n, str(e)) from None
            out.append(spec)
    if not out:
        raise NlpipeError(f"{path}: no templates")
    return out


def dev_scores(model: TemplatedModel, dev: str, margin: Optional[float],
               checkpoints: Optional[str] = None, second: Optional[TemplatedModel] = None,
               first_margin: Optional[float] = None, first_checkpoints: Optional[str] = None,
               feats: Optional[TemplatedModel] = None, lemmatizer: Optional[Lemmatizer] = None,
               feats_margin: Optional[float] = None) -> Dict[str, float]:
    """UPOS/XPOS (and UFeats, AllTags, Lemmas with a morphology) accuracy of ``model`` (with its
    ``second`` pass) at ``margin`` on the dev file (nlpipe.runtime.evaluate scoring)."""
    tagger = PosTagger(model, margin, checkpoints=checkpoints, second=second, first_margin=first_margin,
                       first_checkpoints=first_checkpoints, feats=feats, lemmatizer=lemmatizer, feats_margin=feats_margin)
    r = stage_scores(tagger, "pos", list(read_file(dev)), gold_path=dev)
    names = ("upos", "xpos") + (("ufeats", "alltags") if feats is not None else ()) + \
        (("lemmas",) if lemmatizer is not None else ())
    return {name: round(r[name], 2) for name in names if name in r}


FEATS_MARGINS = (0.5, 0.75, 1.0, None)     # the FEATS pass's margins tried on dev (None: every template)
# the FEATS dictionary's minimum training counts tried on dev (None: no dictionary): a form seen that
# often may only get the FEATS it had in train (fr_sequoia dev UFeats 95.52 -> 96.39 with 1, where
# a noun's gender is in the dictionary; en_ewt dev 95.62 -> 95.22, where a form's FEATS follow its tag)
FEATS_DICTIONARY_COUNTS = (None, 1, 2, 3, 5)


def choose_feats_margin(model: TemplatedModel, dev: Sequence[Any], dev_tags: Sequence[Sequence[str]],
                        checkpoints: Optional[str], log: Callable[[str], None] = lambda s: None,
                        train: Sequence[Any] = ()) -> Optional[float]:
    """The margin of :data:`FEATS_MARGINS` and the dictionary of :data:`FEATS_DICTIONARY_COUNTS`
    (built from ``train``, sentences with ``forms`` and ``feats``; none without them) at which the
    FEATS pass scores best on dev (UFeats, universal features as the UD scorer counts them; ties: no
    dictionary, else the smaller one (the larger count), then the smaller margin, the faster).
    Leaves the chosen dictionary in ``model.dictionary`` and returns the margin."""
    layout, atoms = model.layout([s.forms for s in dev])
    first = layout.scatter(model.first_ids(t for s in dev_tags for t in s), model.first_size)
    gold = [universal_feats(f) for s in dev for f in s.feats]
    pairs = [(f, x) for s in train for f, x in zip(s.forms, s.feats)]
    dictionaries = {c: None if c is None else LabelDictionary(dictionary_entries(pairs, c), model.labels,
                                                              model.attributes, c)
                    for c in (FEATS_DICTIONARY_COUNTS if pairs else (None,))}
    found = {}
    for c, dictionary in dictionaries.items():
        model.dictionary = dictionary
        for m in FEATS_MARGINS:
            pred, used = tag(model, layout, atoms, m, None, checkpoint_schedule(checkpoints), first=first)
            found[c, m] = 100 * float(np.mean([universal_feats(model.labels[p]) == g
                                               for p, g in zip(pred.tolist(), gold)]))
            log(f"feats: dictionary {'none' if c is None else f'of forms seen {c}+ times'}, margin {m}: "
                f"dev UFeats {found[c, m]:.2f}, {used.mean():.1f} templates a word")
    c, m = max(found, key=lambda cm: (found[cm], cm[0] if cm[0] is not None else 1e9,
                                      -(cm[1] if cm[1] is not None else 1e9)))
    model.dictionary = dictionaries[c]
    return m


def _labels_of(tagger: PosTagger, path: str) -> List[List[str]]:
    """The joint labels ``tagger`` gives every sentence with words of a CoNLL-U file."""
    sents = [s for s in read_file(path) if s.words]
    tagger.tag_batch(sents)
    return [[w[UPOS] + LABEL_SEP + w[XPOS] for w in s.words] for s in sents]


def _feats_options(options: Any) -> Any:
    """The options of the FEATS pass: the tagger's, except features seen 3 times or more (2 gave
    EWT a half more features and no better dev UFeats)."""
    opts = _given(options)
    opts.min_count = max(opts.min_count, 3)
    return opts


def _given(options: Any) -> Any:
    """A copy of the options that trains on a given template order."""
    opts = deepcopy(options)
    opts.order = "given"
    return opts


SECOND_DIR = "second"
MORPH_DIR = "morph"
FEATS_DIR = MORPH_DIR + "/feats"
LEMMA_DIR = MORPH_DIR + "/lemma"


def jackknife(train_data: List[tuple], dev_data: List[tuple], options: Any, order: List[str], folds: int,
              margin: Optional[float], checkpoints: Optional[str], clusters: Any, log=lambda s: None) -> List[List[str]]:
    """First-pass labels of every training sentence from ``folds`` models, each trained like the
    first pass on the other folds (so the second pass learns from first-pass errors as they occur
    on unseen text) and run at ``margin``/``checkpoints``."""
    if folds < 2:
        raise ValueError("jackknifing needs at least 2 folds")
    out: List[Optional[List[str]]] = [None] * len(train_data)
    for k in range(folds):
        held = [i for i in range(len(train_data)) if i % folds == k]
        rest = [train_data[i] for i in range(len(train_data)) if i % folds != k]
        r = train_tagger(rest, dev_data, _given(options), order=order, clusters=clusters, runs_at=(margin, checkpoints),
                         log=lambda m, k=k: log(f"fold {k + 1}/{folds}: {m}"))
        labels, _ = tag_sentences(r.model, [train_data[i][0] for i in held], margin,
                                  checkpoints=checkpoint_schedule(checkpoints))
        for i, l in zip(held, labels):
            out[i] = l
    return out  # type: ignore[return-value]


@builds_model("out")
def train_model(train: str, dev: str, out: str, options: Any, order_from: Optional[str] = None,
                margin: Optional[float] = None, log=lambda s: None, clusters: bool = True,
                vectors: Optional[str] = None, glove_words: Optional[str] = None, glove_top: int = 100000,
                glove_vectors: Optional[str] = None, checkpoints: Optional[str] = None,
                two_pass: bool = False, folds: int = 2, prune: float = 1e-3, first_margin: Optional[float] = None,
                first_checkpoints: Optional[str] = None, lang: str = UNDETERMINED,
                morph: Optional[bool] = None) -> Dict[str, Any]:
    """Train and save a tagger; return the config written (``lang``: the training data's language
    code). ``clusters``: build word clusters
    from the word vectors (``vectors``, ``glove_words``, ``glove_vectors``: as
    :func:`~nlpipe.train.vectors.load_vectors` takes them; without vectors, or without ``clusters``,
    the templates that read clusters are dropped). ``two_pass`` adds a second pass
    (templates of the first plus ``FIRST_PASS_TEMPLATES`` in the order of
    :func:`~nlpipe.linear.templates.second_pass_order`, trained the same way on first-pass
    labels jackknifed over ``folds`` folds) saved in ``second/``. ``prune``: weights smaller than
    this are left out of the saved model(s) (the fold models of the jackknife keep the default).
    ``first_margin``/``first_checkpoints``: the first pass's own defaults (saved in the config; the
    jackknifed first-pass tags are made with them). ``morph``: also train the FEATS pass and the
    lemmatizer (:mod:`nlpipe.train.morph`; None: for the columns the training file fills), saved in
    ``morph/``; their training tags are the jack-knifed first pass's. ``margin``: the model's
    tagging margin (None: the training margin in dynamic mode, every template otherwise; negative:
    every template)."""
    if margin is None and options.mode == "dynamic":
        # trained on the prefixes up to where the margin holds: with every template, a dynamic
        # model tags worse (fr_sequoia dev UPOS 95.84, against 97.41 at its training margin)
        margin = options.margin
    train_data, dev_data = read_tagged(train), read_tagged(dev)
    morph_train, morph_dev = read_morph(train), read_morph(dev)
    columns = [c for c in ("feats", "lemmas") if has_column(morph_train, c)] if morph is not False else []
    if morph and not columns:
        raise NlpipeError(f"{train}: --morph given but no word has FEATS or LEMMA")
    order = None
    if order_from is not None:
        order = TemplatedModel.load(Path(order_from)).template_names
        read_config(Path(order_from), "pos")
    table = vecs = None
    if clusters and any(map(uses_clusters, order if order is not None else options.templates)):
        forms = [f for s in train_data for f in s[0]]
        vecs = load_vectors(vectors, lang, forms, glove_top, glove_words, glove_vectors, log)
        table = None if vecs is None else vector_clusters(forms, vecs, glove_top, log)
    if table is None:
        if order is not None:
            order = [t for t in order if not uses_clusters(t)]
        options.templates = [t for t in options.templates if not uses_clusters(t)]
    m1 = margin if first_margin is None else first_margin
    c1 = checkpoints if first_checkpoints is None else first_checkpoints
    result = train_tagger(train_data, dev_data, options, order=order, log=log, clusters=table, runs_at=(m1, c1))
    second = None
    first_order = result.model.template_names
    first_train = None
    if two_pass or columns:
        first_train = jackknife(train_data, dev_data, options, first_order, folds, m1, c1, table, log)
    if two_pass:
        first_dev, _ = tag_sentences(result.model, [s[0] for s in dev_data], m1,
                                     checkpoints=checkpoint_schedule(c1))
        second_result = train_tagger(train_data, dev_data, _given(options), order=second_pass_order(first_order),
                                     log=lambda m: log(f"second pass: {m}"), clusters=table,
                                     first=(first_train, first_dev), runs_at=(margin, checkpoints))
        second = second_result.model
    final = second if second is not None else result.model
    feats_model = lemmatizer = feats_margin = None
    if columns:
        dev_tags = _labels_of(PosTagger(result.model, margin, checkpoints=checkpoints, second=second,
                                        first_margin=first_margin, first_checkpoints=first_checkpoints), dev)
        gold_tags = [s[1] for s in train_data]
        if "feats" in columns:
            fr = train_tagger([(s.forms, s.feats, list(t[2])) for s, t in zip(morph_train, train_data)],
                              [(s.forms, s.feats, s.feats) for s in morph_dev], _feats_options(options),
                              order=[t for t in FEATS_TEMPLATES if table is not None or not uses_clusters(t)],
                              clusters=table, first=(first_train, dev_tags),
                              first_labels=final.labels, log=lambda m: log(f"feats: {m}"),
                              runs_at=(margin, checkpoints))
            feats_model = fr.model
            feats_margin = choose_feats_margin(feats_model, morph_dev, dev_tags, checkpoints, log, morph_train)
        if "lemmas" in columns:
            lemmatizer, acc = train_lemmatizer(morph_train, first_train, gold_tags, morph_dev, dev_tags,
                                               final.labels, final.attributes, options,
                                               log=lambda m: log(f"lemmas: {m}"))
    for m in (result.model, second, feats_model):
        if m is not None:
            m.compact(prune)
    for m in (feats_model, None if lemmatizer is None else lemmatizer.rules):
        if m is not None:     # built from the same data as the tagger's: share one object
            if m.attributes.to_json() != final.attributes.to_json():
                raise ValueError("a morphology model has other word attributes than the tagger's")
            m.attributes = final.attributes
    result.model.save(Path(out))
    if second is not None:
        second.save(Path(out) / SECOND_DIR, with_clusters=False, shared=result.model.attributes)
    elif (Path(out) / SECOND_DIR).exists():
        shutil.rmtree(Path(out) / SECOND_DIR)
    if (Path(out) / MORPH_DIR).exists():
        shutil.rmtree(Path(out) / MORPH_DIR)
    if feats_model is not None:
        feats_model.save(Path(out) / FEATS_DIR, with_clusters=False, shared=final.attributes)
    if lemmatizer is not None:
        lemmatizer.save(Path(out) / LEMMA_DIR, shared=final.attributes)
    scores = dev_scores(result.model, dev, margin, checkpoints, second, first_margin, first_checkpoints,
                        feats_model, lemmatizer, feats_margin)
    scores["joint"] = round(100 * (result.dev_accuracy if second is None else second_result.dev_accuracy), 2)
    config = {
        "stage": "pos", "arch": ARCH, "language": lang,
        "model": {"margin": margin, "checkpoints": checkpoints,
                  "first_margin": None if second is None else first_margin,
                  "first_checkpoints": None if second is None else first_checkpoints,
                  "templates": len(result.model.templates),
                  "labels": len(result.model.labels), "label_format": "UPOS<TAB>XPOS",
                  "second": None if second is None else SECOND_DIR,
                  "second_templates": None if second is None else len(second.templates),
                  "feats": None if feats_model is None else FEATS_DIR, "lemma": None if lemmatizer is None else LEMMA_DIR,
                  "feats_margin": feats_margin,
                  "feats_dictionary": None if feats_model is None or feats_model.dictionary is None
                  else feats_model.dictionary.min_count},
        "training": training_block(
            {"train": str(train), "dev": str(dev)}, scores, order_from=order_from, prune=prune,
            parameters=sum(m.num_parameters() for m in (result.model, second, feats_model,
                                                        None if lemmatizer is None else lemmatizer.rules) if m is not None),
            folds=folds if first_train is not None else None, vectors=record(vecs),
            clusters=None if table is None else {"top": glove_top, "words": len(table.words)},
            **result.summary()),
    }
    write_config(Path(out), config)
    # --probs reads these scales: fitted on dev once the folder is complete (tags unchanged)
    config["model"].update(pos_scales(load_pos(Path(out), read_config(Path(out), "pos")), dev))
    config["training"]["speed"] = measure_speed("pos", Path(out), [s for s in read_file(dev) if s.words])
    return write_config(Path(out), config)
