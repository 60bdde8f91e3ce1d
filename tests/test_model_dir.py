"""The model-directory format (nlpipe.io.model_dir) and the training block (nlpipe.io.provenance)."""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from nlpipe.errors import ModelError
from nlpipe.io import model_dir as md
from nlpipe.io.provenance import command_line, record_test, sha256, training_block

PACKAGE = Path(md.__file__).resolve().parent.parent
SHIPPED = PACKAGE / "shipped"

TRAINING = {"data": {}, "command": "nlpipe train pos", "nlpipe_version": "0.1.0", "date": "2026-11-25T10:00:00Z",
            "scores": {"dev_upos": 95.0}}


def config(**over):
    return {"stage": "pos", "arch": "dfs-tagger.v1", "language": "en", "model": {"margin": 0.5},
            "labels": ["A", "B"], "training": dict(TRAINING), **over}


# -- config.json ------------------------------------------------------------------------------

def test_config_round_trip(tmp_path):
    written = md.write_config(tmp_path / "m", config())
    assert written == {"stage": "pos", "arch": "dfs-tagger.v1", "format": 2, "language": "en",
                       "model": {"margin": 0.5}, "labels": ["A", "B"], "training": TRAINING}
    assert list(json.loads((tmp_path / "m" / "config.json").read_text(encoding="utf-8"))) == \
        ["stage", "arch", "format", "language", "model", "labels", "training"]
    assert md.read_config(tmp_path / "m", "pos") == written


@pytest.mark.parametrize("missing", ["stage", "arch", "language", "training"])
def test_the_writer_refuses_a_config_without_a_required_key(tmp_path, missing):
    c = config()
    del c[missing]
    with pytest.raises(ValueError, match=missing):
        md.write_config(tmp_path, c)
    assert not (tmp_path / "config.json").exists()


def test_the_writer_refuses_a_training_block_without_provenance(tmp_path):
    c = config()
    del c["training"]["command"]
    with pytest.raises(ValueError, match="training.command"):
        md.write_config(tmp_path, c)


def test_missing_model_directory(tmp_path):
    with pytest.raises(ModelError, match="not a model directory"):
        md.read_config(tmp_path / "nothing")


def test_truncated_config(tmp_path):
    (tmp_path / "config.json").write_text('{"stage": "pos", "arch": "dfs-tagger.v1", "for', encoding="utf-8")
    with pytest.raises(ModelError, match="corrupt model configuration"):
        md.read_config(tmp_path)


def test_a_config_that_is_not_a_model(tmp_path):
    (tmp_path / "config.json").write_text('{"name": "x"}', encoding="utf-8")
    with pytest.raises(ModelError, match="no 'stage'/'arch'"):
        md.read_config(tmp_path)


@pytest.mark.parametrize("fmt,advice", [(3, "install a newer nlpipe"), (0, "retrain"), (None, "retrain")])
def test_other_format_versions(tmp_path, fmt, advice):
    md.write_config(tmp_path, config())
    raw = json.loads((tmp_path / "config.json").read_text(encoding="utf-8"))
    raw["format"] = fmt
    (tmp_path / "config.json").write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ModelError, match=f"model format {fmt!r}, this nlpipe reads formats 1, 2; {advice}"):
        md.read_config(tmp_path)


def test_format_2_without_language(tmp_path):
    (tmp_path / "config.json").write_text('{"stage": "pos", "arch": "a.v1", "format": 2}', encoding="utf-8")
    with pytest.raises(ModelError, match="no 'language'"):
        md.read_config(tmp_path)


@pytest.mark.parametrize("key,value,kind", [("model", [1], "object"), ("training", "x", "object"),
                                            ("labels", "O", "list"), ("also_stages", "srl", "list")])
def test_a_block_of_the_wrong_type(tmp_path, key, value, kind):
    (tmp_path / "config.json").write_text(json.dumps({"stage": "pos", "arch": "a.v1", "format": 2, "language": "en",
                                                      key: value}), encoding="utf-8")
    with pytest.raises(ModelError, match=f"'{key}' is not a JSON {kind}"):
        md.read_config(tmp_path)


def test_model_for_another_stage_is_refused(tmp_path):
    md.write_config(tmp_path, config(stage="ner", arch="idcnn.v1"))
    with pytest.raises(ModelError, match="a model for stage 'ner', not 'pos'"):
        md.read_config(tmp_path, "pos")


def test_also_stages_lets_one_model_serve_several(tmp_path):
    md.write_config(tmp_path, config(stage="srl", arch="lisa.v1", also_stages=["predicates"]))
    assert md.read_config(tmp_path, "predicates")["arch"] == "lisa.v1"
    assert md.read_config(tmp_path, "srl")["stage"] == "srl"
    with pytest.raises(ModelError):
        md.read_config(tmp_path, "parse")


