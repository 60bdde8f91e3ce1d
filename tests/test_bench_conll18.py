"""bench/conll18.py: treebank files, the published figures found by the treebank's UD name, the tables."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
conll18 = pytest.importorskip("conll18")

RESULTS = [
    {"treebank": "Vietnamese-VTB", "system": "UDPipe Future", "metric": "LAS", "value": "40.00", "split": "test"},
    {"treebank": "Vietnamese-VTB", "system": "BEST", "metric": "LAS", "value": "45.50", "split": "test"},
    {"treebank": "Vietnamese-VTB", "system": "UDPipe 1.2 baseline", "metric": "LAS", "value": "30.0", "split": "dev"},
    {"treebank": "Vietnamese-VTB", "system": "UDPipe Future", "metric": "MLAS", "value": "35.25", "split": "test"},
    {"treebank": "Korean-GSD", "system": "UDPipe Future", "metric": "LAS", "value": "80.00", "split": "test"},
    {"treebank": "French-GSD", "system": "UDPipe Future", "metric": "LAS", "value": "85.00", "split": "test"},
]


def test_treebank_files_by_ud_names(tmp_path):
    for split in ("train", "dev", "test"):
        (tmp_path / f"xx_toy-ud-{split}.conllu").write_text("")
    assert conll18.treebank_files(tmp_path)["dev"] == tmp_path / "xx_toy-ud-dev.conllu"
    (tmp_path / "xx_toy-ud-dev.conllu").unlink()
    with pytest.raises(conll18.BenchError, match=r"expected one \*-ud-dev.conllu file, found 0"):
        conll18.treebank_files(tmp_path)


def test_ud_name_from_provenance_then_from_a_unique_suffix(tmp_path):
    (tmp_path / "vi_vtb").mkdir()
    (tmp_path / "PROVENANCE.md").write_text("| folder | repository |\n|---|---|\n| vi_vtb | UD_Vietnamese-VTB | x |\n")
    assert conll18.ud_name(tmp_path / "vi_vtb", "vi_vtb", RESULTS) == "Vietnamese-VTB"
    # not in the table: the one results name ending so
    assert conll18.ud_name(tmp_path / "ko_gsd", "ko_vtb", RESULTS) == "Vietnamese-VTB"
    # two names end in -GSD: none is taken
    assert conll18.ud_name(tmp_path / "ko_gsd", "ko_gsd", RESULTS) is None


def test_published_figures_are_the_test_rows_of_udpipe_future_and_the_best():
    assert conll18.published(RESULTS, "Vietnamese-VTB") == {"UDPipe Future": {"LAS": 40.0, "MLAS": 35.25},
                                                             "BEST": {"LAS": 45.5}}
    assert conll18.published(RESULTS, None) == {}


def _run():
    scores = {m: 90.0 for m in conll18.METRICS}
    return {"treebank": "vi_vtb", "ud_name": "Vietnamese-VTB", "words": 11955, "skipped": {},
            "scores": {"nlpipe": dict(scores, LAS=42.0), "udpipe": dict(scores, LAS=41.5, Tokens=91.25),
                       "UDPipe Future": {"LAS": 40.0, "MLAS": 35.25}},
            "training": {"nlpipe": {"minutes": 50.04}, "udpipe": {"minutes": 12.0}},
            "speed": {"nlpipe": {"tokens_per_s": 5000.0}, "udpipe": {"tokens_per_s": 2500.4}}}


def test_table_of_one_treebank():
    lines = conll18.table(_run()).splitlines()
    assert lines[0] == "### vi_vtb (Vietnamese-VTB), test, raw text, 11,955 words"
    assert lines[2] == "| Metric | nlpipe | UDPipe 1 | UDPipe Future | nlpipe - UDPipe 1 |"
    assert "| Tokens | 90.00 | 91.25 | - | -1.25 |" in lines
    assert "| LAS | 42.00 | 41.50 | 40.00 | +0.50 |" in lines
    assert lines[-2:] == ["| training minutes | 50.0 | 12.0 |  |  |",
                          "| words/s (one core, whole run) | 5,000 | 2,500 |  |  |"]


def test_summary_names_where_nlpipe_is_behind():
    lines = conll18.summary([_run()]).splitlines()
    assert lines[2] == "| vi_vtb | Tokens -1.25 | +2.00 | +54.75 |"


def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys):
    assert conll18.main([str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"bench/conll18.py: {tmp_path / 'missing'}: not a folder"]
