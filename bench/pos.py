"""POS benchmark (Strubell 2019, Table 2.1 style) on en_ewt test with gold tokens, in one run.

Rows: the full model (all templates, standard training), fixed models trained on the first n
templates of the dynamic model's order, prefixes of the dynamic model (first n templates, no
early stop), the dynamic model at several margins -- exact (margin tested after every template)
and checkpointed (margin tested only after the template counts of --checkpoints), with the two
passes of a two-pass model set apart by --passes -- and NLTK's averaged perceptron trained on the
same data (joint UPOS+XPOS labels), and the peers of bench/peers.py (UDPipe 1 and spaCy trained
from scratch on the same data, given the tokens only; skipped when not installed or trained).
Columns: XPOS, UPOS, XPOS on words unseen in training, mean templates per word, tagging tokens/s
(tagging only, this process on one core; wall clock and CPU time) and speed-ups over the full
model (wall and CPU). The rows are timed in interleaved rounds
(timing.interleaved_best). Accuracy comes from nlpipe.runtime.evaluate.score (nlpipe.metrics). Models
missing under --work are trained first (`nlpipe train pos` defaults plus --train-args).

    python bench/pos.py [--dynamic nlpipe/shipped/pos-ewt] [--work /tmp/nlpipe-bench-pos] [--json]
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

from nlpipe.io.conllu import FORM, UPOS, XPOS, read_file  # noqa: E402
from nlpipe.runtime.evaluate import score, strip_stage  # noqa: E402
from nlpipe.registry import load_stage  # noqa: E402
import peers as P  # noqa: E402  (bench/peers.py)
from timing import interleaved_best  # noqa: E402  (bench/timing.py)

CORPORA = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))


def train(out: Path, args: List[str], data: Dict[str, str], extra: List[str]) -> None:
    if (out / "config.json").is_file():
        return
    cmd = [sys.executable, "-m", "nlpipe.cli", "train", "pos", "--train", data["train"], "--dev", data["dev"],
           "--out", str(out), *args, *extra]
    print("training:", " ".join(cmd[3:]), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True)


def tag_all(tagger: Any, sents: list) -> list:
    """Tag ``sents`` (stripped copies) with ``tagger.tag_batch``; return them."""
    tagger.templates_used = tagger.tokens_tagged = 0
    for i in range(0, len(sents), tagger.batch_sentences):
        tagger.tag_batch(sents[i:i + tagger.batch_sentences])
    return sents


def nltk_tagger(train_path: str) -> tuple:
    """NLTK's averaged perceptron trained on ``train_path`` (joint labels) and its training seconds."""
    from nltk.tag.perceptron import PerceptronTagger

    data = [[(w[FORM], w[UPOS] + "\t" + w[XPOS]) for w in s.words] for s in read_file(train_path)]
    t0 = time.perf_counter()
    tagger = PerceptronTagger(load=False)
    tagger.train(data, nr_iter=5)
    return tagger, time.perf_counter() - t0


def nltk_all(tagger: Any, sents: list) -> list:
    for s in sents:
        for w, (_, label) in zip(s.words, tagger.tag([w[FORM] for w in s.words])):
            w[UPOS], w[XPOS] = label.split("\t", 1)
    return sents


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
    ap.add_argument("--dynamic", default=str(REPO / "nlpipe" / "shipped" / "pos-ewt"), help="dynamic model")
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
    ap.add_argument("--passes", action="append", default=[], metavar="M1@S1+M2@S2",
                    help="a row of the two-pass dynamic model with the first pass at margin M1, checkpoints "
                         "S1 and the second at M2, S2 (e.g. 0.6@3,8,16,32+0.5@2,4,8,16,32)")
    ap.add_argument("--extra", action="append", default=[], metavar="NAME=MODEL@MARGIN",
                    help="another dynamic model to compare (e.g. another template order)")
    ap.add_argument("--no-nltk", action="store_true")
    ap.add_argument("--peers", default=str(P.PEERS), help="where bench/peers.py keeps the peer models")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--json", action="store_true", help="also print all rows as JSON on stdout")
    a = ap.parse_args(argv)
    passes = []
    for spec in a.passes:
        try:
            (m1, _, s1), (m2, _, s2) = (p.partition("@") for p in spec.split("+"))
            passes.append((float(m1), s1, float(m2), s2))
        except ValueError:
            ap.error(f"--passes {spec!r}: expected M1@S1+M2@S2")

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
    settings: List[Any] = []      # (setup, run) per row, timed by timing.interleaved_best
    taggers: List[Any] = []

    def strip() -> list:
        return strip_stage("pos", gold)

    def run(name: str, model: str, **options: Any) -> None:
        tagger = load_stage("pos", model, **options)
        rows.append({"row": name})
        settings.append((strip, lambda sents: tag_all(tagger, sents)))
        taggers.append(tagger)

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
    for m1, s1, m2, s2 in passes:
        run(f"dynamic first pass m={m1:g}, checkpoints {s1}; second m={m2:g}, checkpoints {s2}",
            a.dynamic, first_margin=m1, first_checkpoints=s1, margin=m2, checkpoints=s2)
    for spec in a.extra:
        name, _, rest = spec.partition("=")
        model, _, margin = rest.rpartition("@")
        run(name, model, margin=float(margin))
    if not a.no_peers:
        for name, entry in P.available(Path(a.peers)).items():
            if "skipped" in entry:
                print(f"peer {name}: {entry['skipped']}", file=sys.stderr)
                continue
            info = entry["info"]
            rows.append({"row": f"{P.TITLES[name]} {info.get('version', '')} (trained on the same data)",
                         "train_seconds": info.get("seconds")})
            settings.append((lambda: P.bare(gold), P.runner(name, entry["path"], parse=False)))
            taggers.append(None)
    if not a.no_nltk:
        nltk, train_s = nltk_tagger(data["train"])
        rows.append({"row": "NLTK averaged perceptron", "train_seconds": round(train_s, 1)})
        settings.append((strip, lambda sents: nltk_all(nltk, sents)))
        taggers.append(None)

    best, preds = interleaved_best(settings, a.repeat)
    for r, tagger, pred, (seconds, cpu) in zip(rows, taggers, preds, best):
        sc = score("pos", gold, pred, test, "<pred>", train_forms)
        r.update(xpos=sc["xpos"], upos=sc["upos"], unseen_xpos=sc["unseen_xpos"],
                 templates=None if tagger is None else tagger.mean_templates,
                 tokens_per_s=tokens / seconds, cpu_tokens_per_s=tokens / cpu)
    full_speed, full_cpu, loop_speed = rows[0]["tokens_per_s"], rows[0]["cpu_tokens_per_s"], rows[1]["tokens_per_s"]
    for r in rows:
        r["speedup"] = r["tokens_per_s"] / full_speed
        r["speedup_cpu"] = r["cpu_tokens_per_s"] / full_cpu
        r["speedup_vs_loop"] = r["tokens_per_s"] / loop_speed
    whole = command_speed(a.dynamic, test, a.repeat)
    print(f"\nen_ewt {a.split}, {tokens} words, gold tokens; tagging speed on one core (best of {a.repeat} "
          f"interleaved rounds); "
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
