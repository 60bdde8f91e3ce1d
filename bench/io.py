#!/usr/bin/env python3
"""Pass-through speed of the CoNLL-U reader+writer on one core, with peers in the same run.

    python bench/io.py [FILE] [--repeat N]

FILE defaults to en_ewt train from ${NLPIPE_CORPORA:-../shared/corpora}. Rows: nlpipe read+write
(library), `nlpipe convert` as a whole command (start-up included), plain str.split (read lines, split
columns, join, write: the floor of any Python reader) and conllu.parse_incr + serialize. Speed is
syntactic words per second (best of N runs) and its ratio to nlpipe's.
"""
from __future__ import annotations

import argparse
import io
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nlpipe.io.conllu import read_conllu, write_conllu  # noqa: E402
from nlpipe.io.inputs import open_input  # noqa: E402


def nlpipe_pass(path: str) -> None:
    stream, name = open_input(path)
    with stream, open(os.devnull, "w", encoding="utf-8", newline="\n") as out:
        write_conllu(read_conllu(stream, name), out)


def split_pass(path: str) -> None:
    with open(path, encoding="utf-8", newline="\n") as f, open(os.devnull, "w", encoding="utf-8") as out:
        for line in f:
            out.write("\t".join(line.split("\t")))


def conllu_pass(path: str) -> None:
    import conllu

    with open(path, encoding="utf-8") as f, open(os.devnull, "w", encoding="utf-8") as out:
        for sent in conllu.parse_incr(f):
            out.write(sent.serialize())


def cli_pass(path: str) -> None:
    with open(path, "rb") as f:
        subprocess.run([sys.executable, "-m", "nlpipe.cli", "convert"], stdin=f, stdout=subprocess.DEVNULL,
                       check=True, cwd=REPO)


def best(fn, path: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(path)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    corpora = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", nargs="?", default=str(corpora / "en_ewt" / "en_ewt-ud-train.conllu"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not Path(args.file).is_file():
        sys.exit(f"bench/io.py: {args.file} not found (set NLPIPE_CORPORA or give a file)")
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, children included
    with open(args.file, encoding="utf-8") as f:
        words = sum(1 for line in f if line[:1].isdigit() and line.split("\t", 1)[0].isdigit())
    rows = [("nlpipe read+write (library)", nlpipe_pass), ("nlpipe convert (whole command)", cli_pass),
            ("str.split + join", split_pass)]
    try:
        import conllu  # noqa: F401

        rows.append(("conllu.parse_incr + serialize", conllu_pass))
    except ImportError:
        pass
    print(f"# {args.file}: {words} words; 1 core of {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}; best of {args.repeat}")
    print(f"| reader | words/s | ratio to nlpipe |\n|---|---|---|")
    base = None
    for name, fn in rows:
        rate = words / best(fn, args.file, args.repeat)
        base = base or rate
        print(f"| {name} | {rate:,.0f} | {rate / base:.2f} |")


if __name__ == "__main__":
    main()
