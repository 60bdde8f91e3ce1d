"""Tree decoders against brute-force enumeration on n <= 5: Eisner, Chu-Liu-Edmonds, marginals."""
from __future__ import annotations

import itertools
from typing import List

import numpy as np
import pytest
import torch

from nlpipe.decode.eisner import eisner, inside
from nlpipe.decode.mst import chu_liu_edmonds, is_tree, tree_mask
from nlpipe.decode.semiring import LogSemiring, MaxSemiring
from nlpipe.decode.tree_marginals import marginals, nonprojective_log_partition, projective_log_partition


def is_projective(heads: np.ndarray) -> bool:
    arcs = [(min(h, d), max(h, d)) for d, h in enumerate(heads) if d > 0]
    for (a, b), (c, d) in itertools.combinations(arcs, 2):
        if a < c < b < d or c < a < d < b:
            return False
    return True


def all_trees(n: int, projective: bool) -> List[np.ndarray]:
    """Every head assignment of n words that is a tree with one root dependent."""
    out = []
    for hs in itertools.product(range(n + 1), repeat=n):
        heads = np.array((0,) + hs)
        if any(heads[d] == d for d in range(1, n + 1)) or not is_tree(heads):
            continue
        if projective and not is_projective(heads):
            continue
        out.append(heads)
    return out


TREES = {(n, p): all_trees(n, p) for n in range(1, 6) for p in (False, True)}


def tree_score(s: np.ndarray, heads: np.ndarray) -> float:
    return float(sum(s[d, heads[d]] for d in range(1, len(heads))))


def brute_marginals(s: np.ndarray, trees: List[np.ndarray]) -> np.ndarray:
    scores = np.array([tree_score(s, t) for t in trees])
    p = np.exp(scores - scores.max())
    p /= p.sum()
    m = np.zeros_like(s)
    for t, pt in zip(trees, p):
        for d in range(1, len(t)):
            m[d, t[d]] += pt
    return m


def random_scores(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.normal(0.0, 2.0, (n + 1, n + 1))


def test_tree_counts_match_known_numbers():
    # trees with one root dependent = rooted trees on n labelled words = n^(n-1)
    assert len(TREES[(1, False)]) == 1
    assert len(TREES[(2, False)]) == 2
    assert len(TREES[(3, False)]) == 9  # n^(n-1) rooted trees on n labelled nodes
    assert len(TREES[(4, False)]) == 64
    assert len(TREES[(3, True)]) == 7  # 9 minus the 2 trees with a crossing arc


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("seed", range(8))
def test_cle_finds_the_best_tree(n, seed):
    s = random_scores(np.random.default_rng(seed * 10 + n), n)
    heads = chu_liu_edmonds(s)
    assert is_tree(heads)
    best = max(tree_score(s, t) for t in TREES[(n, False)])
    assert tree_score(s, heads) == pytest.approx(best)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("seed", range(8))
def test_eisner_finds_the_best_projective_tree(n, seed):
    s = random_scores(np.random.default_rng(seed * 10 + n + 100), n)
    heads = eisner(torch.tensor(s)[None], torch.ones(1, n + 1, dtype=torch.bool))[0].numpy()
    assert is_tree(heads) and is_projective(heads)
    best = max(tree_score(s, t) for t in TREES[(n, True)])
    assert tree_score(s, heads) == pytest.approx(best, abs=1e-4)
    top = inside(torch.tensor(s)[None], torch.ones(1, n + 1, dtype=torch.bool), MaxSemiring)
    assert float(top[0]) == pytest.approx(best)


@pytest.mark.parametrize("projective", [False, True])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("seed", range(4))
def test_partition_and_marginals_equal_brute_force(n, seed, projective):
    s = random_scores(np.random.default_rng(seed * 10 + n + 200), n)
    trees = TREES[(n, projective)]
    mask = torch.ones(1, n + 1, dtype=torch.bool)
    st = torch.tensor(s)[None]
    log_z = (projective_log_partition if projective else nonprojective_log_partition)(st, mask)
    scores = np.array([tree_score(s, t) for t in trees])
    assert float(log_z[0]) == pytest.approx(np.logaddexp.reduce(scores), abs=1e-6)
    m = marginals(st, mask, projective)[0].numpy()
    assert np.allclose(m, brute_marginals(s, trees), atol=1e-6)
    assert np.allclose(m[1:].sum(1), 1.0)
    assert np.allclose(m[0], 0.0)


@pytest.mark.parametrize("projective", [False, True])
def test_padded_batch_equals_each_sentence_alone(projective):
    rng = np.random.default_rng(7)
    lengths = [5, 1, 3, 4]
    big = max(lengths) + 1
    scores = torch.tensor(rng.normal(0, 2, (len(lengths), big, big)))
    mask = torch.arange(big)[None, :] <= torch.tensor(lengths)[:, None]
    log_z = (projective_log_partition if projective else nonprojective_log_partition)(scores, mask)
    m = marginals(scores, mask, projective)
    heads = eisner(scores, mask)
    for b, n in enumerate(lengths):
        one = scores[b:b + 1, : n + 1, : n + 1]
        m1 = torch.ones(1, n + 1, dtype=torch.bool)
        alone = (projective_log_partition if projective else nonprojective_log_partition)(one, m1)
        assert float(log_z[b]) == pytest.approx(float(alone[0]), abs=1e-6)
        assert torch.allclose(m[b, : n + 1, : n + 1], marginals(one, m1, projective)[0], atol=1e-8)
        assert torch.all(m[b, n + 1:] == 0) and torch.all(m[b, :, n + 1:] == 0)
        assert torch.equal(heads[b, : n + 1], eisner(one, m1)[0])
        assert torch.all(heads[b, n + 1:] == 0)


def test_tree_mask_checks_root_count_cycles_and_range():
    heads = np.array([
        [0, 2, 0, 2, 0],  # tree (length 3; padding ignored)
        [0, 0, 0, 2, 0],  # two root dependents
        [0, 2, 3, 1, 0],  # cycle 1 -> 2 -> 3 -> 1, no root
        [0, 0, 3, 2, 0],  # root + cycle 2 <-> 3
        [0, 4, 0, 2, 1],  # head 4 outside length 3
    ])
    lengths = np.array([3, 3, 3, 3, 3])
    assert tree_mask(heads, lengths).tolist() == [True, False, False, False, False]
    assert is_tree(np.array([0, 0])) and not is_tree(np.array([0, 1]))


def test_cle_breaks_a_greedy_cycle():
    # greedy heads: 1 <- 2 and 2 <- 1 (a cycle); the root arc to 1 is the cheapest way out
    s = np.full((3, 3), -10.0)
    s[1, 2], s[2, 1], s[1, 0], s[2, 0] = 5.0, 5.0, 1.0, 0.0
    assert chu_liu_edmonds(s).tolist() == [0, 0, 1]


def test_projective_mask_agrees_with_pairwise_check():
    rng = np.random.default_rng(3)
    heads, lengths, expect = [], [], []
    for n in range(1, 6):
        for t in TREES[(n, False)][:: max(1, len(TREES[(n, False)]) // 20)]:
            row = np.zeros(7, dtype=np.int64)
            row[: n + 1] = t
            row[n + 1:] = rng.integers(0, 7, 6 - n)  # padding garbage must not matter
            heads.append(row)
            lengths.append(n)
            expect.append(is_projective(t))
    from nlpipe.decode.mst import projective_mask

    got = projective_mask(np.array(heads), np.array(lengths))
    assert got.tolist() == expect and not all(expect) and any(expect)
