#!/usr/bin/env python3
"""UD benchmark: nlpipe and UDPipe 1 on a treebank's test file, all CoNLL 2018 metrics, in one run.

For ``--treebank T`` (files ``T-ud-{train,dev,test}.conllu`` under ``$NLPIPE_CORPORA/T`` or
``--corpus``) each system annotates the test file from two inputs:

- **gold tokens**: the test file with every column after FORM cleared (``_``; MISC keeps only
  ``SpaceAfter=No``), empty nodes dropped; the systems tag, lemmatize and parse;
- **raw text**: the ``# text`` lines, a paragraph's sentences joined by one space and paragraphs
  separated by a blank line (``# newpar``/``# newdoc``; :func:`nlpipe.io.raw_text.raw_text`); a
  treebank without paragraph marks (fr_sequoia) is one line; the systems also tokenize and split.

Every output is scored with ``nlpipe eval ud --json`` (:func:`nlpipe.metrics.ud_scores`) and one
table per input prints the 13 metrics (F1) of the systems side by side, then the whole run of each
system (a fresh process: start-up, model loading, annotation, writing) in tokens/s (gold syntactic
words / wall seconds) and as a ratio to nlpipe. A third table times the tagging step alone on
gold tokens: the ``nlpipe pos`` command (``--tag-command``) against UDPipe 1's tagger (tagger only,
no parser), each a whole command. Every command runs on one core (``taskset -c 0`` when available,
``OMP_NUM_THREADS=1``), in interleaved rounds (``--repeat``), best wall time kept.

Systems:
- ``nlpipe``: the shipped English models (en_* treebanks only), or a folder of models
  (``--models DIR``: passed to ``nlpipe annotate --models`` where the command has it, else each
  model folder in DIR is given by ``--model STAGE=PATH`` after the stage in its config.json), or
  ``--model STAGE=DIR`` pairs. The stages run are the UD ones (tokenize on raw text, pos, parse
  and any later UD stage) that have a model; ``--stages`` overrides.
- ``udpipe``: UDPipe 1 trained by ``bench/peers.py --treebank T`` (tokenizer, tagger, parser),
  run through ``ufal.udpipe`` in a process of its own; skipped with the reason when absent.

    python bench/ud.py --treebank en_ewt [--models DIR | --model pos=DIR ...] [--repeat 3] [--split dev]
                       [--json results.json] [--work /tmp/nlpipe-bench-ud-en_ewt]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from nlpipe.io.conllu import (DEPS, FORM, ID, MISC, Sentence, misc_get, read_file,  # noqa: E402
                              to_string)
from nlpipe.errors import NlpipeError  # noqa: E402
from nlpipe.io.raw_text import raw_text  # noqa: E402
from nlpipe.metrics import UD_METRICS  # noqa: E402
from nlpipe.registry import STAGES  # noqa: E402
import peers as P  # noqa: E402  (bench/peers.py)

CORPORA = P.CORPORA
NOT_UD = ("ner", "predicates", "srl")              # stages that write no column the UD metrics read
MODES = {"gold": "gold tokens", "raw": "raw text"}
TAGGING = ("UPOS", "XPOS", "UFeats", "AllTags", "Lemmas")
PARSING = ("UAS", "LAS", "CLAS", "MLAS", "BLEX")
ONE_CORE_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


class BenchError(Exception):
    """Bad arguments or input: ``main`` prints it on one line and exits with status 2."""


# ---------------------------------------------------------------- inputs

def gold_tokens(sentences: Sequence[Sentence]) -> List[Sentence]:
    """Copies of ``sentences`` with only the tokens: every column after FORM is ``_`` except MISC,
    which keeps ``SpaceAfter=No`` alone; multiword-token lines stay, empty nodes go."""
    out = []
    for s in sentences:
        rows = []
        for r in s.rows:
            if "." in r[ID]:
                continue
            misc = "SpaceAfter=No" if misc_get(r[MISC], "SpaceAfter") == "No" else "_"
            rows.append([r[ID], r[FORM]] + ["_"] * (DEPS - FORM) + [misc] + r[MISC + 1:])
        out.append(Sentence(list(s.comments), rows, s.end, s.eol, s.prefix))
    return out


def words(sentences: Sequence[Sentence]) -> int:
    return sum(len(s.words) for s in sentences)


# ---------------------------------------------------------------- nlpipe models

def parse_model_pairs(pairs: Sequence[str]) -> Dict[str, str]:
    """``["pos=DIR", ...]`` -> ``{"pos": "DIR"}``; a pair without ``=``, an unknown stage or a stage
    given twice is a :class:`BenchError`."""
    out: Dict[str, str] = {}
    for pair in pairs:
        stage, sep, path = pair.partition("=")
        if not sep or not stage or not path:
            raise BenchError(f"--model {pair!r}: expected STAGE=DIR")
        if stage not in STAGES:
            raise BenchError(f"--model {pair!r}: unknown stage {stage!r} (expected one of: {', '.join(STAGES)})")
        if stage in out:
            raise BenchError(f"--model {stage}= given twice")
        out[stage] = path
    return out


def models_in(folder: Path) -> Dict[str, Path]:
    """Stage -> model folder for the model folders (with a ``config.json``) inside ``folder``: each
    serves the stage its config names (and its ``also_stages``); where several serve one stage, the
    folder named after the stage wins, else the first by name."""
    if not folder.is_dir():
        raise BenchError(f"--models {folder}: not a directory")
    found: Dict[str, Path] = {}
    for sub in sorted(p for p in folder.iterdir() if (p / "config.json").is_file()):
        try:
            config = json.loads((sub / "config.json").read_text(encoding="utf-8"))
        except ValueError as e:
            raise BenchError(f"{sub / 'config.json'}: not JSON ({e})")
        for stage in [config.get("stage")] + list(config.get("also_stages", [])):
            if stage in STAGES and (stage not in found or sub.name == stage):
                found[stage] = sub
    if not found:
        raise BenchError(f"--models {folder}: no model folders (with a config.json) in it")
    return found


def ud_stages(mode: str, have: Sequence[str], asked: Optional[Sequence[str]] = None) -> List[str]:
    """The stages nlpipe runs for ``mode`` ("gold" or "raw"): ``asked`` if given, else those of
    ``have`` that write UD columns, in pipeline order; tokenize only on raw text."""
    unknown = [s for s in asked or () if s not in STAGES]
    if unknown:
        raise BenchError(f"--stages: unknown {', '.join(unknown)} (expected some of: {', '.join(STAGES)})")
    chosen = list(asked) if asked else [s for s in have if s not in NOT_UD]
    if mode == "gold":
        chosen = [s for s in chosen if s != "tokenize"]
    return sorted(set(chosen), key=STAGES.index)


def _annotate_has_models_option() -> bool:
    out = subprocess.run([sys.executable, "-m", "nlpipe", "annotate", "--help"], capture_output=True, text=True,
                         env=_env())
    return "--models" in out.stdout


class NlpipeSystem:
    """How the nlpipe commands are called: the models (shipped, a folder, or per stage)."""

    def __init__(self, treebank: str, models_dir: Optional[str], pairs: Dict[str, str],
                 stages: Optional[List[str]]):
        from nlpipe.runtime.chain import available_stages

        self.folder = Path(models_dir) if models_dir else None
        self.models: Dict[str, str] = {s: str(p) for s, p in models_in(self.folder).items()} if self.folder else {}
        self.models.update(pairs)
        self.pairs = pairs
        self.asked = stages
        self.skipped: Optional[str] = None
        if not self.models and not treebank.startswith("en_"):
            self.skipped = (f"the shipped models are English; give nlpipe models for {treebank} with --models DIR "
                            "or --model STAGE=DIR")
        self.have = list(self.models) if self.models else available_stages()
        self.folder_option = self.folder is not None and _annotate_has_models_option()

    def shipped(self) -> Dict[str, str]:
        """Stage -> the shipped default model's name, for the stages nlpipe runs here."""
        from nlpipe.registry import resolve_model

        return {s: resolve_model(s, None).name for s in ud_stages("raw", self.have, self.asked)}

    def annotate(self, mode: str, src: Path, out: Path) -> List[str]:
        stages = ud_stages(mode, self.have, self.asked)
        cmd = ["-m", "nlpipe", "annotate", "--stages", ",".join(stages)]
        if self.folder_option:
            cmd += ["--models", str(self.folder)]
        given = self.pairs if self.folder_option else self.models
        for s in stages:
            if s in given:
                cmd += ["--model", f"{s}={given[s]}"]
        return [sys.executable] + cmd + ["-o", str(out), str(src)]

    def tag(self, command: str, src: Path, out: Path) -> List[str]:
        cmd = [sys.executable, "-m", "nlpipe", command, "-o", str(out), str(src)]
        if command in self.models:
            cmd += ["--model", self.models[command]]
        return cmd


