"""The model-directory format: ``config.json`` (``stage``, ``arch``, ``format``, label sets,
hyper-parameters, a ``training`` block) beside weight files in plain formats."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Optional

from nlpipe.errors import ModelError

MODEL_FORMAT = 1


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
