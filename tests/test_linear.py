"""The templated linear model: attributes, templates, prefix-hinge training, dynamic tagging, storage."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpipe.errors import ModelError
from nlpipe.linear.attributes import ATTR_INDEX, CLUSTER_ATTRS, Attributes, flags, normalize, shape
from nlpipe.linear.clusters import Clusters, build_clusters, kmeans
from nlpipe.linear.dfs import checkpoint_schedule, tag, tag_sentences
from nlpipe.linear.margin import margin_stops
from nlpipe.linear.model import TemplatedModel
from nlpipe.linear.templates import Layout, parse_template
from nlpipe.train.pos import TrainOptions, train_tagger

# Hand-written toy data: (forms, labels, ambiguity tags). "can" and "fish" are ambiguous.
RAW = [
    ("We can fish .", "PRON MD VB ."),
    ("They fish .", "PRON VBP ."),
    ("I saw a can .", "PRON VBD DT NN ."),
    ("The fish can swim .", "DT NN MD VB ."),
    ("A dog can run .", "DT NN MD VB ."),
    ("They saw the dog .", "PRON VBD DT NN ."),
    ("We like fish .", "PRON VBP NN ."),
    ("The dog saw a fish .", "DT NN VBD DT NN ."),
]
TOY = [(f.split(), t.split(), t.split()) for f, t in RAW]
SMALL_TEMPLATES = ["bias", "lower@0", "s2@0", "lower@-1", "lower@+1", "amb@0", "tag@-1", "tag@-1+lower@0"]


def toy_options(**kw) -> TrainOptions:
    base = dict(mode="dynamic", margin=1.0, lr=0.2, l2=0.0, epochs=30, batch_size=8, min_count=1,
                order="given", templates=list(SMALL_TEMPLATES))
    base.update(kw)
    return TrainOptions(**base)


@pytest.fixture(scope="module")
def dynamic_model() -> TemplatedModel:
    return train_tagger(TOY, TOY, toy_options()).model


def test_word_attributes():
    assert normalize("Year-1990") == "year-0000"
    assert shape("Hello") == "Xxx" and shape("1990s") == "ddx" and shape("...") == ".."
    assert flags("McDonald") == "C" and flags("USA") == "CA" and flags("3,000") == "DN"
    assert flags("well-known") == "H" and flags("?!") == "P" and flags("word") == "-"
    # letters only, the cases the shortcuts for such words must keep
    assert [flags(w) for w in ["A", "I", "iPhone", "ÉTÉ", "Été", "eBAY", "日本", "ǅA"]] == \
           ["C", "C", "-", "CA", "C", "-", "-", "-"]
    assert normalize("Straße") == "straße" and normalize("İ") == "i̇" and normalize("x²") == "x0"
    assert [shape(w) for w in ["I", "Hi", "Hii", "aaaa", "AAAbbb", "Été", "x²²²"]] == \
           ["X", "Xx", "Xxx", "xx", "XXxx", "Xxx", "xdd"]


@pytest.mark.parametrize("spec,static,history", [
    ("bias", (), ()),
    ("lower@-1+lower@+1", ((1, -1), (1, 1)), ()),
    ("tag@-2+tag@-1+amb@0", ((ATTR_INDEX["amb"], 0),), (-2, -1)),
])
def test_parse_template(spec, static, history):
    t = parse_template(spec)
    assert t.static == static and t.history == history


@pytest.mark.parametrize("spec", ["lower", "lower@3", "tag@+1", "colour@0", "lower@0+", "lower@x"])
def test_bad_templates_are_refused(spec):
    with pytest.raises(ValueError):
        parse_template(spec)


def test_layout_pads_between_sentences():
    lay = Layout([2, 1])
    assert lay.g.tolist() == [2, 3, 6] and lay.position.tolist() == [0, 1, 0] and lay.size == 9


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(-20, 20), min_size=3, max_size=3), min_size=1, max_size=6),
       st.sampled_from([0.0, 0.5, 1.0, 3.0]))
def test_stops_matches_sorting(rows, margin):
    s = np.array(rows, dtype=np.float32) / 4
    top = np.sort(s, axis=1)
    assert margin_stops(s, margin)[0].tolist() == (top[:, -1] - top[:, -2] >= margin).tolist()


@pytest.mark.parametrize("mode", ["full", "dynamic"])
def test_training_learns_the_toy_data(mode):
    model = train_tagger(TOY, TOY, toy_options(mode=mode)).model
    labels, _ = tag_sentences(model, [s[0] for s in TOY])
    assert labels == [s[1] for s in TOY]


def test_margin_zero_uses_one_template_large_margin_all(dynamic_model):
    forms = [s[0] for s in TOY]
    _, used0 = tag_sentences(dynamic_model, forms, margin=0.0)
    _, used_big = tag_sentences(dynamic_model, forms, margin=1e9)
    assert used0.tolist() == [1] * len(used0)
    assert used_big.tolist() == [len(SMALL_TEMPLATES)] * len(used_big)
    # the training margin stops somewhere in between and still gets the toy data right
    labels, used1 = tag_sentences(dynamic_model, forms, margin=1.0)
    assert labels == [s[1] for s in TOY]
    assert 1 <= used1.min() and used1.mean() < len(SMALL_TEMPLATES)


def test_huge_margin_equals_full_scoring(dynamic_model):
    forms = [s[0] for s in TOY] + [["Unseen", "words", "here"]]
    assert tag_sentences(dynamic_model, forms, margin=1e9)[0] == tag_sentences(dynamic_model, forms)[0]


def test_limit_uses_a_prefix(dynamic_model):
    forms = [s[0] for s in TOY]
    _, used = tag_sentences(dynamic_model, forms, limit=3)
    assert set(used.tolist()) == {3}
    _, used = tag_sentences(dynamic_model, forms, margin=1e9, limit=7)
    assert set(used.tolist()) == {7}


def test_batch_equals_one_sentence_at_a_time(dynamic_model):
    forms = [s[0] for s in TOY] + [["fish"], ["Can", "we", "fish", "?"]]
    together, _ = tag_sentences(dynamic_model, forms, margin=0.5)
    alone = [tag_sentences(dynamic_model, [f], margin=0.5)[0][0] for f in forms]
    assert together == alone


def test_empty_batch(dynamic_model):
    layout, atoms = dynamic_model.layout([])
    pred, used = tag(dynamic_model, layout, atoms, 1.0)
    assert len(pred) == 0 and len(used) == 0


def test_fixed_mode_keeps_the_first_n_templates():
    result = train_tagger(TOY, TOY, toy_options(mode="fixed", fixed_n=3))
    assert result.model.template_names == SMALL_TEMPLATES[:3]


def test_wrapper_and_baseline_orders_are_permutations():
    for order in ("wrapper", "baseline"):
        r = train_tagger(TOY, TOY, toy_options(order=order, wrapper_steps=2, wrapper_epochs=3, epochs=3))
        assert sorted(r.model.template_names) == sorted(SMALL_TEMPLATES)
        assert len(r.order_curve) == (2 if order == "wrapper" else len(SMALL_TEMPLATES))


def test_save_load_round_trip(dynamic_model, tmp_path):
    dynamic_model.save(tmp_path)
    loaded = TemplatedModel.load(tmp_path)
    forms = [s[0] for s in TOY] + [["Unseen", "fish", "can", "swim"]]
    for margin in (None, 0.3, 1.0):
        assert tag_sentences(loaded, forms, margin)[0] == tag_sentences(dynamic_model, forms, margin)[0]
        assert tag_sentences(loaded, forms, margin)[1].tolist() == tag_sentences(dynamic_model, forms, margin)[1].tolist()


def test_loading_shares_equal_attributes_only(dynamic_model, tmp_path):
    dynamic_model.save(tmp_path / "a")
    first = TemplatedModel.load(tmp_path / "a")
    assert TemplatedModel.load(tmp_path / "a", attributes=first.attributes).attributes is first.attributes
    other = Attributes(first.attributes.vocabs, {"fish": "NOUN"})
    assert TemplatedModel.load(tmp_path / "a", attributes=other).attributes is not other


def test_truncated_or_corrupt_files_raise_model_error(dynamic_model, tmp_path):
    dynamic_model.save(tmp_path)
    weights = (tmp_path / "weights.npz").read_bytes()
    (tmp_path / "weights.npz").write_bytes(weights[: len(weights) // 2])
    with pytest.raises(ModelError, match="corrupt or incompatible"):
        TemplatedModel.load(tmp_path)
    (tmp_path / "weights.npz").write_bytes(weights)
    (tmp_path / "vocab.json").write_text('{"labels": ["A"', encoding="utf-8")
    with pytest.raises(ModelError, match="corrupt or incompatible"):
        TemplatedModel.load(tmp_path)
    (tmp_path / "vocab.json").unlink()
    with pytest.raises(ModelError, match="missing model file vocab.json"):
        TemplatedModel.load(tmp_path)


def test_out_of_range_entries_raise_model_error(dynamic_model, tmp_path):
    dynamic_model.save(tmp_path)
    with np.load(tmp_path / "weights.npz") as z:
        arrays = dict(z)
    arrays["col"] = arrays["col"] + 200
    np.savez(tmp_path / "weights.npz", **arrays)
    with pytest.raises(ModelError, match="out of range"):
        TemplatedModel.load(tmp_path)


# -- word clusters and checkpointed margin tests ----------------------------------------------

def toy_clusters() -> Clusters:
    """Two obvious groups of hand-made 4-d vectors: determiners/pronouns and nouns/verbs."""
    words = ["the", "a", "we", "they", "fish", "dog", "can", "swim", "run", "saw"]
    rng = np.random.default_rng(1)
    centre = {w: (np.array([5.0, 0, 0, 0]) if w in ("the", "a", "we", "they") else np.array([0, 5.0, 0, 0]))
              for w in words}
    vectors = np.stack([centre[w] + rng.normal(0, 0.1, 4) for w in words]).astype(np.float32)
    return build_clusters(words, vectors, extra=["Fish", "unknown-word"], top=10)


def test_clusters_group_similar_words_and_round_trip(tmp_path):
    c = toy_clusters()
    assert sorted(c.words) == sorted(["the", "a", "we", "they", "fish", "dog", "can", "swim", "run", "saw"])
    assert c.lookup("The") == c.lookup("the") and c.lookup("unknown-word") is None
    assert len({tuple(c.lookup(w)) for w in c.words}) == len(c.words)   # 10 words, up to 64 clusters
    c.save(tmp_path / "c.npz")
    back = Clusters.load(tmp_path / "c.npz")
    assert back.words == c.words and back.ids.tolist() == c.ids.tolist()


def test_cluster_ids_of_many_words_are_their_lookups():
    c = toy_clusters()
    words = ["The", "fish", "unknown-word", "zzz", "", "a", "SAW"]
    assert c.ids_of(words).tolist() == [c.lookup(w) or [-1, -1, -1] for w in words]
    assert c.ids_of([]).shape == (0, 3)


def test_attribute_rows_of_a_batch_are_those_of_each_word_alone():
    from nlpipe.linear.attributes import ATTRS, Attributes
    forms = ["The", "fish", "can", "swim", "unknown-word", "Fish", "1984", "x-ray", "…", "THE"]
    attrs = Attributes.build(forms[:5], {"the": "DET", "fish": "NOUN|VERB"}, toy_clusters())
    rows = attrs._rows(forms)
    assert rows.shape == (len(forms), len(ATTRS))
    for form, row in zip(forms, rows.tolist()):
        fresh = Attributes(attrs.vocabs, attrs.amb, attrs.clusters)
        assert tuple(row) == fresh.ids(form)
    c = ATTRS.index("c64")
    assert rows[4, c] == 0 and rows[1, c] == attrs.clusters.lookup("fish")[0] + 2   # UNK; cluster c -> c + 2


def test_type_rows_stay_right_when_the_type_cache_starts_over():
    from nlpipe.linear.attributes import Attributes
    attrs = Attributes.build(["The", "fish", "can", "swim"], {"the": "DET"}, toy_clusters())
    fresh = Attributes(attrs.vocabs, attrs.amb, attrs.clusters)
    attrs.type_cache_limit = 2
    first = ["The", "fish", "can"]
    attrs.type_matrix(first)
    forms = ["swim", "The", "x-ray", "fish", "swim"]      # old and new types after the cache is full
    table, inverse = attrs.type_matrix(forms)
    assert table[inverse].tolist() == fresh.matrix(forms).tolist()
    assert inverse.tolist()[0] == inverse.tolist()[4]


def test_type_rows_stay_right_when_threads_share_the_type_cache():
    """Stages tag batches in threads that share one model's attributes (the BiLSTM tagger with its
    linear tagger): every call gets its own forms' rows, whatever the others add to the cache."""
    from concurrent.futures import ThreadPoolExecutor

    from nlpipe.linear.attributes import Attributes
    batches = [[f"w{k}x{i}" + "-" * (i % 3) + "s" * (k % 2) for i in range(4000)] + ["The", "fish"]
               for k in range(16)]
    # every form in the vocabularies, so that each has a row of its own
    attrs = Attributes.build([f for forms in batches for f in forms], {"the": "DET"}, toy_clusters())
    fresh = Attributes(attrs.vocabs, attrs.amb, attrs.clusters)

    def rows(forms):
        table, inverse = attrs.type_matrix(forms)
        return table[inverse].tolist()

    import sys

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)     # switch threads often, inside the cache's update too
    try:
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(rows, batches))
    finally:
        sys.setswitchinterval(interval)
    assert got == [fresh.matrix(forms).tolist() for forms in batches]


