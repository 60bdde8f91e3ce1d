"""Scales that turn a POS model's hinge-trained scores into probabilities (temperature scaling).

The linear tagger and the lemma-rule classifier are trained to make the right label lead by a
margin, not to be probabilities: a softmax of their raw scores is nearly flat over 100 labels. One
scale per classifier, fitted on gold dev data (the weights, hence every tag and lemma, stay as they
are), makes ``--probs`` a calibrated confidence::

    python -m nlpipe.train.calibrate MODEL_DIR DEV.conllu

writes ``model.prob_scale`` and ``model.lemma_prob_scale`` into the model's ``config.json``. For the
BiLSTM tagger the scale applies to the log-probabilities its tags are chosen from: a softmax trained
as one, but joined with the linear tagger's the product is sharper than its accuracy.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List

import numpy as np

from nlpipe.io.conllu import FORM, LEMMA, UPOS, XPOS, read_file
from nlpipe.io.model_dir import CONFIG, read_config, read_json, write_json
from nlpipe.models.lemmatizer import Lemmatizer
from nlpipe.stages.pos import LABEL_SEP, PosTagger, load


def nll(scale: float, scores: np.ndarray, gold: np.ndarray) -> float:
    """Mean negative log-probability of the ``gold`` classes [n, K] (bool, one or more per row)
    under softmax(``scale`` * ``scores`` [n, K]) (-inf: a class that is not there)."""
    x = scale * scores
    top = x.max(axis=1, keepdims=True)
    all_ = np.log(np.exp(x - top).sum(axis=1))
    right = np.log(np.where(gold, np.exp(x - top), 0.0).sum(axis=1))
    return float((all_ - right).mean())


def fit_scale(scores: np.ndarray, gold: np.ndarray, low: float = 1e-2, high: float = 1e3) -> float:
    """The scale in [low, high] that minimises :func:`nll` (convex in the scale: golden-section
    search over its logarithm)."""
    a, b = np.log(low), np.log(high)
    r = (np.sqrt(5) - 1) / 2
    c, d = b - r * (b - a), a + r * (b - a)
    fc, fd = nll(np.exp(c), scores, gold), nll(np.exp(d), scores, gold)
    for _ in range(60):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - r * (b - a)
            fc = nll(np.exp(c), scores, gold)
        else:
            a, c, fc = c, d, fd
            d = a + r * (b - a)
            fd = nll(np.exp(d), scores, gold)
    return float(np.exp((a + b) / 2))


def pos_scales(tagger: PosTagger, path: str) -> Dict[str, float]:
    """``prob_scale`` (joint UPOS/XPOS labels) and, with a lemmatizer, ``lemma_prob_scale`` fitted
    on the gold CoNLL-U file ``path`` (words whose gold label or lemma the model cannot give are left out)."""
    sents = [s for s in read_file(path) if s.words]
    words = [w for s in sents for w in s.words]
    forms = [w[FORM] for w in words]
    out = tagger.second if tagger.second is not None else tagger.model
    scores = np.empty((len(words), out.num_labels), dtype=np.float32)
    pred, _, layout, atoms = tagger.tag_ids(forms, [len(s.words) for s in sents], scores)
    index = {label: i for i, label in enumerate(out.labels)}
    ids = np.array([index.get(w[UPOS] + LABEL_SEP + w[XPOS], -1) for w in words])
    known = ids >= 0
    gold = np.zeros(scores.shape, dtype=bool)
    gold[np.flatnonzero(known), ids[known]] = True
    result = {"prob_scale": round(fit_scale(scores[known].astype(np.float64), gold[known]), 4)}
    if tagger.lemmatizer is not None:
        result.update(lemma_scale(tagger.lemmatizer, forms, pred, [w[LEMMA] for w in words],
                                  [len(s.words) for s in sents]))
    return result


def lemma_scale(lemmatizer: Lemmatizer, forms: List[str], pred: np.ndarray, gold: List[str],
                lengths: List[int]) -> Dict[str, float]:
    """``{"lemma_prob_scale": s}`` for ``lemmatizer`` given the words ``forms`` of sentences of
    ``lengths``, their predicted POS label ids ``pred`` [num_tokens] and ``gold`` lemmas ({} when the
    rule classifier chose none of them right)."""
    layout, atoms = lemmatizer.rules.layout_flat(forms, lengths)
    tags = layout.scatter(pred, len(lemmatizer.tag_labels))
    rows: List[np.ndarray] = []
    right: List[np.ndarray] = []
    for i, (sc, made) in lemmatizer.rule_choices(forms, pred, layout, atoms, tags).items():
        hit = np.array([m == gold[i] for m in made])
        if hit.any():
            rows.append(sc)
            right.append(hit)
    if not rows:
        return {}
    width = max(len(r) for r in rows)
    padded = np.full((len(rows), width), -np.inf)
    mask = np.zeros((len(rows), width), dtype=bool)
    for k, (r, h) in enumerate(zip(rows, right)):
        padded[k, :len(r)], mask[k, :len(h)] = r, h
    return {"lemma_prob_scale": round(fit_scale(padded, mask), 4)}


def bilstm_scales(model_dir: Path, path: str) -> Dict[str, float]:
    """``prob_scale`` of a BiLSTM tagger (for the scores its tags are chosen from: a product with a
    linear tagger's log-probabilities, where it has one, is sharper than its accuracy) and ``lemma_prob_scale`` of
    its Lemmatizer, fitted on the gold file ``path`` with the tagger's own tags."""
    from nlpipe.nn.batching import length_batches
    from nlpipe.registry import load_stage

    stage = load_stage("pos", str(model_dir), workers=1)
    sents = [s for s in read_file(path) if s.words]
    forms = [[w[FORM] for w in s.words] for s in sents]
    index = {label: i for i, label in enumerate(stage.model.labels["tags"])}
    rows = [np.zeros(0)] * len(sents)
    tags = [[0]] * len(sents)
    for batch in length_batches([len(f) for f in forms], stage.batch_tokens):
        out = stage.model.predict([forms[i] for i in batch], scores=True)
        for i, t, sc in zip(batch, out["tags"], out["tag_scores"]):
            tags[i], rows[i] = t, sc
    scores = np.concatenate(rows).astype(np.float64)
    ids = np.array([index.get(w[UPOS] + LABEL_SEP + w[XPOS], -1) for s in sents for w in s.words])
    known = ids >= 0
    gold = np.zeros(scores.shape, dtype=bool)
    gold[np.flatnonzero(known), ids[known]] = True
    result = {"prob_scale": round(fit_scale(scores[known], gold[known]), 4)}
    if stage.lemmatizer is not None:
        result.update(lemma_scale(stage.lemmatizer, [f for s in forms for f in s],
                                  np.array([t for row in tags for t in row], dtype=np.int64),
                                  [w[LEMMA] for s in sents for w in s.words], [len(f) for f in forms]))
    return result


def main(argv: List[str]) -> None:
    """``MODEL_DIR DEV.conllu``: fit the scales and add them to the model's config.json (nothing else
    in it changes)."""
    model_dir, dev = Path(argv[0]), argv[1]
    config = read_config(model_dir, "pos")
    if config["arch"] == "bilstm-tagger.v1":
        scales = bilstm_scales(model_dir, dev)
    else:
        scales = pos_scales(load(model_dir, config), dev)
    raw = read_json(model_dir / CONFIG)
    raw["model"].update(scales)
    write_json(model_dir / CONFIG, raw)
    print(scales)


if __name__ == "__main__":
    main(sys.argv[1:])
