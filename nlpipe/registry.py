"""The closed registry: stage names, architectures, shipped models, and loading a stage.

Models are directories (:mod:`nlpipe.io.model_dir`, the one reader and writer) holding ``config.json``
(``stage``, ``arch``, ``format``, ``language``, label sets, hyper-parameters and a ``training`` block:
data files with sha256, command, nlpipe version, date, scores) and weight files in plain formats
(JSON, ``.npz`` loaded with ``allow_pickle=False``, torch tensors loaded with ``weights_only=True``).
Architectures are looked up in the closed table :data:`ARCHS`, never imported from the model file.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from nlpipe.errors import ModelError, NlpipeError
from nlpipe.io.model_dir import read_config

STAGES = ("tokenize", "pos", "parse", "ner", "predicates", "srl")
MODELS_DIR = Path(__file__).resolve().parent / "shipped"
MODELS_PATH = "NLPIPE_MODELS"   # environment: the user's folders of models, os.pathsep-separated

# arch name (versioned) -> "module:loader"; the loader takes (model_dir, config, **options).
ARCHS: Dict[str, str] = {
    "punkt-treebank.v1": "nlpipe.stages.tokenize:load_rules",
    "dfs-tagger.v1": "nlpipe.stages.pos:load",
    "bilstm-tagger.v1": "nlpipe.stages.pos_bilstm:load",
    "idcnn.v1": "nlpipe.stages.ner:load",
    "bilstm.v1": "nlpipe.stages.ner:load",
    "biaffine.v1": "nlpipe.stages.parse:load",
    "transition-dfs.v1": "nlpipe.stages.parse:load_transition",
    "char-segmenter.v1": "nlpipe.stages.tokenize:load_trained",
    "lisa.v1": "nlpipe.stages.srl:load",
}

# architectures whose stage writes confidences in MISC when loaded with ``probs=True`` (``--probs``);
# the others have none: a single-stage command refuses the flag, ``annotate --probs`` runs them without
CONFIDENCES = frozenset({"char-segmenter.v1", "dfs-tagger.v1", "bilstm-tagger.v1", "idcnn.v1", "bilstm.v1",
                         "biaffine.v1", "lisa.v1"})

# stage -> "module:function" that checks a stage's input without its model, so that a wrong input is
# refused before the model loads; the function takes (sentences, **options) and raises an InputError.
INPUT_CHECKS: Dict[str, str] = {
    "parse": "nlpipe.stages.parse:check_input",
    "srl": "nlpipe.stages.srl:check_input",
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


def model_stages(config: Dict[str, Any]) -> List[str]:
    """The stages a model serves: its stage and its ``also_stages``."""
    return [config["stage"]] + [s for s in config.get("also_stages", []) if s != config["stage"]]


def model_language(model_dir: Path) -> str:
    """The language code a model records (``"und"``: undetermined)."""
    return read_config(model_dir)["language"]


def user_model_roots(extra: Sequence[str] = ()) -> List[Path]:
    """The user's folders of models: those of the ``NLPIPE_MODELS`` path, then ``extra``."""
    listed = [p for p in os.environ.get(MODELS_PATH, "").split(os.pathsep) if p]
    return [Path(p) for p in listed + list(extra)]


def models_under(root: Path, depth: int = 2) -> List[Path]:
    """Model directories at or under ``root`` (the folder itself when it is one; else its
    subfolders, ``depth`` levels down: a folder of pipelines holds folders of models)."""
    root = Path(root)
    if (root / "config.json").is_file():
        return [root]
    if depth <= 0 or not root.is_dir():
        return []
    return [m for sub in sorted(p for p in root.iterdir() if p.is_dir()) for m in models_under(sub, depth - 1)]


def missing_model_roots() -> List[Path]:
    """The folders of ``NLPIPE_MODELS`` that are not there (commands warn about them)."""
    return [p for p in user_model_roots() if not p.is_dir()]


def find_pipeline(folder: str) -> Path:
    """A folder of models: a name (no path separator) is looked for in the ``NLPIPE_MODELS`` folders
    first, then here; a path only where it says. Not found: an error naming every place looked at."""
    p = Path(folder)
    bare = not any(sep and sep in folder for sep in (os.sep, os.altsep)) and folder not in (".", "..")
    looked = [root / folder for root in user_model_roots()] if bare else []
    for candidate in looked + [p]:
        if candidate.is_dir():
            return candidate
    places = ", ".join(str(c) for c in looked + [p])
    raise ModelError(f"{folder}: no such folder of models (looked for {places})")


