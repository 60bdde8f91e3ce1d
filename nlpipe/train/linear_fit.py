"""Training the templated linear model: feature vocabularies and the prefix hinge loss with AdaGrad.

With gold tag history every token's feature rows are fixed, so the loss is position-wise and
training runs on shuffled mini-batches of tokens. For each token the prefix scores
P_i = sum_{j<=i} W_j[row_j] are computed; ``mode="dynamic"`` applies the hinge
max(0, max_{y'!=y} P_i(y') - P_i(y) + m) to every prefix i up to i*, the first prefix where the
gold label leads by m (Strubell et al.), so template j collects the subgradients of prefixes
j..i*. ``mode="full"`` applies it to the last prefix only (standard training);
``mode="dynamic+full"`` applies it to the prefixes up to i* and to the last one, so the model
also stays accurate when run with every template.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.linear.attributes import Attributes
from nlpipe.linear.model import TemplatedModel
from nlpipe.linear.storage import key_rows
from nlpipe.linear.templates import Layout, full_keys, parse_template


def feature_keys(templates: Sequence[str], attributes: Attributes, layout: Layout, atoms: np.ndarray,
                 gold: np.ndarray, num_labels: int, first: Optional[np.ndarray] = None,
                 first_size: Optional[int] = None) -> np.ndarray:
    """Keys [num_tokens, len(templates)] with gold tag history (and the first-pass tags ``first``
    [num_tokens] of a pass with ``first_size`` labels (default ``num_labels``), for ``ptag`` templates)."""
    first_size = num_labels if first_size is None else first_size
    tags = layout.scatter(gold.astype(np.int64), num_labels)
    ptags = None if first is None else layout.scatter(first.astype(np.int64), first_size)
    out = np.empty((layout.num_tokens, len(templates)), dtype=np.int64)
    for j, name in enumerate(templates):
        out[:, j] = full_keys(parse_template(name), atoms, tags, layout.g, attributes.sizes, num_labels, ptags,
                              first_size)
    return out


def vocabulary(keys: np.ndarray, min_count: int) -> List[np.ndarray]:
    """Per template: the sorted keys seen at least ``min_count`` times."""
    out = []
    for j in range(keys.shape[1]):
        u, c = np.unique(keys[:, j], return_counts=True)
        out.append(u[c >= min_count])
    return out


MODES = ("dynamic", "full", "dynamic+full")

# training examples: weight rows [n, templates], gold labels [n], allowed labels [n, L] or None
Examples = Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]


class AdaGrad:
    """AdaGrad with l2 regularisation applied lazily to the rows a batch touches."""

    def __init__(self, weights: List[np.ndarray], lr: float, l2: float, eps: float = 1e-6):
        self.weights = weights
        self.acc = [np.zeros_like(w) for w in weights]
        self.lr, self.l2, self.eps = lr, l2, eps

    def update(self, j: int, rows: np.ndarray, grad: np.ndarray) -> None:
        """Apply the gradient ``grad`` [len(rows), L] summed per token to weight matrix ``j``."""
        uniq, inv = np.unique(rows, return_inverse=True)
        g = np.zeros((len(uniq), grad.shape[1]), dtype=np.float32)
        np.add.at(g, inv, grad)
        w = self.weights[j]
        wu = w[uniq]
        if self.l2:
            g += self.l2 * wu
        acc = self.acc[j][uniq] + g * g
        self.acc[j][uniq] = acc
        w[uniq] = wu - self.lr * g / (np.sqrt(acc) + self.eps)


@dataclass
class FitOptions:
    """Hyper-parameters of :func:`fit` shared by the linear trainers (each sets its own defaults)."""

    mode: str = "dynamic"
    margin: float = 1.0
    lr: float = 0.02
    l2: float = 0.0
    epochs: int = 4
    batch_size: int = 512
    average_every: int = 0
    min_count: int = 2
    seed: int = 0

    def fit_mode(self) -> str:
        return self.mode

    def fit_options(self, epochs: Optional[int] = None, mode: Optional[str] = None) -> Dict[str, object]:
        """Keyword arguments of :func:`fit` (``epochs``/``mode`` override the options')."""
        return {"mode": mode or self.fit_mode(), "margin": self.margin, "lr": self.lr, "l2": self.l2,
                "epochs": self.epochs if epochs is None else epochs, "batch_size": self.batch_size,
                "average_every": self.average_every, "seed": self.seed}


def fit(weights: List[np.ndarray], rows: np.ndarray, gold: np.ndarray, *, mode: str = "dynamic",
        margin: float = 1.0, lr: float = 0.2, l2: float = 1e-5, epochs: int = 5, batch_size: int = 512,
        seed: int = 0, average_every: int = 0, allowed: Optional[np.ndarray] = None,
        on_epoch: Optional[Callable[[int, float], None]] = None,
        extra: Optional[Callable[[int], Optional[Examples]]] = None) -> None:
    """Train ``weights`` (one matrix per column of ``rows``, updated in place) on examples given by
    their weight rows (tokens for the tagger, parser configurations for the transition parser).

    ``allowed`` (bool [num_examples, L], optional) rules labels out of an example: they are never
    the violating label of the hinge (the gold label must be allowed).
    ``average_every`` > 0 leaves the average of snapshots taken every that many mini-batches
    (Polyak averaging, which smooths the noise of the last updates); 0 leaves the last weights.
    ``on_epoch(epoch, loss)`` is called after every epoch with the weights in the state training
    would leave them (averaged, with ``average_every``).
    ``extra(epoch)`` may return more examples ``(rows, gold, allowed)`` for that epoch only (the
    transition parser's configurations off the gold path, which change as the weights do).
    """
    if mode not in MODES:
        raise ValueError(f"unknown training mode {mode!r} (one of {', '.join(MODES)})")
    k = rows.shape[1]
    L = weights[0].shape[1]
    opt = AdaGrad(weights, lr, l2)
    rng = np.random.default_rng(seed)
    base = (rows, gold, allowed)
    averaged = [w.copy() for w in weights] if average_every else None
    snapshots = 0
    steps = 0
    for epoch in range(epochs):
        more = extra(epoch) if extra is not None else None
        rows, gold, allowed = base if more is None else _joined(base, more)
        n = len(gold)
        perm = rng.permutation(n)
        loss = 0.0
        for start in range(0, n, batch_size):
            idx = perm[start:start + batch_size]
            loss += _step(opt, rows[idx], gold[idx], k, L, mode, margin,
                          None if allowed is None else allowed[idx])
            steps += 1
            if averaged is not None and steps % average_every == 0:
                snapshots += 1
                for a, w in zip(averaged, weights):
                    a += (w - a) / snapshots
        if on_epoch is not None:
            if averaged is not None and snapshots:
                # the callback sees the weights training would leave now: the average
                live = [w.copy() for w in weights]
                for a, w in zip(averaged, weights):
                    w[...] = a
                on_epoch(epoch, loss / max(n, 1))
                for v, w in zip(live, weights):
                    w[...] = v
            else:
                on_epoch(epoch, loss / max(n, 1))
    if averaged is not None and snapshots:
        for a, w in zip(averaged, weights):
            w[...] = a


def _joined(a: Examples, b: Examples) -> Examples:
    if (a[2] is None) != (b[2] is None):
        raise ValueError("extra examples must give allowed labels exactly when the others do")
    return (np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]),
            None if a[2] is None else np.concatenate([a[2], b[2]]))


