"""Stand-in stages for the annotate, parallel, distributed and robustness tests.

They let the pipeline machinery be tested before (and independently of) the real pos/parse/ner
models: small deterministic stages registered in ``nlpipe.registry.ARCHS`` with model directories in a
temporary folder. Every model option sits in the model's ``config.json`` so worker processes, Dask
workers and subprocesses (through :func:`subprocess_env`) load exactly the same stand-ins.

- pos (``standin-pos.v1``): UPOS from the form's shape, XPOS ``L<length>``; windowable.
- parse (``standin-parse.v1``): each word's head is the previous word; needs UPOS (fails without).
- ner (``standin-ner.v1``): reads whole documents: MISC ``Doc=<sentence number in its document>``
  and ``NE=B-X`` on capitalised words after the first.

Options in the model block: ``delay`` (seconds per sentence), ``max_len``, ``fail_marker`` (fail
once, while that file does not exist, then create it), ``load_log`` (append the pid at each load),
``die_unless_pid`` (end any other process abruptly: a worker dying under the main process).
"""
from __future__ import annotations

import os
import time
from itertools import islice
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator

from nlpipe.io.conllu import DEPREL, FORM, HEAD, MISC, UPOS, XPOS, Sentence, misc_set
from nlpipe.io.model_dir import write_config
from nlpipe.io.provenance import training_block

MODULE = "test_annotate_standins"
TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
STANDIN_ARCHS = {
    "standin-pos.v1": f"{MODULE}:load",
    "standin-parse.v1": f"{MODULE}:load",
    "standin-ner.v1": f"{MODULE}:load",
}
STAGE_OF = {"standin-pos.v1": "pos", "standin-parse.v1": "parse", "standin-ner.v1": "ner"}


