"""The loaded chain: which stages run, with which options, and how one chunk of sentences goes
through them (``--keep-existing``), the same in every process.

A stage may declare ``max_len`` (words): a longer sentence is annotated window by window when the
stage declares ``windowable = True`` (its columns do not refer to word IDs), otherwise it is passed
through unannotated by that stage with a warning naming its sent_id.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from nlpipe.errors import InputError, NlpipeError
from nlpipe.io.conllu import DEPS, HEAD, ID, Sentence
from nlpipe.io.model_dir import UNDETERMINED
from nlpipe.registry import DEFAULT_MODELS, MODELS_DIR, STAGES, gives_probs, load_stage, model_language, resolve_model
from nlpipe.stages.base import COLUMNS

Warn = Callable[[str], None]



def available_stages() -> List[str]:
    """Stages that have a shipped default model, in pipeline order."""
    return [s for s in STAGES
            if any((MODELS_DIR / m / "config.json").is_file() for m in DEFAULT_MODELS.get(s, []))]


def resolve_stages(stages: Optional[Iterable[str]]) -> List[str]:
    """Check stage names and put them in pipeline order (default: every stage with a shipped model)."""
    chosen = list(stages) if stages else available_stages()
    unknown = [s for s in chosen if s not in STAGES]
    if unknown:
        raise NlpipeError(f"unknown stage(s) {', '.join(unknown)} (expected some of: {', '.join(STAGES)})")
    return sorted(set(chosen), key=STAGES.index)


def default_stages(models: Dict[str, str]) -> List[str]:
    """The stages a chain runs when none are named: those with a model in ``models``, and those whose
    shipped default is in the language of these models (every shipped stage when they name none,
    e.g. when no model is given or all were trained without ``--lang``)."""
    languages = {model_language(resolve_model(s, m)) for s, m in models.items()} - {UNDETERMINED}
    shipped = [s for s in available_stages()
               if not languages or model_language(resolve_model(s, None)) in languages]
    return resolve_stages(list(models) + shipped)


def check_languages(stages: Iterable[str], models: Dict[str, str]) -> None:
    """Refuse a chain whose models record different languages (``und`` goes with any), in one line
    naming each stage's model and language."""
    found = [(s, resolve_model(s, models.get(s))) for s in stages]
    langs = [(s, path, model_language(path)) for s, path in found]
    if len({lang for _, _, lang in langs} - {UNDETERMINED}) > 1:
        listed = ", ".join(f"{s} {models.get(s, path.name)} ({lang})" for s, path, lang in langs)
        raise NlpipeError(f"the models are of different languages: {listed}; give models of one language "
                          f"(--model STAGE=M, --models DIR, --stages) or --allow-mixed-languages")


def plan_chain(stages: Optional[Iterable[str]], models: Dict[str, str], allow_mixed: bool = False) -> List[str]:
    """The stages to run, in pipeline order: ``stages``, or the default for the models' language
    (:func:`default_stages`); models of different languages are refused unless ``allow_mixed``."""
    chosen = resolve_stages(stages) if stages else default_stages(models)
    if not allow_mixed:
        check_languages(chosen, models)
    return chosen


# ----------------------------------------------------------------------------------------------
# --keep-existing: is a sentence's column for a stage already filled?

def is_filled(stage: Any, sentence: Sentence) -> bool:
    """Whether ``sentence`` already has ``stage``'s columns (its ``columns``, else those that
    :data:`nlpipe.stages.base.COLUMNS` declares for its name)."""
    columns = getattr(stage, "columns", None) or COLUMNS.get(getattr(stage, "name", ""))
    return columns is not None and columns.filled(sentence)


# ----------------------------------------------------------------------------------------------
# Sentences longer than a stage's limit

def describe(sentence: Sentence, path: str) -> str:
    """``sentence <sent_id> (file:line)`` for messages."""
    where = f"{path}:{sentence.line}" if sentence.line else path
    sid = sentence.sent_id
    return f"sentence {sid} ({where})" if sid is not None else f"sentence at {where}"


def annotate_windowed(stage: Any, sentences: List[Sentence], limit: int) -> None:
    """Annotate each sentence in windows of at most ``limit`` words, in one call of the stage.

    Each window is a copy of the words renumbered from 1 (HEAD and DEPS blanked, since they refer to
    IDs); afterwards every column but ID, HEAD and DEPS is copied back to the sentence's words.
    """
    pieces: List[Tuple[List[List[str]], Sentence]] = []
    for sent in sentences:
        words = sent.words
        for a in range(0, len(words), limit):
            part = words[a:a + limit]
            rows = []
            for k, w in enumerate(part, 1):
                r = list(w)
                r[ID], r[HEAD], r[DEPS] = str(k), "_", "_"
                rows.append(r)
            pieces.append((part, Sentence([], rows)))
    done = list(stage.annotate([win for _, win in pieces]))
    if len(done) != len(pieces):
        raise RuntimeError(f"stage {stage.name} returned {len(done)} sentences for {len(pieces)}")
    keep = (ID, HEAD, DEPS)
    for (part, _), win in zip(pieces, done):
        for w, r in zip(part, win.words):
            for c in range(len(w)):
                if c not in keep:
                    w[c] = r[c]


# ----------------------------------------------------------------------------------------------
# The loaded chain

