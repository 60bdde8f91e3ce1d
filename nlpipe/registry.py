"""The closed registry: stage names, architectures, shipped models, and loading a stage.

Models are directories (:mod:`nlpipe.io.model_dir`, the one reader and writer) holding ``config.json``
(``stage``, ``arch``, ``format``, ``language``, label sets, hyper-parameters and a ``training`` block:
data files with sha256, command, nlpipe version, date, scores) and weight files in plain formats
(JSON, ``.npz`` loaded with ``allow_pickle=False``, torch tensors loaded with ``weights_only=True``).
Architectures are looked up in the closed table :data:`ARCHS`, never imported from the model file.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Dict, List, Optional

from nlpipe.errors import ModelError, NlpipeError
from nlpipe.io.model_dir import read_config

STAGES = ("tokenize", "pos", "parse", "ner", "predicates", "srl")
MODELS_DIR = Path(__file__).resolve().parent / "shipped"

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
