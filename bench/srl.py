"""Benchmark of LISA SRL on EWT test in the layout of Strubell (2019) Table 4.1 (+ 4.8, 4.10, speed).

    python bench/srl.py [--lisa M] [--sa M_SA] [--split test] [--threads 2] [--json]

Steps, in one run: (1) join en_ewt test with the PropBank EWT spans (annotated documents only,
:mod:`nlpipe.train.srl_data`); (2) re-tag it with the shipped POS tagger and re-parse it with the shipped
biaffine parser (``nlpipe pos | nlpipe parse``); (3) score SRL (srl-eval.pl semantics, via
:func:`nlpipe.runtime.evaluate.score`) for SA, LISA with its own parse, LISA with the injected biaffine parse
(``--parse-from-input``) and LISA with the gold parse, each with predicted and with gold predicates;
predicate P/R/F1 of both models; greedy (argmax + BIO repair) vs Viterbi decoding; (4) time the shell
filter ``nlpipe srl < en_ewt test > out`` (model loading included) and the in-process stage.
"""
from __future__ import annotations

import sys
from pathlib import Path


import argparse
import json
import os
import platform
import subprocess
import tempfile
import time
from typing import Any, Dict, List, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nlpipe.io.conllu import read_conllu, read_file  # noqa: E402
from nlpipe.io.inputs import open_input  # noqa: E402
from nlpipe.io.formats import read_conll2012  # noqa: E402
from nlpipe.tags import is_valid  # noqa: E402
from nlpipe.runtime.evaluate import score, strip_stage  # noqa: E402
from nlpipe.io.misc import srl_tags  # noqa: E402
from nlpipe.train.srl_data import join_propbank  # noqa: E402
from nlpipe.registry import load_stage  # noqa: E402


def gold_file(corpora: Path, split: str) -> List[Any]:
    """en_ewt ``split`` with PropBank frames in MISC (annotated documents only)."""
    stream, name = open_input(str(corpora / "propbank_en_ewt" / f"en_ewt-pb-{split}.gold_conll"))
    with stream:
        props = list(read_conll2012(stream, name))
    stream, name = open_input(str(corpora / "en_ewt" / f"en_ewt-ud-{split}.conllu"))
    with stream:
        return list(join_propbank(read_conllu(stream, name), props))


def reparse(gold: List[Any]) -> List[Any]:
    """Gold sentences with UPOS/XPOS from the shipped tagger and HEAD/DEPREL from the shipped parser."""
    sents = strip_stage("parse", strip_stage("pos", gold))
    sents = list(load_stage("pos").annotate(sents))
    return list(load_stage("parse").annotate(sents))


def srl_run(model: str, inp: List[Any], gold: List[Any], gold_predicates: bool, **options: Any) -> Dict[str, Any]:
    """Scores (and BIO validity) of one model on ``inp`` (gold or re-parsed sentences)."""
    stage = load_stage("srl", model, predicates_from_input=gold_predicates, **options)
    t = time.perf_counter()
    out = list(stage.annotate(strip_stage("srl", inp, gold_predicates)))
    seconds = time.perf_counter() - t
    r = score("srl", gold, out)
    invalid = sum(not is_valid(tags) for s in out for tags in srl_tags(s).values())
    return {"precision": r["precision"], "recall": r["recall"], "f1": r["f1"], "predicates": r["predicates"],
            "invalid_bio": invalid, "seconds": seconds}


