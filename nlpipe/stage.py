"""The Stage protocol, model directories (config.json + plain weights) and the closed registry.

A stage object has ``name``, ``requires``, ``provides`` and ``annotate(sentences)``, which yields the
same sentences with only the stage's own columns changed. The tokenizer is the one stage whose
input is raw text: it has ``tokenize(stream, name)`` instead of taking sentences.

Models are directories holding ``config.json`` (``stage``, ``arch``, ``format``, label sets,
hyper-parameters and a ``training`` block with data and scores) and weight files in plain formats
(JSON, ``.npz`` loaded with ``allow_pickle=False``, torch tensors loaded with ``weights_only=True``).
Architectures are looked up in the closed table :data:`ARCHS`, never imported from the model file.
"""
from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Protocol

from .conllu_io import Sentence
from .errors import ModelError, NlpipeError

STAGES = ("tokenize", "pos", "parse", "ner", "predicates", "srl")
MODEL_FORMAT = 1
MODELS_DIR = Path(__file__).resolve().parent / "models"

# arch name (versioned) -> "module:loader"; the loader takes (model_dir, config, **options).
ARCHS: Dict[str, str] = {
    "punkt-treebank.v1": "nlpipe.stages.tokenize:load_rules",
    "dfs-tagger.v1": "nlpipe.stages.pos:load",
    "idcnn.v1": "nlpipe.stages.ner:load",
    "bilstm.v1": "nlpipe.stages.ner:load",
    "biaffine.v1": "nlpipe.stages.parse:load",
    "transition-dfs.v1": "nlpipe.stages.parse:load_transition",
    "char-segmenter.v1": "nlpipe.stages.tokenize:load_trained",
    "lisa.v1": "nlpipe.stages.srl:load",
}

# stage -> shipped model name under MODELS_DIR, in order of preference.
DEFAULT_MODELS: Dict[str, List[str]] = {
    "tokenize": ["tokenize-char-ewt", "tokenize-rules-ewt"],
    "pos": ["pos-ewt"],
    "parse": ["parse-biaffine-ewt"],
    "ner": ["ner-uner-ewt"],
    "predicates": ["srl-lisa-ewt"],
    "srl": ["srl-lisa-ewt"],
}


def fill_in_chunks(sentences: Iterable[Sentence], fill: Callable[[List[Sentence]], None],
                   size: int) -> Iterator[Sentence]:
    """Annotate a stream chunk by chunk: ``fill`` annotates up to ``size`` sentences in place (a
    batching stage sorts them by length inside the chunk), then they are yielded in input order."""
    chunk: List[Sentence] = []
    for s in sentences:
        chunk.append(s)
        if len(chunk) >= size:
            fill(chunk)
            yield from chunk
            chunk = []
    if chunk:
        fill(chunk)
        yield from chunk


class Stage(Protocol):
    name: str
    requires: frozenset
    provides: frozenset

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        ...


def shipped_models() -> List[Path]:
    """Directories of the models shipped with the package."""
    if not MODELS_DIR.is_dir():
        return []
    return sorted(p for p in MODELS_DIR.iterdir() if (p / "config.json").is_file())


def resolve_model(stage: str, model: Optional[str]) -> Path:
    """Find the model directory for ``stage``: a path, a shipped model's name, or the default."""
    if stage not in STAGES:
        raise NlpipeError(f"unknown stage '{stage}' (expected one of: {', '.join(STAGES)})")
    if model is None:
        for name in DEFAULT_MODELS.get(stage, []):
            if (MODELS_DIR / name / "config.json").is_file():
                return MODELS_DIR / name
        raise NlpipeError(f"no model for stage {stage} yet")
    p = Path(model)
    if p.exists():
        return p
    if (MODELS_DIR / model).is_dir():
        return MODELS_DIR / model
    raise ModelError(f"{model}: no such model (neither a directory nor a shipped model; see 'nlpipe models')")


def read_config(model_dir: Path, stage: Optional[str] = None) -> Dict[str, Any]:
    """Read and check ``config.json`` of a model directory."""
    path = Path(model_dir) / "config.json"
    if not path.is_file():
        raise ModelError(f"{model_dir}: not a model directory (no config.json)")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ModelError(f"{path}: corrupt model configuration ({e})") from None
    if not isinstance(config, dict) or "stage" not in config or "arch" not in config:
        raise ModelError(f"{path}: not an nlpipe model configuration (no 'stage'/'arch')")
    fmt = config.get("format")
    if fmt != MODEL_FORMAT:
        raise ModelError(f"{path}: model format {fmt!r}, this nlpipe reads format {MODEL_FORMAT}; "
                         f"retrain or use a matching nlpipe version")
    # A model may serve further stages (LISA predicts predicates and roles): config "also_stages".
    if stage is not None and config["stage"] != stage and stage not in config.get("also_stages", []):
        raise ModelError(f"{model_dir}: a model for stage '{config['stage']}', not '{stage}'")
    return config


def write_config(model_dir: Path, config: Dict[str, Any]) -> None:
    """Write ``config.json`` (adds the format version)."""
    os.makedirs(model_dir, exist_ok=True)
    config = dict(config, format=MODEL_FORMAT)
    with open(Path(model_dir) / "config.json", "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1, ensure_ascii=False, sort_keys=False)
        f.write("\n")


def load_stage(stage: str, model: Optional[str] = None, **options: Any) -> Any:
    """Load the stage object for ``stage`` from ``model`` (a path or shipped name) or the default."""
    model_dir = resolve_model(stage, model)
    config = read_config(model_dir, stage)
    target = ARCHS.get(config["arch"])
    if target is None:
        raise ModelError(f"{model_dir}: unknown architecture '{config['arch']}' for this nlpipe version")
    module, func = target.split(":")
    loader = getattr(importlib.import_module(module), func)
    # the loader sees which stage is asked for (a model with "also_stages" serves several)
    return loader(model_dir, dict(config, stage=stage), **options)
