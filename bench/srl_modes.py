"""LISA's syntax modes side by side (issue 35): SA, lisa, marginals, ste and spigot trained with the
same seed, budget and data, each scored on EWT with its own parse, the biaffine parse injected and
the gold parse, plus the syntactic head's own UAS.

    python bench/srl_modes.py --out DIR [--minutes 45] [--seed 1] [--split dev|test] [--modes ...]
                              [--no-train] [--threads 1] [--limit N] [--model NAME=DIR ...] [--json]

Steps: (1) join en_ewt train/dev/``split`` with the PropBank EWT spans (annotated documents only);
(2) train one model per mode into ``DIR/MODE`` (``--no-train``: use the models already there) with
the shipped recipe of docs/training.md (``--lr 2e-3 --warmup 300 --patience 6``, ``--max-minutes``
the budget); (3) on ``split``: SRL P/R/F1 (srl-eval.pl semantics, predicted predicates) with the
model's own parse (what its mode attends to; each ``--own-parse`` also), with the shipped
biaffine parse injected (``--parse-from-input``) and with the gold parse; the UAS of the model's own
best tree (``nlpipe srl --write-parse``, every word counted) against the gold tree.
A full run trains five models (about four hours on one core at 45 minutes each).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from nlpipe.io.conllu import HEAD  # noqa: E402
from nlpipe.io.model_dir import read_config  # noqa: E402
from nlpipe.nn.syntax_modes import OWN_PARSES, own_parse  # noqa: E402
from nlpipe.registry import load_stage  # noqa: E402
from nlpipe.runtime.evaluate import strip_stage  # noqa: E402
from srl import gold_file, reparse, srl_run  # noqa: E402

MODES = ("sa", "lisa", "marginals", "ste", "spigot")


def train_mode(mode: str, out: Path, data: Dict[str, str], minutes: float, seed: int, threads: int) -> Dict[str, Any]:
    """One model of ``mode`` (``sa``: the syntax-free baseline) into ``out``, the shipped recipe."""
    from nlpipe.train.srl import train

    options: Dict[str, Any] = {"no_syntax": True} if mode == "sa" else {"syntax": mode}
    return train(log=lambda line: print(f"[{mode}] {line}", file=sys.stderr, flush=True),
                 train_path=data["train"], dev_path=data["dev"], out=str(out), lr=2e-3, warmup=300, patience=6,
                 max_minutes=minutes, seed=seed, threads=threads, lang="en", **options)


def own_uas(model: str, gold: List[Any]) -> float:
    """UAS (percent, every word) of the model's own best tree (``--write-parse``) against the gold HEAD."""
    out = load_stage("srl", model, write_parse=True).annotate(strip_stage("srl", gold))
    pairs = [(w[HEAD], g[HEAD]) for s, t in zip(out, gold) for w, g in zip(s.words, t.words)]
    return 100.0 * sum(a == b for a, b in pairs) / max(1, len(pairs))


def score_mode(mode: str, model: str, gold: List[Any], parsed: List[Any]) -> Dict[str, Any]:
    """SRL F1 with the own, the injected biaffine and the gold parse (predicted predicates), the
    predicates' F1 and the own tree's UAS."""
    def prf(r: Dict[str, Any]) -> Dict[str, float]:
        return {k: round(r[k], 2) for k in ("precision", "recall", "f1")}

    if mode == "sa":
        own = srl_run(model, gold, gold, False)
        return {"own": prf(own), "predicates_f1": round(own["predicates"]["f1"], 2)}
    runs = {how: srl_run(model, gold, gold, False, own_parse=how) for how in OWN_PARSES}
    default = runs[own_parse(read_config(Path(model), "srl")["model"])]     # what the model attends to by default
    return {"own": prf(default), "predicates_f1": round(default["predicates"]["f1"], 2),
            **{f"own_{how}": prf(r) for how, r in runs.items()},
            "biaffine": prf(srl_run(model, parsed, gold, False, parse_from_input=True)),
            "gold": prf(srl_run(model, gold, gold, False, parse_from_input=True)),
            "uas": round(own_uas(model, gold), 2)}


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    corpora = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))
    ap.add_argument("--corpora", default=str(corpora))
    ap.add_argument("--out", required=True, help="folder of the models, one per mode (DIR/MODE)")
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--minutes", type=float, default=45.0, help="training budget of each model")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="torch threads while training")
    ap.add_argument("--split", default="test", choices=["dev", "test"])
    ap.add_argument("--no-train", action="store_true", help="score the models already in --out")
    ap.add_argument("--limit", type=int, default=None, help="score only the first N sentences (a quick check)")
    ap.add_argument("--model", action="append", default=[], metavar="NAME=DIR",
                    help="also score this LISA model folder as row NAME (e.g. the shipped one); repeatable")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    result: Dict[str, Any] = {"split": args.split, "seed": args.seed, "minutes": args.minutes, "training": {},
                              "rows": {}}
    if not args.no_train:
        from nlpipe.train.srl_data import write_srl_data

        c = Path(args.corpora)
        with tempfile.TemporaryDirectory() as tmp:
            data = {}
            for split in ("train", "dev"):
                data[split] = os.path.join(tmp, f"srl.{split}.conllu")
                write_srl_data(str(c / "en_ewt" / f"en_ewt-ud-{split}.conllu"),
                               str(c / "propbank_en_ewt" / f"en_ewt-pb-{split}.gold_conll"), data[split])
            for mode in args.modes:
                t = time.time()
                summary = train_mode(mode, out / mode, data, args.minutes, args.seed, args.threads)
                result["training"][mode] = {"dev": summary["dev"], "epoch": summary["epoch"],
                                            "seconds": round(time.time() - t)}
    gold = gold_file(Path(args.corpora), args.split)[:args.limit]
    parsed = reparse(gold)
    for mode in args.modes:
        result["rows"][mode] = score_mode(mode, str(out / mode), gold, parsed)
    for named in args.model:
        name, _, folder = named.partition("=")
        result["rows"][name] = score_mode("lisa", folder, gold, parsed)
    result["sentences"] = len(gold)
    print(json.dumps(result, indent=1) if args.json else table(result))
    return result


def table(r: Dict[str, Any]) -> str:
    """One row per mode: SRL F1 (predicted predicates) by the parse attended to, and the own UAS."""
    lines = [f"LISA syntax modes on EWT {r['split']} ({r['sentences']} annotated sentences), seed {r['seed']}, "
             f"{r['minutes']:g} minutes each; SRL F1, srl-eval.pl semantics, predicted predicates",
             f"{'':<11} {'own':>7} {'biaffine':>9} {'gold':>7} {'own UAS':>8}"]
    for mode, row in r["rows"].items():
        cells = [row["own"]["f1"]] + [row[k]["f1"] if k in row else None for k in ("biaffine", "gold")]
        cells.append(row.get("uas"))
        lines.append(f"{mode:<11} " + " ".join(f"{c:>{w}.2f}" if c is not None else f"{'-':>{w}}"
                                               for c, w in zip(cells, (7, 9, 7, 8))))
        if "own_argmax" in row:
            owns = ", ".join(f"{own} {row['own_' + own]['f1']:.2f}" for own in OWN_PARSES)
            lines.append(f"{'':<11} own parse: {owns}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
