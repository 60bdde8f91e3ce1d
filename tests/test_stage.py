"""Model directories: stage checks, including models that serve several stages."""
from __future__ import annotations

import pytest

from nlpipe.errors import ModelError
from nlpipe.io.model_dir import read_config, write_config


def test_model_for_another_stage_is_refused(tmp_path):
    write_config(tmp_path, {"stage": "ner", "arch": "idcnn.v1"})
    with pytest.raises(ModelError, match="a model for stage 'ner', not 'pos'"):
        read_config(tmp_path, "pos")


def test_also_stages_lets_one_model_serve_several(tmp_path):
    write_config(tmp_path, {"stage": "srl", "arch": "lisa.v1", "also_stages": ["predicates"]})
    assert read_config(tmp_path, "predicates")["arch"] == "lisa.v1"
    assert read_config(tmp_path, "srl")["stage"] == "srl"
    with pytest.raises(ModelError):
        read_config(tmp_path, "parse")


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