def test_kmeans_separates_two_groups():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal([1, 0, 0], 0.05, (20, 3)), rng.normal([0, 1, 0], 0.05, (20, 3))])
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    a = kmeans(x, 2)
    assert len(set(a[:20].tolist())) == 1 and len(set(a[20:].tolist())) == 1 and a[0] != a[20]


def test_cluster_ids_out_of_range_are_refused():
    with pytest.raises(ValueError):
        Clusters(["a"], np.array([[0, 0, 5000]]))
    with pytest.raises(ValueError):
        Clusters(["a", "b"], np.array([[0, 0, 0]]))


def test_cluster_templates_train_save_and_load(tmp_path):
    clusters = toy_clusters()
    opts = toy_options(templates=["lower@0", "c64@0", "c1024@-1", "c256@0+s2@0", "tag@-1+c256@0"])
    model = train_tagger(TOY, TOY, opts, clusters=clusters).model
    forms = [s[0] for s in TOY] + [["The", "cat", "can", "swim"]]
    model.save(tmp_path)
    assert (tmp_path / "clusters.npz").is_file()
    loaded = TemplatedModel.load(tmp_path)
    assert tag_sentences(loaded, forms)[0] == tag_sentences(model, forms)[0]
    (tmp_path / "clusters.npz").write_bytes(b"not a zip")
    with pytest.raises(ModelError, match="corrupt or incompatible"):
        TemplatedModel.load(tmp_path)
    (tmp_path / "clusters.npz").unlink()   # cluster attributes without their table
    with pytest.raises(ModelError, match="cluster table"):
        TemplatedModel.load(tmp_path)


