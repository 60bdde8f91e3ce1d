"""The tree speaks of the project only (DEVELOPERS.md): no file numbers the periods of work that made it.

The search is DEVELOPERS.md's ``git grep``, over tracked and untracked files (``--untracked`` keeps
``--exclude-standard``: what ``.gitignore`` ignores, such as ``.venv``, is left out). The pattern is
joined at run time, so that this file does not match it.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

WORD = "ses" + "sion"
PATTERN = "|".join([rf"\b{WORD}s? [0-9]+", f"this {WORD}", f"next {WORD}"])


def history_hits(repo: Path) -> list:
    """The ``file:line:text`` lines of ``repo`` that match :data:`PATTERN`; skips the test where git or
    the repository's .git is absent (an sdist, an unpacked archive)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if not (repo / ".git").exists():
        pytest.skip(f"{repo} is not a git checkout (no .git)")
    r = subprocess.run(["git", "grep", "--untracked", "-n", "-i", "-E", PATTERN], cwd=repo,
                       capture_output=True, text=True, timeout=300)
    if r.returncode not in (0, 1):      # 1: nothing found
        pytest.skip(f"git grep failed here: {r.stderr.strip()[:300]}")
    return r.stdout.splitlines()


def test_no_file_numbers_periods_of_work():
    hits = history_hits(REPO)
    assert hits == [], (f"{len(hits)} lines speak of numbered periods of work; write the date (and commit) "
                        "instead (DEVELOPERS.md):\n" + "\n".join(hit[:200] for hit in hits))