def pipeline_models(folder: str) -> Dict[str, Path]:
    """Stage -> model directory for a folder of model folders (as ``nlpipe train pipeline`` writes).
    Where several models serve one stage, the folder named after the stage does (``parse``, not
    ``parse-transition``); without one, that is an error naming them."""
    root = find_pipeline(folder)
    serving: Dict[str, List[Path]] = {}
    for path in models_under(root, depth=1):
        for stage in model_stages(read_config(path)):
            serving.setdefault(stage, []).append(path)
    if not serving:
        raise ModelError(f"{root}: no model folders in it (folders with a config.json)")
    chosen: Dict[str, Path] = {}
    for stage in STAGES:
        paths = serving.get(stage, [])
        named = [p for p in paths if p.name == stage]
        if len(paths) == 1 or named:
            chosen[stage] = (named or paths)[0]
        elif paths:
            raise ModelError(f"{root}: several models for stage {stage} ({', '.join(p.name for p in paths)}) and "
                             f"none named {stage}; choose one with --model {stage}=PATH")
    return chosen


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


# the architectures of the fast taggers (``nlpipe pos --fast``)
FAST_TAGGER_ARCHS = frozenset({"dfs-tagger.v1"})
FAST_SUFFIX = "-fast"


def fast_tagger(model_dir: Path) -> Path:
    """The fast tagger that goes with the tagger ``model_dir``: the folder itself where it is one,
    else the folder beside it named with :data:`FAST_SUFFIX` (the shipped ``pos-ewt-fast``, the
    ``pos-fast`` of ``nlpipe train pipeline``)."""
    model_dir = Path(model_dir)
    if read_config(model_dir, "pos")["arch"] in FAST_TAGGER_ARCHS:
        return model_dir
    sibling = model_dir.parent / (model_dir.name + FAST_SUFFIX)
    if (sibling / "config.json").is_file() and read_config(sibling, "pos")["arch"] in FAST_TAGGER_ARCHS:
        return sibling
    raise ModelError(f"--fast: {model_dir} is not a fast tagger and has none beside it ({sibling})")


def load_stage(stage: str, model: Optional[str] = None, **options: Any) -> Any:
    """Load the stage object for ``stage`` from ``model`` (a path or shipped name) or the default."""
    model_dir = resolve_model(stage, model)
    config = read_config(model_dir, stage)
    target = ARCHS.get(config["arch"])
    if target is None:
        raise ModelError(f"{model_dir}: unknown architecture '{config['arch']}' for this nlpipe version")
    module, func = target.split(":")
    if options.get("probs") and config["arch"] not in CONFIDENCES:
        raise _no_confidences(stage, model_dir, config["arch"])
    loader = getattr(importlib.import_module(module), func)
    # the loader sees which stage is asked for (a model with "also_stages" serves several)
    loaded = loader(model_dir, dict(config, stage=stage), **options)
    loaded.language = config["language"]   # whoever holds the stage can tell what language it expects
    return loaded


def gives_probs(stage: str, model: Optional[str] = None) -> bool:
    """Whether ``stage``'s model (see :func:`resolve_model`) writes confidences with ``--probs``."""
    return read_config(resolve_model(stage, model), stage)["arch"] in CONFIDENCES


def check_probs(stage: str, model: Optional[str] = None) -> None:
    """Refuse ``--probs`` for a model that gives no confidences (a single-stage command)."""
    model_dir = resolve_model(stage, model)
    arch = read_config(model_dir, stage)["arch"]
    if arch not in CONFIDENCES:
        raise _no_confidences(stage, model_dir, arch)


def _no_confidences(stage: str, model_dir: Path, arch: str) -> NlpipeError:
    return NlpipeError(f"--probs: the {stage} model {model_dir.name} ({arch}) gives no confidences; leave --probs out")


def check_stage_input(stage: str, sentences: Sequence[Any], **options: Any) -> None:
    """Refuse ``sentences`` (the first of an input) that ``stage`` cannot read, before any model
    loads (an :class:`~nlpipe.errors.InputError`); stages without a check accept anything here."""
    target = INPUT_CHECKS.get(stage)
    if target is None:
        return
    module, name = target.split(":")
    getattr(importlib.import_module(module), name)(sentences, **options)
