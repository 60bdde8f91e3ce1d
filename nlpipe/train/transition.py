"""Training the transition parser: static-oracle configurations, key tables, then the shared
prefix-hinge AdaGrad training of :func:`nlpipe.train.linear_fit.fit`.

The gold action sequence of every training sentence is replayed in lockstep batches by the same
:class:`~nlpipe.models.transition.system.Configurations` code that parsing uses; the features of every
visited configuration are fixed, so each becomes one example (its weight rows, its gold action and
its legal actions, the only ones the hinge compares with).
"""
from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.errors import NlpipeError
from nlpipe.io.conllu import read_file
from nlpipe.io.model_dir import UNDETERMINED, builds_model, write_config
from nlpipe.io.provenance import training_block
from nlpipe.linear.margin import checkpoint_schedule
from nlpipe.linear.attributes import normalize
from nlpipe.linear.clusters import Clusters
from nlpipe.train.linear_fit import MODES, FitOptions, fit, rows_for, vocabulary
from nlpipe.train.loop import Selection, stage_scores
from nlpipe.models.transition.features import DEFAULT_TEMPLATES
from nlpipe.models.transition.model import TransitionModel
from nlpipe.models.transition.system import Configurations, Oracle
from nlpipe.models.biaffine import read_treebank
from nlpipe.stages.parse import TRANSITION_ARCH, TransitionParseStage

# a training tree: forms, UPOS, XPOS, heads (1-based, 0 = root), labels
Tree = Tuple[Sequence[str], Sequence[str], Sequence[str], Sequence[int], Sequence[str]]


@dataclass
class TrainOptions(FitOptions):
    """Hyper-parameters of transition parser training (saved in the model's config)."""

    mode: str = "dynamic+full"      # see nlpipe.train.linear_fit.fit: dynamic, full or dynamic+full
    epochs: int = 8
    average_every: int = 20
    min_count: int = 6              # feature keys seen fewer times share the unknown row (en_ewt dev:
                                    # LAS 77.2 with 2, 79.8 with 3, 80.7 with 6)
    min_word: int = 2               # words seen fewer times are UNK
    explore: float = 0.0            # > 0: also train on the parser's own paths, following it this often
    explore_from: int = 2           # the first epoch (1-based) that does
    templates: List[str] = field(default_factory=lambda: list(DEFAULT_TEMPLATES))


def build_vocab(trees: Sequence[Tree], min_word: int) -> Dict[str, List[str]]:
    words = Counter(normalize(f) for t in trees for f in t[0])
    labels = sorted({l for t in trees for l in t[4]})
    return {"words": sorted(w for w, c in words.items() if c >= min_word),
            "upos": sorted({p for t in trees for p in t[1]}), "xpos": sorted({p for t in trees for p in t[2]}),
            "labels": labels}


def _batches(model: TransitionModel, trees: Sequence[Tree], batch: int
             ) -> Iterator[Tuple[Configurations, np.ndarray, Oracle]]:
    """Initial configurations, token attributes and oracle of the non-empty trees, ``batch`` trees
    of similar length at a time."""
    label_ids = model.label_vocab.index
    order = sorted(range(len(trees)), key=lambda i: len(trees[i][0]))
    for start in range(0, len(order), batch):
        chunk = [trees[i] for i in order[start:start + batch] if len(trees[i][0])]
        if chunk:
            cfg = Configurations([len(t[0]) for t in chunk], len(model.labels), model.root_label)
            tokens = model.token_matrix([(t[0], t[1], t[2]) for t in chunk], cfg)
            yield cfg, tokens, Oracle(cfg, [t[3] for t in chunk], [[label_ids[l] for l in t[4]] for t in chunk])


