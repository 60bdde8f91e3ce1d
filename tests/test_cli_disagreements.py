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


def _model(folder, stage: str, lang: str) -> None:
    import json

    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"stage": stage, "arch": "none.v1", "format": 1,
                                                    "language": lang}), encoding="utf-8")


def test_models_name_is_looked_for_in_nlpipe_models_first_and_errors_say_where(tmp_path):
    import os
    import subprocess
    import sys

    store = tmp_path / "store"
    _model(store / "el" / "pos", "pos", "el")
    here = tmp_path / "work"
    (here / "el").mkdir(parents=True)            # a local folder of the same name, with no models
    env = dict(os.environ, NLPIPE_MODELS=f"{tmp_path / 'gone'}{os.pathsep}{store}")

    def nlpipe(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "nlpipe.cli", *args], cwd=here, env=env, capture_output=True,
                              text=True, timeout=600)

    r = nlpipe("annotate", "--models", "el", "--stages", "pos", "-")
    assert "no model folders" not in r.stderr          # $NLPIPE_MODELS/el was taken, not ./el
    assert f"nlpipe: warning: $NLPIPE_MODELS names {tmp_path / 'gone'}, which is not a folder" in r.stderr
    assert "unknown architecture 'none.v1'" in r.stderr  # it got as far as loading store/el/pos
    r = nlpipe("annotate", "--models", "xx", "-")
    assert r.returncode == 2
    assert (f"xx: no such folder of models (looked for {tmp_path / 'gone' / 'xx'}, {store / 'xx'}, xx)"
            in r.stderr)
    r = nlpipe("models")
    assert r.returncode == 0 and "which is not a folder" in r.stderr


def test_each_eval_lists_only_its_own_options():
    ud = run_cli("eval", "ud", "--help").stdout.decode("utf-8")
    pos = run_cli("eval", "pos", "--help").stdout.decode("utf-8")
    for flag in ("--model", "--scheme", "--margin", "--gold-parse", "--device"):
        assert flag not in ud, flag
    for flag in ("--scheme", "--gold-parse", "--gold-predicates", "--tags"):
        assert flag not in pos, flag
    assert "--margin" in pos and "--train" in pos and "--gold" in ud
    r = run_cli("eval", "ud", "--gold", "x.conllu", "--model", "m")
    assert r.returncode == 2 and b"No such option '--model'" in r.stderr


def test_eval_parse_says_which_pos_tags_the_parser_read(tmp_path):
    import json

    gold = tmp_path / "gold.conllu"
    gold.write_text("# text = Dogs bark loudly.\n"
                    "1\tDogs\tdog\tNOUN\tNNS\tNumber=Plur\t2\tnsubj\t_\t_\n"
                    "2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_\n"
                    "3\tloudly\tloudly\tADV\tRB\t_\t2\tadvmod\t_\tSpaceAfter=No\n"
                    "4\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_\n\n", encoding="utf-8")
    r = run_cli("eval", "parse", "--gold", str(gold), "--model", "parse-biaffine-ewt")
    assert r.returncode == 0, r.stderr
    assert "POS tags: the gold file's" in r.stdout.decode("utf-8")
    r = run_cli("eval", "parse", "--gold", str(gold), "--model", "parse-biaffine-ewt", "--tags", "predicted", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tags"] == "predicted"
    assert "POS tags: predicted by the shipped tagger" in r.stderr.decode("utf-8")
    r = run_cli("eval", "parse", "--gold", str(gold), "--pred", str(gold), "--tags", "predicted")
    assert r.returncode == 2 and b"--tags applies to a model" in r.stderr


GREEK = "Η γάτα κάθεται στο χαλί. Ο σκύλος τρέχει στον κήπο και παίζει με την μπάλα του κάθε μέρα.\n"


def test_english_models_on_greek_text_get_a_warning(tmp_path):
    src = tmp_path / "greek.txt"
    src.write_text(GREEK, encoding="utf-8")
    for args in (("annotate", "--stages", "tokenize,pos", str(src)), ("tokenize", str(src))):
        r = run_cli(*args)
        assert r.returncode == 0, r.stderr
        assert r.stderr.decode("utf-8").count("nlpipe: warning:") == 1
        assert (f"{src}: 100% of the letters are Greek, but the models are for 'en', written in Latin script"
                in r.stderr.decode("utf-8"))
    english = tmp_path / "english.txt"
    english.write_text("The cat sits on the mat. The dog runs in the garden, Zoë says, every day.\n", encoding="utf-8")
    r = run_cli("annotate", "--stages", "tokenize,pos", str(english))
    assert r.returncode == 0 and r.stderr == b""


def test_progress_shows_model_loading_and_does_not_count_it_as_work(tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("The cat sat. It slept.\n", encoding="utf-8")
    r = run_cli("annotate", "--stages", "tokenize,pos", "--progress", str(src))
    assert r.returncode == 0, r.stderr
    lines = r.stderr.decode("utf-8").splitlines()
    assert lines[0] == "annotate: loading the models of tokenize, pos ..."
    assert lines[1].startswith("annotate: models loaded in ") and lines[-1].startswith("annotate: 2 sentences")


def test_the_progress_rate_starts_after_loading():
    import io

    from nlpipe.runtime.progress import Progress

    now = [0.0]
    p = Progress("annotate", unit="sentences", work_unit="tokens", enabled=True, stream=io.StringIO(),
                 clock=lambda: now[0])
    now[0] = 6.0          # six seconds of loading
    p.restart()
    now[0] = 8.0
    p.update(10, 200)
    assert p.line(now[0]) == "annotate: 10 sentences, 200 tokens, 100 tokens/s"