# ---------------------------------------------------------------- UDPipe 1 in a process of its own

def udpipe_command(model: Path, mode: str, src: Path, out: Path, parse: bool = True) -> List[str]:
    """The command that runs UDPipe 1 (``model``) on ``src``: raw text (``mode`` "raw": tokenizer,
    tagger, parser) or CoNLL-U gold tokens (tagger, and parser when ``parse``), CoNLL-U to ``out``."""
    return [sys.executable, str(Path(__file__).resolve()), "_udpipe", str(model), mode,
            "parse" if parse else "tag", str(src), str(out)]


def _run_udpipe(model: str, mode: str, steps: str, src: str, out: str) -> None:
    from ufal.udpipe import Model, Pipeline, ProcessingError

    m = Model.load(model)
    if m is None:
        raise SystemExit(f"{model}: UDPipe cannot load it")
    pipe = Pipeline(m, "tokenize" if mode == "raw" else "conllu", Pipeline.DEFAULT,
                    Pipeline.DEFAULT if steps == "parse" else Pipeline.NONE, "conllu")
    err = ProcessingError()
    result = pipe.process(Path(src).read_text(encoding="utf-8"), err)
    if err.occurred():
        raise SystemExit(f"UDPipe failed on {src}: {err.message}")
    Path(out).write_text(result, encoding="utf-8")