@dataclass
class PipelineSpec:
    """What to load: picklable, so worker processes and Dask workers build the same pipeline."""

    stages: List[str]
    models: Dict[str, str] = field(default_factory=dict)
    options: Dict[str, Any] = field(default_factory=dict)
    keep_existing: bool = False
    skip_bad: bool = False

    def key(self) -> str:
        return repr((self.stages, sorted(self.models.items()), sorted(self.options.items()),
                     self.keep_existing, self.skip_bad))


def chain_stages(spec: PipelineSpec) -> List[str]:
    """The stages to load for a chain, tokenize excluded. ``predicates`` is dropped before an ``srl``
    stage with the same model: srl predicts the same predicates itself, so the model runs once."""
    stages = [s for s in spec.stages if s != "tokenize"]
    if "predicates" in stages and "srl" in stages and spec.models.get("predicates") == spec.models.get("srl"):
        stages.remove("predicates")
    return stages


def chain_options(stage: str, spec: PipelineSpec) -> Dict[str, Any]:
    """Options a stage takes from its place in the chain: ``srl`` after ``parse`` attends to that
    parse (the shell equivalent is ``nlpipe parse | nlpipe srl --parse-from-input``); with
    ``keep_existing``, ``parse`` leaves FEATS alone (they may be the input's own)."""
    if stage == "srl" and "parse" in spec.stages and "parse_from_input" not in spec.options:
        return {"parse_from_input": True}
    if stage == "parse" and spec.keep_existing:
        return {"feats": False}
    return {}


def stage_options(stage: str, spec: PipelineSpec) -> Dict[str, Any]:
    """The options ``stage`` is loaded with: the chain's (``probs`` only where its model gives
    confidences, see :func:`without_probs`) and those of its place in the chain (:func:`chain_options`)."""
    options = dict(spec.options)
    if options.get("probs") and stage in without_probs([stage], spec.models):
        del options["probs"]
    return {**options, **chain_options(stage, spec)}


def without_probs(stages: Iterable[str], models: Dict[str, str]) -> List[str]:
    """The ``stages`` whose model gives no confidences (``annotate --probs`` runs them without)."""
    return [s for s in stages if not gives_probs(s, models.get(s))]


def shell_equivalent(spec: PipelineSpec) -> List[List[str]]:
    """The single-stage commands (``nlpipe`` arguments, tokenize excluded) whose shell pipe writes
    the same bytes as the chain: ``[["pos"], ["parse"], ["srl", "--parse-from-input"]]``."""
    commands = []
    for stage in chain_stages(spec):
        args = [stage] + (["--model", spec.models[stage]] if stage in spec.models else [])
        for key, value in chain_options(stage, spec).items():
            if value is True:
                args.append("--" + key.replace("_", "-"))
        commands.append(args)
    return commands


def chain_tokenizer(spec: PipelineSpec) -> Any:
    """The tokenize stage of a chain (its model and options)."""
    return load_stage("tokenize", spec.models.get("tokenize"), **stage_options("tokenize", spec))


class Pipeline:
    """Loaded stages (tokenize excluded) that annotate chunks of sentences in place."""

    def __init__(self, annotators: List[Any], keep_existing: bool = False, skip_bad: bool = False,
                 spec: Optional[PipelineSpec] = None):
        self.annotators = annotators
        self.keep_existing = keep_existing
        self.skip_bad = skip_bad
        self.spec = spec
        self._tokenizer: Any = None

    @classmethod
    def load(cls, spec: PipelineSpec) -> "Pipeline":
        annotators = [load_stage(s, spec.models.get(s), **stage_options(s, spec)) for s in chain_stages(spec)]
        return cls(annotators, spec.keep_existing, spec.skip_bad, spec)

    @property
    def tokenizer(self) -> Any:
        """The chain's tokenize stage, loaded when first asked for (chunks of raw text); None
        without one."""
        if self._tokenizer is None and self.spec is not None and "tokenize" in self.spec.stages:
            self._tokenizer = chain_tokenizer(self.spec)
        return self._tokenizer

    @property
    def document(self) -> bool:
        """Whether some stage reads whole documents (chunks then end at ``# newdoc``)."""
        return any(getattr(a, "document", False) for a in self.annotators)

    def annotate(self, sentences: List[Sentence], path: str, warn: Warn) -> None:
        """Run every stage over ``sentences`` (replaced in the list if a stage yields new objects)."""
        try:
            for stage in self.annotators:
                self._run_stage(stage, sentences, path, warn)
        except InputError as e:   # a stage names no file: this is the file it read
            raise e.at(path) from None

    def _run_stage(self, stage: Any, sentences: List[Sentence], path: str, warn: Warn) -> None:
        limit = getattr(stage, "max_len", None)
        todo: List[int] = []
        long: List[int] = []
        for i, s in enumerate(sentences):
            if self.keep_existing and is_filled(stage, s):
                continue
            (long if limit is not None and len(s.words) > limit else todo).append(i)
        if todo:
            out = list(stage.annotate(sentences[i] for i in todo))
            if len(out) != len(todo):
                raise RuntimeError(f"stage {stage.name} returned {len(out)} sentences for {len(todo)}")
            for i, s in zip(todo, out):
                sentences[i] = s
        if long:
            if getattr(stage, "windowable", False):
                annotate_windowed(stage, [sentences[i] for i in long], limit)
                for i in long:
                    warn(f"{describe(sentences[i], path)}: {len(sentences[i].words)} words, more than "
                         f"the {stage.name} model's limit of {limit}; annotated in windows")
            else:
                for i in long:
                    warn(f"{describe(sentences[i], path)}: {len(sentences[i].words)} words, more than "
                         f"the {stage.name} model's limit of {limit}; passed through without {stage.name}")