def test_models_saved_before_clusters_still_load(dynamic_model):
    data = dynamic_model.attributes.to_json()
    old = dict(data, attrs=[a for a in data["attrs"] if a not in CLUSTER_ATTRS],
               vocabs=[v for a, v in zip(data["attrs"], data["vocabs"]) if a not in CLUSTER_ATTRS])
    attrs = Attributes.from_json(old)
    assert attrs.vocabs == dynamic_model.attributes.vocabs and attrs.clusters is None


@pytest.mark.parametrize("spec,expected", [("all", None), (None, None), ("pow2", (1, 2, 4, 8)),
                                           ("8, 2,4", (2, 4, 8))])
def test_checkpoint_schedules(spec, expected):
    got = checkpoint_schedule(spec)
    assert got == expected or (expected is not None and got[:4] == expected)


@pytest.mark.parametrize("spec", ["0,2", "two", ","])
def test_bad_checkpoint_schedules(spec):
    with pytest.raises(ValueError):
        checkpoint_schedule(spec)


def test_checkpoints_at_every_template_equal_the_exact_loop(dynamic_model):
    forms = [s[0] for s in TOY] + [["Can", "we", "fish", "?"]]
    k = len(SMALL_TEMPLATES)
    for margin in (0.3, 1.0):
        exact = tag_sentences(dynamic_model, forms, margin)
        every = tag_sentences(dynamic_model, forms, margin, checkpoints=range(1, k + 1))
        assert exact[0] == every[0] and exact[1].tolist() == every[1].tolist()
    _, used = tag_sentences(dynamic_model, forms, 0.0, checkpoints=(4,))
    assert set(used.tolist()) == {4}     # margin 0 stops everyone at the first checkpoint
    assert tag_sentences(dynamic_model, forms, 1e9, checkpoints=(2, 4))[0] == tag_sentences(dynamic_model, forms)[0]


