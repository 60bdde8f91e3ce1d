"""NER benchmark: F1 of trained models (mean +- sd over seeds) and test-time speed of each family.

Speed is measured on the sentences of a data file (default: CoNLL-2003 test) with randomly
initialised models of the trained models' shapes (speed does not depend on the weights). Both families
get the same care: length-sorted batches, features computed once outside the timer, fused LSTM
kernels, one vectorised batched decode per batch (greedy argmax + BIO repair, or the batched Viterbi of
nlpipe.decode.chain). Each configuration is timed at several batch sizes; the best and batch size 1
are reported. On CPU the ID-CNN is also timed through the numpy path that `nlpipe ner` uses.

    python bench/ner.py --data ../shared/corpora/conll2003/eng.testb --device cpu \\
        --results runs/conll-logs --json bench-ner-cpu.json
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from nlpipe.decode import chain  # noqa: E402
from nlpipe.nn.features import Vocab, shape_ids  # noqa: E402
from nlpipe.train.ner import read_ner_file  # noqa: E402
from nlpipe.tags import repair_ids  # noqa: E402

LABELS = ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER"]

# name -> (arch, crf, extra hyper-parameters); the first four are the trained CoNLL-2003 shapes.
CONFIGS: List[Tuple[str, str, bool, Dict[str, Any]]] = [
    ("Bi-LSTM", "bilstm", False, {"hidden": 200}),
    ("Bi-LSTM-CRF", "bilstm", True, {"hidden": 200}),
    ("ID-CNN 300x4", "idcnn", False, {"width": 300, "n_blocks": 4}),
    ("ID-CNN-CRF 300x4", "idcnn", True, {"width": 300, "n_blocks": 4}),
    ("ID-CNN 300x1", "idcnn", False, {"width": 300, "n_blocks": 1}),
    ("ID-CNN 200x2", "idcnn", False, {"width": 200, "n_blocks": 2}),
    ("ID-CNN 150x2", "idcnn", False, {"width": 150, "n_blocks": 2}),
    ("ID-CNN 128x2", "idcnn", False, {"width": 128, "n_blocks": 2}),
]


def build(arch: str, crf: bool, extra: Dict[str, Any], n_words: int, device: Any) -> Any:
    import torch

    from nlpipe.nn.tagger import DEFAULTS, NeuralTagger

    hp = dict(DEFAULTS[arch], arch=arch, crf=crf, context="sentence", **extra)
    torch.manual_seed(0)
    return NeuralTagger(hp, n_words, LABELS).to(device).eval()


def batches(lengths: Sequence[int], size: int) -> List[List[int]]:
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i:i + size] for i in range(0, len(order), size)]


def time_torch(model: Any, feats: List[Tuple[np.ndarray, np.ndarray]], size: int, device: Any,
               repeats: int) -> float:
    """Tokens/s of scores + decode for all sentences at batch size ``size`` (best of ``repeats``)."""
    import torch

    lengths = [len(w) for w, _ in feats]
    prepared = []
    for idx in batches(lengths, size):
        n = max(lengths[i] for i in idx)
        w = np.zeros((len(idx), n), dtype=np.int64)
        s = np.zeros((len(idx), n), dtype=np.int64)
        for r, i in enumerate(idx):
            w[r, :lengths[i]], s[r, :lengths[i]] = feats[i]
        prepared.append((torch.as_tensor(w, device=device), torch.as_tensor(s, device=device),
                         np.array([lengths[i] for i in idx])))
    crf = model.crf.chain() if model.crf is not None else None
    best = float("inf")
    with torch.inference_mode():
        for rep in range(repeats + 1):
            if device.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            for w, s, lens in prepared:
                scores = model(w, s, s > 0, drop=False)[-1]
                if crf is None:
                    ids = scores.argmax(-1).cpu().numpy()
                    repair_ids(ids, lens, LABELS)
                else:
                    crf.viterbi(scores.float().cpu().numpy(), lens)
            if device.type == "cuda":
                torch.cuda.synchronize()
            if rep:  # the first pass warms up
                best = min(best, time.perf_counter() - t0)
    return sum(lengths) / best


def time_numpy(model: Any, feats: List[Tuple[np.ndarray, np.ndarray]], size: int, repeats: int) -> float:
    """Tokens/s of the numpy ID-CNN path (what `nlpipe ner` runs on CPU)."""
    from nlpipe.models.idcnn_numpy import IDCNNInference

    arrays = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    inf = IDCNNInference(arrays, model.hp["dilations"], model.hp["n_blocks"])
    lengths = [len(w) for w, _ in feats]
    groups = [[feats[i] for i in idx] for idx in batches(lengths, size)]
    best = float("inf")
    for rep in range(repeats + 1):
        t0 = time.perf_counter()
        for g in groups:
            packed, starts = inf.scores(g)
            lens = np.array([len(w) for w, _ in g])
            idx = np.minimum(starts[:, None] + np.arange(lens.max())[None, :], len(packed) - 1)
            chain.decode(packed[idx], lens, LABELS)
        if rep:
            best = min(best, time.perf_counter() - t0)
    return sum(lengths) / best


def f1_table(results_dir: Optional[str]) -> Dict[str, Dict[str, Any]]:
    """Mean and sd of test/dev F1 per model family from `nlpipe train ner --json` outputs (NAME-sSEED.json)."""
    table: Dict[str, Dict[str, List[float]]] = {}
    if not results_dir:
        return {}
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        try:
            r = json.loads(open(path, encoding="utf-8").read())
        except ValueError:
            continue
        family = os.path.basename(path).rsplit("-s", 1)[0]
        t = table.setdefault(family, {"test": [], "dev": []})
        t["test"].append(r["test"]["f1"])
        t["dev"].append(r["dev"]["f1"])
    out = {}
    for fam, t in table.items():
        sd = statistics.stdev(t["test"]) if len(t["test"]) > 1 else 0.0
        out[fam] = {"test_mean": round(statistics.mean(t["test"]), 2), "test_sd": round(sd, 2),
                    "dev_mean": round(statistics.mean(t["dev"]), 2), "seeds": len(t["test"])}
    return out


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "../../shared/corpora/conll2003/eng.testb"))
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--batch-sizes", default="1,32,128,512,2048")
    ap.add_argument("--configs", default=None, help="Comma-separated config names (default: all).")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None, help="Use only the first N sentences.")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--results", default=None, help="Folder of `train ner --json` outputs for the F1 table.")
    ap.add_argument("--json", default=None, help="Write the results here.")
    args = ap.parse_args(argv)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    sents = read_ner_file(args.data)[:args.limit]
    words = sorted({w for ws, _, _ in sents for w in ws})
    vocab = Vocab([w.lower() for w in words])
    feats = [(vocab.ids(ws), shape_ids(ws)) for ws, _, _ in sents]
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    wanted = set(args.configs.split(",")) if args.configs else None
    machine = torch.cuda.get_device_name(0) if args.device == "cuda" else f"{os.cpu_count()} CPU cores"
    rows = []
    for name, arch, crf, extra in CONFIGS:
        if wanted and name not in wanted:
            continue
        model = build(arch, crf, extra, len(vocab), device)
        speeds = {b: time_torch(model, feats, b, device, args.repeats) for b in sizes}
        row = {"model": name, "torch_tok_s": {b: round(v) for b, v in speeds.items()},
               "best_tok_s": round(max(speeds.values())), "best_batch": max(speeds, key=speeds.get),
               "batch1_tok_s": round(speeds.get(1, 0))}
        if args.device == "cpu" and arch == "idcnn" and not crf:
            np_speeds = {b: time_numpy(model, feats, b, args.repeats) for b in sizes if b > 1}
            row["numpy_best_tok_s"] = round(max(np_speeds.values()))
        rows.append(row)
        print(f"{name:<18} best {row['best_tok_s']:>10,} tok/s (batch {row['best_batch']}), "
              f"batch 1 {row['batch1_tok_s']:>8,}"
              + (f", numpy {row['numpy_best_tok_s']:,}" if "numpy_best_tok_s" in row else ""), file=sys.stderr)
    base = next((r for r in rows if r["model"] == "Bi-LSTM-CRF"), None)
    if base:
        for r in rows:
            r["x_bilstm_crf"] = round(r["best_tok_s"] / base["best_tok_s"], 2)
    result = {"data": args.data, "tokens": int(sum(len(w) for w, _ in feats)), "device": machine,
              "torch_threads": torch.get_num_threads(), "speed": rows, "f1": f1_table(args.results)}
    for fam, t in result["f1"].items():
        print(f"{fam:<18} test F1 {t['test_mean']:.2f} +- {t['test_sd']:.2f} (dev {t['dev_mean']:.2f}, "
              f"{t['seeds']} seeds)", file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
