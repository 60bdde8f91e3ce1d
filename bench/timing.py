"""Timing several settings in one benchmark run so that their ratios can be trusted.

The machine's speed drifts over minutes, so settings timed one after another are not comparable.
:func:`interleaved_best` runs them in rounds that interleave them; in each round every setting
runs twice and the second run is timed (warm caches, as in a long stream of batches); each
setting keeps its best round.
"""
from __future__ import annotations

import time
from typing import Any, Callable, List, Sequence, Tuple

Setting = Tuple[Callable[[], Any], Callable[[Any], Any]]


def interleaved_best(settings: Sequence[Setting], repeat: int) -> Tuple[List[Tuple[float, float]], List[Any]]:
    """For each ``(setup, run)``: the best (wall, CPU) seconds of ``run(setup())`` over ``repeat``
    rounds (``setup`` is not timed), and what the first timed run returned."""
    best = [(float("inf"), float("inf"))] * len(settings)
    first: List[Any] = [None] * len(settings)
    for k in range(repeat):
        for i, (setup, run) in enumerate(settings):
            run(setup())    # untimed: brings the setting's model into the caches
            data = setup()
            t, c = time.perf_counter(), time.process_time()
            out = run(data)
            best[i] = (min(best[i][0], time.perf_counter() - t), min(best[i][1], time.process_time() - c))
            if k == 0:
                first[i] = out
    return best, first