def test_attribute_matrix_cache_matches_per_form_ids(dynamic_model):
    attrs = dynamic_model.attributes
    first = ["We", "can", "fish", "."]
    second = ["New", "fish", "We", "Zzz", "New"] * 3
    for forms in (first, second, first + second):
        m = attrs.matrix(forms)
        assert m.shape == (len(forms), len(ATTR_INDEX))
        assert m.tolist() == [list(attrs.ids(f)) for f in forms]
    assert attrs.matrix([]).shape == (0, len(ATTR_INDEX))


@pytest.mark.parametrize("margin,checkpoints", [(None, None), (0.0, None), (0.5, None), (1.0, (2, 4)), (1e9, None)])
def test_per_type_scoring_equals_per_token_scoring(dynamic_model, margin, checkpoints):
    forms = [s[0] for s in TOY] + [["Can", "we", "fish", "fish", "?"], ["the", "the", "dog"]]
    layout, atoms = dynamic_model.layout(forms)
    by_type = tag(dynamic_model, layout, atoms, margin, None, checkpoints)
    layout.type_atoms = None            # forces the token-by-token path
    by_token = tag(dynamic_model, layout, atoms, margin, None, checkpoints)
    assert by_type[0].tolist() == by_token[0].tolist() and by_type[1].tolist() == by_token[1].tolist()


