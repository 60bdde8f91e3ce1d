"""Length-sorted batching by a padded-token budget, shared by every neural stage and trainer."""
from __future__ import annotations

import random
from typing import List, Optional, Sequence


def length_batches(lengths: Sequence[int], max_tokens: int,
                   rng: Optional[random.Random] = None) -> List[List[int]]:
    """Indices grouped by similar length, at most ``max_tokens`` padded tokens (batch size times its
    longest length) per batch; a longer item makes a batch of its own. With ``rng``, items of equal
    length are ordered at random and the batches shuffled (training)."""
    key = (lambda i: (lengths[i], rng.random())) if rng is not None else (lambda i: lengths[i])
    order = sorted(range(len(lengths)), key=key)
    out: List[List[int]] = []
    cur: List[int] = []
    for i in order:
        if cur and (len(cur) + 1) * lengths[i] > max_tokens:
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    if rng is not None:
        rng.shuffle(out)
    return out
