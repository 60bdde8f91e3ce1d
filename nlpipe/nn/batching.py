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


# Padded tokens per batch of the neural stages at inference, by device. On the CPU a batch of about a
# thousand tokens keeps one core's matrix products efficient, and several batches run at once in
# threads; a GPU needs far larger batches to be busy. Each stage also caps the length of a sentence
# (its ``max_len``), so a batch's largest tensor, batch x length x length, stays within the budget times
# that cap however long the sentences are.
CPU_BATCH_TOKENS = 1000
GPU_BATCH_TOKENS = 16000


def batch_tokens_for(device: str, given: Optional[int] = None) -> int:
    """The token budget of a batch on ``device`` (``given`` wins when set)."""
    if given is not None:
        if given < 1:
            raise ValueError(f"a batch must hold at least one token, not {given}")
        return given
    return CPU_BATCH_TOKENS if str(device) == "cpu" else GPU_BATCH_TOKENS