# ---------------------------------------------------------------- running and timing

def _env() -> Dict[str, str]:
    env = dict(os.environ, **ONE_CORE_ENV)
    # as an installed package runs: Python caches the compiled modules (a sandbox may forbid it, and
    # then every run compiles nlpipe's source again, ~25 ms); the first round writes the cache
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def one_core(cmd: List[str]) -> List[str]:
    """``cmd`` pinned to one core with ``taskset`` where the machine has it."""
    return (["taskset", "-c", "0"] + cmd) if shutil.which("taskset") else cmd


def timed_runs(commands: Dict[str, List[str]], repeat: int) -> Dict[str, Dict[str, float]]:
    """Run each command ``repeat`` times in interleaved rounds; the best wall and CPU seconds of
    each. A failing command raises :class:`BenchError` with its stderr's last line."""
    best: Dict[str, Dict[str, float]] = {k: {"seconds": float("inf"), "cpu_seconds": float("inf")}
                                         for k in commands}
    for _ in range(repeat):
        for key, cmd in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            r = subprocess.run(one_core(cmd), env=_env(), capture_output=True, text=True)
            wall = time.perf_counter() - t
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if r.returncode != 0:
                last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
                raise BenchError(f"{key}: {' '.join(cmd[1:4])} ... failed (exit {r.returncode}): {last}")
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            best[key] = {"seconds": round(min(best[key]["seconds"], wall), 3),
                         "cpu_seconds": round(min(best[key]["cpu_seconds"], cpu), 3)}
    return best


