#!/usr/bin/env python3
"""Peak memory of `nlpipe annotate` as the input grows, and of `nlpipe tokenize` on one huge line.

    python bench/memory.py [--copies 1,4,8] [--stages S1,S2] [--lines 1,5]

Input: the raw text of en_ewt dev (``nlpipe.io.raw_text.raw_text`` of
${NLPIPE_CORPORA:-../shared/corpora}/en_ewt/en_ewt-ud-dev.conllu: paragraphs separated by a blank
line) repeated K times. Each run is a fresh process (`python -m nlpipe annotate FILE -o /dev/null`);
its peak is the largest resident size it reached (ru_maxrss). Issue 26 asks the peak on 16 copies to be
within 5% of one copy's; the huge lines (``--lines``, in MB) are measured by bench/huge_line.py (under
200 MB at 5 MB). Not a test: run it with `nice` on a quiet machine; the numbers go to BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nlpipe.io.conllu import read_file  # noqa: E402
from nlpipe.io.raw_text import raw_text  # noqa: E402

CORPORA = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))

# Runs a command, reports its exit status and the peak resident size of its process (children's rusage).
MEASURE = """
import json, resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
print(json.dumps({"rc": r.returncode, "err": r.stderr[-300:],
                  "rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def peak(cmd: list, tree: Path = REPO) -> dict:
    """``{"rc", "err", "rss_mb", "seconds"}`` of one run of ``cmd`` in a fresh process, nlpipe from ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", MEASURE] + cmd, capture_output=True, text=True, env=env, cwd=tree)
    result = json.loads(out.stdout)
    result["seconds"] = time.perf_counter() - t
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--copies", default="1,4,8", help="Copies of en_ewt dev raw text, comma-separated.")
    ap.add_argument("--stages", default=None, help="annotate --stages (default: the whole default chain).")
    ap.add_argument("--lines", default="1,5", help="Sizes in MB of one-line inputs for bench/huge_line.py "
                    "(empty: none).")
    args = ap.parse_args()
    import torch

    print(f"# python bench/memory.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"# {datetime.date.today()}  {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, torch {torch.__version__}, "
          f"ONEDNN_PRIMITIVE_CACHE_CAPACITY={os.environ.get('ONEDNN_PRIMITIVE_CACHE_CAPACITY', '(nlpipe default)')}")
    text = raw_text(read_file(str(CORPORA / "en_ewt" / "en_ewt-ud-dev.conllu")))
    stages = ["--stages", args.stages] if args.stages else []
    first = None
    print(f"{'copies':>6} {'input MB':>9} {'peak MB':>8} {'vs 1':>7} {'seconds':>8}")
    with tempfile.TemporaryDirectory() as d:
        for k in [int(c) for c in args.copies.split(",")]:
            src = Path(d) / f"dev{k}.txt"
            src.write_text("\n\n".join([text] * k) + "\n", encoding="utf-8")
            r = peak([sys.executable, "-m", "nlpipe", "annotate", str(src), "-o", os.devnull] + stages)
            if r["rc"] != 0:
                print(f"{k:>6} exit {r['rc']}: {r['err'].strip().splitlines()[-1:]}")
                continue
            first = first or r["rss_mb"]
            print(f"{k:>6} {src.stat().st_size / 1e6:>9.2f} {r['rss_mb']:>8.0f} "
                  f"{100 * (r['rss_mb'] / first - 1):>+6.1f}% {r['seconds']:>8.1f}", flush=True)
    for mb in [m for m in args.lines.split(",") if m]:
        subprocess.run([sys.executable, str(REPO / "bench" / "huge_line.py"), "--mb", mb], check=False)


if __name__ == "__main__":
    main()
