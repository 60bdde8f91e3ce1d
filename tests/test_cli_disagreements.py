"""Places where the README, the options and the behaviour disagreed (issue 36), as a user types them."""
from __future__ import annotations

from conftest import run_cli
from nlpipe.registry import MODELS_DIR


def test_tokenize_refuses_a_method_that_is_not_the_models():
    r = run_cli("tokenize", "--model", str(MODELS_DIR / "tokenize-char-ewt"), "--method", "rules", "-",
                input=b"Hi there.\n")
    assert r.returncode == 2
    assert b"--method rules" in r.stderr and b"char-segmenter" in r.stderr
    same = run_cli("tokenize", "--model", "tokenize-rules-ewt", "--method", "rules", "-", input=b"Hi there.\n")
    assert same.returncode == 0, same.stderr
    assert same.stdout == run_cli("tokenize", "--method", "rules", "-", input=b"Hi there.\n").stdout


def test_annotate_into_a_folder_of_finished_files_loads_no_model_and_overwrite_redoes_them(tmp_path):
    import shutil

    broken = tmp_path / "broken-pos"      # a config but no weights: loading it fails
    broken.mkdir()
    shutil.copy(MODELS_DIR / "pos-ewt" / "config.json", broken / "config.json")
    src = tmp_path / "a.txt"
    src.write_text("Dogs bark.\n", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.conllu").write_text("done before\n", encoding="utf-8")
    args = ("annotate", "--stages", "tokenize,pos", "--model", f"pos={broken}", str(src), "-o", f"{out}/")
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    assert b"not redone" in r.stderr and b"--overwrite" in r.stderr
    assert (out / "a.conllu").read_text(encoding="utf-8") == "done before\n"
    r = run_cli("annotate", "--stages", "tokenize,pos", str(src), "-o", f"{out}/", "--overwrite")
    assert r.returncode == 0, r.stderr
    assert "# text = Dogs bark." in (out / "a.conllu").read_text(encoding="utf-8")
