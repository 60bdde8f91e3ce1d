#!/usr/bin/env python3
"""Whole-command speed of the throughput issue's rows, with spaCy and an older nlpipe in the same run.

    python bench/throughput.py [--repeat 3] [--baseline REF] [--rows r1,r2] [--json]

Rows (each the best wall time of ``--repeat`` runs, start-up and model loading included):

- ``annotate-j1`` / ``annotate-j2``: ``nlpipe annotate`` on en_ewt test raw text x2, the default chain
  with SRL, ``--jobs 1`` / ``--jobs 2``;
- ``srl``: ``nlpipe srl --parse-from-input`` on en_ewt test x4 (gold tokens, tagged by ``nlpipe pos``,
  parsed by ``nlpipe parse``);
- ``parse``: ``nlpipe parse`` on the same x4, tagged;
- ``parse-1`` / ``annotate-1``: one sentence (its whole command against spaCy's load + one sentence).

Peers in the same run: spaCy's ``en_core_web_sm`` (full pipeline, ``n_process=1``, loading included)
when spaCy and that model are installed, and with ``--baseline REF`` nlpipe at git revision REF (a
temporary worktree of this repository, run with this Python). Tokens are the syntactic words of the
inputs; ratios are the other tool's time over nlpipe's (above 1: nlpipe is faster).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nlpipe.io.conllu import read_file  # noqa: E402
from nlpipe.runtime.evaluate import raw_text  # noqa: E402

CORPORA = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))
ONE = "The quick brown fox jumped over the lazy dog near the river bank."
ROWS = ("annotate-j1", "annotate-j2", "srl", "parse", "parse-1", "annotate-1")

SPACY = """
import sys, time
t = time.perf_counter()
import spacy
nlp = spacy.load("en_core_web_sm")
text = open(sys.argv[1], encoding="utf-8").read()
n = sum(len(doc) for doc in nlp.pipe(text.split("\\n\\n"), n_process=1))
print(n, time.perf_counter() - t)
"""


def wall(cmd: List[str], cwd: Path, repeat: int, env: Optional[Dict[str, str]] = None) -> float:
    """Best wall time of ``repeat`` runs of ``cmd`` (output thrown away; a failure ends the bench)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        elapsed = time.perf_counter() - t
        if r.returncode != 0:
            sys.exit(f"bench: failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr.decode()[-2000:]}")
        best = min(best, elapsed)
    return best


def inputs(tmp: Path) -> Dict[str, Any]:
    """The bench's input files and their word counts."""
    test = CORPORA / "en_ewt" / "en_ewt-ud-test.conllu"
    if not test.is_file():
        sys.exit(f"bench: {test} not found (set NLPIPE_CORPORA)")
    sents = list(read_file(str(test)))
    words = sum(len(s.words) for s in sents)
    files = {"raw2": tmp / "test-x2.txt", "tagged4": tmp / "test-x4.tagged.conllu",
             "parsed4": tmp / "test-x4.parsed.conllu", "one": tmp / "one.txt", "one_tagged": tmp / "one.conllu"}
    files["raw2"].write_text("\n\n".join([raw_text(sents)] * 2), encoding="utf-8")
    nlpipe = [sys.executable, "-m", "nlpipe.cli"]
    tagged = subprocess.run(nlpipe + ["pos", str(test)], cwd=REPO, capture_output=True, check=True).stdout
    files["tagged4"].write_bytes(tagged * 4)
    files["parsed4"].write_bytes(subprocess.run(nlpipe + ["parse", str(files["tagged4"])], cwd=REPO,
                                                capture_output=True, check=True).stdout)
    files["one"].write_text(ONE + "\n", encoding="utf-8")
    one = subprocess.run(nlpipe + ["annotate", "--stages", "tokenize,pos", str(files["one"])], cwd=REPO,
                         capture_output=True, check=True).stdout
    files["one_tagged"].write_bytes(one)
    return {"files": files, "words": {"raw2": 2 * words, "tagged4": 4 * words, "one": len(ONE.split()) + 1}}


