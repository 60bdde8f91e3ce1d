"""Training the FEATS classifier that runs after the parse (:mod:`nlpipe.models.tree_feats`).

It learns from the gold trees and tags of the training treebank. Which tag groups it keeps is
chosen on dev, from the output of the tagger and parser it will follow: a group stays where the
classifier makes fewer FEATS errors there than the tagger did.
"""
from __future__ import annotations

import copy
import shutil
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe import metrics
from nlpipe.errors import NlpipeError
from nlpipe.io.conllu import FEATS, Sentence, read_file
from nlpipe.io.model_dir import building
from nlpipe.io.provenance import training_block
from nlpipe.linear.storage import compact_tables
from nlpipe.models.tree_feats import FOLDER, TreeFeats, group_of, group_words
from nlpipe.stages.base import COLUMNS
from nlpipe.train.linear_fit import FitOptions, fit, rows_for, vocabulary


@dataclass
class TreeFeatsOptions(FitOptions):
    """:class:`FitOptions` with this classifier's defaults, and ``min_label_count``: a group's FEATS
    seen fewer times in train are not among its choices."""

    mode: str = "full"
    lr: float = 0.1
    l2: float = 0.0
    epochs: int = 5
    min_count: int = 2
    average_every: int = 0
    min_label_count: int = 2


def group_labels(sentences: Sequence[Sentence], min_label_count: int) -> Dict[str, List[str]]:
    """The tag groups with at least two FEATS seen ``min_label_count`` times, with those FEATS."""
    seen: Dict[str, Counter] = defaultdict(Counter)
    for s in sentences:
        for w in s.words:
            seen[group_of(w)][w[FEATS]] += 1
    out = {}
    for g, counts in seen.items():
        labels = sorted(f for f, c in counts.items() if c >= min_label_count)
        if len(labels) >= 2:
            out[g] = labels
    return out


def train_tree_feats(train: Sequence[Sentence], options: Optional[TreeFeatsOptions] = None,
                     log: Callable[[str], None] = lambda _: None) -> Optional[TreeFeats]:
    """A classifier for every tag group of ``train`` with a FEATS choice (None: there is none)."""
    options = options or TreeFeatsOptions()
    by_group = group_labels(train, options.min_label_count)
    labels = sorted({f for fs in by_group.values() for f in fs})
    if not labels:
        return None
    ids = {f: k for k, f in enumerate(labels)}
    groups = {g: [ids[f] for f in fs] for g, fs in by_group.items()}
    where, names, keys = group_words(train, groups)
    gold_feats = [train[si].words[i][FEATS] for si, i in where]
    keep = np.array([f in ids and ids[f] in groups[g] for f, g in zip(gold_feats, names)], dtype=bool)
    keys = keys[keep]
    gold = np.array([ids[f] for f, k in zip(gold_feats, keep) if k], dtype=np.int64)
    allowed = np.zeros((len(gold), len(labels)), dtype=bool)
    for r, g in enumerate(n for n, k in zip(names, keep) if k):
        allowed[r, groups[g]] = True
    tables = vocabulary(keys, options.min_count)
    weights = [np.zeros((len(t) + 1, len(labels)), dtype=np.float32) for t in tables]
    log(f"FEATS after the parse: {len(groups)} tag groups, {len(labels)} FEATS, {len(gold)} training words")
    fit(weights, rows_for(keys, tables), gold, allowed=allowed,
        on_epoch=lambda e, loss: log(f"  epoch {e + 1}: loss {loss:.4f}"), **options.fit_options())
    compact_tables(tables, weights)
    return TreeFeats(labels, groups, tables, weights)


def select_groups(model: TreeFeats, gold: Sequence[Sentence], predicted: Sequence[Sentence]
                  ) -> Tuple[Optional[TreeFeats], Dict[str, Tuple[int, int]]]:
    """The classifier reduced to the groups where it beats the tagger on ``predicted`` (the tagger's
    and parser's output on the gold tokens of ``gold``), and per group of the model the FEATS errors
    (tagger, classifier) there; None when no group is kept."""
    where, names, keys = group_words(predicted, model.groups)
    chosen = model.predict(names, keys) if names else []
    errors: Dict[str, List[int]] = {g: [0, 0] for g in model.groups}
    ufeats = metrics.universal_feats    # errors as the UD scorer counts them
    for (si, i), g, new in zip(where, names, chosen):
        right = ufeats(gold[si].words[i][FEATS])
        errors[g][0] += ufeats(predicted[si].words[i][FEATS]) != right
        errors[g][1] += ufeats(new) != right
    kept = {g: ids for g, ids in model.groups.items() if errors[g][1] < errors[g][0]}
    counts = {g: (a, b) for g, (a, b) in errors.items()}
    if not kept:
        return None, counts
    return TreeFeats(model.labels, kept, model.keys, model.weights), counts


