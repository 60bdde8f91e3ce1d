"""Learning the template order: the wrapper method (greedy forward selection) and a cheap baseline.

Both train small models on a subsample of the training tokens with the same hyper-parameters as
the final training and score them by greedy tagging accuracy on (part of) the development data.
The baseline ranks every template by the accuracy of a model with that template alone; the wrapper
adds, at each step, the template whose addition to the chosen prefix scores best.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.linear.dfs import tag
from nlpipe.linear.model import TemplatedModel
from nlpipe.linear.templates import Layout


class OrderingData:
    """What candidate models are trained and scored on."""

    def __init__(self, model: TemplatedModel, rows: np.ndarray, gold: np.ndarray, dev_layout: Layout,
                 dev_atoms: np.ndarray, dev_gold: np.ndarray):
        self.model = model            # key tables of every candidate template (weights unused)
        self.rows = rows              # training rows [tokens, templates] (a subsample)
        self.gold = gold
        self.dev_layout = dev_layout
        self.dev_atoms = dev_atoms
        self.dev_gold = dev_gold


def score_subset(data: OrderingData, indices: Sequence[int], fit_options: Dict[str, Any]) -> float:
    """Dev accuracy of a model trained on templates ``indices`` (in that order)."""
    from nlpipe.train.linear_fit import fit

    m = data.model
    weights = [np.zeros((len(m.keys[i]) + 1, m.num_labels), dtype=np.float32) for i in indices]
    fit(weights, data.rows[:, list(indices)], data.gold, **fit_options)
    sub = TemplatedModel(m.labels, m.attributes, [m.templates[i].name for i in indices],
                         [m.keys[i] for i in indices], weights)
    pred, _ = tag(sub, data.dev_layout, data.dev_atoms)
    return float(np.mean(pred == data.dev_gold))


def baseline_order(data: OrderingData, fit_options: Dict[str, Any],
                   log: Optional[Callable[[str], None]] = None) -> Tuple[List[int], List[float]]:
    """All templates sorted by the dev accuracy of each one alone (best first)."""
    k = len(data.model.templates)
    scores = [score_subset(data, [j], fit_options) for j in range(k)]
    order = sorted(range(k), key=lambda j: (-scores[j], j))
    if log:
        log(f"baseline order: best single template {data.model.templates[order[0]].name} "
            f"({100 * scores[order[0]]:.2f})")
    return order, [scores[j] for j in order]


def wrapper_order(data: OrderingData, fit_options: Dict[str, Any], steps: int,
                  log: Optional[Callable[[str], None]] = None) -> Tuple[List[int], List[float]]:
    """Greedy forward selection for ``steps`` steps; the rest follow the first step's ranking."""
    if steps < 1:
        raise ValueError("the wrapper needs at least one step")
    k = len(data.model.templates)
    chosen: List[int] = []
    curve: List[float] = []
    first: Optional[List[float]] = None
    for step in range(min(steps, k)):
        rest = [j for j in range(k) if j not in chosen]
        scores = [score_subset(data, chosen + [j], fit_options) for j in rest]
        if first is None:
            first = [0.0] * k
            for j, s in zip(rest, scores):
                first[j] = s
        best = int(np.argmax(scores))
        chosen.append(rest[best])
        curve.append(scores[best])
        if log:
            log(f"wrapper step {step + 1}/{steps}: + {data.model.templates[rest[best]].name} "
                f"-> dev {100 * scores[best]:.2f}")
    ranking = first or [0.0] * k
    rest = sorted((j for j in range(k) if j not in chosen), key=lambda j: (-ranking[j], j))
    return chosen + rest, curve
