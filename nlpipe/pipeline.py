"""Running stages over files: one stage as a filter, or the whole chain in one process."""
from __future__ import annotations

from typing import Any, Iterable, Iterator, List, Optional

from .conllu_io import Sentence, open_input, open_output, read_conllu, write_conllu
from .errors import NlpipeError
from .stage import DEFAULT_MODELS, MODELS_DIR, STAGES, load_stage


def load_tokenizer(model: Optional[str] = None, method: Optional[str] = None, **options: Any) -> Any:
    if method == "rules" and model is None:
        model = "tokenize-rules-ewt"
    return load_stage("tokenize", model, **options)


def run_tokenize(input: str, output: str, model: Optional[str] = None, method: Optional[str] = None,
                 encoding_errors: str = "strict") -> int:
    """Tokenize a raw-text file into CoNLL-U; return the number of sentences written."""
    tokenizer = load_tokenizer(model, method)
    stream, name = open_input(input, encoding_errors)
    with open_output(output) as out:
        return write_conllu(tokenizer.tokenize(stream, name), out)


def run_stage(stage: str, input: str, output: str, model: Optional[str] = None, **options: Any) -> int:
    """Apply one stage to a CoNLL-U file; return the number of sentences written."""
    annotator = load_stage(stage, model, **options)
    stream, name = open_input(input)
    with open_output(output) as out:
        return write_conllu(annotator.annotate(read_conllu(stream, name)), out)


def available_stages() -> List[str]:
    """Stages that have a shipped default model, in pipeline order."""
    return [s for s in STAGES
            if any((MODELS_DIR / m / "config.json").is_file() for m in DEFAULT_MODELS.get(s, []))]


def run_annotate(inputs: List[str], output: str, stages: Optional[List[str]] = None, **options: Any) -> int:
    """Run ``stages`` (default: all with shipped models) in one process over each input."""
    stages = stages or available_stages()
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise NlpipeError(f"unknown stage(s) {', '.join(unknown)} (expected some of: {', '.join(STAGES)})")
    order = sorted(stages, key=STAGES.index)
    tokenizer = load_tokenizer() if "tokenize" in order else None
    annotators = [load_stage(s, None, **options) for s in order if s != "tokenize"]
    n = 0
    with open_output(output) as out:
        for path in inputs:
            stream, name = open_input(path)
            sents: Iterable[Sentence]
            sents = tokenizer.tokenize(stream, name) if tokenizer else read_conllu(stream, name)
            for a in annotators:
                sents = a.annotate(sents)
            n += write_conllu(sents, out)
    return n
