"""The chain on a string, for Python: ``nlpipe.Pipeline(lang="en")("Some text.")`` -> a Document.

The same stages, models, options and chain as ``nlpipe annotate`` (:mod:`nlpipe.runtime.chain`), so a
document's ``to_conllu()`` is what ``nlpipe annotate`` writes for the same text and name.
"""
from __future__ import annotations

import io
import warnings
from typing import Any, Dict, Iterable, List, Mapping, Union

from nlpipe.errors import ModelError, NlpipeError
from nlpipe.io.conllu import Sentence
from nlpipe.io.document import Document
from nlpipe.io.model_dir import UNDETERMINED
from nlpipe.registry import load_stage, model_language, pipeline_models, resolve_model
from nlpipe.runtime.chain import Pipeline as Chain, PipelineSpec, plan_chain, stage_options
from nlpipe.stages.tokenize import TEXT_MODES, SpaceTokenizer

Models = Union[None, str, Mapping[str, str]]


class Pipeline:
    """Load the stages once, then annotate strings: ``pipeline(text)`` returns a :class:`Document`.

    Args:
        lang: the language of the text; the models must be of it (or of undetermined language).
            ``"en"`` runs the shipped models; another language needs ``models``, or a folder of
            models named ``lang`` in ``$NLPIPE_MODELS`` (as ``nlpipe train pipeline`` writes it).
        stages: the stages to run (a list, or ``"tokenize,pos"``); default: every stage with a model.
        models: a folder of models (path or name in ``$NLPIPE_MODELS``), or ``{stage: model}``.
        device: where torch models run: ``"cpu"``, ``"cuda"`` or ``"auto"``.
        input: how ``pipeline(text)`` cuts the text: ``"raw"`` (sentences and tokens found),
            ``"sentences"`` (one a line) or ``"tokens"`` (one sentence a line, tokens split at spaces).
        options: passed to every stage's loader, as ``nlpipe annotate`` does (``batch`` excepted).
    """

    def __init__(self, lang: str = "en", stages: Union[None, str, Iterable[str]] = None, models: Models = None,
                 device: str = "cpu", input: str = "raw", **options: Any):
        if input not in TEXT_MODES:
            raise NlpipeError(f"input must be one of {', '.join(TEXT_MODES)}, not {input!r}")
        asked = [s.strip() for s in stages.split(",")] if isinstance(stages, str) else (
            list(stages) if stages is not None else None)
        chosen: Dict[str, str] = {}
        if isinstance(models, str):
            chosen = {s: str(p) for s, p in pipeline_models(models).items()}
        elif models is not None:
            chosen = dict(models)
        elif lang != "en":
            try:
                chosen = {s: str(p) for s, p in pipeline_models(lang).items()}
            except ModelError as e:
                raise ModelError(f"no models for language '{lang}': give models= (a folder of models, or "
                                 f"{{stage: model}}), or put a folder '{lang}' in $NLPIPE_MODELS ({e})") from None
        if asked:
            chosen = {s: m for s, m in chosen.items() if s in asked}
        names = plan_chain(asked, chosen)
        for s in names:
            found = model_language(resolve_model(s, chosen.get(s)))
            if found not in (lang, UNDETERMINED):
                raise NlpipeError(f"the {s} model is for language {found}, not {lang} (give models=...)")
        self.lang = lang
        self.input = input
        self.stages = names
        spec = PipelineSpec(names, chosen, dict(options, device=device))
        self._chain = Chain.load(spec)
        self._tokenizer = None
        if "tokenize" in names:
            self._tokenizer = (SpaceTokenizer() if input == "tokens" else
                               load_stage("tokenize", chosen.get("tokenize"), **stage_options("tokenize", spec)))

    def __call__(self, text: str, name: str = "<string>") -> Document:
        """Annotate ``text``; ``name`` makes the sent_ids (``<name>-1`` ...; default ``string-1``)."""
        if self._tokenizer is None:
            raise NlpipeError("this pipeline has no tokenize stage: give it sentences (annotate)")
        sentences = self._tokenizer.tokenize(io.StringIO(text, newline="\n"), name, self.input)
        return Document(self.annotate(sentences, name), text)

    def annotate(self, sentences: Iterable[Sentence], name: str = "<sentences>") -> List[Sentence]:
        """Run the stages after tokenize over CoNLL-U sentences (changed in place, and returned)."""
        out = list(sentences)
        self._chain.annotate(out, name, lambda message: warnings.warn(message, stacklevel=3))
        return out

    def __repr__(self) -> str:
        return f"Pipeline(lang={self.lang!r}, stages={self.stages!r})"