def oracle_examples(model: TransitionModel, trees: Sequence[Tree], batch: int = 1000
                    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys [N, templates], gold actions [N], legal actions [N, classes]) of every configuration
    the static oracle visits."""
    keys, gold, legal = [], [], []
    for cfg, tokens, oracle in _batches(model, trees, batch):
        active = cfg.active()
        while len(active):
            keys.append(model.plan.keys(cfg, tokens, active))
            a = oracle.actions(active)
            ok = cfg.legal(active)
            if not ok[np.arange(len(a)), a].all():
                raise ValueError("the oracle chose an illegal action (a gold tree the system cannot build)")
            gold.append(a)
            legal.append(ok)
            oracle.attached(cfg.apply(active, a))
            active = cfg.unfinished(active)
    return np.concatenate(keys), np.concatenate(gold), np.concatenate(legal)


def explore_examples(model: TransitionModel, trees: Sequence[Tree], follow: float, rng: np.random.Generator,
                     batch: int = 1000) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, oracle actions, legal actions) of the configurations off the gold path that parsing
    the training trees reaches when it takes the model's own action with probability ``follow`` and
    the oracle's otherwise (training with exploration, Goldberg & Nivre 2012). The oracle answers
    for the best tree still reachable (:class:`~nlpipe.models.transition.system.Oracle`); configurations
    still on the gold path are left out, since the static oracle already gave them."""
    keys, gold, legal = [], [], []
    C = model.num_actions
    for cfg, tokens, oracle in _batches(model, trees, batch):
        off = np.zeros(len(cfg.lengths), dtype=bool)
        active = cfg.active()
        while len(active):
            k = model.plan.keys(cfg, tokens, active)
            ok = cfg.legal(active)
            a = oracle.actions(active, ok)
            seen = off[active]
            if seen.any():
                keys.append(k[seen])
                gold.append(a[seen])
                legal.append(ok[seen])
            scores = model.full_scores(k)
            scores[~ok] = -np.inf
            take = np.where(rng.random(len(active)) < follow, scores.argmax(axis=1), a)
            off[active[take != a]] = True
            oracle.attached(cfg.apply(active, take))
            active = cfg.unfinished(active)
    if not gold:
        return (np.zeros((0, len(model.templates)), np.int64), np.zeros(0, np.int64), np.zeros((0, C), bool))
    return np.concatenate(keys), np.concatenate(gold), np.concatenate(legal)


def train_parser(train: Sequence[Tree], options: TrainOptions,
                 dev_score: Optional[Callable[[TransitionModel, Optional[float]], Dict[str, float]]] = None,
                 log: Callable[[str], None] = lambda s: None, clusters: Optional[Clusters] = None
                 ) -> Tuple[TransitionModel, Dict[str, object]]:
    """Train a parser; ``dev_score(model, margin)`` returns dev scores with key ``las``: the epoch
    with the best full-model dev LAS is kept. ``clusters`` feeds the ``c`` attribute (without it,
    cluster templates see one value). Returns the (compacted) model and a summary."""
    t0 = time.time()
    if not train:
        raise ValueError("no training sentences")
    if options.mode not in MODES:
        raise ValueError(f"unknown mode {options.mode!r} (one of {', '.join(MODES)})")
    v = build_vocab(train, options.min_word)
    if "root" not in v["labels"]:
        raise ValueError("no 'root' label in the training trees")
    n_t = len(options.templates)
    empty = [np.zeros(0, np.int64)] * n_t
    C = 2 + 2 * len(v["labels"])
    shell = TransitionModel(v["words"], v["upos"], v["xpos"], v["labels"], options.templates, empty,
                            [np.zeros((1, C), np.float32)] * n_t, clusters)
    keys, gold, legal = oracle_examples(shell, train)
    tables = vocabulary(keys, options.min_count)
    rows = rows_for(keys, tables)
    del keys
    model = TransitionModel(v["words"], v["upos"], v["xpos"], v["labels"], options.templates, tables,
                            [np.zeros((len(t) + 1, C), np.float32) for t in tables], clusters)
    log(f"{len(train)} sentences, {len(gold)} configurations, {len(v['words'])} words, {len(v['labels'])} labels, "
        f"{n_t} templates, {sum(len(t) for t in tables)} features ({time.time() - t0:.0f}s)")
    run = Selection("", "las", options.epochs, log, shown=("uas", "las"), start=t0) if dev_score else None
    history: List[Dict[str, object]] = []
    best_weights: List[np.ndarray] = []
    explored: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None
    explore_rng = np.random.default_rng(options.seed + 1)

    def on_epoch(epoch: int, loss: float) -> None:
        nonlocal best_weights, explored
        extra: Dict[str, object] = {}
        model.prepare()
        if options.explore > 0 and options.explore_from <= epoch + 2 <= options.epochs:
            # the next epoch also trains on where this model's own mistakes lead
            ek, eg, el = explore_examples(model, train, options.explore, explore_rng)
            explored = (rows_for(ek, tables), eg, el)
            extra["explored"] = int(len(eg))
            log(f"exploration: {len(eg)} configurations off the gold path ({time.time() - t0:.0f}s)")
        if run is None:
            history.append(dict(extra, epoch=epoch + 1, loss=round(loss, 4), seconds=round(time.time() - t0)))
            log(f"epoch {epoch + 1}/{options.epochs}: loss {loss:.4f} ({time.time() - t0:.0f}s)")
            return
        full = dev_score(model, None)
        dyn = dev_score(model, options.margin) if options.mode != "full" else None
        if dyn is not None:
            extra["dev_margin"] = dyn
        if run.record(epoch + 1, full, round(loss, 4), **extra):
            best_weights = [w.copy() for w in model.weights]
        if dyn is not None:
            log(f"  at margin {options.margin}: dev LAS {dyn['las']:.2f}, {dyn.get('templates', 0):.1f} templates")

    fit(model.weights, rows, gold, allowed=legal, on_epoch=on_epoch, extra=lambda epoch: explored,
        **options.fit_options())  # type: ignore[arg-type]
    if best_weights:
        model.weights = best_weights
    model.compact()
    summary = {"options": asdict(options), "best": run.best if run else {},
               "history": run.history if run else history,
               "configurations": int(len(gold)), "seconds": round(time.time() - t0, 1),
               "parameters": model.num_parameters()}
    return model, summary


