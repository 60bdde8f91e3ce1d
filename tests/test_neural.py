"""Neural taggers: numpy ID-CNN inference equals torch, CRF likelihood and decoding, init, features."""
import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nlpipe.decode import chain  # noqa: E402
from nlpipe.decode.semiring import MaxSemiring  # noqa: E402
from nlpipe.tags import is_valid  # noqa: E402
from nlpipe.nn.crf import CRF  # noqa: E402
from nlpipe.nn.features import (N_AFFIXES, AffixVocab, affix_keys, shape_ids,  # noqa: E402
                                    word_key, word_shape, word_vocab)
from nlpipe.nn.idcnn import IDCNN  # noqa: E402
from nlpipe.models.idcnn_numpy import IDCNNInference  # noqa: E402
from nlpipe.nn.tagger import DEFAULTS, NeuralTagger  # noqa: E402

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def test_word_keys_and_shapes():
    assert word_key("Year-1996") == "year-0000"
    assert [word_shape(w) for w in ["...", "dog", "NATO", "Paris", "eBay"]] == [1, 2, 3, 4, 5]
    v = word_vocab(["the", "paris"])
    assert list(v.ids(["The", "PARIS", "zzz"])) == [2, 3, 1]
    assert list(shape_ids(["The", "1"])) == [4, 1]


def test_affix_keys_and_ids():
    assert affix_keys("Walked") == ["p1:w", "p2:wa", "p3:wal", "s1:d", "s2:ed", "s3:ked", "s4:lked"]
    assert affix_keys("A1") == ["p1:a", "p2:a0", "p3:a0", "s1:0", "s2:a0", "s3:a0", "s4:a0"]
    v = AffixVocab(["s2:ed", "p1:w"])
    ids = v.affix_ids(["walked", "Zq"])
    assert ids.shape == (2, N_AFFIXES)
    assert list(ids[0]) == [3, 1, 1, 1, 2, 1, 1] and set(ids[1]) == {1}
    assert v.affix_ids([]).shape == (0, N_AFFIXES)


def test_identity_init_of_dilated_layers():
    net = IDCNN(10, 6, 3, dilations=(1, 2, 1), n_blocks=1)
    for conv in net.block:
        w = conv.weight.detach()
        assert torch.equal(w[:, :, 1], torch.eye(6))
        assert not w[:, :, 0].any() and not w[:, :, 2].any()


def _tagger(crf=False, seed=0, affixes=0):
    torch.manual_seed(seed)
    hp = dict(DEFAULTS["idcnn"], arch="idcnn", crf=crf, context="sentence", width=12, n_blocks=2,
              affix_dim=6 if affixes else 0)
    model = NeuralTagger(hp, 30, LABELS, n_affixes=affixes)
    with torch.no_grad():  # move off the identity init so every tap matters
        for p in model.enc.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model.eval()


@pytest.mark.parametrize("n_affixes", [0, 20])
def test_numpy_inference_equals_torch_and_sequences_do_not_leak(n_affixes):
    model = _tagger(affixes=n_affixes)
    rng = np.random.default_rng(0)
    lengths = [7, 1, 3, 12]
    seqs = [(rng.integers(1, 30, n), rng.integers(1, 6, n),
             rng.integers(0, 20, (n, N_AFFIXES)) if n_affixes else None) for n in lengths]
    words = torch.zeros(len(seqs), max(lengths), dtype=torch.long)
    shapes = torch.zeros_like(words)
    affixes = torch.zeros(len(seqs), max(lengths), N_AFFIXES, dtype=torch.long)
    for i, (w, s, a) in enumerate(seqs):
        words[i, :len(w)] = torch.as_tensor(w)
        shapes[i, :len(s)] = torch.as_tensor(s)
        if a is not None:
            affixes[i, :len(w)] = torch.as_tensor(a)
    with torch.no_grad():
        ref = model(words, shapes, shapes > 0, drop=False, affixes=affixes if n_affixes else None)[-1].numpy()
    arrays = {k: v.numpy() for k, v in model.state_dict().items()}
    inf = IDCNNInference(arrays, model.hp["dilations"], model.hp["n_blocks"])
    packed, starts = inf.scores(seqs)
    for i, (n, st) in enumerate(zip(lengths, starts)):
        np.testing.assert_allclose(packed[st:st + n], ref[i, :n], rtol=1e-4, atol=1e-4)
    # one sequence alone gives the same scores as inside the batch
    alone, _ = inf.scores(seqs[3:4])
    np.testing.assert_allclose(alone, packed[starts[3]:starts[3] + 12], rtol=1e-5, atol=1e-5)


