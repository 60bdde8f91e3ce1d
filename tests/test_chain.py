"""The chain DP of nlpipe.decode.chain (numpy and torch, Log and Max semirings) against brute force
(BIO constraints and the repair: tests/test_tags.py)."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nlpipe.decode import chain
from nlpipe.decode.semiring import LogSemiring, MaxSemiring
from nlpipe.tags import is_valid

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


def seq_score(scores, seq, trans, start, end):
    """The score of one tag sequence, summed by hand."""
    s = start[seq[0]] + scores[0, seq[0]] + end[seq[-1]]
    return s + sum(trans[a, b] + scores[t + 1, b] for t, (a, b) in enumerate(zip(seq, seq[1:])))


def potentials(rng, k, constrained=True):
    """Random (trans, start, end) with the BIO-forbidden entries at the semiring zero."""
    trans, start, end = rng.normal(size=(k, k)), rng.normal(size=k), rng.normal(size=k)
    if constrained:
        trans, start = chain.constrain(*chain.bio_constraints(LABELS), trans, start)
    return trans, start, end


def as_backend(backend, *arrays):
    """The arrays as numpy or as float64 torch tensors."""
    if backend == "numpy":
        return arrays
    torch = pytest.importorskip("torch")
    return tuple(torch.as_tensor(a) for a in arrays)


def to_numpy(x):
    return x if isinstance(x, np.ndarray) else x.detach().cpu().numpy()


BACKENDS = ["numpy", "torch"]


def test_constrain_sets_forbidden_entries_to_the_semiring_zero():
    allowed, allowed_start = chain.bio_constraints(["O", "B-PER", "I-PER"])
    trans, start = chain.constrain(allowed, allowed_start)
    z = LogSemiring.zero
    np.testing.assert_array_equal(trans, [[0, 0, z], [0, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(start, [0, 0, z])
    trans, start = chain.constrain(allowed, allowed_start, np.full((3, 3), 2.0), np.full(3, 3.0))
    np.testing.assert_array_equal(trans, [[2, 2, z], [2, 2, 2], [2, 2, 2]])
    np.testing.assert_array_equal(start, [3, 3, z])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("constrained", [True, False])
def test_forward_viterbi_and_marginals_match_brute_force(backend, n, constrained):
    rng = np.random.default_rng(10 * n + constrained)
    k = len(LABELS)
    scores = rng.normal(size=(n, k))
    trans, start, end = potentials(rng, k, constrained)
    best, log_z, marg = brute(scores, trans, start, end)
    best_score = seq_score(scores, best, trans, start, end)
    s, t, a, e = as_backend(backend, scores[None], trans, start, end)
    lengths = np.array([n])
    assert to_numpy(chain.forward(s, lengths, t, a, e, LogSemiring))[0] == pytest.approx(log_z, rel=1e-12)
    assert to_numpy(chain.log_partition(s, lengths, t, a, e))[0] == pytest.approx(log_z, rel=1e-12)
    assert to_numpy(chain.forward(s, lengths, t, a, e, MaxSemiring))[0] == pytest.approx(best_score, rel=1e-12)
    assert list(to_numpy(chain.viterbi(s, lengths, t, a, e))[0]) == best
    m, z = chain.marginals(s, lengths, t, a, e)
    assert to_numpy(z)[0] == pytest.approx(log_z, rel=1e-12)
    np.testing.assert_allclose(to_numpy(m)[0], marg, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(BACKENDS), st.lists(st.integers(1, 6), min_size=1, max_size=4), st.integers(0, 10_000))
def test_score_of_viterbi_path_is_the_max(backend, lengths, seed):
    rng = np.random.default_rng(seed)
    k = len(LABELS)
    lengths = np.array(lengths)
    scores = rng.normal(size=(len(lengths), max(lengths), k))
    trans, start, end = potentials(rng, k)
    s, t, a, e = as_backend(backend, scores, trans, start, end)
    ids = to_numpy(chain.viterbi(s, lengths, t, a, e))
    top = to_numpy(chain.forward(s, lengths, t, a, e, MaxSemiring))
    for r, n in enumerate(lengths):
        assert seq_score(scores[r, :n], list(ids[r, :n]), trans, start, end) == pytest.approx(top[r], rel=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_padded_batch_equals_each_sentence_alone(backend):
    rng = np.random.default_rng(3)
    k = len(LABELS)
    trans, start, end = potentials(rng, k)
    lengths = np.array([5, 1, 3])
    scores = rng.normal(size=(3, 5, k))
    scores[1, 1:] = 100.0  # padding must not count, whatever it holds
    scores[2, 3:] = -100.0
    s, t, a, e = as_backend(backend, scores, trans, start, end)
    ids = to_numpy(chain.viterbi(s, lengths, t, a, e))
    marg, log_z = (to_numpy(x) for x in chain.marginals(s, lengths, t, a, e))
    top = to_numpy(chain.forward(s, lengths, t, a, e, MaxSemiring))
    for r, n in enumerate(lengths):
        (one,) = as_backend(backend, scores[r:r + 1, :n])
        alone = np.array([n])
        assert list(ids[r, :n]) == list(to_numpy(chain.viterbi(one, alone, t, a, e))[0])
        assert (ids[r, n:] == 0).all()
        m1, z1 = (to_numpy(x) for x in chain.marginals(one, alone, t, a, e))
        np.testing.assert_allclose(marg[r, :n], m1[0], atol=1e-12)
        assert (marg[r, n:] == 0).all()
        np.testing.assert_allclose(marg[r, :n].sum(-1), 1.0)
        assert log_z[r] == pytest.approx(z1[0], rel=1e-12)
        assert top[r] == pytest.approx(to_numpy(chain.forward(one, alone, t, a, e, MaxSemiring))[0], rel=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_ties_go_to_the_lowest_tag_index(backend):
    # every valid sequence scores 0; lowest index first at the end and at each back-pointer: all O
    k = len(LABELS)
    trans, start = chain.constrain(*chain.bio_constraints(LABELS))
    s, t, a, e = as_backend(backend, np.zeros((2, 4, k)), trans, start, np.zeros(k))
    assert to_numpy(chain.viterbi(s, np.array([4, 2]), t, a, e)).tolist() == [[0, 0, 0, 0], [0, 0, 0, 0]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_batch_and_empty_rows(backend):
    k = len(LABELS)
    s, t = as_backend(backend, np.zeros((2, 0, k)), np.zeros((k, k)))
    assert to_numpy(chain.viterbi(s, np.array([0, 0]), t)).shape == (2, 0)
    assert to_numpy(chain.log_partition(s, np.array([0, 0]), t)).tolist() == [0.0, 0.0]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(BACKENDS), st.integers(1, 8), st.integers(0, 10_000))
def test_constrained_viterbi_never_outputs_invalid_bio(backend, n, seed):
    rng = np.random.default_rng(seed)
    k = len(LABELS)
    scores = rng.normal(size=(1, n, k))
    scores[0, :, [LABELS.index("I-PER"), LABELS.index("I-LOC")]] += 6.0  # greedy would pick I- tags
    trans, start, end = potentials(rng, k)
    s, t, a, e = as_backend(backend, scores, trans, start, end)
    ids = to_numpy(chain.viterbi(s, np.array([n]), t, a, e))[0]
    assert is_valid([LABELS[i] for i in ids])


def test_constrained_chain_output_is_valid_bio_even_when_scores_prefer_invalid():
    k = len(LABELS)
    scores = np.full((1, 3, k), -5.0)
    scores[0, :, LABELS.index("I-PER")] = 5.0  # greedy would say I-PER I-PER I-PER
    c = chain.ConstrainedChain(LABELS, np.zeros((k, k)), np.zeros(k), np.zeros(k))
    tags = [LABELS[i] for i in c.viterbi(scores, np.array([3]))[0]]
    assert is_valid(tags)
    assert tags == ["B-PER", "I-PER", "I-PER"]


def test_decode_greedy_is_argmax_repaired():
    k = len(LABELS)
    scores = np.zeros((1, 2, k))
    scores[0, 0, LABELS.index("O")] = 1
    scores[0, 1, LABELS.index("I-LOC")] = 1
    assert [LABELS[i] for i in chain.decode(scores, np.array([2]), LABELS)[0]] == ["O", "B-LOC"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_sparse_constraints_viterbi_matches_brute_force(backend, n):
    # pure constraints: every allowed transition scores 0, so the best valid sequence is brute force's
    rng = np.random.default_rng(n)
    k = len(LABELS)
    scores = rng.normal(size=(n, k))
    scores[:, [LABELS.index("I-PER"), LABELS.index("I-LOC")]] += 1.0  # tempt invalid sequences
    allowed, allowed_start = chain.bio_constraints(LABELS)
    best, _, _ = brute(scores, *chain.constrain(allowed, allowed_start), np.zeros(k))
    (s,) = as_backend(backend, scores[None])
    ids = to_numpy(chain.Constraints(allowed, allowed_start).viterbi(s, np.array([n])))
    assert list(ids[0]) == best
    assert is_valid([LABELS[i] for i in ids[0]])


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(BACKENDS), st.lists(st.integers(1, 9), min_size=1, max_size=6), st.integers(0, 10_000),
       st.booleans())
def test_sparse_constraints_viterbi_equals_the_dense_one_ties_included(backend, lengths, seed, ties):
    labels = ["O", "B-A", "I-A", "B-B", "I-B", "B-C", "I-C", "I-D"]  # I-D: no B-D to follow
    rng = np.random.default_rng(seed)
    lengths = np.array(lengths)
    scores = rng.normal(size=(len(lengths), max(lengths), len(labels)))
    if ties:
        scores = np.round(scores)  # many equal scores: ties must go the same way
    allowed, allowed_start = chain.bio_constraints(labels)
    s, = as_backend(backend, scores)
    dense = chain.viterbi(scores, lengths, *chain.constrain(allowed, allowed_start))
    sparse = to_numpy(chain.Constraints(allowed, allowed_start).viterbi(s, lengths))
    np.testing.assert_array_equal(sparse, dense)
