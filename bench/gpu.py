#!/usr/bin/env python3
"""The throughput issue's GPU rows in one run, for a machine with a CUDA device (or ``--device cpu`` to try it).

    python bench/gpu.py [--copies 32] [--jobs 1,4,16] [--train parse,srl,ner] [--precision fp32,bf16]
                        [--limit 120] [--json FILE]

Rows, each a whole command, start-up and loading included:

- ``annotate``: ``nlpipe annotate --device D -j J`` on en_ewt test raw text x ``--copies``, for each J
  of ``--jobs`` (words/s);
- ``cuda-vs-cpu``: the share of HEAD, DEPREL and MISC cells that differ between the default chain on
  ``D`` and on the CPU, en_ewt test raw text once;
- ``memory``: one 2,000-word sentence and a 200,000-word chunk through the chain (``--batch`` large)
  without running out of memory;
- ``train-STAGE``, ``train-STAGE-bf16``: seconds of one epoch of ``nlpipe train STAGE --device D --epochs 1
  --precision P`` on the data of docs/training.md, for each P of ``--precision`` (the training log's epoch
  time, dev scoring included; ``seconds``: the whole command; ``dev``: the log's dev scores after it).

Any command running past ``--limit`` seconds is stopped and reported as such, so that one slow row
cannot use up a short lease on the machine. Corpora come from ``$NLPIPE_CORPORA`` (default
``../shared/corpora``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nlpipe.io.conllu import parse_string, read_file  # noqa: E402
from nlpipe.metrics import differing_cells  # noqa: E402
from nlpipe.runtime.evaluate import raw_text  # noqa: E402

CORPORA = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))
NLPIPE = [sys.executable, "-m", "nlpipe.cli"]
# a --train stage that is not a trainer's name: the command words it stands for
TRAINERS = {"pos-bilstm": ["pos", "--arch", "bilstm"]}
EPOCH = re.compile(r"epoch\s+1/\d+.*?\((\d+(?:\.\d+)?)s")   # the trainers' "epoch 1/N ... (12s, ...)"


def training_files(stage: str, tmp: Path, limit: float) -> List[Path]:
    """Train and dev files of ``stage`` as docs/training.md builds them (srl: PropBank joined with UD)."""
    ewt = CORPORA / "en_ewt"
    if stage == "ner":
        uner = CORPORA / "uner_en_ewt"
        return [next(uner.glob("draft_train_*/en_ewt-ud-train.iob2")), uner / "en_ewt-ud-dev.iob2"]
    if stage == "srl":
        out = []
        for part in ("train", "dev"):
            path = tmp / f"srl.{part}.conllu"
            run(NLPIPE + ["train", "srl-data", str(ewt / f"en_ewt-ud-{part}.conllu"),
                          str(CORPORA / "propbank_en_ewt" / f"en_ewt-pb-{part}.gold_conll"), "-o", str(path)], limit)
            out.append(path)
        return out
    return [ewt / "en_ewt-ud-train.conllu", ewt / "en_ewt-ud-dev.conllu"]


def run(cmd: List[str], limit: float, out: Optional[Path] = None) -> Dict[str, Any]:
    """Run ``cmd`` (stdout to ``out`` or thrown away); its wall seconds, exit code and whole stderr
    (only its tail is printed and saved)."""
    t = time.perf_counter()
    try:
        with open(out or os.devnull, "wb") as sink:
            r = subprocess.run(cmd, cwd=REPO, stdout=sink, stderr=subprocess.PIPE, timeout=limit)
        code, err = r.returncode, r.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        code, err = "timeout", (e.stderr or b"").decode(errors="replace")
    return {"seconds": round(time.perf_counter() - t, 2), "exit": code, "stderr": err}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--copies", type=int, default=32, help="copies of en_ewt test raw text for the annotate rows")
    ap.add_argument("--jobs", default="1,4,16", help="comma-separated --jobs of the annotate rows")
    ap.add_argument("--train", default="parse,srl,ner",
                    help="comma-separated stages whose epoch is timed (also tokenize, pos-bilstm; '' none)")
    ap.add_argument("--precision", default="fp32,bf16", help="comma-separated --precision of the training rows")
    ap.add_argument("--limit", type=float, default=120.0, help="seconds any one command may run")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the result as JSON")
    args = ap.parse_args()
    ewt = CORPORA / "en_ewt"
    test = ewt / "en_ewt-ud-test.conllu"
    if not test.is_file():
        sys.exit(f"bench: {test} not found (set NLPIPE_CORPORA)")
    sents = list(read_file(str(test)))
    words = sum(len(s.words) for s in sents)
    text = raw_text(sents)
    d = args.device
    result: Dict[str, Any] = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "device": d,
                              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": {}}
    rows = result["rows"]

    def record(name: str, r: Dict[str, Any]) -> None:
        """Keep row ``name``, print it and write the JSON so far: a run stopped from outside keeps
        the rows it finished."""
        r["stderr"] = r["stderr"][-600:]
        rows[name] = r
        shown = {k: v for k, v in r.items() if k != "stderr" and v is not None}
        print(f"{name:<14} {json.dumps(shown)}", flush=True)
        if r["exit"] != 0:
            print("   " + r["stderr"].strip().replace("\n", "\n   "), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        big, one = tmp / "big.txt", tmp / "one.txt"
        big.write_text("\n\n".join([text] * args.copies), encoding="utf-8")
        one.write_text(text, encoding="utf-8")
        for j in [int(x) for x in args.jobs.split(",") if x]:
            r = run(NLPIPE + ["annotate", str(big), "--device", d, "-j", str(j)], args.limit)
            r["words_per_s"] = round(words * args.copies / r["seconds"]) if r["exit"] == 0 else None
            record(f"annotate-j{j}", r)
        on_d, on_cpu = tmp / "d.conllu", tmp / "cpu.conllu"
        r = run(NLPIPE + ["annotate", str(one), "--device", d], args.limit, on_d)
        r_cpu = run(NLPIPE + ["annotate", str(one), "--device", "cpu"], args.limit, on_cpu)
        if r["exit"] == 0 and r_cpu["exit"] == 0:
            r["differing_cells"] = differing_cells(parse_string(on_d.read_text(encoding="utf-8")),
                                                   parse_string(on_cpu.read_text(encoding="utf-8")))
        record("cuda-vs-cpu", r)
        long = " ".join(("the cat saw a dog near the bank , and " * 200).split()[:2000]) + " .\n\n"
        mem = tmp / "mem.txt"
        mem.write_text(long + "\n\n".join([text] * 8), encoding="utf-8")    # about 200,000 words after it
        r = run(NLPIPE + ["annotate", str(mem), "--device", d, "--batch", "20000"], args.limit)
        r["out_of_memory"] = "out of memory" in r["stderr"].lower()
        record("memory", r)
        for stage in [s for s in args.train.split(",") if s]:
            data = training_files(stage, tmp, args.limit)
            for precision in [p for p in args.precision.split(",") if p]:
                cmd = NLPIPE + ["train", *TRAINERS.get(stage, [stage]), "--train", str(data[0]), "--dev", str(data[1]),
                                "--out", str(tmp / f"m-{stage}-{precision}"), "--device", d, "--epochs", "1",
                                "--precision", precision]
                r = run(cmd, args.limit)
                found = EPOCH.search(r["stderr"])
                r["epoch_seconds"] = float(found.group(1)) if found else None
                r["dev"] = found.group(0).split("dev ", 1)[-1].split("  (")[0] if found else None
                record(f"train-{stage}" + ("" if precision == "fp32" else f"-{precision}"), r)


if __name__ == "__main__":
    main()