def test_a_format_1_directory_is_read_with_its_training_notes(tmp_path):
    old = {"stage": "ner", "arch": "idcnn.v1", "labels": ["O", "B-PER"], "model": {"width": 8},
           "training": {"data": "UNER English", "train": "a/train.iob2", "dev": "a/dev.iob2", "seed": 1,
                        "command": "nlpipe train ner --train a/train.iob2", "scores": {"dev_f1": 70.0}},
           "format": 1}
    (tmp_path / "config.json").write_text(json.dumps(old), encoding="utf-8")
    assert md.read_config(tmp_path, "ner") == {
        "stage": "ner", "arch": "idcnn.v1", "labels": ["O", "B-PER"], "model": {"width": 8}, "format": 2,
        "language": "und",
        "training": {"data": {"train": {"path": "a/train.iob2", "sha256": None},
                              "dev": {"path": "a/dev.iob2", "sha256": None}},
                     "command": "nlpipe train ner --train a/train.iob2", "nlpipe_version": None, "date": None,
                     "scores": {"dev_f1": 70.0}, "corpus": "UNER English", "seed": 1}}


def test_a_format_1_recipe_of_several_commands_keeps_them_and_names_the_last(tmp_path):
    old = {"stage": "tokenize", "arch": "x.v1", "format": 1,
           "training": {"data": {"train": "t.conllu", "corpus": "EWT"}, "commands": ["step 1", "step 2"]}}
    (tmp_path / "config.json").write_text(json.dumps(old), encoding="utf-8")
    training = md.read_config(tmp_path)["training"]
    assert training["command"] == "step 2" and training["commands"] == ["step 1", "step 2"]
    assert training["data"] == {"train": {"path": "t.conllu", "sha256": None}} and training["corpus"] == "EWT"
    assert training["scores"] == {}


# -- weight files -----------------------------------------------------------------------------

def test_weight_files_round_trip(tmp_path):
    import torch

    md.write_json(tmp_path / "v.json", {"words": ["é", "b"], "n": 2})
    assert (tmp_path / "v.json").read_text(encoding="utf-8") == '{"words":["é","b"],"n":2}\n'
    assert md.read_json(tmp_path / "v.json") == {"words": ["é", "b"], "n": 2}
    md.write_lines(tmp_path / "w.txt", ["<pad>", "<unk>", "the"])
    assert (tmp_path / "w.txt").read_text(encoding="utf-8") == "<pad>\n<unk>\nthe\n"
    assert md.read_lines(tmp_path / "w.txt") == ["<pad>", "<unk>", "the"]
    md.write_arrays(tmp_path / "a.npz", {"x": np.array([1, 2], np.int64)}, compress=True)
    assert md.read_arrays(tmp_path / "a.npz")["x"].tolist() == [1, 2]
    md.write_tensors(tmp_path / "t.pt", {"w": torch.tensor([0.5, 1.5])})
    assert md.read_tensors(tmp_path / "t.pt")["w"].tolist() == [0.5, 1.5]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz", "t.pt", "v.json", "w.txt"]  # no temp files


def test_arrays_read_back_as_written(tmp_path):
    arrays = {"keys": np.array([3, -1, 2**40], np.int64), "val": np.array([0.5, -2.0], np.float16),
              "m": np.arange(12, dtype=np.float32).reshape(3, 4), "f": np.asfortranarray(np.arange(6).reshape(2, 3)),
              "empty": np.zeros((0, 5), np.uint8), "scalar": np.array(7, np.int32), "s": np.array(["ab", "c"])}
    for compress in (False, True):
        md.write_arrays(tmp_path / "a.npz", arrays, compress=compress)
        back = md.read_arrays(tmp_path / "a.npz")
        assert sorted(back) == sorted(arrays)
        for k, a in arrays.items():
            assert back[k].dtype == a.dtype and back[k].shape == a.shape and np.array_equal(back[k], a), k
            assert back[k].flags.writeable
        assert back["f"].tolist() == arrays["f"].tolist()


def test_a_damaged_array_is_an_error(tmp_path):
    md.write_arrays(tmp_path / "a.npz", {"x": np.arange(1000, dtype=np.int64)})
    data = bytearray((tmp_path / "a.npz").read_bytes())
    data[400] ^= 0xFF                                   # a byte of the array's data
    (tmp_path / "a.npz").write_bytes(bytes(data))
    with pytest.raises(ModelError, match="corrupt or incompatible model file a.npz"):
        md.read_arrays(tmp_path / "a.npz")


