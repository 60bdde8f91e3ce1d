"""Training units of the neural sequence taggers: sentences, or whole documents (``--context
document``) whose sentence boundaries are kept so that scores and output stay per sentence; their
padded tensors, and the entity F1 they are scored by.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from nlpipe.metrics import span_scores
from nlpipe.nn.features import N_AFFIXES, AffixVocab, shape_ids
from nlpipe.vocab import Vocab


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
            aff[i, :k] = affixes.affix_ids(s.words)
        if label_index is not None:
            t[i, :k] = [label_index[x] for x in s.tags]
    mask = sh > 0
    return tuple(None if a is None else torch.as_tensor(a, device=device) for a in (w, sh, t, mask, aff))


def span_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """conlleval entity F1 (x100) over sentences (:func:`nlpipe.metrics.span_scores`)."""
    return 100.0 * span_scores(gold, pred)[0].f1


def gold_sentences(seqs: Sequence[Sequence_]) -> List[List[str]]:
    out = []
    for s in seqs:
        bounds = s.starts + [len(s.words)]
        out.extend(s.tags[a:b] for a, b in zip(bounds, bounds[1:]))
    return out
