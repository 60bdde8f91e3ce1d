"""Word vectors learned from raw text: nlpipe train vectors, train pos --raw."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest
from click.testing import CliRunner

from nlpipe.cli import main
from nlpipe.cli.train import train_pos
from nlpipe.train.raw_vectors import vectors_from_text
from nlpipe.train.vectors import read_vectors


def write_text(path, lines: int = 400, seed: int = 1) -> None:
    """Animals sit and sleep after "the"; colours come before "car" and "house" after "a"; the words
    of a group share every context and never those of the other group."""
    rng = random.Random(seed)
    animals, colours = ["cat", "dog", "horse", "goat"], ["red", "blue", "green", "brown"]
    out = []
    for _ in range(lines):
        if rng.random() < 0.5:
            out.append(f"the {rng.choice(animals)} {rng.choice(['sat', 'slept'])} here .")
        else:
            out.append(f"a {rng.choice(colours)} {rng.choice(['car', 'house'])} stood there !")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def write_rich_text(path) -> None:
    """:func:`write_text` and lines of 78 more words, enough for 50 dimensions."""
    write_text(path)
    rng = random.Random(3)
    with open(path, "a", encoding="utf-8") as f:
        for _ in range(300):
            f.write(" ".join("x" + chr(97 + rng.randrange(3)) + chr(97 + rng.randrange(26)) for _ in range(8)) + "\n")


def nlpipe(*args: str) -> int:
    """``nlpipe ARGS`` in this process: the exit code."""
    try:
        main(list(args))
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 1
    return 0


def cos(v, a: str, b: str) -> float:
    i, j = v.words.index(a), v.words.index(b)
    return float(v.matrix[i] @ v.matrix[j])


def test_words_of_the_same_contexts_get_close_vectors(tmp_path):
    write_text(tmp_path / "raw.txt")
    v = vectors_from_text([str(tmp_path / "raw.txt")], dim=4)
    assert v.matrix.shape == (len(v.words), 4) and np.allclose(np.linalg.norm(v.matrix, axis=1), 1, atol=1e-5)
    for a, b, c in (("cat", "dog", "red"), ("goat", "horse", "blue"), ("red", "green", "cat")):
        assert cos(v, a, b) > 0.9 > cos(v, a, c) + 0.5, (a, b, c)
    assert v.source["raw"][0]["sha256"] and v.source["dim"] == 4


def test_the_command_writes_a_file_that_vectors_reads_back(tmp_path, capsys):
    write_text(tmp_path / "raw.txt")
    code = nlpipe("train", "vectors", "--raw", str(tmp_path / "raw.txt"), "-o", str(tmp_path / "v.txt"), "--dim", "4")
    assert code == 0, capsys.readouterr().err
    v = read_vectors(str(tmp_path / "v.txt"))
    assert v.dim == 4 and {"cat", "red", "the", "."} <= set(v.words)
    assert cos(v, "cat", "dog") > 0.9


@pytest.mark.parametrize("args, message", [
    (["--raw", "{d}/missing.txt"], "--raw {d}/missing.txt: cannot read (No such file or directory)"),
    (["--raw", "{d}/short.txt"], "--raw: 3 words seen 2 times or more in 8 tokens; 50-dimensional vectors need more "
                                 "text"),
])
def test_vectors_errors(tmp_path, capsys, args, message):
    (tmp_path / "short.txt").write_text("a b c d\na b c e\n", encoding="utf-8")
    (tmp_path / "old.txt").write_text("kept\n", encoding="utf-8")
    assert nlpipe("train", "vectors", *[a.format(d=tmp_path) for a in args], "-o", str(tmp_path / "old.txt")) == 2
    assert capsys.readouterr().err == f"nlpipe: error: {message.format(d=tmp_path)}\n"
    assert (tmp_path / "old.txt").read_text(encoding="utf-8") == "kept\n"     # no replaced file


def test_train_pos_learns_its_vectors_from_raw_text(tmp_path):
    from test_pos_bilstm import treebank

    write_rich_text(tmp_path / "raw.txt")
    (tmp_path / "train.conllu").write_text(treebank(60, 1), encoding="utf-8")
    (tmp_path / "dev.conllu").write_text(treebank(10, 2), encoding="utf-8")
    common = ["--arch", "bilstm", "--train", str(tmp_path / "train.conllu"), "--dev", str(tmp_path / "dev.conllu"),
              "--hidden", "8", "--epochs", "1", "--json"]
    r = CliRunner().invoke(train_pos, [*common, "--out", str(tmp_path / "m"), "--raw", str(tmp_path / "raw.txt")])
    assert r.exit_code == 0, r.output
    config = json.loads((tmp_path / "m" / "config.json").read_text(encoding="utf-8"))
    assert config["model"]["vector_dim"] == 50 or config["training"]["vectors"]["dim"] == 50
    assert config["training"]["vectors"]["raw"][0]["path"] == str(tmp_path / "raw.txt")
    r = CliRunner().invoke(train_pos, [*common, "--out", str(tmp_path / "m2"), "--raw", str(tmp_path / "raw.txt"),
                                       "--vectors", "none"])
    assert str(r.exception) == "--raw and --vectors/--glove-words/--glove-vectors do not combine: give one"


def test_train_pipeline_gives_the_raw_text_vectors_to_its_taggers(tmp_path, capsys):
    from test_pos_bilstm import treebank

    write_text(tmp_path / "raw.txt", lines=100)
    (tmp_path / "train.conllu").write_text(treebank(40, 1), encoding="utf-8")
    (tmp_path / "dev.conllu").write_text(treebank(10, 2), encoding="utf-8")
    args = ["train", "pipeline", "--train", str(tmp_path / "train.conllu"), "--dev", str(tmp_path / "dev.conllu"),
            "--parts", "pos-bilstm", "--set", "pos-bilstm.epochs=1", "--set", "pos-bilstm.hidden=8",
            "--out", str(tmp_path / "p"), "--raw", str(tmp_path / "raw.txt")]
    assert nlpipe(*args, "--vectors", "none") == 2
    assert "--raw and --vectors/--glove-words/--glove-vectors do not combine" in capsys.readouterr().err
    assert nlpipe(*args) == 2 and "50-dimensional vectors need more text" in capsys.readouterr().err  # 19 words
    write_rich_text(tmp_path / "raw.txt")
    assert nlpipe(*args) == 0, capsys.readouterr().err
    config = json.loads((tmp_path / "p" / "pos-bilstm" / "config.json").read_text(encoding="utf-8"))
    vectors = config["training"]["vectors"]
    assert vectors["raw"][0]["path"] == str(tmp_path / "raw.txt") and vectors["dim"] == 50
