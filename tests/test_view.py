"""``nlpipe view``: a self-contained HTML page drawing the parse, the entities and each predicate's roles."""
from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import run_cli

SVG = "{http://www.w3.org/2000/svg}"
ANNOTATED = (
    "# sent_id = s1\n# text = Mary saw a dog in Paris.\n"
    "1\tMary\tMary\tPROPN\tNNP\t_\t2\tnsubj\t_\tNE=B-PER|SRL=2:B-ARG0\n"
    "2\tsaw\tsee\tVERB\tVBD\t_\t0\troot\t_\tPred=see.01\n"
    "3\ta\ta\tDET\tDT\t_\t4\tdet\t_\tSRL=2:B-ARG1\n"
    "4\tdog\tdog\tNOUN\tNN\t_\t2\tobj\t_\tSRL=2:I-ARG1\n"
    "5\tin\tin\tADP\tIN\t_\t6\tcase\t_\tSRL=2:B-ARGM-LOC\n"
    "6\tParis\tParis\tPROPN\tNNP\t_\t2\tobl\t_\tSpaceAfter=No|NE=B-LOC|SRL=2:I-ARGM-LOC\n"
    "7\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_\n\n"
    "# sent_id = s2\n# text = Hi\n1\tHi\t_\t_\t_\t_\t_\t_\t_\t_\n\n")


def svgs(page: str):
    return [ET.fromstring(m) for m in re.findall(r"<svg .*?</svg>", page, re.S)]


def texts(svg) -> list:
    return [t.text for t in svg.iter(f"{SVG}text")]


def test_view_draws_arcs_entities_and_roles_in_a_page_that_needs_nothing_else(tmp_path):
    src = tmp_path / "a.conllu"
    src.write_text(ANNOTATED, encoding="utf-8")
    out = tmp_path / "a.html"
    r = run_cli("view", str(src), "--html", str(out))
    assert r.returncode == 0, r.stderr
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert not re.search(r"(src|href)=", page) and page.count("http") == page.count('xmlns="http://www.w3.org/2000/svg"')
    first, second = svgs(page)
    shown = texts(first)
    for word in ("Mary", "saw", "a", "dog", "in", "Paris", "."):
        assert word in shown
    for label in ("nsubj", "root", "det", "obj", "case", "obl", "punct", "PROPN", "VERB"):
        assert label in shown
    assert {"PER", "LOC"} <= set(shown) and {"see.01", "V", "ARG0", "ARG1", "ARGM-LOC"} <= set(shown)
    assert len(first.findall(f"{SVG}path[@class='arc']")) >= 7     # six arcs, the root's, the role brackets
    assert texts(second) == ["Hi"]
    assert "s1 Mary saw a dog in Paris." in page


def test_view_one_sentence_and_an_unknown_one(tmp_path):
    src = tmp_path / "a.conllu"
    src.write_text(ANNOTATED, encoding="utf-8")
    r = run_cli("view", str(src), "--sent", "s2")
    assert r.returncode == 0 and len(svgs(r.stdout.decode("utf-8"))) == 1
    r = run_cli("view", str(src), "--sent", "nope")
    assert r.returncode == 2 and b"no sentence with sent_id nope" in r.stderr


@pytest.mark.slow
def test_view_renders_in_headless_chromium(tmp_path):
    browser = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
    if browser is None:
        pytest.skip("no chromium to render the page (Debian: apt-get install chromium)")
    src = tmp_path / "a.conllu"
    src.write_text(ANNOTATED, encoding="utf-8")
    assert run_cli("view", str(src), "--html", str(tmp_path / "a.html")).returncode == 0
    png = tmp_path / "a.png"
    r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={png}",
                        "--window-size=900,400", (tmp_path / "a.html").as_uri()], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
