"""End-to-end training of a dynamic-feature-selection tagger from tagged sentences.

Steps: attribute vocabularies and ambiguity classes from the training data, feature keys with gold
tag history, key tables (features seen ``min_count`` times), the template order (given, baseline
or wrapper), then :func:`fit` in one of three modes:

- ``dynamic``: all templates, prefix hinge loss (the model for dynamic feature selection);
- ``full``: all templates, hinge loss on the full score only;
- ``fixed``: the first ``n`` templates of the order, trained like ``full``.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.linear.attributes import Attributes, ambiguity_classes
from nlpipe.linear.clusters import Clusters
from nlpipe.linear.dfs import tag
from nlpipe.linear.model import TemplatedModel
from nlpipe.train.template_order import OrderingData, baseline_order, wrapper_order
from nlpipe.linear.templates import DEFAULT_TEMPLATES, parse_template
from nlpipe.train.linear_fit import build_model, feature_keys, fit, rows_for, vocabulary

# A tagged sentence: forms, labels to predict, and the tags that define ambiguity classes.
TaggedSentence = Tuple[List[str], List[str], List[str]]


@dataclass
class TrainOptions:
    """Hyper-parameters of tagger training (saved in the model's config)."""

    mode: str = "dynamic"
    margin: float = 1.0
    lr: float = 0.02
    l2: float = 0.3
    epochs: int = 4
    batch_size: int = 512
    average_every: int = 0
    min_count: int = 2
    seed: int = 0
    fixed_n: Optional[int] = None
    order: str = "wrapper"               # wrapper | baseline | given
    wrapper_steps: int = 10
    wrapper_sample: int = 30000          # training tokens for ordering runs
    wrapper_dev_sample: int = 8000       # dev tokens for ordering runs
    wrapper_epochs: int = 2
    templates: List[str] = field(default_factory=lambda: list(DEFAULT_TEMPLATES))

    def fit_options(self, epochs: Optional[int] = None, mode: Optional[str] = None) -> Dict[str, object]:
        return {"mode": mode or ("full" if self.mode == "fixed" else self.mode), "margin": self.margin,
                "lr": self.lr, "l2": self.l2, "epochs": self.epochs if epochs is None else epochs,
                "batch_size": self.batch_size, "average_every": self.average_every, "seed": self.seed}


@dataclass
class TrainResult:
    model: TemplatedModel
    dev_accuracy: float
    order_curve: List[float]
    seconds: float
    options: TrainOptions

    def summary(self) -> Dict[str, object]:
        return {"dev_accuracy": round(100 * self.dev_accuracy, 2), "order_curve":
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


def first_pass_ids(labels: Sequence[Sequence[str]], label_ids: Dict[str, int]) -> np.ndarray:
    """Flat label ids of first-pass tags per sentence (a label this model lacks: ``len(label_ids)``)."""
    none = len(label_ids)
    return np.array([label_ids.get(l, none) for s in labels for l in s], dtype=np.int64)


def train_tagger(train: Sequence[TaggedSentence], dev: Sequence[TaggedSentence], options: TrainOptions,
                 order: Optional[Sequence[str]] = None,
                 log: Callable[[str], None] = lambda s: None, clusters: Optional[Clusters] = None,
                 first: Optional[Tuple[Sequence[Sequence[str]], Sequence[Sequence[str]]]] = None) -> TrainResult:
    """Train a tagger; ``order`` (template names) overrides the ordering search; ``clusters`` is the
    word-cluster table the cluster attributes read (without it they are always unknown).
    ``first``: the labels a first tagging pass predicted for every train and dev sentence (for the
    ``ptag`` templates of a second pass; the train ones should come from models that did not see
    the sentence, e.g. jackknifing)."""
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
    shell = build_model(labels, attributes, templates, [np.zeros(0, np.int64)] * len(templates))
    layout, atoms = shell.layout(forms)
    first_train = first_dev = None
    if first is not None:
        first_train, first_dev = (first_pass_ids(f, label_ids) for f in first)
        if len(first_train) != len(gold):
            raise ValueError("first-pass labels do not match the training tokens")
    keys = feature_keys(templates, attributes, layout, atoms, gold, len(labels), first_train)
    tables = vocabulary(keys, options.min_count)
    rows = rows_for(keys, tables)
    del keys
    candidates = build_model(labels, attributes, templates, tables)
    log(f"{len(forms)} sentences, {len(gold)} tokens, {len(labels)} labels, {len(templates)} templates, "
        f"{sum(len(t) for t in tables)} features")

    dev_forms, dev_gold = _flatten(dev, label_ids)
    dev_layout, dev_atoms = candidates.layout(dev_forms)
    dev_first = None if first_dev is None else dev_layout.scatter(first_dev, len(labels))

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

    # A dynamic model is judged as it is meant to run: stopping at the training margin.
    dev_margin = options.margin if options.mode == "dynamic" else None

    def on_epoch(epoch: int, loss: float) -> None:
        pred, used = tag(model, dev_layout, dev_atoms, dev_margin, first=dev_first)
        log(f"epoch {epoch + 1}/{options.epochs}: loss {loss:.4f}, dev accuracy "
            f"{100 * np.mean(pred == dev_gold):.2f}, {used.mean():.1f} templates ({time.time() - t0:.0f}s)")

    fit(model.weights, sub_rows, gold, on_epoch=on_epoch, **options.fit_options())  # type: ignore[arg-type]
    model.compact()
    pred, _ = tag(model, dev_layout, dev_atoms, dev_margin, first=dev_first)
    acc = float(np.mean(pred == dev_gold)) if len(dev_gold) else 0.0
    return TrainResult(model, acc, curve, time.time() - t0, options)