def test_crf_log_partition_and_gold_score_match_enumeration():
    torch.manual_seed(1)
    crf = CRF(LABELS)
    with torch.no_grad():
        for p in (crf.trans, crf.start, crf.end):
            p.normal_()
    n, k = 3, len(LABELS)
    em = torch.randn(2, n, k)
    mask = torch.tensor([[True] * 3, [True, True, False]])
    trans, start, end = (t.detach().numpy().astype(float) for t in crf.potentials())
    for b, length in enumerate([3, 2]):
        e = em[b, :length].numpy()
        scores = []
        for seq in itertools.product(range(k), repeat=length):
            s = start[seq[0]] + e[0, seq[0]] + end[seq[-1]]
            s += sum(trans[x, y] + e[t + 1, y] for t, (x, y) in enumerate(zip(seq, seq[1:])))
            scores.append(s)
        log_z = np.log(np.exp(np.array(scores)).sum())
        assert float(crf.log_partition(em, mask)[b]) == pytest.approx(log_z, rel=1e-5)
    tags = torch.tensor([[1, 2, 0], [3, 4, 0]])
    gold = crf.score(em, tags, mask)
    e0 = em[0].numpy()
    want0 = start[1] + e0[0, 1] + trans[1, 2] + e0[1, 2] + trans[2, 0] + e0[2, 0] + end[0]
    assert float(gold[0]) == pytest.approx(want0, rel=1e-5)
    assert float(crf.nll(em, tags, mask)) > 0


def _random_crf(seed):
    torch.manual_seed(seed)
    crf = CRF(LABELS)
    with torch.no_grad():
        for p in (crf.trans, crf.start, crf.end):
            p.normal_()
    return crf


def test_crf_decode_is_valid_bio_and_matches_chain():
    crf = _random_crf(2)
    em = torch.randn(4, 6, len(LABELS)) * 3
    em[:, :, [LABELS.index("I-PER"), LABELS.index("I-LOC")]] += 4.0  # greedy would pick I- tags
    lengths = np.array([6, 2, 4, 1])
    ids = crf.decode(em, lengths)
    # the numpy chain inference decodes with (CRF.chain) gives the same paths, padding 0
    assert ids.tolist() == crf.chain().viterbi(em.numpy(), lengths).tolist()
    assert (ids[1, 2:] == 0).all() and (ids[3, 1:] == 0).all()
    trans, start, end = (t.detach().numpy().astype(float) for t in crf.potentials())
    for r, n in enumerate(lengths):
        assert is_valid([LABELS[i] for i in ids[r, :n]])
        e = em[r, :n].numpy().astype(float)
        best = max(itertools.product(range(len(LABELS)), repeat=int(n)),
                   key=lambda seq: start[seq[0]] + e[0, seq[0]] + end[seq[-1]]
                   + sum(trans[x, y] + e[t + 1, y] for t, (x, y) in enumerate(zip(seq, seq[1:]))))
        assert list(ids[r, :n]) == list(best)


def test_crf_score_of_decoded_path_is_the_max_and_log_likelihood_is_at_most_zero():
    crf = _random_crf(3)
    em = torch.randn(3, 5, len(LABELS))
    mask = torch.tensor([[True] * 5, [True] * 2 + [False] * 3, [True] * 4 + [False]])
    ids = torch.as_tensor(crf.decode(em, mask.sum(1).numpy()))
    top = chain.forward(em, mask.sum(1), *crf.potentials(), semiring=MaxSemiring)
    torch.testing.assert_close(crf.score(em, ids, mask), top)
    gold = torch.tensor([[1, 2, 0, 3, 4], [0, 0, 0, 0, 0], [3, 4, 4, 0, 0]])  # valid BIO
    for tags in (gold, ids):
        assert (crf.score(em, tags, mask) - crf.log_partition(em, mask) <= 0).all()
    assert float(crf.nll(em, gold, mask)) > 0