def commands(files: Dict[str, Path]) -> Dict[str, List[str]]:
    return {"annotate-j1": ["annotate", str(files["raw2"]), "--jobs", "1", "-o", os.devnull],
            "annotate-j2": ["annotate", str(files["raw2"]), "--jobs", "2", "-o", os.devnull],
            "srl": ["srl", "--parse-from-input", str(files["parsed4"]), "-o", os.devnull],
            "parse": ["parse", str(files["tagged4"]), "-o", os.devnull],
            "parse-1": ["parse", str(files["one_tagged"]), "-o", os.devnull],
            "annotate-1": ["annotate", str(files["one"]), "-o", os.devnull]}


WORDS_OF = {"annotate-j1": "raw2", "annotate-j2": "raw2", "srl": "tagged4", "parse": "tagged4",
            "parse-1": "one", "annotate-1": "one"}


def spacy_times(files: Dict[str, Path], repeat: int) -> Optional[Dict[str, float]]:
    """spaCy sm's whole run on the x2 raw text and on one sentence (seconds), or None without it."""
    probe = subprocess.run([sys.executable, "-c", "import spacy; spacy.load('en_core_web_sm')"],
                           capture_output=True)
    if probe.returncode != 0:
        return None
    out = {}
    for key in ("raw2", "one"):
        out[key] = wall([sys.executable, "-c", SPACY, str(files[key])], REPO, repeat)
    return out


def baseline_tree(ref: str, tmp: Path) -> Path:
    path = tmp / "baseline"
    subprocess.run(["git", "worktree", "add", "--detach", str(path), ref], cwd=REPO, check=True,
                   capture_output=True)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs per row")
    ap.add_argument("--baseline", default=None, metavar="REF", help="also time nlpipe at this git revision")
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated rows to run")
    ap.add_argument("--json", action="store_true", help="print one JSON result")
    args = ap.parse_args()
    rows = [r for r in args.rows.split(",") if r]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        data = inputs(tmp)
        cmds = commands(data["files"])
        base = baseline_tree(args.baseline, tmp) if args.baseline else None
        result: Dict[str, Any] = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
                                  "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": []}
        try:
            spacy = spacy_times(data["files"], args.repeat)
            for row in rows:
                words = data["words"][WORDS_OF[row]]
                entry: Dict[str, Any] = {"row": row, "command": "nlpipe " + " ".join(cmds[row]).replace(tmp_name, "."),
                                         "seconds": wall([sys.executable, "-m", "nlpipe.cli"] + cmds[row], REPO,
                                                         args.repeat)}
                entry["words_per_s"] = words / entry["seconds"]
                if base is not None:
                    env = dict(os.environ, PYTHONPATH=str(base))
                    entry["baseline_seconds"] = wall([sys.executable, "-m", "nlpipe.cli"] + cmds[row], base,
                                                     args.repeat, env)
                    entry["vs_baseline"] = entry["baseline_seconds"] / entry["seconds"]
                if spacy is not None:
                    entry["spacy_seconds"] = spacy["one" if row.endswith("-1") else "raw2"]
                    if row.endswith("-1"):
                        entry["vs_spacy"] = entry["seconds"] / entry["spacy_seconds"]   # goal: at most ...
                    else:
                        spacy_rate = data["words"]["raw2"] / entry["spacy_seconds"]
                        entry["vs_spacy"] = entry["words_per_s"] / spacy_rate            # goal: at least ...
                result["rows"].append(entry)
        finally:
            if base is not None:
                subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=REPO, capture_output=True)
    result["spacy"] = "en_core_web_sm" if spacy is not None else "not installed (spaCy with en_core_web_sm)"
    if args.json:
        print(json.dumps(result))
        return
    print(f"machine: {result['machine']}; {result['date']}; spaCy: {result['spacy']}")
    for e in result["rows"]:
        extra = ""
        if "vs_baseline" in e:
            extra += f"  baseline {e['baseline_seconds']:6.2f} s (x{e['vs_baseline']:.2f})"
        if "vs_spacy" in e:
            extra += f"  spaCy {e['spacy_seconds']:6.2f} s ({e['vs_spacy']:.2f}x)"
        print(f"{e['row']:<12} {e['seconds']:7.2f} s {e['words_per_s']:9,.0f} words/s{extra}  $ {e['command']}")


if __name__ == "__main__":
    main()
