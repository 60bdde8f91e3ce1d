#!/usr/bin/env python3
"""The CoNLL 2018 shared task replayed: raw text in, every UD metric out, nlpipe against UDPipe 1.

For each treebank folder given (UD's file names: ``CODE-ud-{train,dev,test}.conllu``):

1. trains nlpipe's pipeline with the README's one command, ``nlpipe train pipeline --train T --dev D
   --lang L --out MODELS/CODE`` (``L``: the code before ``_``), and keeps its wall minutes; a folder
   trained before is reused (``--retrain`` trains it again);
2. trains UDPipe 1 (``ufal.udpipe``, its default options: tokenizer, tagger, parser) on the same train
   file with the dev file held out (``bench/peers.py``; kept under ``--peers``);
3. gives both the test file's raw text (the ``# text`` lines, a paragraph break at each ``# newpar`` /
   ``# newdoc``: :func:`nlpipe.io.raw_text.raw_text`), each as a whole command on one core, best wall
   time of ``--repeat`` rounds;
4. scores both with ``nlpipe eval ud`` (the CoNLL 2018 evaluation script's semantics), and prints one
   table per treebank: the 12 metrics (and CLAS) of nlpipe and UDPipe 1, nlpipe's lead, and the
   published figures of the shared task (UDPipe Future and the best system, from the corpus's
   ``conll18-results.tsv``, test sets), then training minutes and words/s of each; a last table sums
   up where nlpipe is behind.

The published rows are found by the treebank's UD name (``Vietnamese-VTB``), read from the corpus's
PROVENANCE.md table (``| vi_vtb | UD_Vietnamese-VTB | ...``), else from a name in the results file
whose part after ``-`` is the code's part after ``_`` when only one such name exists.

    python bench/conll18.py ../shared/corpora/ud22/*/ [--models bench/.conll18] [--peers bench/.peers/conll18]
                            [--retrain] [--no-udpipe] [--repeat 1] [--json results.json] [--set PART.OPTION=VALUE]
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from nlpipe.io.conllu import read_file  # noqa: E402
from nlpipe.io.raw_text import raw_text  # noqa: E402
from nlpipe.metrics import UD_METRICS as METRICS  # noqa: E402
import peers as P  # noqa: E402  (bench/peers.py)
import ud as U  # noqa: E402  (bench/ud.py)

PUBLISHED = {"UDPipe Future": "UDPipe Future", "BEST": "best"}
TRAINED = "bench-training.json"       # in each pipeline folder: the command and its wall minutes


BenchError = U.BenchError   # bad arguments or input: ``main`` prints it on one line and exits with status 2


def treebank_files(folder: Path) -> Dict[str, Path]:
    """{"train", "dev", "test"} -> the folder's ``*-ud-SPLIT.conllu`` files."""
    out = {}
    for split in ("train", "dev", "test"):
        found = sorted(folder.glob(f"*-ud-{split}.conllu"))
        if len(found) != 1:
            raise BenchError(f"{folder}: expected one *-ud-{split}.conllu file, found {len(found)}")
        out[split] = found[0]
    return out


def ud_name(folder: Path, code: str, results: List[Dict[str, str]]) -> Optional[str]:
    """The treebank's UD name (``Vietnamese-VTB``) as the results file writes it, or None."""
    provenance = folder.parent / "PROVENANCE.md"
    if provenance.is_file():
        m = re.search(rf"^\|\s*{re.escape(code)}\s*\|\s*UD_([^|\s]+)\s*\|", provenance.read_text(encoding="utf-8"),
                      re.M)
        if m:
            return m.group(1)
    suffix = code.split("_", 1)[-1].lower()
    names = {r["treebank"] for r in results if r["treebank"].split("-", 1)[-1].lower() == suffix}
    return names.pop() if len(names) == 1 else None