def _step(opt: AdaGrad, rows: np.ndarray, y: np.ndarray, k: int, L: int, mode: str, margin: float,
          allowed: Optional[np.ndarray] = None) -> float:
    b = len(y)
    ar = np.arange(b)
    prefix = np.empty((k, b, L), dtype=np.float32)
    for j in range(k):
        prefix[j] = opt.weights[j][rows[:, j]]
    prefixes = mode != "full"
    if prefixes:
        np.cumsum(prefix, axis=0, out=prefix)
    else:
        prefix = prefix.sum(axis=0, keepdims=True)
    gold_score = prefix[:, ar, y].copy()
    prefix[:, ar, y] = -np.inf
    if allowed is not None:
        prefix[:, ~allowed] = -np.inf
    viol = prefix.argmax(axis=2)                                # loss-augmented argmax (y' != y)
    other = np.take_along_axis(prefix, viol[:, :, None], axis=2)[:, :, 0]
    lead = gold_score - other
    ok = lead >= margin
    if prefixes:
        istar = np.where(ok.any(axis=0), ok.argmax(axis=0), k - 1)
        upto = np.arange(k)[:, None] <= istar[None, :]
        if mode == "dynamic+full":
            upto[k - 1] = True
        active = (~ok) & upto
    else:
        active = ~ok
    loss = float(np.maximum(0.0, margin - lead)[active].sum())
    if not active.any():
        return loss
    # counts[j, b, label]: how many active prefixes i >= j push this label up (+) or gold down (-)
    p = active.shape[0]
    grad = np.zeros((p, b, L), dtype=np.float32)
    ii, bb = np.nonzero(active)
    np.add.at(grad, (ii, bb, viol[ii, bb]), 1.0)
    np.add.at(grad, (ii, bb, y[bb]), -1.0)
    nact = active.astype(np.int32)
    if prefixes:
        grad = np.flip(np.cumsum(np.flip(grad, 0), axis=0), 0)
        nact = np.flip(np.cumsum(np.flip(nact, 0), axis=0), 0)
    for j in range(k):
        jj = j if prefixes else 0
        sel = np.flatnonzero(nact[jj])
        if len(sel):
            opt.update(j, rows[sel, j], grad[jj, sel])
    return loss


def build_model(labels: Sequence[str], attributes: Attributes, templates: Sequence[str],
                keys: List[np.ndarray], first_labels: Optional[Sequence[str]] = None) -> TemplatedModel:
    """A zero-initialised model over ``templates`` with the given key tables."""
    weights = [np.zeros((len(k) + 1, len(labels)), dtype=np.float32) for k in keys]
    return TemplatedModel(labels, attributes, templates, keys, weights, first_labels)


def rows_for(keys: np.ndarray, tables: Sequence[np.ndarray]) -> np.ndarray:
    """Row matrix [num_tokens, len(tables)] for a key matrix."""
    return np.stack([key_rows(t, keys[:, j]) for j, t in enumerate(tables)], axis=1) \
        if len(tables) else np.zeros((len(keys), 0), dtype=np.int32)
