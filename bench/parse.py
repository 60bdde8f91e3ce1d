"""Benchmark of the biaffine parser on en_ewt test with predicted POS: accuracy, tree checks, speed.

    python bench/parse.py [--model M] [--tagged FILE] [--threads 2] [--json]

Steps, in one run: (1) tag the gold test file with the shipped POS tagger (``nlpipe pos``) unless
``--tagged`` gives such a file; (2) time the shell filter ``nlpipe parse < tagged > out`` (model
loading included) and the in-process stage (loading excluded) with Chu-Liu-Edmonds and with Eisner
(``--projective``); (3) score UAS/LAS UD-style against the gold trees and check that every output
tree is well-formed. Peers (UDPipe 1 via ``ufal.udpipe``, spaCy) are reported only when installed.
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

from nlpipe.conllu_io import HEAD, read_file  # noqa: E402
from nlpipe.evaluate import score, strip_stage  # noqa: E402


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
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    from nlpipe.stage import load_stage

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
    peers = {}
    for name, module in (("UDPipe 1", "ufal.udpipe"), ("spaCy", "spacy")):
        try:
            __import__(module)
            peers[name] = "installed, but no model trained on the same data is available to this script"
        except ImportError:
            peers[name] = "not installed"
    result["peers"] = peers
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"en_ewt test: {n_sent} sentences, {n_words} words; predicted UPOS {pos['upos']:.2f} "
              f"XPOS {pos['xpos']:.2f}; {args.threads} threads; {result['machine']}")
        for r in result["runs"]:
            print(f"  {r['name']:<45} UAS {r['uas']:6.2f}  LAS {r['las']:6.2f}  {r['sentences_per_s']:8.1f} sent/s "
                  f"{r['tokens_per_s']:8d} tok/s  not-trees {r['not_trees']}")
        for k, v in peers.items():
            print(f"  peer {k}: {v}")
    return result


if __name__ == "__main__":
    main()