def test_crf_log_partition_of_a_padded_batch_equals_each_sentence_alone():
    crf = _random_crf(4)
    em = torch.randn(3, 5, len(LABELS))
    lengths = [5, 2, 4]
    mask = torch.arange(5)[None] < torch.tensor(lengths)[:, None]
    em[1, 2:] = 50.0  # padding must not count
    batch = crf.log_partition(em, mask)
    for r, n in enumerate(lengths):
        alone = crf.log_partition(em[r:r + 1, :n], torch.ones(1, n, dtype=torch.bool))
        torch.testing.assert_close(batch[r:r + 1], alone)


def test_training_step_lowers_loss_for_each_variant():
    words = torch.randint(2, 30, (3, 6))
    shapes = torch.randint(1, 6, (3, 6))
    tags = torch.tensor([[1, 2, 0, 0, 3, 4]] * 3)
    mask = torch.ones(3, 6, dtype=torch.bool)
    for arch, crf in [("idcnn", False), ("idcnn", True), ("bilstm", False), ("bilstm", True)]:
        torch.manual_seed(0)
        hp = dict(DEFAULTS[arch], arch=arch, crf=crf, context="sentence")
        hp.update(width=16, hidden=8, dropout_in=0.0, dropout_block=0.0, dropout=0.0, word_dropout=0.0)
        model = NeuralTagger(hp, 30, LABELS)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        first = float(model.loss(words, shapes, tags, mask))
        for _ in range(30):
            opt.zero_grad()
            model.loss(words, shapes, tags, mask).backward()
            opt.step()
        assert float(model.loss(words, shapes, tags, mask)) < first / 2, (arch, crf)


def test_expectation_linear_penalty_is_added_only_with_dropout():
    model = _tagger()
    model.train()
    words = torch.randint(2, 30, (2, 5))
    shapes = torch.randint(1, 6, (2, 5))
    tags = torch.zeros(2, 5, dtype=torch.long)
    mask = torch.ones(2, 5, dtype=torch.bool)
    model.hp["el_penalty"] = 0.0
    torch.manual_seed(5)
    base = float(model.loss(words, shapes, tags, mask))
    model.hp["el_penalty"] = 10.0
    torch.manual_seed(5)
    assert float(model.loss(words, shapes, tags, mask)) > base


def test_weight_average_follows_the_decay_and_swaps_back():
    from nlpipe.nn.weights import WeightAverage

    net = torch.nn.Linear(2, 1)
    with torch.no_grad():
        net.weight.fill_(0.0)
    average = WeightAverage(net, 0.5)
    for value in (4.0, 8.0):
        with torch.no_grad():
            net.weight.fill_(value)
        average.update(net)
    assert torch.allclose(average.state["weight"], torch.full((1, 2), 5.0))  # (0 * .5 + 4 * .5) * .5 + 8 * .5
    with average.swapped_in(net):
        assert torch.allclose(net.weight, torch.full((1, 2), 5.0))
    assert torch.allclose(net.weight, torch.full((1, 2), 8.0))
    with pytest.raises(ValueError):
        WeightAverage(net, 1.0)


def test_shared_dropout_drops_the_same_units_at_every_time_step():
    from nlpipe.nn.parser_encoder import dropout

    x = torch.ones(4, 30, 64)
    torch.manual_seed(0)
    y = dropout(x, 0.5, True, shared=True)
    assert torch.equal(y, y[:, :1].expand_as(y))              # one mask per sequence
    assert set(torch.unique(y).tolist()) == {0.0, 2.0}          # kept units rescaled by 1 / (1 - p)
    assert not torch.equal(y[0], y[1])                          # but not one mask for the batch
    word_by_word = dropout(x, 0.5, True)
    assert not torch.equal(word_by_word, word_by_word[:, :1].expand_as(word_by_word))
    assert torch.equal(dropout(x, 0.5, False, shared=True), x)   # identity at test time


