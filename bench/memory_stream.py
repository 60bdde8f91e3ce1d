#!/usr/bin/env python3
"""Peak memory of `nlpipe tokenize --method rules` on a text without blank lines and of `nlpipe eval ud`
on two CoNLL-U files, as the input grows (issue 34: under 300 MB each at 50 MB).

    python bench/memory_stream.py [--mb 5,50] [--only tokenize|eval] [--keep DIR] [--tree DIR ...]

Inputs, written to a temporary folder (never committed) from
${NLPIPE_CORPORA:-../shared/corpora}/en_ewt/en_ewt-ud-train.conllu:

- text: en_ewt train's raw text (``nlpipe.io.raw_text.raw_text``), one line per paragraph and no blank
  line, repeated up to ``--mb`` MB: the tokenizer sees one paragraph of that size;
- gold: en_ewt train repeated up to ``--mb`` MB, each copy's sent_ids suffixed with its number;
- system: the gold file perturbed so that every scorer path runs (:func:`perturb`): sentences joined,
  tokens split in two, multiword tokens dissolved into their words, tags and heads changed, the
  empty nodes dropped. The text stays the same, so the scorer aligns the two files.

Each run is a fresh process (`python -m nlpipe ...`); its peak is the largest resident size it reached
(ru_maxrss of the child). ``--tree DIR`` runs the commands with nlpipe from another source tree as well
(``git archive COMMIT nlpipe | tar -x -C DIR``: an older nlpipe on the same inputs, in the same run).
Not a test: run it with `nice` on a quiet machine; the numbers go to BENCHMARKS.md. Without the corpus
it says so and exits 0.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nlpipe.io.conllu import DEPREL, DEPS, HEAD, FORM, ID, MISC, UPOS, Sentence, read_file  # noqa: E402
from nlpipe.io.raw_text import raw_text  # noqa: E402
from memory import peak  # noqa: E402  (bench/memory.py: this script's folder is on sys.path)

CORPORA = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))

def _renumber(rows: List[List[str]]) -> List[List[str]]:
    """Rows whose word IDs may have gaps or repeats (after edits) numbered 1..n again, heads and ranges
    following their words; DEPS is dropped (it would need the same care)."""
    new: Dict[str, int] = {"0": 0}
    n = 0
    for r in rows:
        if r[ID].isdigit():
            n += 1
            new[r[ID]] = n
    out = []
    n = 0
    for r in rows:
        r = list(r)
        if r[ID].isdigit():
            n += 1
            r[ID] = str(n)
            r[HEAD] = str(new.get(r[HEAD], 0)) if r[HEAD] != "_" else "_"
        else:
            a, b = r[ID].split("-")
            r[ID] = f"{new[a]}-{new[b]}"
        r[DEPS] = "_"
        out.append(r)
    return out


def perturb(sents: List[Sentence]) -> List[Sentence]:
    """A system file for ``sents`` with the same text and different tokens, sentences and values."""
    out: List[Sentence] = []
    for k, s in enumerate(sents):
        rows = [list(r) for r in s.rows if "." not in r[ID]]
        comments = [c for c in s.comments if not c.startswith("# text")]
        if k % 7 == 3 and out and out[-1].rows:     # joined to the sentence before
            prev = out[-1]
            off = sum(r[ID].isdigit() for r in prev.rows)
            for r in rows:
                if r[ID].isdigit():
                    r[ID] = str(int(r[ID]) + off)
                    if r[HEAD] not in ("_", "0"):
                        r[HEAD] = str(int(r[HEAD]) + off)
                else:
                    a, b = r[ID].split("-")
                    r[ID] = f"{int(a) + off}-{int(b) + off}"
            prev.rows.extend(rows)
            continue
        if k % 5 == 1:      # multiword tokens whose words spell the token become plain tokens
            keep = []
            for i, r in enumerate(rows):
                if "-" in r[ID]:
                    a, b = (int(x) for x in r[ID].split("-"))
                    words = [w for w in rows if w[ID].isdigit() and a <= int(w[ID]) <= b]
                    if "".join(w[FORM] for w in words) == r[FORM]:
                        continue
                keep.append(r)
            rows = keep
        if k % 5 == 2:      # a token of four characters or more split in two (not inside a multiword token)
            inside = {str(i) for r in rows if "-" in r[ID]
                      for i in range(int(r[ID].split("-")[0]), int(r[ID].split("-")[1]) + 1)}
            for i, r in enumerate(rows):
                if r[ID].isdigit() and r[ID] not in inside and len(r[FORM]) >= 4:
                    second = list(r)
                    second[FORM] = r[FORM][2:]
                    second[HEAD] = r[ID]
                    second[DEPREL] = "goeswith"
                    r[FORM] = r[FORM][:2]
                    r[MISC] = "SpaceAfter=No"
                    second[ID] = str(10 ** 6 + int(r[ID]))     # a placeholder: _renumber numbers in order
                    rows.insert(i + 1, second)
                    break
        for j, r in enumerate(rows):
            if r[ID].isdigit() and j % 13 == 5:
                r[UPOS] = "X" if r[UPOS] != "X" else "NOUN"
            if r[ID].isdigit() and j % 17 == 6 and r[HEAD] not in ("_", "0"):
                r[HEAD] = "1" if r[HEAD] != "1" else "2"
        out.append(Sentence(comments, rows))
    for s in out:
        s.rows[:] = _renumber(s.rows)
    return out


def build(folder: Path, mb: float) -> Dict[str, Path]:
    """The three inputs of ``mb`` MB each (see the module docstring) in ``folder``."""
    size = int(mb * 1_000_000)
    train = list(read_file(str(CORPORA / "en_ewt" / "en_ewt-ud-train.conllu")))
    paths = {"text": folder / "text.txt", "gold": folder / "gold.conllu", "system": folder / "system.conllu"}
    text = "\n".join(p.replace("\n", " ") for p in raw_text(train).split("\n\n")) + "\n"
    with open(paths["text"], "w", encoding="utf-8", newline="\n") as f:
        for _ in range(-(-size // len(text.encode("utf-8")))):
            f.write(text)
    system = perturb(train)
    written = 0
    copy = 0
    with open(paths["gold"], "w", encoding="utf-8", newline="\n") as g, \
            open(paths["system"], "w", encoding="utf-8", newline="\n") as s:
        while written < size:
            copy += 1
            for sents, out in ((train, g), (system, s)):
                for sent in sents:
                    c = Sentence([f"{x}-{copy}" if x.startswith("# sent_id") else x for x in sent.comments],
                                 sent.rows)
                    out.write(c.to_string())
            written = g.tell()
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", default="5,50", help="Input sizes in MB, comma-separated.")
    ap.add_argument("--only", choices=["tokenize", "eval"], default=None)
    ap.add_argument("--keep", default=None, metavar="DIR", help="Write the inputs to DIR and keep them.")
    ap.add_argument("--tree", action="append", default=[], metavar="DIR",
                    help="Also run the commands with nlpipe from DIR (a folder holding an nlpipe/ package).")
    args = ap.parse_args()
    if not (CORPORA / "en_ewt" / "en_ewt-ud-train.conllu").exists():
        print(f"skipped: {CORPORA}/en_ewt/en_ewt-ud-train.conllu is absent (set NLPIPE_CORPORA)")
        return
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=REPO).stdout.strip()
    print(f"# python bench/memory_stream.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"# {datetime.date.today()}  commit {commit}  {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, python {platform.python_version()}")
    trees = [REPO] + [Path(t).resolve() for t in args.tree]
    print(f"{'command':<58} {'input MB':>9} {'peak MB':>8} {'seconds':>8}  nlpipe from")
    with tempfile.TemporaryDirectory() as tmp:
        for mb in [float(x) for x in args.mb.split(",")]:
            folder = Path(args.keep) if args.keep else Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            paths = build(folder, mb)
            runs = []
            if args.only in (None, "tokenize"):
                runs.append((["tokenize", "--method", "rules", str(paths["text"]), "-o", os.devnull], paths["text"]))
            if args.only in (None, "eval"):
                runs.append((["eval", "ud", "-g", str(paths["gold"]), "-p", str(paths["system"])], paths["gold"]))
            for cmd, src in runs:
                for tree in trees:
                    r = peak([sys.executable, "-m", "nlpipe"] + cmd, tree)
                    shown = "nlpipe " + " ".join(Path(c).name if c.startswith(str(folder)) else c for c in cmd)
                    status = "" if r["rc"] == 0 else f"  exit {r['rc']}: {r['err'].strip().splitlines()[-1:]}"
                    print(f"{shown:<58} {src.stat().st_size / 1e6:>9.1f} {r['rss_mb']:>8.0f} "
                          f"{r['seconds']:>8.1f}  {'this tree' if tree == REPO else tree}{status}", flush=True)


if __name__ == "__main__":
    main()
