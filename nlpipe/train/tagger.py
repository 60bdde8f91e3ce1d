"""Training loop for the neural sequence taggers: length-bucketed batches, Adam, best-on-dev.

Sequences are sentences, or whole documents (``--context document``) whose sentence boundaries are
kept so that scores and output stay per sentence.
"""
from __future__ import annotations

import copy
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from nlpipe.nn.batching import length_batches
from nlpipe.decode import chain
from nlpipe.metrics import span_scores
from nlpipe.nn.features import N_AFFIXES, AffixVocab, Vocab, shape_ids
from nlpipe.train.optim import adam
from nlpipe.nn.tagger import NeuralTagger
from nlpipe.tags import repair


@dataclass
class Sequence_:
    """One training/eval unit: words, gold BIO tags, and the start offsets of its sentences."""
    words: List[str]
    tags: List[str]
    starts: List[int]


def make_sequences(sentences: Sequence[Tuple[List[str], List[str], bool]], document: bool,
                   max_len: int = 2000) -> List[Sequence_]:
    """Group ``(words, tags, starts_new_document)`` sentences into units (documents capped at ``max_len``)."""
    out: List[Sequence_] = []
    for words, tags, newdoc in sentences:
        if not words:
            continue
        cur = out[-1] if out else None
        if document and cur is not None and not newdoc and len(cur.words) + len(words) <= max_len:
            cur.starts.append(len(cur.words))
            cur.words.extend(words)
            cur.tags.extend(tags)
        else:
            out.append(Sequence_(list(words), list(tags), [0]))
    return out


def tensorize(seqs: Sequence[Sequence_], vocab: Vocab, label_index: Optional[Dict[str, int]],
              device: torch.device, affixes: Optional[AffixVocab] = None) -> Tuple[Any, ...]:
    """Padded ``(words, shapes, tags, mask, affixes)`` tensors (tags all 0 when ``label_index`` is None;
    affixes None without an affix vocabulary)."""
    n = max(len(s.words) for s in seqs)
    aff = np.zeros((len(seqs), n, N_AFFIXES), dtype=np.int64) if affixes is not None else None
    w = np.zeros((len(seqs), n), dtype=np.int64)
    sh = np.zeros((len(seqs), n), dtype=np.int64)
    t = np.zeros((len(seqs), n), dtype=np.int64)
    for i, s in enumerate(seqs):
        k = len(s.words)
        w[i, :k] = vocab.ids(s.words)
        sh[i, :k] = shape_ids(s.words)
        if aff is not None:
            aff[i, :k] = affixes.ids(s.words)
        if label_index is not None:
            t[i, :k] = [label_index[x] for x in s.tags]
    mask = sh > 0
    return tuple(None if a is None else torch.as_tensor(a, device=device) for a in (w, sh, t, mask, aff))


def predict_tags(model: NeuralTagger, vocab: Vocab, seqs: Sequence[Sequence_], device: torch.device,
                 batch_tokens: int = 8000, affixes: Optional[AffixVocab] = None) -> List[List[str]]:
    """Predicted BIO tags per sentence (document units split back, each sentence repaired)."""
    model.eval()
    labels = model.labels
    crf = model.crf.chain() if model.crf is not None else None
    out: Dict[int, List[str]] = {}
    for idx in length_batches([len(s.words) for s in seqs], batch_tokens):
        words, shapes, _, mask, aff = tensorize([seqs[i] for i in idx], vocab, None, device, affixes)
        lengths = mask.sum(1).cpu().numpy()
        ids = chain.decode(model.predict(words, shapes, mask, aff), lengths, labels, crf)
        for row, i in enumerate(idx):
            out[i] = [labels[j] for j in ids[row, :lengths[row]]]
    tags: List[List[str]] = []
    for i, s in enumerate(seqs):
        bounds = s.starts + [len(s.words)]
        for a, b in zip(bounds, bounds[1:]):
            tags.append(repair(out[i][a:b]))  # a sentence cut from a document may start inside an entity
    return tags


def span_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """conlleval entity F1 (x100) over sentences (:func:`nlpipe.metrics.span_scores`)."""
    return 100.0 * span_scores(gold, pred)[0].f1


def gold_sentences(seqs: Sequence[Sequence_]) -> List[List[str]]:
    out = []
    for s in seqs:
        bounds = s.starts + [len(s.words)]
        out.extend(s.tags[a:b] for a, b in zip(bounds, bounds[1:]))
    return out


def train_tagger(model: NeuralTagger, vocab: Vocab, train: List[Sequence_], dev: List[Sequence_],
                 epochs: int, lr: float, batch_tokens: int, device: torch.device, seed: int = 1,
                 patience: int = 15, log: Callable[[str], None] = print,
                 time_limit: Optional[float] = None, affixes: Optional[AffixVocab] = None) -> Dict[str, Any]:
    """Train ``model`` in place, keeping the weights of the best dev-F1 epoch; returns a summary."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    label_index = {t: i for i, t in enumerate(model.labels)}
    model.to(device)
    opt = adam(model.parameters(), lr=lr, betas=(0.9, 0.9))
    gold = gold_sentences(dev)
    best: Dict[str, Any] = {"dev_f1": -1.0, "epoch": 0}
    best_state = copy.deepcopy(model.state_dict())
    lengths = [len(s.words) for s in train]
    t0 = time.time()
    for epoch in range(1, epochs + 1):
        model.train()
        total, n = 0.0, 0
        for idx in length_batches(lengths, batch_tokens, rng):
            words, shapes, tags, mask, aff = tensorize([train[i] for i in idx], vocab, label_index, device,
                                                       affixes)
            loss = model.loss(words, shapes, tags, mask, aff)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            total += float(loss.detach()) * len(idx)
            n += len(idx)
        f1 = span_f1(gold, predict_tags(model, vocab, dev, device, affixes=affixes))
        log(f"epoch {epoch:3d}  loss {total / max(n, 1):.4f}  dev F1 {f1:.2f}  {time.time() - t0:.0f}s")
        if f1 > best["dev_f1"]:
            best = {"dev_f1": round(f1, 2), "epoch": epoch}
            best_state = copy.deepcopy(model.state_dict())
        elif epoch - best["epoch"] >= patience:
            break
        if time_limit is not None and time.time() - t0 > time_limit:
            log("time limit reached")
            break
    model.load_state_dict(best_state)
    best["seconds"] = round(time.time() - t0, 1)
    return best