def test_biaffine_hyper_parameter_turns_on_shared_dropout_and_old_configs_keep_it_off():
    from nlpipe.models.biaffine import DEFAULT_HYPER, BiaffineModel

    vocab = {"words": ["a", "b"], "affixes": [], "upos": ["X"], "xpos": ["X"], "rels": ["root", "dep"]}
    new = BiaffineModel(vocab, dict(DEFAULT_HYPER, hidden=8, arc_dim=8, rel_dim=4, layers=2))
    old_hyper = {k: v for k, v in DEFAULT_HYPER.items() if k != "shared_dropout"}
    old = BiaffineModel(vocab, dict(old_hyper, hidden=8, arc_dim=8, rel_dim=4, layers=2))
    assert new.net.encoder.lstm.shared and new.net.arc_dep.shared
    assert not old.net.encoder.lstm.shared and not old.net.rel_head.shared


def test_adam_steps_like_the_default_implementation():
    from nlpipe.train.optim import adam

    torch.manual_seed(0)
    a, b = torch.nn.Linear(5, 3), torch.nn.Linear(5, 3)
    b.load_state_dict(a.state_dict())
    x = torch.randn(7, 5)
    opts = [adam(a.parameters(), 1e-2, (0.9, 0.9)), torch.optim.Adam(b.parameters(), lr=1e-2, betas=(0.9, 0.9))]
    for _ in range(3):
        for net, opt in zip((a, b), opts):
            opt.zero_grad()
            net(x).pow(2).sum().backward()
            opt.step()
    assert torch.allclose(a.weight, b.weight, atol=1e-6)


def test_device_option_is_resolved_in_one_place(monkeypatch):
    import torch

    from nlpipe.errors import NlpipeError
    from nlpipe.nn.device import resolve_device

    assert resolve_device("cpu") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    with pytest.raises(NlpipeError, match="--device cuda: no CUDA device is available"):
        resolve_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == resolve_device("cuda") == "cuda"
    with pytest.raises(NlpipeError, match="unknown device 'gpu'"):
        resolve_device("gpu")


# ---------------------------------------------------------------------------------------------
# Memory: oneDNN's per-shape primitive cache (issue 26)

def _python(code: str, **env: str):
    import os
    import subprocess
    import sys

    clean = {k: v for k, v in os.environ.items() if "PRIMITIVE_CACHE_CAPACITY" not in k}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(clean, **env))
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_importing_nlpipe_nn_turns_onednn_primitive_cache_off_unless_the_user_chose():
    code = "import os, nlpipe.nn; print(os.environ.get('ONEDNN_PRIMITIVE_CACHE_CAPACITY', '-'))"
    assert _python(code) == ["0"]
    assert _python(code, ONEDNN_PRIMITIVE_CACHE_CAPACITY="7") == ["7"]
    assert _python(code, DNNL_PRIMITIVE_CACHE_CAPACITY="5") == ["-"]      # the older name counts too


@pytest.mark.slow
def test_lstm_memory_does_not_grow_with_the_number_of_batch_shapes():
    # 80 (batch, length) shapes through a 2-layer BiLSTM: oneDNN's default cache (1024 primitives)
    # kept them all, about 55 MB here; without the cache each is freed after its call
    code = """
import resource
import nlpipe.nn
import torch
from nlpipe.nn.parser_encoder import BiLSTMStack
torch.set_num_threads(1)
net = BiLSTMStack(100, 100, 2, 0.0).eval()
def run(b, t):
    with torch.no_grad():
        net(torch.randn(b, t, 100), torch.full((b,), t))
run(4, 10)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for i in range(80):
    run(1 + i % 7, 5 + 2 * i)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)
"""
    assert int(_python(code)[0]) < 30


def test_numpy_bilstm_on_packed_rows_equals_torch_on_the_words():
    # sequences of lengths 5, 1, 3 and 5 in one padded batch, in no particular order: the numpy stack
    # (packed rows, longest first) gives torch's states at every word and 0 at the padding
    import numpy as np
    import torch
    from nlpipe.models.neural_numpy import BiLSTMStack as NumpyStack
    from nlpipe.nn.parser_encoder import BiLSTMStack

    torch.manual_seed(0)
    net = BiLSTMStack(6, 4, 2, 0.0).eval()
    lengths = torch.tensor([5, 1, 3, 5])
    x = torch.randn(4, 5, 6)
    with torch.no_grad():
        expected = net(x, lengths).numpy()
    params = {k: v.numpy() for k, v in net.state_dict().items()}
    got = NumpyStack(params, "")(x.numpy(), lengths.numpy())
    words = np.arange(5)[None, :] < lengths.numpy()[:, None]
    assert got.shape == (4, 5, 8)
    np.testing.assert_allclose(got[words], expected[words], rtol=1e-5, atol=1e-6)
    assert not got[~words].any()


