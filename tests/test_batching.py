"""The one length-sorted batching used by the neural stages and trainers."""
from __future__ import annotations

import random

from nlpipe.nn.batching import length_batches


def test_batches_respect_the_padded_token_budget_and_cover_every_index_once():
    lengths = [5, 1, 9, 3, 3, 7, 2, 30]
    batches = length_batches(lengths, 12)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 12
    # sorted by length, ties in input order; the over-long item stands alone
    assert [i for b in batches for i in b] == [1, 6, 3, 4, 0, 5, 2, 7]
    assert batches[-1] == [7]


def test_a_random_generator_shuffles_batches_reproducibly():
    lengths = [3] * 10 + [5] * 10
    a = length_batches(lengths, 9, random.Random(1))
    b = length_batches(lengths, 9, random.Random(1))
    assert a == b and sorted(i for x in a for i in x) == list(range(20))
    assert a != length_batches(lengths, 9)