@pytest.mark.parametrize("margin,checkpoints", [(0.0, (1, 3)), (0.5, (2, 4)), (1.0, (2,)), (1e9, (1, 2))])
def test_grouped_first_checkpoint_equals_per_token_scoring(dynamic_model, margin, checkpoints, monkeypatch):
    """Tokens sharing the weight rows of the templates before the first checkpoint are scored once
    per combination (dfs._grouped_lead); the tags and templates used are those of token-by-token scoring."""
    from nlpipe.linear import dfs

    forms = ([s[0] for s in TOY] + [["Can", "we", "fish", "fish", "?"], ["the", "the", "dog"]]) * 6
    layout, atoms = dynamic_model.layout(forms)
    layout.type_atoms = None            # no per-type block: the grouped step applies
    calls = []
    grouped_lead = dfs._grouped_lead
    monkeypatch.setattr(dfs, "_grouped_lead", lambda *a: calls.append(grouped_lead(*a)) or calls[-1])
    grouped = tag(dynamic_model, layout, atoms, margin, None, checkpoints)
    assert calls and calls[0] is not None
    monkeypatch.setattr(dfs, "_grouped_lead", lambda *a: None)
    by_token = tag(dynamic_model, layout, atoms, margin, None, checkpoints)
    assert grouped[0].tolist() == by_token[0].tolist() and grouped[1].tolist() == by_token[1].tolist()


