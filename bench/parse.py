"""Benchmark of both parsers on en_ewt test with predicted POS: accuracy, tree checks, speed.

    python bench/parse.py [--model M] [--transition-model T] [--margins 0.5,1,2] [--checkpoints 12]
                          [--repeat 3] [--tagged FILE] [--threads 2] [--json]

Steps, in one run: (1) tag the gold test file with the shipped POS tagger (``nlpipe pos``) unless
``--tagged`` gives such a file; (2) biaffine: time the shell filter ``nlpipe parse < tagged > out``
(model loading included) and the in-process stage (loading excluded) with Chu-Liu-Edmonds and with
Eisner (``--projective``); (3) transition parser (the seed's Table 2.2): the full model (every
template) and dynamic feature selection at each margin, in process (with ``--full-model``, also a
model trained on the full score only, row ``full-std``), with LAS, UAS, mean templates
per action and speed-up over the full model, plus the whole shell filter ``nlpipe parse --parser
transition`` for the full model and each margin (transition timings: best of ``--repeat`` rounds that
interleave the settings; in process, each setting runs twice per round and the second run is timed);
(4) score UAS/LAS UD-style against the gold trees and check that every output tree is well-formed;
(5) peers trained on the same data by bench/peers.py (UDPipe 1, spaCy), run in process on the gold
tokens with their own tagging, with speed ratios against our in-process rows; a peer whose package
or model is missing is reported as skipped.
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

from nlpipe.io.conllu import HEAD, read_file  # noqa: E402
from nlpipe.runtime.evaluate import score, strip_stage  # noqa: E402
import peers as P  # noqa: E402  (bench/peers.py)
from timing import interleaved_best  # noqa: E402  (bench/timing.py)


def well_formed(sentences: List[Any]) -> int:
    """Number of sentences whose HEAD column is not a tree with exactly one root."""
    import numpy as np

    from nlpipe.decode.mst import is_tree

    bad = 0
    for s in sentences:
        heads = np.array([0] + [int(w[HEAD]) for w in s.words])
        bad += not is_tree(heads)
    return bad


def run_cli(args: List[str], stdin: Path, stdout: Path, threads: int) -> float:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    with open(stdin, "rb") as i, open(stdout, "wb") as o:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "nlpipe.cli", *args], stdin=i, stdout=o, check=True, env=env,
                       cwd=REPO)
        return time.perf_counter() - t


def main(argv: Any = None) -> Dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    corpora = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))
    ap.add_argument("--gold", default=str(corpora / "en_ewt" / "en_ewt-ud-test.conllu"))
    ap.add_argument("--tagged", default=None, help="gold test file re-tagged by the POS stage")
    ap.add_argument("--model", default=None, help="parser model (default: the shipped one)")
    ap.add_argument("--transition-model", default="parse-transition-ewt",
                    help="transition parser model ('none' skips the transition rows)")
    ap.add_argument("--margins", default="0.5,1,1.5,2,3", help="margins for dynamic feature selection")
    ap.add_argument("--checkpoints", default=None, help="margin-test schedule (default: the model's)")
    ap.add_argument("--full-model", default=None,
                    help="transition model trained on the full score only (--mode full): row full-std")
    ap.add_argument("--skip-biaffine", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="transition timings: best of this many runs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peers", default=str(P.PEERS), help="where bench/peers.py keeps the peer models")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    from nlpipe.registry import load_stage

    tmp = Path(tempfile.mkdtemp(prefix="bench-parse-"))
    gold = list(read_file(args.gold))
    tagged_path = Path(args.tagged) if args.tagged else tmp / "tagged.conllu"
    if not args.tagged:
        run_cli(["pos", args.gold], Path(os.devnull), tagged_path, args.threads)
    tagged = list(read_file(str(tagged_path)))
    n_sent, n_words = len(tagged), sum(len(s.words) for s in tagged)
    stripped = tmp / "input.conllu"
    with open(stripped, "w", encoding="utf-8") as f:
        f.write("".join(s.to_string() for s in strip_stage("parse", tagged)))
    pos = score("pos", gold, tagged)
    result: Dict[str, Any] = {"gold": args.gold, "sentences": n_sent, "words": n_words,
                              "upos": pos["upos"], "xpos": pos["xpos"], "threads": args.threads,
                              "machine": f"{platform.machine()}, {os.cpu_count()} cores visible",
                              "runs": []}
    if args.transition_model != "none":
        result["transition"] = transition_rows(args, gold, tagged, stripped, tmp)
    if not args.no_peers:
        result["peers"] = peer_rows(args, gold)
    if args.skip_biaffine:
        return report(args, result, n_sent, n_words, pos)
    model_args = ["--model", args.model] if args.model else []
    out = tmp / "cli.conllu"
    seconds = run_cli(["parse", *model_args], stripped, out, args.threads)
    cli_pred = list(read_file(str(out)))
    s = score("parse", gold, cli_pred)
    result["runs"].append({"name": "nlpipe parse < tagged (CLI, load included)", "seconds": round(seconds, 2),
                           "sentences_per_s": round(n_sent / seconds, 1), "tokens_per_s": round(n_words / seconds),
                           "uas": round(s["uas"], 2), "las": round(s["las"], 2),
                           "not_trees": well_formed(cli_pred)})
    for projective in (False, True):
        t0 = time.perf_counter()
        stage = load_stage("parse", args.model, projective=projective)
        load_s = time.perf_counter() - t0
        sents = strip_stage("parse", tagged)
        t1 = time.perf_counter()
        pred = list(stage.annotate(sents))
        secs = time.perf_counter() - t1
        s = score("parse", gold, pred)
        result["runs"].append({"name": f"in-process, {'Eisner (projective)' if projective else 'CLE'}",
                               "load_seconds": round(load_s, 2), "seconds": round(secs, 2),
                               "sentences_per_s": round(n_sent / secs, 1), "tokens_per_s": round(n_words / secs),
                               "uas": round(s["uas"], 2), "las": round(s["las"], 2),
                               "uas_nopunct": round(s["uas_nopunct"], 2), "las_nopunct": round(s["las_nopunct"], 2),
                               "not_trees": well_formed(pred)})
    return report(args, result, n_sent, n_words, pos)


def transition_rows(args: Any, gold: List[Any], tagged: List[Any], stripped: Path, tmp: Path) -> Dict[str, Any]:
    """Full model vs dynamic feature selection at each margin (in process), and the shell filter."""
    from nlpipe.registry import load_stage

    n_sent = len(tagged)
    margins: List[Any] = [None] + [float(m) for m in args.margins.split(",") if m.strip()]
    stages = [load_stage("parse", args.transition_model, margin=-1.0 if m is None else m, checkpoints=args.checkpoints)
              for m in margins]
    names = ["full" if m is None else f"margin {m:g}" for m in margins]
    row_margins = list(margins)
    if args.full_model:     # a model trained on the full score only (--mode full), every template
        stages.append(load_stage("parse", args.full_model, margin=-1.0))
        names.append("full-std")
        row_margins.append(None)
    def setup(stage: Any) -> Any:
        stage.templates_used = stage.actions = 0
        return strip_stage("parse", tagged)

    # CPU time too: with one thread it is steadier under load
    best, preds = interleaved_best([(lambda st=st: setup(st), lambda sents, st=st: list(st.annotate(sents)))
                                    for st in stages], args.repeat)
    rows: List[Dict[str, Any]] = []
    for name, margin, stage, pred, (sec, cs) in zip(names, row_margins, stages, preds, best):
        s = score("parse", gold, pred)
        rows.append({"name": name, "margin": margin,
                     "las": round(s["las"], 2), "uas": round(s["uas"], 2),
                     "mean_templates": round(stage.mean_templates, 2), "seconds": round(sec, 3),
                     "cpu_seconds": round(cs, 3),
                     "sentences_per_s": round(n_sent / sec, 1), "not_trees": well_formed(pred)})
    for r in rows:
        r["speedup"] = round(rows[0]["seconds"] / r["seconds"], 2)
        r["speedup_cpu"] = round(rows[0]["cpu_seconds"] / r["cpu_seconds"], 2)
    outs = [tmp / f"transition-{i}.conllu" for i in range(len(margins))]
    seconds = [float("inf")] * len(margins)
    for _ in range(args.repeat):
        for i, margin in enumerate(margins):
            extra = ["--margin", "-1" if margin is None else str(margin)]
            seconds[i] = min(seconds[i], run_cli(["parse", "--parser", "transition", "--model", args.transition_model,
                                                  *extra], stripped, outs[i], args.threads))
    cli = []
    for margin, sec, out in zip(margins, seconds, outs):
        pred = list(read_file(str(out)))
        s = score("parse", gold, pred)
        cli.append({"name": "full" if margin is None else f"margin {margin:g}", "seconds": round(sec, 3),
                    "sentences_per_s": round(n_sent / sec, 1), "las": round(s["las"], 2),
                    "not_trees": well_formed(pred)})
    return {"model": args.transition_model, "in_process": rows, "cli": cli}


def peer_rows(args: Any, gold: List[Any]) -> Dict[str, Any]:
    """Peers trained on en_ewt train (bench/peers.py) run in process on the gold tokens with their
    own tagging: UAS/LAS, UPOS/XPOS, speed (best of ``--repeat``, loading excluded), not-trees."""
    out: Dict[str, Any] = {}
    n_sent, n_words = len(gold), sum(len(s.words) for s in gold)
    for name, entry in P.available(Path(args.peers), parse=True).items():
        if "skipped" in entry:
            out[name] = entry
            continue
        run = P.runner(name, entry["path"], parse=True)
        best, preds = interleaved_best([(lambda: P.bare(gold), run)], args.repeat)
        (sec, cpu), pred = best[0], preds[0]
        s, t = score("parse", gold, pred), score("pos", gold, pred)
        out[name] = {"title": P.TITLES[name], "seconds": round(sec, 3), "cpu_seconds": round(cpu, 3),
                     "sentences_per_s": round(n_sent / sec, 1), "tokens_per_s": round(n_words / sec),
                     "uas": round(s["uas"], 2), "las": round(s["las"], 2), "upos": round(t["upos"], 2),
                     "xpos": round(t["xpos"], 2), "not_trees": well_formed(pred),
                     "train_seconds": entry["info"].get("seconds"), "version": entry["info"].get("version")}
    return out


def report(args: Any, result: Dict[str, Any], n_sent: int, n_words: int, pos: Dict[str, Any]) -> Dict[str, Any]:
    peers = result.get("peers", {})
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"en_ewt test: {n_sent} sentences, {n_words} words; predicted UPOS {pos['upos']:.2f} "
              f"XPOS {pos['xpos']:.2f}; {args.threads} threads; {result['machine']}")
        tr = result.get("transition")
        if tr:
            print(f"transition parser {tr['model']} (in process; speed-up over the full model):")
            print(f"  {'setting':<12} {'LAS':>6} {'UAS':>6} {'templates':>9} {'sent/s':>9} {'speed-up':>8} "
                  f"{'CPU s':>6} {'CPU speed-up':>12} not-trees")
            for r in tr["in_process"]:
                print(f"  {r['name']:<12} {r['las']:6.2f} {r['uas']:6.2f} {r['mean_templates']:9.2f} "
                      f"{r['sentences_per_s']:9.1f} {r['speedup']:7.2f}x {r['cpu_seconds']:6.3f} "
                      f"{r['speedup_cpu']:11.2f}x {r['not_trees']}")
            print("  whole command: nlpipe parse --parser transition [--margin m] < tagged (load included):")
            for r in tr["cli"]:
                print(f"  {r['name']:<12} LAS {r['las']:6.2f}  {r['seconds']:.2f} s  {r['sentences_per_s']:8.1f} sent/s  "
                      f"not-trees {r['not_trees']}")
        for r in result["runs"]:
            print(f"  {r['name']:<45} UAS {r['uas']:6.2f}  LAS {r['las']:6.2f}  {r['sentences_per_s']:8.1f} sent/s "
                  f"{r['tokens_per_s']:8d} tok/s  not-trees {r['not_trees']}")
        ours = {r["name"]: r["sentences_per_s"] for r in result["runs"]}
        tr = result.get("transition")
        base = [("biaffine in-process CLE", ours.get("in-process, CLE"))]
        if tr:
            base.append(("transition full", tr["in_process"][0]["sentences_per_s"]))
        for k, v in peers.items():
            if "skipped" in v:
                print(f"  peer {k}: {v['skipped']}")
                continue
            ratios = ", ".join(f"{v['sentences_per_s'] / b:.2f}x {n}" for n, b in base if b)
            trained = "" if v["train_seconds"] is None else f"; trained in {v['train_seconds']:.0f} s"
            print(f"  peer {v['title']} {v['version']} (own tags UPOS {v['upos']:.2f} XPOS {v['xpos']:.2f}{trained})"
                  f"  UAS {v['uas']:6.2f}  LAS {v['las']:6.2f}  {v['sentences_per_s']:8.1f} sent/s "
                  f"{v['tokens_per_s']:8d} tok/s  not-trees {v['not_trees']}  ({ratios})")
    return result


if __name__ == "__main__":
    main()
