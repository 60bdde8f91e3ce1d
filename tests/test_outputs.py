"""`-o`: what is written where (regular files replaced atomically, symlinks written through, FIFOs and
devices written directly, permissions from the umask), and every problem reported before any work."""
from __future__ import annotations

import os
import stat
import threading

import pytest

from conftest import FIXTURES, run_cli
from nlpipe.cli import main
from nlpipe.errors import NlpipeError
from nlpipe.io.outputs import check_output, open_output, plan_outputs

DATA = (FIXTURES / "special.conllu").read_bytes()


def convert(capsys, *args: str):
    """``nlpipe convert ARGS`` in this process: (exit code, stderr)."""
    with pytest.raises(SystemExit) as e:
        main(["convert", *args])
        raise SystemExit(0)
    return e.value.code, capsys.readouterr().err


def test_a_new_file_gets_the_umask_permissions(tmp_path, capsys):
    old = os.umask(0o027)
    try:
        assert convert(capsys, str(FIXTURES / "special.conllu"), "-o", str(tmp_path / "a.conllu")) == (0, "")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.conllu").stat().st_mode) == 0o640
    assert (tmp_path / "a.conllu").read_bytes() == DATA
    assert os.listdir(tmp_path) == ["a.conllu"]


def test_a_replaced_file_keeps_its_permissions(tmp_path, capsys):
    out = tmp_path / "a.conllu"
    out.write_text("old\n")
    out.chmod(0o604)
    assert convert(capsys, str(FIXTURES / "special.conllu"), "-o", str(out)) == (0, "")
    assert out.read_bytes() == DATA and stat.S_IMODE(out.stat().st_mode) == 0o604


def test_a_symlink_is_written_through_to_its_target(tmp_path, capsys):
    target = tmp_path / "target.conllu"
    target.write_text("old\n")
    link = tmp_path / "link.conllu"
    link.symlink_to(target)
    assert convert(capsys, str(FIXTURES / "special.conllu"), "-o", str(link)) == (0, "")
    assert link.is_symlink() and target.read_bytes() == DATA
    dangling = tmp_path / "dangling.conllu"
    dangling.symlink_to(tmp_path / "made.conllu")
    assert convert(capsys, str(FIXTURES / "special.conllu"), "-o", str(dangling)) == (0, "")
    assert dangling.is_symlink() and (tmp_path / "made.conllu").read_bytes() == DATA


def test_a_fifo_is_written_into_not_replaced(tmp_path, capsys):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert convert(capsys, str(FIXTURES / "special.conllu"), "-o", str(fifo)) == (0, "")
    reader.join(10)
    assert got == [DATA] and stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_character_device_is_written_into_not_replaced(capsys):
    assert convert(capsys, str(FIXTURES / "special.conllu"), "-o", os.devnull) == (0, "")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert check_output("/dev/stdout").how == "direct"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_full_device_is_one_line(capsys):
    code, err = convert(capsys, str(FIXTURES / "special.conllu"), "-o", "/dev/full")
    assert code == 2 and err == "nlpipe: error: /dev/full: cannot write (No space left on device)\n"


@pytest.mark.parametrize("make, out, message", [
    (lambda p: (p / "d").mkdir(), "d", "{p}/d: is a directory, expected a file"),
    (lambda p: None, "missing/x.conllu", "{p}/missing/x.conllu: no such folder {p}/missing"),
    (lambda p: (p / "f").write_text(""), "f/x.conllu", "{p}/f/x.conllu: {p}/f is not a folder"),
    (lambda p: None, "newdir/", "{p}/newdir/: is a folder name; expected a file name"),
])
def test_output_problems_are_one_line_before_any_work(tmp_path, capsys, make, out, message):
    make(tmp_path)
    code, err = convert(capsys, str(FIXTURES / "special.conllu"), "-o", f"{tmp_path}/{out}")
    assert code == 2 and err == "nlpipe: error: " + message.format(p=tmp_path) + "\n"


def test_an_output_problem_comes_before_the_model_loads(tmp_path):
    # a model that does not exist would be the error if the output were checked after loading
    r = run_cli("pos", "--model", str(tmp_path / "no-model"), str(FIXTURES / "special.conllu"),
                "-o", str(tmp_path / "missing" / "x.conllu"))
    assert r.returncode == 2
    assert r.stderr.decode() == f"nlpipe: error: {tmp_path}/missing/x.conllu: no such folder {tmp_path}/missing\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_an_unwritable_folder_is_one_line(tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        code, err = convert(capsys, str(FIXTURES / "special.conllu"), "-o", str(folder / "x.conllu"))
    finally:
        folder.chmod(0o700)
    assert code == 2 and err == f"nlpipe: error: {folder}/x.conllu: cannot write in folder {folder} (permission denied)\n"


def test_a_failed_run_leaves_the_old_file_and_no_temporary_file(tmp_path):
    out = tmp_path / "a.conllu"
    out.write_text("old\n")
    with pytest.raises(RuntimeError), open_output(str(out)) as f:
        f.write("new, partial")
        raise RuntimeError
    assert out.read_text() == "old\n" and os.listdir(tmp_path) == ["a.conllu"]


def test_per_file_output_that_would_be_the_input_itself(tmp_path):
    src = tmp_path / "f.conllu"
    src.write_bytes(DATA)
    with pytest.raises(NlpipeError, match="would be the input .* itself"):
        plan_outputs([str(src)], str(tmp_path))
    r = run_cli("annotate", "--stages", "tokenize", str(src), "-o", str(tmp_path))
    assert r.returncode == 2 and b"itself; choose another output folder" in r.stderr
    assert src.read_bytes() == DATA


def test_per_file_output_into_a_path_that_is_a_file(tmp_path):
    src = tmp_path / "f.conllu"
    src.write_bytes(DATA)
    with pytest.raises(NlpipeError, match="exists and is not a folder"):
        plan_outputs([str(src)], str(tmp_path / "f.conllu") + "/")