def ud_eval(gold: Path, pred: Path) -> Dict[str, float]:
    """``nlpipe eval ud --json``: metric name -> F1 (percent)."""
    r = subprocess.run([sys.executable, "-m", "nlpipe", "eval", "ud", "--gold", str(gold), "--pred", str(pred),
                        "--json"], env=_env(), capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError(f"nlpipe eval ud --pred {pred} failed: {(r.stderr.strip().splitlines() or [''])[-1]}")
    m = json.loads(r.stdout)["metrics"]
    return {name: m[name.lower()]["f1"] for name in UD_METRICS}


# ---------------------------------------------------------------- tables

def _num(x: Optional[float], fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def speed_fields(times: Dict[str, Dict[str, float]], n_words: int, base: str = "nlpipe") -> Dict[str, Dict[str, Any]]:
    """Per system (``times``: key -> {"seconds", "cpu_seconds"}): tokens/s of wall and of CPU time
    (``n_words`` / seconds) and their ratios to ``base``'s (``None`` when ``base`` was not run)."""
    out: Dict[str, Dict[str, Any]] = {}
    for k, t in times.items():
        out[k] = dict(t)
        for kind, key in (("tokens_per_s", "seconds"), ("cpu_tokens_per_s", "cpu_seconds")):
            out[k][kind] = round(n_words / t[key], 1) if t[key] > 0 else None
    for kind, ratio in (("tokens_per_s", "ratio"), ("cpu_tokens_per_s", "cpu_ratio")):
        b = out.get(base, {}).get(kind)
        for v in out.values():
            v[ratio] = round(v[kind] / b, 2) if b and v[kind] else None
    return out


def table(title: str, names: Dict[str, str], scores: Dict[str, Dict[str, float]], metrics: Sequence[str],
          speed: Dict[str, Dict[str, Any]]) -> str:
    """A markdown table: a row per metric (F1, 2 decimals) with a column per system (``names``: key
    -> title, in column order), then wall seconds, tokens/s and the ratio to nlpipe, and the same of
    CPU time (steadier than wall time on a loaded machine). A system without
    scores shows ``-``."""
    keys = list(names)
    lines = [f"{title}", "", "| Metric | " + " | ".join(names[k] for k in keys) + " |",
             "|---|" + "---:|" * len(keys)]
    for m in metrics:
        lines.append(f"| {m} | " + " | ".join(_num(scores.get(k, {}).get(m), ".2f") for k in keys) + " |")
    if speed:
        for label, key, fmt in (("seconds (whole run)", "seconds", ".2f"), ("tokens/s", "tokens_per_s", ",.0f"),
                                ("vs nlpipe", "ratio", ".2f"), ("CPU seconds", "cpu_seconds", ".2f"),
                                ("tokens/s of CPU time", "cpu_tokens_per_s", ",.0f"),
                                ("vs nlpipe (CPU)", "cpu_ratio", ".2f")):
            cells = [_num(speed.get(k, {}).get(key), fmt) for k in keys]
            if "ratio" in key:
                cells = [c if c == "-" else c + "x" for c in cells]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------- the benchmark

def _git_commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def run(a: argparse.Namespace) -> Dict[str, Any]:
    corpus = Path(a.corpus) if a.corpus else CORPORA / a.treebank
    test = P.treebank_files(corpus, a.treebank)[a.split]
    if not test.is_file():
        raise BenchError(f"{test}: no such file (--treebank, --corpus, $NLPIPE_CORPORA)")
    work = Path(a.work or f"/tmp/nlpipe-bench-ud-{a.treebank}")
    work.mkdir(parents=True, exist_ok=True)
    gold = list(read_file(str(test)))
    n = words(gold)
    inputs = {"gold": work / "gold-tokens.conllu", "raw": work / "raw.txt"}
    inputs["gold"].write_text(to_string(gold_tokens(gold)), encoding="utf-8")
    inputs["raw"].write_text(raw_text(gold) + "\n", encoding="utf-8")

    names: Dict[str, str] = {}
    skipped: Dict[str, str] = {}
    runs: Dict[str, Callable[[str, Path, Path], List[str]]] = {}
    tags: Dict[str, Callable[[Path, Path], List[str]]] = {}
    info: Dict[str, Any] = {}
    no_raw = set()                                    # systems that cannot tokenize
    unparsed = set()                                  # systems that do not parse: no UAS ... BLEX
    if not a.no_nlpipe:
        nl = NlpipeSystem(a.treebank, a.models, parse_model_pairs(a.model or []),
                          [s.strip() for s in a.stages.split(",") if s.strip()] if a.stages else None)
        names["nlpipe"] = "nlpipe"
        if nl.skipped:
            skipped["nlpipe"] = nl.skipped
        else:
            runs["nlpipe"] = nl.annotate
            tags["nlpipe"] = lambda src, out, nl=nl: nl.tag(a.tag_command, src, out)
            info["nlpipe"] = {"models": nl.models or nl.shipped(), "commit": _git_commit()}
    if not a.no_peers:
        names["udpipe"] = "UDPipe 1"
        model = P.udpipe_path(Path(a.peers), a.treebank)
        if not P.installed("ufal.udpipe"):
            skipped["udpipe"] = "ufal.udpipe is not installed (make bench-peers)"
        elif not model.is_file():
            skipped["udpipe"] = f"no model {model} (python bench/peers.py --treebank {a.treebank} --only udpipe)"
        else:
            info["udpipe"] = P._info(Path(a.peers)).get(P.udpipe_info_key(a.treebank), {})
            parts = P.udpipe_components(info["udpipe"])
            runs["udpipe"] = lambda mode, src, out, m=model: udpipe_command(m, mode, src, out, "parser" in parts)
            tags["udpipe"] = lambda src, out, m=model: udpipe_command(m, "gold", src, out, parse=False)
            if "tokenizer" not in parts:
                no_raw.add("udpipe")
            if "parser" not in parts:
                unparsed.add("udpipe")
            names["udpipe"] = f"UDPipe 1 {info['udpipe'].get('version', '')}".strip()
    for k, why in skipped.items():
        print(f"bench/ud.py: {names[k]} not run: {why}", file=sys.stderr)

    result: Dict[str, Any] = {
        "treebank": a.treebank, "split": a.split, "test": str(test), "words": n, "sentences": len(gold),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f} at start",
        "one_core": shutil.which("taskset") is not None, "repeat": a.repeat,
        "systems": info, "skipped": skipped, "modes": {}}
    modes = [m for m in MODES if m in a.modes.split(",")]
    for k in no_raw:
        skipped[k] = "raw text: the model has no tokenizer"
    for mode in modes:
        systems = {k: f for k, f in runs.items() if mode == "gold" or k not in no_raw}
        outs = {k: work / f"{k}-{mode}.conllu" for k in systems}
        commands = {k: f(mode, inputs[mode], outs[k]) for k, f in systems.items()}
        result.setdefault("commands", {})[mode] = {k: " ".join(c) for k, c in commands.items()}
        times = timed_runs(commands, a.repeat)
        speed = speed_fields(times, n)
        result["modes"][mode] = {k: {"metrics": {m: None if k in unparsed and m in PARSING else v
                                                 for m, v in ud_eval(test, outs[k]).items()}, **speed[k]}
                                 for k in systems}
    for k in unparsed:
        result.setdefault("notes", {})[k] = "the model has no parser: no UAS, LAS, CLAS, MLAS, BLEX"
    if a.tagging and tags:
        outs = {k: work / f"{k}-tagging.conllu" for k in tags}
        commands = {k: f(inputs["gold"], outs[k]) for k, f in tags.items()}
        result.setdefault("commands", {})["tagging"] = {k: " ".join(c) for k, c in commands.items()}
        times = timed_runs(commands, a.repeat)
        speed = speed_fields(times, n)
        result["tagging"] = {"command": {"nlpipe": f"nlpipe {a.tag_command}", "udpipe": "UDPipe 1 tagger"},
                             **{k: {"metrics": {m: v for m, v in ud_eval(test, outs[k]).items() if m in TAGGING},
                                    **speed[k]} for k in tags}}
    return {"result": result, "names": names}


def report(result: Dict[str, Any], names: Dict[str, str]) -> str:
    """The tables of a :func:`run` result, one per input mode and one for the tagging step."""
    head = (f"{result['treebank']} {result.get('split', 'test')} ({result['sentences']} sentences, {result['words']:,} words); "
            f"{result['date']}; {result['machine']}; one core: {'taskset -c 0' if result['one_core'] else 'no'}, "
            f"best of {result['repeat']}")
    parts = [head]
    for mode, by_system in result["modes"].items():
        scores = {k: v["metrics"] for k, v in by_system.items()}
        parts.append(table(f"UD scores from {MODES[mode]} (F1; whole run of each system, tokens/s = gold words / "
                           "wall seconds)", names, scores, UD_METRICS, by_system))
    if "tagging" in result:
        by_system = {k: v for k, v in result["tagging"].items() if k != "command"}
        tag_names = {k: f"{names[k]} ({result['tagging']['command'][k]})" for k in names}
        parts.append(table("Tagging step alone on gold tokens (whole command, one core)", tag_names,
                           {k: v["metrics"] for k, v in by_system.items()}, TAGGING, by_system))
    for k, why in result["skipped"].items():
        parts.append(f"{names[k]}: not run: {why}")
    for k, why in result.get("notes", {}).items():
        parts.append(f"{names[k]}: {why}")
    return "\n\n".join(parts)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--treebank", default="en_ewt", help="UD treebank name (files TREEBANK-ud-test.conllu ...)")
    ap.add_argument("--split", choices=("dev", "test"), default="test",
                    help="the file annotated and scored (dev: for choosing models; default test)")
    ap.add_argument("--corpus", help="folder of the treebank's files (default: $NLPIPE_CORPORA/TREEBANK)")
    ap.add_argument("--models", help="a folder of nlpipe model folders (as 'nlpipe train pipeline' writes)")
    ap.add_argument("--model", action="append", metavar="STAGE=DIR", help="an nlpipe model for one stage; repeatable")
    ap.add_argument("--stages", help="nlpipe stages to run (default: the UD stages that have a model)")
    ap.add_argument("--tag-command", default="pos", help="the nlpipe command timed as the tagging step")
    ap.add_argument("--peers", default=str(P.PEERS), help="where bench/peers.py keeps the peer models")
    ap.add_argument("--modes", default="gold,raw", help="inputs to run: gold (gold tokens), raw (raw text)")
    ap.add_argument("--no-tagging", dest="tagging", action="store_false", help="skip the tagging-step timing")
    ap.add_argument("--no-nlpipe", action="store_true", help="run the peers only")
    ap.add_argument("--no-peers", action="store_true", help="run nlpipe only")
    ap.add_argument("--repeat", type=int, default=1, help="timed rounds per command (best kept)")
    ap.add_argument("--work", help="folder for inputs and outputs (default /tmp/nlpipe-bench-ud-TREEBANK)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    return ap


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_udpipe"]:           # internal: one UDPipe 1 run (see udpipe_command)
        _run_udpipe(*argv[1:6])
        return 0
    a = build_parser().parse_args(argv)
    try:
        if a.repeat < 1:
            raise BenchError("--repeat must be at least 1")
        bad = [m for m in a.modes.split(",") if m not in MODES]
        if bad:
            raise BenchError(f"--modes: unknown {', '.join(bad)} (expected gold, raw)")
        out = run(a)
    except (BenchError, NlpipeError) as e:
        print(f"bench/ud.py: {e}", file=sys.stderr)
        return 2
    print(report(out["result"], out["names"]))
    if a.json:
        Path(a.json).write_text(json.dumps(out["result"], indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
