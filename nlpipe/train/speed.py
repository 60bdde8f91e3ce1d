"""The speed a trained model's folder records (config ``training.speed``), which ``nlpipe models``
shows: its stage annotating the dev file's gold input in process, after loading, in words per CPU
second (CPU time, so that other jobs on the machine change it little; the best of two passes, the
first of which fills the model's caches)."""
from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any, Dict, List


def measure_speed(stage: str, model_dir: Path, gold: List[Any]) -> Dict[str, Any]:
    """``{"words_per_cpu_second": N, "on": what was measured}`` for the model in ``model_dir``."""
    from nlpipe.registry import load_stage
    from nlpipe.runtime.evaluate import strip_stage

    tagger = load_stage(stage, str(model_dir))
    words = sum(len(s.words) for s in gold)
    best = float("inf")
    for _ in range(2):
        inputs = strip_stage(stage, gold)
        start = time.process_time()
        for _ in tagger.annotate(inputs):
            pass
        best = min(best, time.process_time() - start)
    return {"words_per_cpu_second": round(words / max(best, 1e-9)),
            "on": f"nlpipe {stage} in process on the dev file's {words} words (gold input), "
                  f"{platform.machine()}, {os.cpu_count()} cores"}


def record_speed(stage: str, model_dir: Path, gold: List[Any]) -> Dict[str, Any]:
    """Measure the model (:func:`measure_speed`) and add the result to its ``config.json``."""
    from nlpipe.io.model_dir import read_config, write_config

    speed = measure_speed(stage, model_dir, gold)
    config = read_config(Path(model_dir))
    config["training"]["speed"] = speed
    write_config(Path(model_dir), config)
    return speed
