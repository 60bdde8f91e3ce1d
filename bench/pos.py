"""POS benchmark (Strubell 2019, Table 2.1 style) on en_ewt test with gold tokens, in one run.

Rows: the full model (all templates, standard training), fixed models trained on the first n
templates of the dynamic model's order, prefixes of the dynamic model (first n templates, no
early stop), the dynamic model at several margins -- exact (margin tested after every template)
and checkpointed (margin tested only after the template counts of --checkpoints) -- and NLTK's
averaged perceptron trained on the same data (joint UPOS+XPOS labels). Columns: XPOS, UPOS, XPOS
on words unseen in training, mean templates per word, tagging tokens/s (tagging only, best of
--repeat, this process on one core; wall clock and CPU time) and speed-ups over the full model
(wall and CPU; the full model is timed first and again last, and the faster of the two is the
base). Accuracy comes from nlpipe.evaluate.score (nlpipe.metrics). Models missing under
--work are trained first (`nlpipe train pos` defaults plus --train-args).

    python bench/pos.py [--dynamic nlpipe/models/pos-ewt] [--work /tmp/nlpipe-bench-pos] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nlpipe.conllu_io import FORM, UPOS, XPOS, read_file  # noqa: E402
from nlpipe.evaluate import score, strip_stage  # noqa: E402
from nlpipe.stage import load_stage  # noqa: E402

CORPORA = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))


def train(out: Path, args: List[str], data: Dict[str, str], extra: List[str]) -> None:
    if (out / "config.json").is_file():
        return
    cmd = [sys.executable, "-m", "nlpipe.cli", "train", "pos", "--train", data["train"], "--dev", data["dev"],
           "--out", str(out), *args, *extra]
    print("training:", " ".join(cmd[3:]), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True)


def time_tagger(tagger: Any, gold: list, repeat: int) -> tuple:
    """(predicted sentences, best wall seconds, best CPU seconds) of ``tagger.tag_batch`` on stripped
    copies (CPU time is steadier than wall time on a machine shared with other jobs)."""
    best, best_cpu, pred = float("inf"), float("inf"), None
    for _ in range(repeat):
        sents = strip_stage("pos", gold)
        tagger.templates_used = tagger.tokens_tagged = 0
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(0, len(sents), tagger.batch_sentences):
            tagger.tag_batch(sents[i:i + tagger.batch_sentences])
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
        pred = sents
    return pred, best, best_cpu


def nltk_row(train_path: str, gold: list, repeat: int) -> tuple:
    from nltk.tag.perceptron import PerceptronTagger

    data = [[(w[FORM], w[UPOS] + "\t" + w[XPOS]) for w in s.words] for s in read_file(train_path)]
    t0 = time.perf_counter()
    tagger = PerceptronTagger(load=False)
    tagger.train(data, nr_iter=5)
    train_s = time.perf_counter() - t0
    best, best_cpu, pred = float("inf"), float("inf"), None
    for _ in range(repeat):
        sents = strip_stage("pos", gold)
        t0, c0 = time.perf_counter(), time.process_time()
        for s in sents:
            for w, (_, label) in zip(s.words, tagger.tag([w[FORM] for w in s.words])):
                w[UPOS], w[XPOS] = label.split("\t", 1)
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
        pred = sents
    return pred, best, best_cpu, train_s


def command_speed(model: str, test: str, repeat: int) -> float:
    """Best wall-clock seconds of `nlpipe pos --model M < test > /dev/null` (whole process)."""
    best = float("inf")
    for _ in range(repeat):
        with open(test, "rb") as f:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "nlpipe.cli", "pos", "--model", model], stdin=f,
                           stdout=subprocess.DEVNULL, check=True)
            best = min(best, time.perf_counter() - t0)
    return best


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dynamic", default=str(REPO / "nlpipe" / "models" / "pos-ewt"), help="dynamic model")
    ap.add_argument("--work", default="/tmp/nlpipe-bench-pos", help="where baseline models are trained/kept")
    ap.add_argument("--corpus", default=str(CORPORA / "en_ewt"))
    ap.add_argument("--split", default="test")
    ap.add_argument("--margins", default="0.25,0.5,0.75,1.0,1.5",
                    help="tagging margins of the dynamic model (it was trained with margin 1.0)")
    ap.add_argument("--checkpoints", default="pow2",
                    help="checkpoint schedule of the checkpointed rows (pow2 or counts like 2,4,8); '' for none")
    ap.add_argument("--train-args", default="", help="extra `nlpipe train pos` options for missing models")
    ap.add_argument("--full-args", default="", help="extra options for the full model only (e.g. --two-pass "
                    "when the dynamic model has two passes: the full row is then two full passes)")
    ap.add_argument("--fixed", default="1,3,5,10")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--extra", action="append", default=[], metavar="NAME=MODEL@MARGIN",
                    help="another dynamic model to compare (e.g. another template order)")
    ap.add_argument("--no-nltk", action="store_true")
    ap.add_argument("--json", action="store_true", help="also print all rows as JSON on stdout")
    a = ap.parse_args(argv)

    data = {s: str(Path(a.corpus) / f"en_ewt-ud-{s}.conllu") for s in ("train", "dev", "test")}
    test = str(Path(a.corpus) / f"en_ewt-ud-{a.split}.conllu")
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    ns = [int(x) for x in a.fixed.split(",") if x]
    extra = a.train_args.split()
    train(work / "full", ["--mode", "full", "--order-from", a.dynamic, *a.full_args.split()], data, extra)
    for n in ns:
        train(work / f"fixed-{n}", ["--mode", "fixed", "--n", str(n), "--order-from", a.dynamic], data, extra)

    gold = list(read_file(test))
    train_forms = {w[FORM] for s in read_file(data["train"]) for w in s.words}
    tokens = sum(len(s.words) for s in gold)
    rows: List[Dict[str, Any]] = []

    def add(name: str, pred: list, seconds: float, cpu: float, templates: Optional[float], **extra: Any) -> None:
        r = score("pos", gold, pred, test, "<pred>", train_forms)
        rows.append({"row": name, "xpos": r["xpos"], "upos": r["upos"], "unseen_xpos": r["unseen_xpos"],
                     "templates": templates, "tokens_per_s": tokens / seconds, "cpu_tokens_per_s": tokens / cpu,
                     **extra})
        print(f"  {name}: XPOS {r['xpos']:.2f} UPOS {r['upos']:.2f} {tokens / seconds:,.0f} tok/s "
              f"({tokens / cpu:,.0f} per CPU second)", file=sys.stderr, flush=True)

    def run(name: str, model: str, **options: Any) -> None:
        tagger = load_stage("pos", model, **options)
        pred, seconds, cpu = time_tagger(tagger, gold, a.repeat)
        add(name, pred, seconds, cpu, tagger.templates_used / tagger.tokens_tagged)

    run("full", str(work / "full"), margin=-1)
    # the same model through the early-stopping loop with a margin nothing reaches: what the
    # speed-ups would be against a tagger that scores template by template like the dynamic one
    run("full, DFS loop (m=inf)", str(work / "full"), margin=1e30, checkpoints="all")
    for n in ns:
        run(f"fixed-{n}", str(work / f"fixed-{n}"), margin=-1)
    for n in ns:
        run(f"dynamic[:{n}]", a.dynamic, margin=-1, limit=n)
    run("dynamic, all templates", a.dynamic, margin=-1)
    margins = [float(x) for x in a.margins.split(",") if x]
    for m in margins:
        run(f"dynamic m={m:g}", a.dynamic, margin=m, checkpoints="all")
    if a.checkpoints:
        for m in margins:
            run(f"dynamic m={m:g}, checkpoints {a.checkpoints}", a.dynamic, margin=m, checkpoints=a.checkpoints)
    for spec in a.extra:
        name, _, rest = spec.partition("=")
        model, _, margin = rest.rpartition("@")
        run(name, model, margin=float(margin))
    if not a.no_nltk:
        pred, seconds, cpu, train_s = nltk_row(data["train"], gold, a.repeat)
        add("NLTK averaged perceptron", pred, seconds, cpu, None, train_seconds=round(train_s, 1))

    # the full model again at the end: the machine's load drifts during a run, so the speed-ups
    # are taken against the faster of the two full-model measurements (favouring the baseline)
    run("full (again, end of run)", str(work / "full"), margin=-1)
    full_rows = [rows[0], rows[-1]]
    full_speed = max(r["tokens_per_s"] for r in full_rows)
    full_cpu = max(r["cpu_tokens_per_s"] for r in full_rows)
    loop_speed = rows[1]["tokens_per_s"]
    for r in rows:
        r["speedup"] = r["tokens_per_s"] / full_speed
        r["speedup_cpu"] = r["cpu_tokens_per_s"] / full_cpu
        r["speedup_vs_loop"] = r["tokens_per_s"] / loop_speed
    whole = command_speed(a.dynamic, test, a.repeat)
    print(f"\nen_ewt {a.split}, {tokens} words, gold tokens; tagging speed on one core (best of {a.repeat}); "
          f"dynamic model {a.dynamic}\n")
    print("| model | XPOS | UPOS | XPOS unseen | templates | tokens/s | speed-up | tokens/CPU s | speed-up (CPU) "
          "| vs DFS loop |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        t = "-" if r["templates"] is None else f"{r['templates']:.2f}"
        print(f"| {r['row']} | {r['xpos']:.2f} | {r['upos']:.2f} | {r['unseen_xpos']:.2f} | {t} | "
              f"{r['tokens_per_s']:,.0f} | {r['speedup']:.2f}x | {r['cpu_tokens_per_s']:,.0f} | "
              f"{r['speedup_cpu']:.2f}x | {r['speedup_vs_loop']:.2f}x |")
    print(f"\nwhole command `nlpipe pos --model {a.dynamic} < {Path(test).name} > /dev/null`: "
          f"{whole:.2f} s = {tokens / whole:,.0f} tokens/s")
    if a.json:
        print(json.dumps({"rows": rows, "command_seconds": whole, "tokens": tokens}))


if __name__ == "__main__":
    main()
