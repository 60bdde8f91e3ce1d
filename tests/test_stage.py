"""Stages: filling sentences in chunks (the model-directory checks are in test_model_dir.py)."""
from __future__ import annotations


def test_fill_in_chunks_fills_each_chunk_before_yielding_it_in_input_order():
    from nlpipe.io.conllu import parse_string
    from nlpipe.stages.base import fill_in_chunks

    sents = parse_string("".join(f"1\tw{i}\t_\t_\t_\t_\t_\t_\t_\t_\n\n" for i in range(5)))
    seen = []

    def fill(chunk):
        seen.append([s.words[0][1] for s in chunk])
        for s in sorted(chunk, key=lambda s: s.words[0][1], reverse=True):  # any order inside
            s.words[0][3] = "X"

    out = fill_in_chunks(iter(sents), fill, 2)
    first = next(out)
    assert seen == [["w0", "w1"]] and first.words[0][3] == "X"
    assert [s.words[0][1] for s in [first, *out]] == [f"w{i}" for i in range(5)]
    assert seen == [["w0", "w1"], ["w2", "w3"], ["w4"]]


def test_cpu_threads_follow_the_knob_and_numpys_blas(monkeypatch):
    import os

    from nlpipe.stages.base import cpu_threads

    monkeypatch.setenv("NLPIPE_THREADS", "3")
    assert cpu_threads() == 3
    monkeypatch.delenv("NLPIPE_THREADS")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")   # the command line's setting: one core a thread
    assert cpu_threads() == len(os.sched_getaffinity(0))
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")        # a library user's numpy uses the cores itself
    assert cpu_threads() == 1
    monkeypatch.setenv("NLPIPE_THREADS", "zero")      # not a count: ignored
    assert cpu_threads() == 1