def run_cli(args: List[str], stdin: str, stdout: str, threads: int) -> Tuple[float, float]:
    """Wall and CPU seconds (user + system, all threads) of one ``nlpipe`` command."""
    import resource

    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(stdin, "rb") as i, open(stdout, "wb") as o:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "nlpipe.cli", *args], stdin=i, stdout=o, check=True, env=env,
                       cwd=REPO)
        wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: Any = None) -> Dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    corpora = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))
    ap.add_argument("--corpora", default=str(corpora))
    ap.add_argument("--split", default="test", choices=["dev", "test"])
    ap.add_argument("--lisa", default="srl-lisa-ewt", help="LISA model (default: the shipped one)")
    ap.add_argument("--sa", default=None, help="SA baseline model (nlpipe train srl --no-syntax); "
                                              "without it the SA rows are left out")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None, help="score only the first N sentences (a quick check)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    gold = gold_file(Path(args.corpora), args.split)[:args.limit]
    parsed = reparse(gold)
    rows = [("SA", args.sa, gold, {}), ("LISA", args.lisa, gold, {}),
            ("  +biaffine parse", args.lisa, parsed, {"parse_from_input": True}),
            ("  +gold parse", args.lisa, gold, {"parse_from_input": True})][args.sa is None:]
    result: Dict[str, Any] = {"split": args.split, "sentences": len(gold), "rows": {}, "decoding": {}}
    for name, model, inp, opts in rows:
        result["rows"][name.strip()] = {
            "predicted": srl_run(model, inp, gold, False, **opts),
            "gold": srl_run(model, inp, gold, True, **opts)}
    for name, model in (("SA", args.sa), ("LISA", args.lisa))[args.sa is None:]:
        result["decoding"][name] = {
            "greedy": srl_run(model, gold, gold, True, viterbi=False)["f1"],
            "viterbi": result["rows"][name]["gold"]["f1"]}
    # speed: the shell filter on the whole en_ewt test file (model loading included), and in process
    ud = Path(args.corpora) / "en_ewt" / f"en_ewt-ud-{args.split}.conllu"
    sents = strip_stage("srl", list(read_file(str(ud))))[:args.limit]
    n_ud = len(sents)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.conllu")
        with open(src, "w", encoding="utf-8") as f:
            f.writelines(s.to_string() for s in sents)
        wall, cpu = run_cli(["srl", "--model", args.lisa], src, os.path.join(tmp, "out.conllu"), args.threads)
    stage = load_stage("srl", args.lisa)
    t, c = time.perf_counter(), time.process_time()
    list(stage.annotate(sents))
    inproc, inproc_cpu = time.perf_counter() - t, time.process_time() - c
    # the machine is shared: CPU seconds say what the command costs, whatever else runs
    result["speed"] = {"file": str(ud), "sentences": n_ud, "cli_seconds": wall, "cli_cpu_seconds": cpu,
                       "cli_sentences_per_s": n_ud / wall, "cli_sentences_per_cpu_s": n_ud / cpu,
                       "stage_sentences_per_s": n_ud / inproc, "stage_sentences_per_cpu_s": n_ud / inproc_cpu,
                       "threads": args.threads, "load_average": os.getloadavg()[0],
                       "machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(table(result))
    return result


def table(r: Dict[str, Any]) -> str:
    """Table 4.1 layout: rows = models, column groups = predicted / gold predicates."""
    lines = [f"SRL on EWT {r['split']} ({r['sentences']} annotated sentences), srl-eval.pl semantics",
             f"{'':<18} {'predicted predicates':^22}   {'gold predicates':^22}",
             f"{'':<18} {'P':>6} {'R':>6} {'F1':>7}   {'P':>6} {'R':>6} {'F1':>7}"]
    for name, row in r["rows"].items():
        label = name if name in ("SA", "LISA") else "  " + name
        p, g = row["predicted"], row["gold"]
        lines.append(f"{label:<18} {p['precision']:6.2f} {p['recall']:6.2f} {p['f1']:7.2f}   "
                     f"{g['precision']:6.2f} {g['recall']:6.2f} {g['f1']:7.2f}")
    bad = sum(row[k]["invalid_bio"] for row in r["rows"].values() for k in ("predicted", "gold"))
    lines += ["", f"invalid BIO sequences in all outputs: {bad}", "",
              "Predicate detection (Table 4.8)", f"{'':<18} {'P':>6} {'R':>6} {'F1':>7}"]
    for name in [n for n in ("SA", "LISA") if n in r["rows"]]:
        p = r["rows"][name]["predicted"]["predicates"]
        lines.append(f"{name:<18} {p['precision']:6.2f} {p['recall']:6.2f} {p['f1']:7.2f}")
    lines += ["", "Decoding, gold predicates (Table 4.10)", f"{'':<18} {'greedy':>7} {'Viterbi':>8}"]
    for name, d in r["decoding"].items():
        lines.append(f"{name:<18} {d['greedy']:7.2f} {d['viterbi']:8.2f}")
    s = r["speed"]
    lines += ["", f"speed: nlpipe srl < {Path(s['file']).name} ({s['sentences']} sentences), {s['threads']} threads, "
                  f"{s['machine']}, load average {s['load_average']:.1f}:",
              f"  whole command (loading included): {s['cli_sentences_per_s']:.0f} sentences/s wall "
              f"({s['cli_seconds']:.1f} s), {s['cli_sentences_per_cpu_s']:.0f} sentences per CPU second "
              f"({s['cli_cpu_seconds']:.1f} CPU s)",
              f"  in process (loading excluded): {s['stage_sentences_per_s']:.0f} sentences/s wall, "
              f"{s['stage_sentences_per_cpu_s']:.0f} sentences per CPU second"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
