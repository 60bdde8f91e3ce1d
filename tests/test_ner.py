"""The ner stage: shipped model, output contract (MISC NE= only, valid BIO), training CLI, errors."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from nlpipe.io.conllu import MISC, misc_get, misc_set, parse_string, to_string
from nlpipe.tags import is_valid
from nlpipe.errors import ModelError
from nlpipe.io.model_dir import read_config
from nlpipe.registry import load_stage
from nlpipe.stages.ner import NERStage, _units

from conftest import FIXTURES, run_cli

NER = FIXTURES / "ner"


def _ne(sentences):
    return [[misc_get(w[MISC], "NE") or "O" for w in s.words] for s in sentences]


def _without_ne(sentences):
    out = []
    for s in sentences:
        for w in s.words:
            w[MISC] = misc_set(misc_set(w[MISC], "NE", None), "NEProb", None)
        out.append(to_string([s]))
    return out


@pytest.mark.parametrize("name", ["tiny.conllu", "../special.conllu"])
def test_shipped_model_writes_only_valid_ne_tags(name):
    text = (NER / name).read_text(encoding="utf-8")
    stage = load_stage("ner")
    assert stage.name == "ner"
    out = list(stage.annotate(parse_string(text)))
    assert all(is_valid(tags) for tags in _ne(out))
    # nothing but MISC NE= changed (the fixture's gold-ish NE=B-ORG is replaced)
    assert _without_ne(out) == _without_ne(parse_string(text))


def test_shipped_config_names_its_data_and_scores():
    config = read_config(Path(__file__).resolve().parent.parent / "nlpipe/shipped/ner-uner-ewt", "ner")
    assert config["arch"] == "idcnn.v1" and config["model"]["crf"] is False
    assert "uner" in config["training"]["data"]["train"]["path"].lower()
    assert 0 < config["training"]["scores"]["test_f1"] <= 100


def test_probs_are_written_on_request_and_are_probabilities():
    stage = load_stage("ner", probs=True)
    out = list(stage.annotate(parse_string((NER / "tiny.conllu").read_text(encoding="utf-8"))))
    probs = [float(misc_get(w[MISC], "NEProb")) for s in out for w in s.words]
    assert probs and all(0.0 < p <= 1.0 for p in probs)


def test_document_units_follow_newdoc_and_keep_sentences():
    sents = parse_string((NER / "tiny.conllu").read_text(encoding="utf-8"))
    chunks = list(_units(sents, True, 1000, 2000))
    assert [[s.sent_id for s in unit] for unit in chunks[0]] == [["s1", "s2"], ["s3"]]
    assert [[s.sent_id for s in u] for c in _units(sents, False, 2, 2000) for u in c] == [["s1"], ["s2"], ["s3"]]


def _glove(tmp_path):
    words = ["the", "maria", "lisbon", "tom", "oslo", "bank", "acme", ".", "to", "flew"]
    (tmp_path / "g.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    np.save(tmp_path / "g.npy", np.random.default_rng(0).normal(size=(len(words), 50)).astype(np.float32))
    return ["--glove-words", str(tmp_path / "g.txt"), "--glove-vectors", str(tmp_path / "g.npy")]


@pytest.mark.parametrize("extra", [["--arch", "idcnn", "--width", "16", "--blocks", "1"],
                                   ["--arch", "idcnn", "--width", "16", "--affix-dim", "8", "--freeze-words",
                                    "--min-affix", "1"],
                                   pytest.param(["--arch", "idcnn", "--crf", "--context", "document",
                                                 "--width", "16"], marks=pytest.mark.slow),
                                   pytest.param(["--arch", "bilstm", "--crf", "--hidden", "8"],
                                                marks=pytest.mark.slow)])
def test_train_then_tag_with_the_trained_model(tmp_path, extra):
    out = tmp_path / "m"
    data = str(NER / "tiny.conll")
    r = run_cli("train", "ner", "--train", data, "--dev", data, "--test", data, "--out", str(out),
                "--epochs", "3", "--threads", "1", "--device", "cpu", "--json", *_glove(tmp_path), *extra)
    assert r.returncode == 0, r.stderr.decode()
    result = json.loads(r.stdout)
    assert 0.0 <= result["test"]["f1"] <= 100.0
    config = read_config(out, "ner")
    assert config["training"]["scores"]["test_f1"] == result["test"]["f1"]
    assert (out / "weights.npz").is_file() and (out / "words.txt").is_file()
    if "--affix-dim" in extra:
        assert "s2:ed" in (out / "affixes.txt").read_text(encoding="utf-8").split("\n")
    if "--freeze-words" in extra:  # GloVe rows are kept as given
        words = (out / "words.txt").read_text(encoding="utf-8").split("\n")
        glove = np.load(tmp_path / "g.npy")
        with np.load(out / "weights.npz") as z:
            np.testing.assert_allclose(z["emb.words.weight"][words.index("lisbon")], glove[2], atol=2e-3)
    r = run_cli("ner", "-m", str(out), str(NER / "tiny.conllu"))
    assert r.returncode == 0, r.stderr.decode()
    tagged = parse_string(r.stdout.decode())
    assert len(tagged) == 3 and all(is_valid(t) for t in _ne(tagged))


def test_training_reads_every_scheme_as_bio():
    from nlpipe.train.ner import read_ner_file

    # BIOES in CoNLL-U MISC: E- closes, S- is a one-word entity; the models train on BIO
    assert read_ner_file(str(NER / "tiny_bioes.conllu")) == [
        (["Maria", "Lopez", "flew", "to", "Lisbon", "."], ["B-PER", "I-PER", "O", "O", "B-LOC", "O"], True),
        (["The", "Acme", "Bank", "hired", "Tom", "."], ["O", "B-ORG", "I-ORG", "O", "B-PER", "O"], False),
        (["Tom", "visited", "Oslo", "and", "Lisbon", "."], ["B-PER", "O", "B-LOC", "O", "B-LOC", "O"], True)]
    # IOB1 (CoNLL-2003): I- starts an entity, B- only between two of one type
    first = read_ner_file(str(NER / "tiny.conll"))[0]
    assert first[1] == ["B-PER", "I-PER", "O", "O", "B-LOC", "O", "O", "O"] and first[2]


def test_train_accepts_bioes_like_eval(tmp_path):
    data = str(NER / "tiny_bioes.conllu")
    r = run_cli("eval", "ner", "--gold", data, "--pred", data, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["scheme"] == "bioes"
    out = tmp_path / "m"
    r = run_cli("train", "ner", "--train", data, "--dev", data, "--out", str(out), "--epochs", "1",
                "--width", "8", "--blocks", "1", "--threads", "1", "--device", "cpu", *_glove(tmp_path))
    assert r.returncode == 0, r.stderr.decode()
    assert read_config(out, "ner")["labels"] == ["O", "B-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER"]


def test_bad_training_tag_is_an_input_error_with_file_and_line(tmp_path):
    bad = str(NER / "bad_tag.conll")
    r = run_cli("train", "ner", "--train", bad, "--dev", bad, "--out", str(tmp_path / "m"), *_glove(tmp_path))
    assert r.returncode == 2
    assert "bad_tag.conll:2" in r.stderr.decode() and "Traceback" not in r.stderr.decode()


def test_training_data_without_entities_is_refused(tmp_path):
    plain = tmp_path / "plain.conllu"
    plain.write_text("1\tHello\t_\t_\t_\t_\t_\t_\t_\t_\n2\tLisbon\t_\t_\t_\t_\t_\t_\t_\t_\n\n", encoding="utf-8")
    out = tmp_path / "m"
    r = run_cli("train", "ner", "--train", str(plain), "--dev", str(plain), "--out", str(out), *_glove(tmp_path))
    assert r.returncode == 2
    assert f"{plain}: no named entities in the training data" in r.stderr.decode()
    assert not out.exists()


def _copy_model(tmp_path):
    src = Path(__file__).resolve().parent.parent / "nlpipe/shipped/ner-uner-ewt"
    dst = tmp_path / "model"
    shutil.copytree(src, dst)
    return dst


def test_missing_or_corrupt_weights_give_model_errors(tmp_path):
    model = _copy_model(tmp_path)
    config = read_config(model, "ner")
    (model / "weights.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ModelError, match="corrupt or incompatible model file weights.npz"):
        NERStage(model, config)
    (model / "weights.npz").unlink()
    with pytest.raises(ModelError, match="missing model file weights.npz"):
        NERStage(model, config)
    r = run_cli("ner", "-m", str(model), str(NER / "tiny.conllu"))
    assert r.returncode == 2 and b"missing model file weights.npz" in r.stderr


def test_affix_model_without_its_affix_list_is_a_model_error(tmp_path):
    model = _copy_model(tmp_path)
    config = read_config(model, "ner")
    config["model"]["affix_dim"] = 8
    (model / "affixes.txt").unlink(missing_ok=True)
    with pytest.raises(ModelError, match="missing model file affixes.txt"):
        NERStage(model, config)


def test_config_and_weights_that_disagree_give_a_model_error(tmp_path):
    model = _copy_model(tmp_path)
    config = read_config(model, "ner")
    config["model"]["dilations"] = [1, 2, 4, 8, 16, 1]
    with pytest.raises(ModelError, match="do not match"):
        NERStage(model, config)
    del config["labels"]
    with pytest.raises(ModelError, match="labels"):
        NERStage(model, config)