def _toy_rows(seed: int = 0):
    """Random examples over 3 templates whose first row id decides the label (label = row % 4)."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(1, 9, size=(400, 3)).astype(np.int32)
    return rows, (rows[:, 0] % 4).astype(np.int64)


@pytest.mark.parametrize("mode", ["full", "dynamic", "dynamic+full"])
def test_fit_learns_from_plain_feature_rows(mode):
    from nlpipe.train.linear_fit import fit

    rows, gold = _toy_rows()
    weights = [np.zeros((9, 4), np.float32) for _ in range(3)]
    fit(weights, rows, gold, mode=mode, lr=0.1, l2=0.0, epochs=5, batch_size=64)
    scores = sum(w[rows[:, j]] for j, w in enumerate(weights))
    assert (scores.argmax(axis=1) == gold).all()


def test_fit_never_pushes_against_disallowed_labels():
    from nlpipe.train.linear_fit import fit

    rows, gold = _toy_rows(1)
    allowed = np.zeros((len(gold), 4), dtype=bool)
    allowed[np.arange(len(gold)), gold] = True        # only the gold label: nothing to learn
    weights = [np.zeros((9, 4), np.float32) for _ in range(3)]
    fit(weights, rows, gold, mode="dynamic", epochs=2, batch_size=64, allowed=allowed)
    assert all(not w.any() for w in weights)


def test_fit_calls_back_with_the_averaged_weights():
    from nlpipe.train.linear_fit import fit

    rows, gold = _toy_rows(2)
    weights = [np.zeros((9, 4), np.float32) for _ in range(3)]
    seen = []
    fit(weights, rows, gold, mode="full", epochs=2, batch_size=64, average_every=1,
        on_epoch=lambda e, loss: seen.append([w.copy() for w in weights]))
    assert all(np.array_equal(a, b) for a, b in zip(seen[-1], weights))   # the last call saw the final average


def test_parse_first_pass_template():
    t = parse_template("tag@-1+ptag@+1+lower@0")
    assert t.history == (-1,) and t.first == (1,) and t.static == ((ATTR_INDEX["lower"], 0),)
    with pytest.raises(ValueError):
        parse_template("ptag@+3")


def _second_pass_model() -> TemplatedModel:
    gold = [s[1] for s in TOY]
    opts = toy_options(mode="full", templates=["lower@0", "lower@0+ptag@+1"])
    return train_tagger(TOY, TOY, opts, order=opts.templates, first=(gold, gold)).model


def test_second_pass_reads_the_first_pass_tag_on_the_right():
    model = _second_pass_model()
    assert model.needs_first_pass
    layout, atoms = model.layout([["a", "can", "swim", "."]])
    ids = {l: i for i, l in enumerate(model.labels)}
    L = model.num_labels
    for after, expected in (("VB", "MD"), (".", "NN")):
        first = layout.scatter(np.array([ids[t] for t in ("DT", "NN", after, ".")]), L)
        pred, _ = tag(model, layout, atoms, None, first=first)
        assert model.labels[pred[1]] == expected
        pred, _ = tag(model, layout, atoms, 0.5, first=first)
        assert model.labels[pred[1]] == expected


def test_second_pass_without_first_pass_tags_is_refused():
    model = _second_pass_model()
    layout, atoms = model.layout([["a", "can", "."]])
    with pytest.raises(ValueError, match="first tagging pass"):
        tag(model, layout, atoms, None)
    gold = [s[1] for s in TOY]
    with pytest.raises(ValueError, match="first-pass labels"):
        train_tagger(TOY, TOY, toy_options(mode="full"), order=["lower@0", "ptag@+1"], first=(gold[1:], gold))


def test_sparse_rows_score_like_the_dense_matrices():
    from nlpipe.linear.storage import SparseRows
    # two templates over 3 labels: template 0 has rows 0-2, template 1 rows 0-1 (row 0: unknown keys)
    dense = [np.array([[0, 0, 0], [1, 2, 3], [0, -4, 0]], np.float32),
             np.array([[0.5, 0, 0], [0, 0, 6]], np.float32)]
    counts = np.array([0, 3, 1, 1, 1], np.uint8)
    col = np.array([0, 1, 2, 1, 0, 2], np.uint8)
    val = np.array([1, 2, 3, -4, 0.5, 6], np.float16)
    # every row dense / rows of 2+ entries dense / all sparse; template 1 (or both) whole
    for dense_min, whole in ((0, None), (1, None), (8, None), (8, [False, True]), (1, [True, True])):
        rows = SparseRows(np.array([3, 2]), counts, col, val, 3, whole=whole, dense_min=dense_min)
        assert rows.take(0, np.array([2, 1, 0, 1])).tolist() == [[0, -4, 0], [1, 2, 3], [0, 0, 0], [1, 2, 3]]
        out = np.ones((3, 3), np.float32)
        rows.add(1, np.array([1, 0, 1]), out)
        assert out.tolist() == [[1, 1, 7], [1.5, 1, 1], [1, 1, 7]]
        assert [w.tolist() for w in rows.dense()] == [w.tolist() for w in dense]
        with pytest.raises(ValueError, match="contiguous"):
            rows.add(0, np.array([1]), np.ones((1, 6), np.float32)[:, ::2])


def test_sparse_rows_add_many_rows_exactly_as_the_dense_sum():
    from nlpipe.linear.storage import GATHER_ROWS, SparseRows
    rng = np.random.default_rng(0)
    L, nrows = 7, np.array([40, 30])
    dense = (rng.standard_normal((70, L)) * (rng.random((70, L)) < 0.5)).astype(np.float16).astype(np.float32)
    dense[[0, 40]] = 0.0
    r, c = np.nonzero(dense)
    counts = np.bincount(r, minlength=70).astype(np.uint8)
    for whole in (None, [False, True]):
        table = SparseRows(nrows, counts, c.astype(np.uint8), dense[r, c].astype(np.float16), L, whole, dense_min=3)
        for j, start in ((0, 0), (1, 40)):
            rows = rng.integers(0, nrows[j], 2 * GATHER_ROWS + 5)
            out = rng.standard_normal((len(rows), L)).astype(np.float32)
            expected = out + dense[start + rows]
            table.add(j, rows, out)
            assert out.tobytes() == expected.tobytes()


def test_a_loaded_model_scores_sparse_until_its_weights_are_read(dynamic_model, tmp_path):
    dynamic_model.save(tmp_path)
    loaded = TemplatedModel.load(tmp_path)
    assert loaded._weights is None and loaded.num_parameters() == dynamic_model.num_parameters()
    rows = np.array([0, 1, 1, 2])
    sparse = [loaded.take(j, rows[rows < len(loaded.keys[j]) + 1]) for j in range(len(loaded.keys))]
    assert [w.shape for w in loaded.weights] == [w.shape for w in dynamic_model.weights]   # now dense
    for j, s in enumerate(sparse):
        assert np.array_equal(s, loaded.take(j, rows[rows < len(loaded.keys[j]) + 1]))


def test_a_pass_saved_with_shared_attributes_needs_them_to_load(dynamic_model, tmp_path):
    import json
    dynamic_model.save(tmp_path / "first")
    dynamic_model.save(tmp_path / "second", shared=dynamic_model.attributes)
    assert json.loads((tmp_path / "second" / "vocab.json").read_text())["attributes"] == "shared"
    first = TemplatedModel.load(tmp_path / "first")
    assert TemplatedModel.load(tmp_path / "second", attributes=first.attributes).attributes is first.attributes
    with pytest.raises(ModelError, match="first pass"):
        TemplatedModel.load(tmp_path / "second")
    other = Attributes(first.attributes.vocabs, {"fish": "NOUN"})
    dynamic_model.save(tmp_path / "third", shared=other)      # not the same: written out in full
    assert isinstance(json.loads((tmp_path / "third" / "vocab.json").read_text())["attributes"], dict)
