"""Installing nlpipe: every shipped model file goes into the package, with no setuptools warning."""
from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def shipped_files() -> set:
    return {p.relative_to(REPO).as_posix() for p in (REPO / "nlpipe" / "shipped").rglob("*") if p.is_file()}


def test_package_data_covers_every_shipped_file():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    patterns = [p.strip() for p in cfg["options.package_data"]["nlpipe"].split(",")]
    covered = {p.relative_to(REPO).as_posix() for pattern in patterns for p in (REPO / "nlpipe").glob(pattern)
               if p.is_file()}
    assert shipped_files() - covered == set()


@pytest.mark.slow
def test_build_has_every_shipped_file_and_no_ignored_package_warning(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "nlpipe", src / "nlpipe", ignore=shutil.ignore_patterns("__pycache__"))
    r = subprocess.run([sys.executable, "-c", "import setuptools; setuptools.setup()", "build_py"], cwd=src,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "would be ignored" not in r.stdout + r.stderr
    built = {p.relative_to(src / "build" / "lib").as_posix()
             for p in (src / "build" / "lib" / "nlpipe" / "shipped").rglob("*") if p.is_file()}
    assert built == shipped_files()