def test_a_failed_write_keeps_the_previous_file(tmp_path):
    md.write_lines(tmp_path / "w.txt", ["a"])
    with pytest.raises(ValueError):
        md.write_lines(tmp_path / "w.txt", ["b", "c\nd"])
    with pytest.raises(TypeError):
        md.write_json(tmp_path / "w.txt", {"x": object()})
    assert md.read_lines(tmp_path / "w.txt") == ["a"]
    assert [p.name for p in tmp_path.iterdir()] == ["w.txt"]


@pytest.mark.parametrize("read", [md.read_json, md.read_lines, md.read_arrays, md.read_tensors])
def test_a_missing_weight_file(tmp_path, read):
    with pytest.raises(ModelError, match=f"{tmp_path}: missing model file x.bin"):
        read(tmp_path / "x.bin")


def test_truncated_weight_files(tmp_path):
    import torch

    md.write_arrays(tmp_path / "a.npz", {"x": np.arange(1000)})
    torch.save({"w": torch.zeros(1000)}, tmp_path / "t.pt")
    for name, read in (("a.npz", md.read_arrays), ("t.pt", md.read_tensors)):
        data = (tmp_path / name).read_bytes()
        (tmp_path / name).write_bytes(data[:len(data) // 2])
        with pytest.raises(ModelError, match=f"corrupt or incompatible model file {name}"):
            read(tmp_path / name)
    (tmp_path / "v.json").write_text('{"words": [', encoding="utf-8")
    with pytest.raises(ModelError, match="corrupt or incompatible model file v.json"):
        md.read_json(tmp_path / "v.json")


class Payload:
    """Unpickling this would run code: the readers must refuse it."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def test_readers_never_unpickle(tmp_path):
    import torch

    marker = tmp_path / "ran"
    np.savez(tmp_path / "a.npz", w=np.array([Payload(str(marker))], dtype=object))
    torch.save({"w": torch.zeros(2), "evil": Payload(str(marker))}, tmp_path / "t.pt")
    (tmp_path / "p.npz").write_bytes(pickle.dumps(Payload(str(marker))))
    for name, read, message in (
            ("a.npz", md.read_arrays, "corrupt or incompatible model file a.npz (ValueError: Object arrays cannot "
                                      "be loaded when allow_pickle=False)"),
            ("p.npz", md.read_arrays, "corrupt or incompatible model file p.npz (ValueError: This file contains "
                                      "pickled (object) data)"),
            ("t.pt", md.read_tensors, "the model file t.pt holds objects that nlpipe does not load (only plain tensors)")):
        with pytest.raises(ModelError) as e:
            read(tmp_path / name)
        assert str(e.value) == f"{tmp_path}: {message}"     # no advice to load it unsafely
    assert not marker.exists()


# -- the training block -----------------------------------------------------------------------

def test_sha256_of_a_file(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")   # the FIPS 180-2 example
    assert sha256(str(tmp_path / "f")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert sha256("-") is None and sha256(str(tmp_path / "none")) is None


@pytest.mark.parametrize("argv,command", [
    (["/venv/bin/nlpipe", "train", "pos", "--out", "my model"], "nlpipe train pos --out 'my model'"),
    ([str(PACKAGE / "__main__.py"), "train", "ner"], "nlpipe train ner"),
    ([str(PACKAGE / "cli" / "__main__.py"), "train", "srl"], "nlpipe train srl"),
    ([str(PACKAGE / "train" / "jackknife.py"), "--folds", "3"], "python -m nlpipe.train.jackknife --folds 3"),
    ([str(PACKAGE.parent / "tools" / "train_punkt.py"), "--train", "t.conllu"],
     "python tools/train_punkt.py --train t.conllu"),
])
def test_the_command_is_written_as_users_type_it(argv, command):
    assert command_line(argv) == command


def test_training_block(tmp_path, monkeypatch):
    (tmp_path / "train.conllu").write_bytes(b"abc")
    monkeypatch.setattr("sys.argv", ["/usr/local/bin/nlpipe", "train", "parse"])
    block = training_block({"train": str(tmp_path / "train.conllu"), "init": None}, {"las": 80.5}, seed=3)
    assert block["data"] == {"train": {"path": str(tmp_path / "train.conllu"),
                                       "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}}
    assert block["command"] == "nlpipe train parse" and block["scores"] == {"dev_las": 80.5}
    assert block["seed"] == 3 and block["nlpipe_version"] == "0.1.0"
    assert len(block["date"]) == len("2026-11-25T13:05:12Z") and block["date"].endswith("Z")
    record_test(block, str(tmp_path / "train.conllu"), {"las": 81.0})
    assert block["scores"] == {"dev_las": 80.5, "test_las": 81.0} and block["data"]["test"]["sha256"]
    with pytest.raises(ValueError, match="scores"):
        training_block({}, {}, scores={})


# -- the shipped models -----------------------------------------------------------------------

SHIPPED_MODELS = sorted(p.name for p in SHIPPED.iterdir() if (p / "config.json").is_file())


def test_the_shipped_models_are_found():
    assert len(SHIPPED_MODELS) == 8


@pytest.mark.parametrize("name", SHIPPED_MODELS)
def test_shipped_models_are_format_2_with_provenance(name):
    raw = json.loads((SHIPPED / name / "config.json").read_text(encoding="utf-8"))
    assert raw["format"] == 2 and raw["language"] == "en"
    assert {"stage", "arch", "model", "training"} <= set(raw)
    assert raw["arch"].rsplit(".", 1)[1].startswith("v")
    training = raw["training"]
    assert set(md.TRAINING_KEYS) <= set(training)
    assert isinstance(training["command"], str) and training["command"]
    assert training["nlpipe_version"] == "0.1.0" and training["date"].startswith("2026-11-2")
    assert "train" in training["data"]
    for entry in training["data"].values():
        assert set(entry) <= {"path", "sha256", "note"} and entry["path"]
        assert entry["sha256"] is None or len(entry["sha256"]) == 64
        assert entry["sha256"] or entry["note"]      # a file not hashed says what it was
    assert training["scores"] and all(k.startswith(("dev_", "test_")) for k in training["scores"])
    assert md.read_config(SHIPPED / name, raw["stage"]) == raw


def test_nlpipe_models_lists_language_and_scores(capsys):
    from nlpipe.cli import main

    main(["models", "--json"])
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert sorted(rows) == SHIPPED_MODELS
    assert rows["pos-ewt"]["language"] == "en" and rows["pos-ewt"]["default"] is True
    assert rows["pos-ewt"]["arch"] == "bilstm-tagger.v1" and rows["pos-ewt-fast"]["default"] is False
    assert rows["pos-ewt"]["words_per_cpu_second"] > 0 and rows["pos-ewt-fast"]["words_per_cpu_second"] > 0
    assert {k: v for k, v in rows["pos-ewt"]["scores"].items() if not k.endswith("raw_text")} == {  # 2026-11-29 (9cc8494: FEATS that follow the tag)
        "dev_upos": 96.33, "dev_xpos": 95.79, "dev_ufeats": 96.9, "dev_alltags": 94.73, "dev_lemmas": 97.67,
        "test_upos": 96.39, "test_xpos": 95.91, "test_ufeats": 97.01, "test_alltags": 94.74, "test_lemmas": 97.57,
        "test_alltags_after_parse": 94.79, "test_ufeats_after_parse": 97.06}
    assert rows["pos-ewt-fast"]["scores"] == {  # the model of 2026-11-25 (ac94fcd; pos-ewt until 2026-11-29)
        "dev_upos": 95.23, "dev_xpos": 94.62, "dev_ufeats": 95.62, "dev_alltags": 92.85, "dev_lemmas": 97.18,
        "dev_joint": 94.1, "test_upos": 95.75, "test_xpos": 95.18, "test_ufeats": 95.96, "test_alltags": 93.51,
        "test_lemmas": 97.03, "test_alltags_after_parse": 93.77, "test_mlas_raw_text": 77.11,
        "test_blex_raw_text": 79.57}
    assert rows["ner-uner-ewt"]["scores"] == {"dev_f1": 71.64, "test_f1": 71.87}


def test_tensor_files_read_without_torch_hold_the_same_arrays(tmp_path):
    import pickle

    import numpy as np
    import torch

    from nlpipe.errors import ModelError
    from nlpipe.io.model_dir import read_tensors_numpy, write_tensors

    tensors = {"half": torch.arange(6, dtype=torch.float32).reshape(2, 3).half(),
               "strided": torch.arange(12, dtype=torch.float32).reshape(3, 4).t(),
               "view": torch.arange(10, dtype=torch.int64)[3:7], "flag": torch.tensor([True, False])}
    write_tensors(tmp_path / "w.pt", tensors)
    arrays = read_tensors_numpy(tmp_path / "w.pt")
    assert sorted(arrays) == sorted(tensors)
    for k, t in tensors.items():
        assert arrays[k].dtype == t.numpy().dtype and np.array_equal(arrays[k], t.numpy()), k

    class Payload:
        def __reduce__(self):
            return (print, ("pwned",))

    torch.save({"w": torch.zeros(2), "evil": Payload()}, tmp_path / "evil.pt")
    with pytest.raises(ModelError, match="holds objects that nlpipe does not load"):
        read_tensors_numpy(tmp_path / "evil.pt")
    (tmp_path / "bare.pt").write_bytes(pickle.dumps({"w": 1}))
    with pytest.raises(ModelError, match="not a file of plain tensors"):
        read_tensors_numpy(tmp_path / "bare.pt")
