#!/usr/bin/env python3
"""Peak memory and time of `nlpipe tokenize` on one paragraph of N MB (one line), per method.

    python bench/huge_line.py [--mb 5] [--method trained --method rules]

The line repeats the words of data/sample.txt. Each run is a fresh `nlpipe tokenize` process; its peak
resident memory (ru_maxrss) is what it reports about itself at exit. Issue 26 asks for under 200 MB at 5 MB.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUN = ("import resource, runpy, sys\n"
       "sys.argv = ['nlpipe'] + sys.argv[1:]\n"
       "try:\n    runpy.run_module('nlpipe.cli', run_name='__main__')\n"
       "finally:\n    sys.stderr.write(f'maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=5.0)
    ap.add_argument("--method", action="append", choices=["trained", "rules"])
    args = ap.parse_args()
    words = (REPO / "data" / "sample.txt").read_text(encoding="utf-8").split()
    size = int(args.mb * 1_000_000)
    line = " ".join(words[i % len(words)] for i in range(size // 4))[:size]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    print(f"# {args.mb} MB in one line; {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "line.txt"
        src.write_text(line + "\n", encoding="utf-8")
        for method in args.method or ["trained", "rules"]:
            t = time.perf_counter()
            r = subprocess.run([sys.executable, "-c", RUN, "tokenize", "--method", method, str(src),
                                "-o", os.devnull], capture_output=True, text=True, env=env)
            seconds = time.perf_counter() - t
            rss = [int(x.split()[1]) for x in r.stderr.splitlines() if x.startswith("maxrss ")]
            peak = f"{rss[0] / 1024:.0f} MB" if rss else "?"
            status = "ok" if r.returncode == 0 else f"exit {r.returncode}: {r.stderr.splitlines()[0]}"
            print(f"{method:<8} peak {peak:>8}  {seconds:6.1f} s  {status}")


if __name__ == "__main__":
    main()