def _tagged(dev: str, pos_model: str) -> List[Sentence]:
    """``dev``'s words as the tagger ``pos_model`` annotates them (HEAD and DEPREL blanked)."""
    from nlpipe.registry import load_stage

    sentences = list(read_file(dev))
    for s in sentences:
        for w in s.words:
            COLUMNS["pos"].blank(w)
            COLUMNS["parse"].blank(w)
    return list(load_stage("pos", pos_model).annotate(sentences))


def _parsed(tagged: Sequence[Sentence], parser: str, device: str) -> List[Sentence]:
    """A copy of ``tagged`` parsed by ``parser``, without its FEATS after the parse."""
    from nlpipe.registry import load_stage

    return list(load_stage("parse", parser, device=device, feats=False).annotate(copy.deepcopy(list(tagged))))


def _any_feats(sentences: Iterable[Sentence]) -> bool:
    return any(w[FEATS] != "_" for s in sentences for w in s.words)


def has_feats(path: str) -> bool:
    """Whether some word of the CoNLL-U file ``path`` has FEATS."""
    return _any_feats(read_file(path))


def add_to_parsers(train: str, dev: str, parsers: Sequence[str], pos_model: str,
                   options: Optional[TreeFeatsOptions] = None, device: str = "cpu",
                   log: Callable[[str], None] = lambda _: None) -> List[Dict[str, Any]]:
    """Train the classifier on ``train`` once, and write into each parser folder's ``feats/`` the
    groups where it beats the tagger ``pos_model`` on ``dev`` after that parser's trees (the folder
    is removed when no group is kept). Returns per parser ``{"groups", "dev_errors",
    "dev_ufeats_tagger", "dev_ufeats_after_parse"}`` (the scores None when no tag group of train has
    a FEATS choice)."""
    options = options or TreeFeatsOptions()
    train_sentences = list(read_file(train))
    if not _any_feats(train_sentences):
        raise NlpipeError(f"{train}: no word has FEATS: nothing to learn")
    model = train_tree_feats(train_sentences, options, log)
    if model is None:
        log("FEATS after the parse: no tag group of train has two FEATS; none written")
        for parser in parsers:
            _remove(Path(parser) / FOLDER)
        return [{"groups": [], "dev_errors": {}, "dev_ufeats_tagger": None, "dev_ufeats_after_parse": None}
                for _ in parsers]
    gold = list(read_file(dev))
    tagged = _tagged(dev, pos_model)
    return [_choose(model, gold, dev, _parsed(tagged, parser, device), Path(parser) / FOLDER,
                    {"train": train, "dev": dev}, pos_model, options, log) for parser in parsers]


def _choose(model: TreeFeats, gold: Sequence[Sentence], dev: str, predicted: List[Sentence], folder: Path,
            data: Dict[str, str], pos_model: str, options: TreeFeatsOptions, log: Callable[[str], None]
            ) -> Dict[str, Any]:
    """Keep the groups of ``model`` that beat the tagger on ``predicted`` and save them in ``folder``."""
    kept, counts = select_groups(model, gold, predicted)
    before = after = _ufeats(gold, dev, predicted)
    if kept is not None:
        kept.apply(predicted)
        after = _ufeats(gold, dev, predicted)
    result = {"groups": sorted(kept.groups) if kept is not None else [], "dev_errors": counts,
              "dev_ufeats_tagger": before, "dev_ufeats_after_parse": after}
    if kept is None:
        _remove(folder)
        log("FEATS after the parse: no tag group does better than the tagger on dev; none written")
        return result
    with building(folder) as tmp:       # an interrupted save leaves the parser's old feats/ whole
        kept.save(tmp, training_block(data, {"ufeats_tagger": before, "ufeats_after_parse": after},
                                      pos_model=str(pos_model), options=asdict(options),
                                      dev_feats_errors={g: list(c) for g, c in sorted(counts.items())}))
    log(f"FEATS after the parse: {len(kept.groups)} of {len(model.groups)} tag groups kept; "
        f"dev UFeats {before:.2f} -> {after:.2f} -> {folder}")
    return result


def _remove(folder: Path) -> None:
    if folder.is_dir():
        shutil.rmtree(folder)


def _ufeats(gold: Sequence[Sentence], dev: str, predicted: Sequence[Sentence]) -> float:
    scores = metrics.ud_scores(metrics.Segmentation(gold, dev), metrics.Segmentation(predicted, "<predicted>"))
    return round(100 * scores["ufeats"].f1, 2)