class Standin:
    """Base: batches of 3 sentences (like a real stage that reads ahead), optional delay and failure."""

    requires: frozenset = frozenset()
    provides: frozenset = frozenset()

    def __init__(self, name: str, options: Dict[str, Any]):
        self.name = name
        self.delay = float(options.get("delay", 0))
        self.max_len = options.get("max_len")
        self.fail_marker = options.get("fail_marker")
        self.die_pid = options.get("die_unless_pid")

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        it = iter(sentences)
        while True:
            batch = list(islice(it, 3))
            if not batch:
                return
            for s in batch:
                self._maybe_fail()
                if self.delay:
                    time.sleep(self.delay)
                self.fill(s)
            yield from batch

    def _maybe_fail(self) -> None:
        if self.die_pid is not None and os.getpid() != self.die_pid:
            os._exit(9)  # a worker process dies as if killed
        if self.fail_marker:
            # exactly one task fails, even when two workers get here at the same time
            try:
                fd = os.open(self.fail_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.close(fd)
            raise RuntimeError("stand-in failure (first try)")

    def fill(self, sentence: Sentence) -> None:
        raise NotImplementedError


class Tagger(Standin):
    windowable = True

    def fill(self, sentence: Sentence) -> None:
        for w in sentence.words:
            f = w[FORM]
            w[UPOS] = "PROPN" if f[:1].isupper() else "NOUN" if f[:1].isalnum() else "PUNCT"
            w[XPOS] = f"L{len(f)}"


class Parser(Standin):
    def fill(self, sentence: Sentence) -> None:
        for i, w in enumerate(sentence.words):
            if w[UPOS] == "_":
                raise RuntimeError("stand-in parser needs UPOS")
            w[HEAD] = str(i)
            w[DEPREL] = "root" if i == 0 else "dep:" + w[UPOS].lower()


class DocTagger(Standin):
    document = True

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        self._k = 0
        return super().annotate(sentences)

    def fill(self, sentence: Sentence) -> None:
        if sentence.meta("newdoc") is not None:
            self._k = 0
        self._k += 1
        for i, w in enumerate(sentence.words):
            misc = misc_set(w[MISC], "Doc", str(self._k))
            w[MISC] = misc_set(misc, "NE", "B-X" if i and w[FORM][:1].isupper() else None)


CLASSES = {"pos": Tagger, "parse": Parser, "ner": DocTagger}


def load(model_dir: Path, config: Dict[str, Any], **options: Any) -> Standin:
    """The loader named in ARCHS for every stand-in."""
    model = config.get("model", {})
    if model.get("load_log"):
        with open(model["load_log"], "a") as f:
            f.write(f"{os.getpid()}\n")
    stage = STAGE_OF[config["arch"]]
    return CLASSES[stage](stage, model)


def model_path(root: Path, stage: str, **options: Any) -> Path:
    """Where :func:`make_model` puts the stand-in model for ``stage`` with ``options``."""
    return root / (f"standin-{stage}" + "".join(f"-{k}{v}" for k, v in sorted(options.items())
                                                 if k not in ("load_log", "fail_marker", "die_unless_pid")))


def make_model(root: Path, stage: str, **options: Any) -> Path:
    """Write a stand-in model directory for ``stage`` under ``root``; returns its path."""
    path = model_path(root, stage, **options)
    write_config(path, {"stage": stage, "arch": f"standin-{stage}.v1", "language": "und", "model": options,
                        "training": training_block({}, {}, command="(a test's stand-in)")})
    return path


def install(root: Path, monkeypatch: Any = None, stages: Iterable[str] = ("pos", "parse", "ner"),
            **options: Any) -> Dict[str, Path]:
    """Register the stand-ins and make them the default models of ``stages`` (through ``monkeypatch``
    when given, so the test undoes it). Returns the model directory of each stage."""
    dirs = {s: make_model(root, s, **options) for s in stages}
    register(dirs, monkeypatch)
    return dirs


def register(dirs: Dict[str, Path], monkeypatch: Any = None) -> None:
    """Add the stand-in architectures and make ``dirs`` (stage -> model dir) the default models.
    The real predicates/srl models are unset as defaults, so the default chain is exactly the
    stand-ins in this process, its worker processes and subprocesses alike."""
    from nlpipe import registry

    defaults = {s: [str(d)] for s, d in dirs.items()}
    defaults.update({s: [] for s in ("predicates", "srl") if s not in dirs})
    for table, items in ((registry.ARCHS, STANDIN_ARCHS), (registry.DEFAULT_MODELS, defaults)):
        for key, value in items.items():
            if monkeypatch is not None:
                monkeypatch.setitem(table, key, value)
            else:
                table[key] = value


def subprocess_env(tmp_path: Path, root: Path, stages: Iterable[str] = ("pos", "parse", "ner"),
                   **options: Any) -> Dict[str, str]:
    """Environment for a subprocess (``nlpipe ...``, make) in which the stand-ins are installed: the
    models are written here, and a ``sitecustomize`` module on PYTHONPATH registers them at start-up."""
    for s in stages:
        make_model(root, s, **options)
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(
        "import json, os, sys\n"
        f"sys.path.insert(0, {str(TESTS)!r})\n"
        f"import {MODULE} as m\n"
        "from pathlib import Path\n"
        "root, options = Path(os.environ['NLPIPE_STANDINS']), json.loads(os.environ['NLPIPE_STANDIN_OPTIONS'])\n"
        "m.register({s: m.model_path(root, s, **options) for s in json.loads(os.environ['NLPIPE_STANDIN_STAGES'])})\n")
    import json

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["NLPIPE_STANDINS"] = str(root)
    env["NLPIPE_STANDIN_STAGES"] = json.dumps(list(stages))
    env["NLPIPE_STANDIN_OPTIONS"] = json.dumps(options)
    return env


def test_standins_load_through_the_registry(tmp_path, monkeypatch):
    from nlpipe.io.conllu import parse_string
    from nlpipe.registry import load_stage

    install(tmp_path, monkeypatch)
    sents = parse_string("1\tA\t_\t_\t_\t_\t_\t_\t_\t_\n2\tdog\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    for stage in ("pos", "parse", "ner"):
        sents = list(load_stage(stage).annotate(sents))
    assert [w[UPOS] for w in sents[0].words] == ["PROPN", "NOUN"]
    assert [w[HEAD] for w in sents[0].words] == ["0", "1"]
    assert sents[0].words[0][MISC] == "Doc=1"


def test_standin_parser_fails_without_pos(tmp_path, monkeypatch):
    import pytest
    from nlpipe.io.conllu import parse_string
    from nlpipe.registry import load_stage

    install(tmp_path, monkeypatch)
    with pytest.raises(RuntimeError):
        list(load_stage("parse").annotate(parse_string("1\tA\t_\t_\t_\t_\t_\t_\t_\t_\n\n")))