def published(results: List[Dict[str, str]], name: Optional[str]) -> Dict[str, Dict[str, float]]:
    """System key -> metric -> the published test figure (``PUBLISHED`` systems)."""
    out: Dict[str, Dict[str, float]] = {}
    for r in results:
        if r["treebank"] == name and r["system"] in PUBLISHED and r["split"] == "test":
            out.setdefault(r["system"], {})[r["metric"]] = float(r["value"])
    return out


def read_results(corpus: Path) -> List[Dict[str, str]]:
    path = corpus / "conll18-results.tsv"
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def train_nlpipe(files: Dict[str, Path], lang: str, out: Path, retrain: bool, sets: Sequence[str]) -> Dict[str, Any]:
    """Train (or reuse) the pipeline; its record: command, wall minutes, date."""
    record = out / TRAINED
    if record.is_file() and not retrain:
        return json.loads(record.read_text())
    cmd = [sys.executable, "-m", "nlpipe", "train", "pipeline", "--train", str(files["train"]), "--dev",
           str(files["dev"]), "--lang", lang, "--out", str(out)] + [x for s in sets for x in ("--set", s)]
    print(f"conll18: training nlpipe on {files['train'].name} -> {out}", file=sys.stderr, flush=True)
    t = time.perf_counter()
    r = subprocess.run(cmd, env=U._env(), stdout=subprocess.DEVNULL)
    if r.returncode != 0:
        raise BenchError(f"nlpipe train pipeline on {files['train']} failed (exit {r.returncode})")
    done = {"command": "nlpipe " + " ".join(cmd[3:]), "minutes": round((time.perf_counter() - t) / 60, 1),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    record.write_text(json.dumps(done, indent=1))
    return done


def run_treebank(folder: Path, a: argparse.Namespace, results: List[Dict[str, str]]) -> Dict[str, Any]:
    files = treebank_files(folder)
    code = files["test"].name[:-len("-ud-test.conllu")]
    lang = code.split("_", 1)[0]
    work = Path(a.work) / code
    work.mkdir(parents=True, exist_ok=True)
    gold = list(read_file(str(files["test"])))
    raw = work / "test.txt"
    raw.write_text(raw_text(gold) + "\n", encoding="utf-8")
    n_words = U.words(gold)

    out: Dict[str, Any] = {"treebank": code, "words": n_words, "scores": {}, "speed": {}, "training": {},
                           "skipped": {}}
    models = Path(a.models) / code
    out["training"]["nlpipe"] = train_nlpipe(files, lang, models, a.retrain, a.set)
    commands = {"nlpipe": [sys.executable, "-m", "nlpipe", "annotate", "--models", str(models), str(raw),
                           "-o", str(work / "nlpipe.conllu")]}
    if a.no_udpipe:
        out["skipped"]["udpipe"] = "--no-udpipe"
    elif not P.installed("ufal.udpipe"):
        out["skipped"]["udpipe"] = "ufal.udpipe is not installed (make bench-conll18 installs it)"
    else:
        peers = Path(a.peers)
        peers.mkdir(parents=True, exist_ok=True)
        model = P.train_udpipe(folder, peers, "", "", "", code)
        info = P._info(peers).get(P.udpipe_info_key(code), {})
        out["training"]["udpipe"] = {"minutes": round(info.get("seconds", 0) / 60, 1),
                                     "options": info.get("options"), "version": info.get("version")}
        commands["udpipe"] = U.udpipe_command(model, "raw", raw, work / "udpipe.conllu")
    times = U.timed_runs(commands, a.repeat)
    out["speed"] = U.speed_fields(times, n_words)
    for key in commands:
        out["scores"][key] = U.ud_eval(files["test"], work / f"{key}.conllu")
    name = ud_name(folder, code, results)
    out["ud_name"] = name
    out["scores"].update(published(results, name))
    return out


def _cell(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f}"


def table(r: Dict[str, Any]) -> str:
    s = r["scores"]
    keys = [k for k in ("nlpipe", "udpipe") if k in s] + [k for k in PUBLISHED if k in s]
    titles = {"nlpipe": "nlpipe", "udpipe": "UDPipe 1", **PUBLISHED}
    lead = "nlpipe" in s and "udpipe" in s
    head = ["Metric"] + [titles[k] for k in keys] + (["nlpipe - UDPipe 1"] if lead else [])
    lines = [f"### {r['treebank']} ({r.get('ud_name') or 'no published row'}), test, raw text, {r['words']:,} words",
             "", "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for m in METRICS:
        cells = [_cell(s[k].get(m)) for k in keys]
        if lead:
            cells.append(f"{s['nlpipe'][m] - s['udpipe'][m]:+.2f}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    extra = [""] if lead else []
    lines.append("| training minutes | " + " | ".join(
        [f"{r['training'][k]['minutes']:.1f}" if k in r["speed"] else "" for k in keys] + extra) + " |")
    lines.append("| words/s (one core, whole run) | " + " | ".join(
        [f"{r['speed'][k]['tokens_per_s']:,.0f}" if k in r["speed"] else "" for k in keys] + extra) + " |")
    for k, why in r["skipped"].items():
        lines.append(f"\n{titles[k]} not run: {why}")
    return "\n".join(lines)


def summary(runs: Sequence[Dict[str, Any]]) -> str:
    """Per treebank: the metrics where nlpipe is behind UDPipe 1, and LAS / MLAS against UDPipe Future."""
    lines = ["| treebank | behind UDPipe 1 (same run) | LAS vs UDPipe Future | MLAS vs UDPipe Future |",
             "|---|---|---:|---:|"]
    for r in runs:
        s = r["scores"]
        if "nlpipe" not in s:
            continue
        behind = ", ".join(f"{m} {s['nlpipe'][m] - s['udpipe'][m]:+.2f}" for m in METRICS
                           if "udpipe" in s and s["nlpipe"][m] < s["udpipe"][m]) if "udpipe" in s else "not run"
        fut = s.get("UDPipe Future", {})
        vs = [f"{s['nlpipe'][m] - fut[m]:+.2f}" if m in fut else "-" for m in ("LAS", "MLAS")]
        lines.append(f"| {r['treebank']} | {behind or 'none'} | {vs[0]} | {vs[1]} |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("treebanks", nargs="+", help="treebank folders (CODE-ud-{train,dev,test}.conllu in each)")
    ap.add_argument("--models", default=str(REPO / "bench" / ".conll18"), help="where the pipelines are trained")
    ap.add_argument("--peers", default=str(P.PEERS / "conll18"), help="where the UDPipe 1 models are kept")
    ap.add_argument("--work", default="/tmp/nlpipe-bench-conll18", help="inputs and outputs of the runs")
    ap.add_argument("--retrain", action="store_true", help="train the nlpipe pipelines again")
    ap.add_argument("--no-udpipe", action="store_true", help="leave UDPipe 1 out")
    ap.add_argument("--set", action="append", default=[], metavar="PART.OPTION=VALUE",
                    help="passed to nlpipe train pipeline (repeatable)")
    ap.add_argument("--repeat", type=int, default=1, help="timed rounds of each annotation (best kept)")
    ap.add_argument("--json", help="write the results here too")
    return ap


def main(argv: Optional[List[str]] = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        folders = [Path(t) for t in a.treebanks]
        for f in folders:
            if not f.is_dir():
                raise BenchError(f"{f}: not a folder")
        results = read_results(folders[0].parent)
        runs = []
        for f in folders:
            runs.append(run_treebank(f, a, results))
            print(table(runs[-1]) + "\n", flush=True)
    except BenchError as e:
        print(f"bench/conll18.py: {e}", file=sys.stderr)
        return 2
    commit = U._git_commit()
    print(f"Where nlpipe is behind, at {commit}:\n\n{summary(runs)}\n")
    print(f"{platform.machine()}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f} at the end, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    if a.json:
        Path(a.json).write_text(json.dumps({"commit": commit, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
