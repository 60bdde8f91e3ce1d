#!/usr/bin/env python3
"""End-to-end speed of `nlpipe annotate` on raw text, per-stage breakdown, --jobs, peak RSS.

    python bench/annotate.py [--jobs 1,2] [--repeat N] [--copies K] [--stages S1,S2] [--json]
    python bench/annotate.py --big [--size-gb 1.0] [--stages S1,S2]

Input: the raw text of en_ewt test (built with nlpipe.runtime.evaluate.raw_text from
${NLPIPE_CORPORA:-../shared/corpora}/en_ewt/en_ewt-ud-test.conllu) written to a temporary file.

Rows:
- ``annotate --jobs N``: the whole command as a user runs it (start-up and model loading included),
  best wall time of N repeats; tokens are the syntactic words of the output; peak RSS is the largest
  resident size of any one process of the run (main or worker).
- per stage: in one process, models already loaded, the time of each stage alone over the same
  sentences in chunks of 256 (tokenize: over the raw text), and its load time.
- spaCy's comparable pipeline (tokenizer, tagger, parser, NER) when spaCy and a model are installed.

``--big`` builds a ~1 GB CoNLL-U file in /tmp by repeating en_ewt train and reports the peak RSS of
`nlpipe annotate --stages <--stages, or every available stage except tokenize>` on it (the streaming check: it
must stay under 1 GB whatever the input size). It takes long: run it with `nice` on an idle machine.
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
from typing import Any, Dict, List

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nlpipe.io.conllu import parse_string, read_file  # noqa: E402
from nlpipe.runtime.evaluate import raw_text  # noqa: E402
from nlpipe.runtime.parallel import usable_cpus  # noqa: E402
from nlpipe.runtime.chain import available_stages  # noqa: E402
from nlpipe.runtime.chunks import CHUNK_SENTENCES  # noqa: E402
from nlpipe.registry import load_stage  # noqa: E402

CORPORA = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))

# Runs a command and prints its wall time and the peak RSS of its processes (children's rusage).
MEASURE = """
import json, resource, subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
wall = time.perf_counter() - t
print(json.dumps({"rc": r.returncode, "wall": wall,
                  "rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def measure(cmd: List[str]) -> Dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", MEASURE] + cmd, capture_output=True, text=True, cwd=REPO)
    result = json.loads(out.stdout)
    if result["rc"] != 0:
        sys.exit(f"bench: command failed ({result['rc']}): {' '.join(cmd)}\n{out.stderr}")
    return result


def nlpipe(*args: str) -> List[str]:
    return [sys.executable, "-m", "nlpipe.cli", *args]


def build_text(tmp: Path, copies: int) -> Path:
    test = CORPORA / "en_ewt" / "en_ewt-ud-test.conllu"
    if not test.is_file():
        sys.exit(f"bench: {test} not found (set NLPIPE_CORPORA)")
    path = tmp / "en_ewt-test.txt"
    path.write_text("\n\n".join([raw_text(read_file(str(test)))] * copies), encoding="utf-8")
    return path


def per_stage(text_path: Path, stages: List[str]) -> List[Dict[str, Any]]:
    """Each stage alone over the output of the stages before it, models loaded beforehand."""
    rows = []
    t = time.perf_counter()
    tokenizer = load_stage("tokenize")
    load = time.perf_counter() - t
    text = text_path.read_text(encoding="utf-8")
    t = time.perf_counter()
    sents = tokenizer.tokenize_text(text, str(text_path))
    seconds = time.perf_counter() - t
    words = sum(len(s.words) for s in sents)
    rows.append({"stage": "tokenize", "load_s": load, "seconds": seconds, "tokens_per_s": words / seconds})
    for stage in stages:
        if stage == "tokenize":
            continue
        t = time.perf_counter()
        annotator = load_stage(stage)
        load = time.perf_counter() - t
        t = time.perf_counter()
        for a in range(0, len(sents), CHUNK_SENTENCES):
            chunk = sents[a:a + CHUNK_SENTENCES]
            sents[a:a + CHUNK_SENTENCES] = list(annotator.annotate(chunk))
        seconds = time.perf_counter() - t
        rows.append({"stage": stage, "load_s": load, "seconds": seconds, "tokens_per_s": words / seconds})
    return rows


def spacy_row(text_path: Path) -> Dict[str, Any]:
    try:
        import spacy  # noqa: F401
    except ImportError:
        return {"skipped": "spaCy is not installed"}
    import spacy

    for name in ("en_core_web_sm", "en_core_web_md"):
        try:
            nlp = spacy.load(name)
            break
        except OSError:
            continue
    else:
        return {"skipped": "spaCy is installed but no English pipeline (en_core_web_sm) is"}
    paragraphs = text_path.read_text(encoding="utf-8").split("\n\n")
    t = time.perf_counter()
    tokens = sum(len(doc) for doc in nlp.pipe(paragraphs))
    seconds = time.perf_counter() - t
    return {"model": name, "seconds": seconds, "tokens_per_s": tokens / seconds}


def big(size_gb: float, stages: List[str]) -> None:
    train = CORPORA / "en_ewt" / "en_ewt-ud-train.conllu"
    if not train.is_file():
        sys.exit(f"bench: {train} not found (set NLPIPE_CORPORA)")
    stages = [s for s in stages or available_stages() if s != "tokenize"]
    if not stages:
        sys.exit("bench: no stage besides tokenize has a shipped model yet")
    path = Path(tempfile.gettempdir()) / "nlpipe-big.conllu"
    data = train.read_bytes()
    copies = max(1, int(size_gb * 1e9 / len(data) + 0.5))
    if not path.exists() or path.stat().st_size != copies * len(data):
        with open(path, "wb") as f:
            for _ in range(copies):
                f.write(data)
    print(f"input: {path}, {path.stat().st_size / 1e9:.2f} GB ({copies} x en_ewt train)", flush=True)
    cmd = ["nice", "-n", "10"] + nlpipe("annotate", "--stages", ",".join(stages), str(path), "-o", os.devnull)
    r = measure(cmd)
    words = 204577 * copies
    print(f"$ {' '.join(cmd[3:])}")
    print(f"stages {','.join(stages)}: {r['wall']:.0f} s, {words / r['wall']:,.0f} tokens/s, "
          f"peak RSS {r['rss_mb']:.0f} MB ({'under' if r['rss_mb'] < 1024 else 'OVER'} 1 GB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", default="1,2", help="comma-separated --jobs values to run")
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs per row")
    ap.add_argument("--stages", default=None, help="stages (default: every stage with a shipped model)")
    ap.add_argument("--copies", type=int, default=1, help="repeat the test text K times (less start-up share)")
    ap.add_argument("--json", action="store_true", help="print one JSON result")
    ap.add_argument("--big", action="store_true", help="the 1 GB peak-RSS check instead")
    ap.add_argument("--size-gb", type=float, default=1.0)
    args = ap.parse_args()
    if args.big:
        big(args.size_gb, args.stages.split(",") if args.stages else [])
        return
    stages = args.stages.split(",") if args.stages else available_stages()
    with tempfile.TemporaryDirectory() as tmp:
        text = build_text(Path(tmp), args.copies)
        out = Path(tmp) / "out.conllu"
        subprocess.run(nlpipe("annotate", "--stages", "tokenize", str(text), "-o", str(out)), check=True, cwd=REPO)
        sents = parse_string(out.read_text(encoding="utf-8"))
        words = sum(len(s.words) for s in sents)
        copies = f"{args.copies} x " if args.copies > 1 else ""
        result: Dict[str, Any] = {"input": f"{copies}en_ewt test raw text ({len(sents)} sentences, {words} tokens)",
                                  "machine": f"{platform.processor() or platform.machine()}, {usable_cpus()} usable cores",
                                  "stages": stages, "runs": []}
        for jobs in [int(j) for j in args.jobs.split(",")]:
            cmd = nlpipe("annotate", "--stages", ",".join(stages), "--jobs", str(jobs), str(text), "-o", os.devnull)
            best = min((measure(cmd) for _ in range(args.repeat)), key=lambda r: r["wall"])
            result["runs"].append({"jobs": jobs, "seconds": best["wall"], "tokens_per_s": words / best["wall"],
                                   "peak_rss_mb": best["rss_mb"],
                                   "command": " ".join(["nlpipe"] + cmd[3:]).replace(str(text), "TEST.txt")})
        result["per_stage"] = per_stage(text, stages)
        result["spacy"] = spacy_row(text)
    if args.json:
        print(json.dumps(result))
        return
    print(f"input: {result['input']}; machine: {result['machine']}")
    base = result["runs"][0]["seconds"]
    for r in result["runs"]:
        print(f"  {r['command']:<70} {r['seconds']:6.2f} s {r['tokens_per_s']:9,.0f} tokens/s "
              f"x{base / r['seconds']:.2f}  peak RSS {r['peak_rss_mb']:.0f} MB")
    print("  per stage (in process, models loaded):")
    for r in result["per_stage"]:
        print(f"    {r['stage']:<11} {r['seconds']:6.2f} s {r['tokens_per_s']:9,.0f} tokens/s  (load {r['load_s']:.2f} s)")
    sp = result["spacy"]
    print(f"  spaCy: {sp['skipped']}" if "skipped" in sp else
          f"  spaCy {sp['model']}: {sp['seconds']:.2f} s {sp['tokens_per_s']:,.0f} tokens/s")


if __name__ == "__main__":
    main()