# ---------------------------------------------------------------------------------------------
# `nlpipe train parse --parser transition`

def transition_dev_scorer(dev_path: str, checkpoints: Optional[Sequence[int]] = None) -> Any:
    """``score(model, margin)`` -> dev UAS/LAS (nlpipe.metrics, UD style) and mean templates, from
    the stage parsing the dev file."""
    gold = list(read_file(dev_path))

    def scorer(model: Any, margin: Optional[float]) -> Dict[str, float]:
        stage = TransitionParseStage(model, margin, checkpoints)
        r = stage_scores(stage, "parse", gold, gold_path=dev_path)
        return {"uas": round(r["uas"], 2), "las": round(r["las"], 2), "templates": round(stage.mean_templates, 2)}

    return scorer


@builds_model("out_dir")
def train_transition(train_path: str, dev_path: str, out_dir: str, options: Any, pos_source: str,
                     clusters_path: Optional[str] = None, run_margin: Optional[float] = None,
                     run_checkpoints: Optional[str] = None, log: IO[str] = sys.stderr,
                     lang: str = UNDETERMINED) -> Dict[str, Any]:
    """Train and save a transition parser; ``clusters_path`` is a word-cluster table
    (``clusters.npz`` as the POS tagger saves it; the model keeps a copy); ``run_margin`` and
    ``run_checkpoints`` become the model's default margin inference (None: every template);
    ``lang`` the training data's language code. Returns the summary."""
    try:
        schedule = checkpoint_schedule(run_checkpoints)
    except ValueError as e:
        raise NlpipeError(str(e)) from None
    clusters = None
    if clusters_path:
        try:
            clusters = Clusters.load(Path(clusters_path))
        except (OSError, ValueError, KeyError) as e:
            raise NlpipeError(f"{clusters_path}: cannot read the word-cluster table ({e})") from None

    start = time.time()
    trees = [(e.forms, e.upos, e.xpos, e.heads, e.rels) for e in read_treebank(train_path)]
    if not trees:
        raise NlpipeError(f"{train_path}: no sentences with words")

    def say(msg: str) -> None:
        log.write(f"parse (transition): {msg}\n")
        log.flush()

    try:
        model, summary = train_parser(trees, options, transition_dev_scorer(dev_path, schedule), say, clusters)
    except ValueError as e:
        raise NlpipeError(f"{train_path}: {e}") from None
    minutes = round((time.time() - start) / 60, 1)
    model.save(Path(out_dir))
    best = summary["best"]
    write_config(Path(out_dir), {
        "stage": "parse", "arch": TRANSITION_ARCH, "language": lang,
        "model": {"system": "arc-standard+swap", "margin": run_margin, "checkpoints": run_checkpoints,
                  "templates": len(model.templates), "parameters": summary["parameters"]},
        "labels": model.labels,
        "training": training_block({"train": train_path, "dev": dev_path, "clusters": clusters_path},
                                   {"uas": best.get("uas"), "las": best.get("las")},
                                   pos=pos_source, minutes=minutes, options=summary["options"],
                                   configurations=summary["configurations"], best_epoch=best.get("epoch"),
                                   history=summary["history"])})
    return dict(summary, minutes=minutes, model=out_dir)
