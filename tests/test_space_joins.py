"""Space joins: counts of spaces inside tokens (words of several syllables), and the segmenter input they give."""
import json
from pathlib import Path

import numpy as np
import pytest

from nlpipe.cli import main
from nlpipe.errors import ModelError
from nlpipe.io.conllu import FORM, read_file
from nlpipe.io.model_dir import read_config
from nlpipe.models.segmenter import INSIDE, labelled_paragraphs
from nlpipe.models.space_joins import N_VALUES, SpaceJoins, jackknifed, pair_bucket, pairs_of, unit_bucket
from nlpipe.registry import load_stage

FIXTURE = Path(__file__).parent / "fixtures" / "vi_syllables.conllu"


def paragraphs():
    return [labelled_paragraphs([s])[0] for s in read_file(str(FIXTURE))]


def test_buckets():
    assert [pair_bucket(j, s) for j, s in [(0, 0), (0, 1), (0, 3), (1, 3), (1, 1), (1, 0), (4, 0)]] == \
        [0, 1, 2, 3, 4, 5, 6]
    assert [unit_bucket(j, s) for j, s in [(0, 0), (0, 5), (1, 2), (2, 2)]] == [0, 1, 2, 3]


def test_pairs_are_units_with_one_plain_space_between():
    text = "Hà Nội, là  thủ đô\tx"
    assert pairs_of(text) == [(1, 2, "hà", "nội,"), (6, 7, "nội,", "là"), (14, 15, "thủ", "đô")]


def test_counts_and_values_of_a_fixture():
    joins = SpaceJoins.count(paragraphs(), INSIDE)
    # "Hà Nội" is one token in v1 and v3 ("Nội." there), two in v2 ("Nội.")
    assert joins.pairs[("hà", "nội")] == [1, 0] and joins.pairs[("hà", "nội.")] == [1, 1]
    assert joins.pairs[("thủ", "đô.")] == [2, 0] and joins.pairs[("tôi", "ở")] == [0, 2]
    assert joins.left["hà"] == [2, 1] and joins.right["nội."] == [1, 1]
    v = joins.values("Hà Nội.")
    # on "à": 1 + bucket of (hà, nội.), joined once in two; on the space: 1 + 7 + 4 * 3 + 3
    assert v.tolist() == [0, 5, 23, 0, 0, 0, 0]
    v = joins.values("Tôi ở")
    assert v.tolist() == [0, 0, 3, 13, 0]      # (tôi, ở) never joined, seen twice; units never joined
    assert joins.values("a  b").tolist() == [0] * 4 and N_VALUES == 24


def test_training_values_come_from_the_other_folds():
    whole, values = jackknifed(paragraphs(), INSIDE, folds=2)
    assert whole.pairs == SpaceJoins.count(paragraphs(), INSIDE).pairs
    # v1 is in fold 0 with v3: from v2 and v4 alone, (hà, nội) is unseen, "hà" was split once, and
    # "nội" (without the full stop) never seen on the right
    assert values[0][:3].tolist() == [0, 1, 1 + 7 + 4 * 1 + 0]


def test_json_round_trip():
    joins = SpaceJoins.count(paragraphs(), INSIDE)
    again = SpaceJoins.from_json(json.loads(json.dumps(joins.to_json())))
    text = "thủ đô là Hà Nội. Tôi ở Hà Nội."
    assert np.array_equal(again.values(text), joins.values(text))


def _train(out, *extra):
    main(["train", "tokenize", "--train", str(FIXTURE), "--dev", str(FIXTURE), "--out", str(out), "--lang", "vi",
          "--epochs", "1", "--channels", "4", "--emb", "4", "--dilations", "1,2", "--length", "32",
          "--min-char", "1", *extra])


def test_a_model_of_spaced_tokens_keeps_its_space_joins(tmp_path):
    _train(tmp_path / "m")
    config = read_config(tmp_path / "m", "tokenize")
    assert config["model"]["space_joins"] == "space_joins.json" and config["model"]["spaces_in_tokens"] is True
    tok = load_stage("tokenize", str(tmp_path / "m"))
    text = "Tôi ở thủ đô. Nhà tôi ở Hà Nội."
    sents = tok.tokenize_text(text)
    assert "".join(r[FORM].replace(" ", "") for s in sents for r in s.rows) == text.replace(" ", "")
    _train(tmp_path / "off", "--space-joins", "no")
    assert "space_joins" not in read_config(tmp_path / "off", "tokenize")["model"]
    assert not (tmp_path / "off" / "space_joins.json").exists()


@pytest.mark.parametrize("content", ['{"pairs": 3}', '{"pairs": [], "left": []}', "[1, 2]"])
def test_corrupt_space_joins_are_refused_on_load(tmp_path, content):
    _train(tmp_path / "m")
    (tmp_path / "m" / "space_joins.json").write_text(content)
    with pytest.raises(ModelError, match="corrupt segmenter model"):
        load_stage("tokenize", str(tmp_path / "m"))