def test_numpy_bilstm_gives_repeated_words_the_states_torch_gives_them():
    # words that repeat (the same input row in several places and sentences) are projected once by
    # the first layer; each occurrence still gets its own state, as torch computes it
    import numpy as np
    import torch
    from nlpipe.models.neural_numpy import BiLSTMStack as NumpyStack
    from nlpipe.nn.parser_encoder import BiLSTMStack

    torch.manual_seed(1)
    net = BiLSTMStack(6, 4, 2, 0.0).eval()
    vocab = torch.randn(3, 6)
    ids = torch.tensor([[0, 1, 0, 2, 0], [2, 2, 1, 0, 0], [1, 0, 1, 0, 0]])
    lengths = torch.tensor([5, 3, 4])
    x = vocab[ids]
    with torch.no_grad():
        expected = net(x, lengths).numpy()
    params = {k: v.numpy() for k, v in net.state_dict().items()}
    got = NumpyStack(params, "")(x.numpy(), lengths.numpy())
    words = np.arange(5)[None, :] < lengths.numpy()[:, None]
    np.testing.assert_allclose(got[words], expected[words], rtol=1e-5, atol=1e-6)
    assert not np.allclose(got[0, 0], got[0, 2])      # the same word in two contexts


def test_distinct_rows_gives_each_row_its_distinct_row():
    import numpy as np
    from nlpipe.models.neural_numpy import distinct_rows

    x = np.array([[1.0, 2.0], [0.0, 0.0], [1.0, 2.0], [-0.0, 0.0], [3.0, 2.0]], dtype=np.float32)
    rows, index = distinct_rows(x)
    assert len(rows) == 4          # 0.0 and -0.0 differ in their bits; only rows 0 and 2 are one
    assert index[0] == index[2] and len({int(index[i]) for i in (0, 1, 3, 4)}) == 4
    np.testing.assert_array_equal(rows[index], x)
    empty_rows, empty_index = distinct_rows(np.zeros((0, 3), dtype=np.float32))
    assert empty_rows.shape == (0, 3) and empty_index.shape == (0,)


def test_packing_maps_each_packed_row_to_its_word_in_sentence_order():
    # lengths 2 and 3: the rows run longest first, step by step: (s1 w0) (s0 w0) (s1 w1) (s0 w1) (s1 w2);
    # the words in sentence order are s0 w0, s0 w1, s1 w0, s1 w1, s1 w2
    import numpy as np
    from nlpipe.models.neural_numpy import Packing

    packing = Packing(np.array([2, 3]), 3)
    assert packing.steps.tolist() == [2, 2, 1]
    assert packing.word_rows.tolist() == [2, 0, 3, 1, 4]


def test_numpy_bilstm_from_distinct_rows_equals_it_from_padded_inputs():
    # the same words given as distinct input rows and the row of each word (sentence after sentence)
    # get the states the padded batch gets, bit for bit, in the same packed order
    import numpy as np
    import torch
    from nlpipe.models.neural_numpy import BiLSTMStack as NumpyStack
    from nlpipe.nn.parser_encoder import BiLSTMStack

    torch.manual_seed(2)
    params = {k: v.numpy() for k, v in BiLSTMStack(6, 4, 2, 0.0).state_dict().items()}
    stack = NumpyStack(params, "")
    vocab = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    sentences = [[0, 1, 0], [3], [2, 2, 1, 0, 3]]
    lengths = np.array([len(s) for s in sentences])
    padded = np.zeros((3, 5, 6), dtype=np.float32)
    for i, s in enumerate(sentences):
        padded[i, :len(s)] = vocab[s]
    expected, packing = stack.packed(padded, lengths)
    got, same = stack.packed(vocab, lengths, np.array([w for s in sentences for w in s]))
    np.testing.assert_array_equal(got, expected)
    assert same.word_rows.tolist() == packing.word_rows.tolist()
