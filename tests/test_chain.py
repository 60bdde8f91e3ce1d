"""Viterbi, forward-backward, BIO constraints and repair in nlpipe.decode.chain, against brute force."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nlpipe.decode import chain

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def brute(scores, trans, start, end):
    """All sequences' scores: (best sequence, log Z, marginals)."""
    n, k = scores.shape
    best, best_s, all_s = None, -np.inf, {}
    for seq in itertools.product(range(k), repeat=n):
        s = start[seq[0]] + scores[0, seq[0]] + end[seq[-1]]
        s += sum(trans[a, b] + scores[t + 1, b] for t, (a, b) in enumerate(zip(seq, seq[1:])))
        all_s[seq] = s
        if s > best_s:
            best, best_s = seq, s
    vals = np.array(list(all_s.values()))
    m = vals[np.isfinite(vals)].max()
    log_z = m + np.log(np.exp(vals - m).sum())
    marg = np.zeros((n, k))
    for seq, s in all_s.items():
        for t, y in enumerate(seq):
            marg[t, y] += np.exp(s - log_z)
    return list(best), log_z, marg


def test_constraints_forbid_i_after_o_and_at_start():
    allowed, start = chain.bio_constraints(LABELS)
    i = {t: n for n, t in enumerate(LABELS)}
    assert not allowed[i["O"], i["I-PER"]]
    assert not allowed[i["B-LOC"], i["I-PER"]]
    assert allowed[i["B-PER"], i["I-PER"]] and allowed[i["I-PER"], i["I-PER"]]
    assert allowed[i["I-PER"], i["B-PER"]] and allowed[i["O"], i["B-LOC"]]
    assert not start[i["I-LOC"]] and start[i["B-LOC"]] and start[i["O"]]


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(0, 10_000))
def test_viterbi_and_marginals_match_brute_force(n, seed):
    rng = np.random.default_rng(seed)
    k = len(LABELS)
    scores = rng.normal(size=(n, k))
    pen_t, pen_s = chain.constraint_penalties(LABELS)
    trans, start, end = rng.normal(size=(k, k)) + pen_t, rng.normal(size=k) + pen_s, rng.normal(size=k)
    best, log_z, marg = brute(scores, trans, start, end)
    got = chain.viterbi(scores[None], np.array([n]), trans, start, end)[0]
    assert list(got) == best
    m, z = chain.forward_backward(scores[None], np.array([n]), trans, start, end)
    assert z[0] == pytest.approx(log_z)
    np.testing.assert_allclose(m[0], marg, atol=1e-9)


def test_batched_rows_of_different_lengths_equal_single_rows():
    rng = np.random.default_rng(3)
    k = len(LABELS)
    pen_t, pen_s = chain.constraint_penalties(LABELS)
    trans, start, end = rng.normal(size=(k, k)) + pen_t, pen_s, rng.normal(size=k)
    lengths = np.array([5, 1, 3])
    scores = rng.normal(size=(3, 5, k))
    batch = chain.viterbi(scores, lengths, trans, start, end)
    marg, _ = chain.forward_backward(scores, lengths, trans, start, end)
    for r, n in enumerate(lengths):
        one = chain.viterbi(scores[r:r + 1, :n], np.array([n]), trans, start, end)[0]
        assert list(batch[r, :n]) == list(one)
        assert (batch[r, n:] == 0).all()
        m1, _ = chain.forward_backward(scores[r:r + 1, :n], np.array([n]), trans, start, end)
        np.testing.assert_allclose(marg[r, :n], m1[0], atol=1e-9)
        np.testing.assert_allclose(marg[r, :n].sum(-1), 1.0)


def test_constrained_chain_output_is_valid_bio_even_when_scores_prefer_invalid():
    k = len(LABELS)
    scores = np.full((1, 3, k), -5.0)
    scores[0, :, LABELS.index("I-PER")] = 5.0  # greedy would say I-PER I-PER I-PER
    c = chain.ConstrainedChain(LABELS, np.zeros((k, k)), np.zeros(k), np.zeros(k))
    tags = [LABELS[i] for i in c.viterbi(scores, np.array([3]))[0]]
    assert chain.is_valid_bio(tags)
    assert tags == ["B-PER", "I-PER", "I-PER"]


@pytest.mark.parametrize("tags, want", [
    (["I-PER", "I-PER", "O"], ["B-PER", "I-PER", "O"]),
    (["O", "I-LOC", "B-PER", "I-LOC", "I-LOC"], ["O", "B-LOC", "B-PER", "B-LOC", "I-LOC"]),
    (["B-PER", "I-PER", "I-LOC"], ["B-PER", "I-PER", "B-LOC"]),
    (["O", "O"], ["O", "O"]),
])
def test_repair_bio(tags, want):
    ids = np.array([[LABELS.index(t) for t in tags]])
    got = chain.repair_bio(ids, np.array([len(tags)]), LABELS)
    assert [LABELS[i] for i in got[0]] == want


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(LABELS), min_size=1, max_size=12))
def test_repair_always_gives_valid_bio_and_keeps_types(tags):
    ids = np.array([[LABELS.index(t) for t in tags]])
    out = [LABELS[i] for i in chain.repair_bio(ids, np.array([len(tags)]), LABELS)[0]]
    assert chain.is_valid_bio(out)
    assert [t[2:] for t in out] == [t[2:] for t in tags]
    if chain.is_valid_bio(tags):
        assert out == tags


def test_decode_greedy_is_argmax_repaired():
    k = len(LABELS)
    scores = np.zeros((1, 2, k))
    scores[0, 0, LABELS.index("O")] = 1
    scores[0, 1, LABELS.index("I-LOC")] = 1
    assert [LABELS[i] for i in chain.decode(scores, np.array([2]), LABELS)[0]] == ["O", "B-LOC"]
