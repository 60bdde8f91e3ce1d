"""Model directories: stage checks, including models that serve several stages."""
from __future__ import annotations

import pytest

from nlpipe.errors import ModelError
from nlpipe.stage import read_config, write_config


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
