"""The ``parse`` stage: glue between CoNLL-U and the two parsers (loading, batching, predicting).

Reads FORM, UPOS and XPOS; writes HEAD and DEPREL (and with ``probs`` MISC ``HeadProb``). A parser
folder with a ``feats/`` subfolder (:mod:`nlpipe.models.tree_feats`) also re-decides, from the tree,
the FEATS of the words whose features the syntax decides, in sentences the tagger gave FEATS
(``feats=False`` leaves FEATS alone).

A biaffine model directory holds ``config.json`` (arch ``biaffine.v1``), ``vocab.json`` (words,
affixes, tags; the labels are config ``labels``, older models repeat them as ``rels``) and ``weights.pt`` (a plain tensor dict, loaded with ``weights_only=True``).
A transition parser directory (arch ``transition-dfs.v1``, :mod:`nlpipe.models.transition`) holds
``config.json``, ``vocab.json`` and ``weights.npz`` (sparse float16 template weights).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence

from nlpipe.nn.batching import batch_tokens_for, length_batches
from nlpipe.io.conllu import DEPREL, FEATS, FORM, HEAD, MISC, UPOS, XPOS, Sentence, misc_prob
from nlpipe.errors import STAGE_INPUT, InputError, NlpipeError
from nlpipe.nn.device import resolve_device
from nlpipe.models.biaffine import BiaffineModel, Example, _example
from nlpipe.models.tree_feats import TreeFeats
from nlpipe.stages.base import Adapter, cpu_threads, fill_in_chunks, map_batches

# ---------------------------------------------------------------------------------------------
# The stage

def load_tree_feats(model_dir: Path, feats: bool) -> Optional[TreeFeats]:
    """The FEATS classifier of a parser folder (None: it has none, or ``feats`` is off)."""
    return TreeFeats.load_optional(model_dir) if feats else None


def refine_feats(tree_feats: Optional[TreeFeats], parsed: List[Sentence]) -> None:
    """Re-decide the syntax-decided FEATS of the ``parsed`` sentences that have FEATS at all."""
    if tree_feats is not None:
        tree_feats.apply([s for s in parsed if any(w[FEATS] != "_" for w in s.words)])


def tagged_sentences(chunk: List[Sentence]) -> List[Sentence]:
    """The sentences of ``chunk`` that have words; an :class:`InputError` for one without POS tags
    (both parsers read them)."""
    todo = [s for s in chunk if s.words]
    for s in todo:
        if all(w[UPOS] == "_" and w[XPOS] == "_" for w in s.words):
            raise InputError(STAGE_INPUT, s.line or None, "sentence without POS tags (UPOS and XPOS are '_'); "
                                                        "the parser reads them: run 'nlpipe pos' first")
    return todo


def check_input(sentences: List[Sentence], **_: Any) -> None:
    """Both parsers read POS tags: an :class:`InputError` for a sentence without them."""
    tagged_sentences(sentences)


class ParseStage(Adapter, stage="parse"):
    """Predicts HEAD and DEPREL of every word; needs UPOS and XPOS."""

    # Scores grow with the square of the length (and the tree decoders faster): a longer sentence is
    # passed through with a warning naming it (see nlpipe.runtime.pipeline); HEAD refers to word IDs, so no windows.
    max_len = 500

    def __init__(self, model: BiaffineModel, projective: bool = False, probs: bool = False,
                 batch_tokens: int = 5000, workers: Optional[int] = None, tree_feats: Optional[TreeFeats] = None):
        """``workers``: batches parsed at once in threads, each on one core (default: on CPU,
        :func:`~nlpipe.stages.base.cpu_threads`; 1: one batch at a time); ``tree_feats``: the FEATS
        classifier run after the parse."""
        self.model = model
        self.tree_feats = tree_feats
        self.projective = projective
        self.probs = probs
        self.batch_tokens = batch_tokens
        if workers is None:
            workers = cpu_threads() if model.inference is not None or model.device.type == "cpu" else 1
        self.workers = max(1, workers)

    def _predict(self, examples: List[Example], batches: List[List[int]]) -> Iterable[list]:
        """Results of every batch, in order, ``workers`` at once (:func:`~nlpipe.stages.base.map_batches`)."""
        def run(batch: List[int]) -> list:
            return self.model.predict([examples[i] for i in batch], self.projective, self.probs)

        return map_batches(run, batches, self.workers, getattr(self.model, "torch", None))

    def _fill(self, chunk: List[Sentence]) -> None:
        todo = tagged_sentences(chunk)
        examples = [_example(s, "", False) for s in todo]
        batches = length_batches([len(e.forms) + 1 for e in examples], self.batch_tokens)  # + the root
        for batch, results in zip(batches, self._predict(examples, batches)):
            for i, (heads, rels, probs) in zip(batch, results):
                for k, w in enumerate(todo[i].words):
                    w[HEAD] = str(heads[k])
                    w[DEPREL] = rels[k]
                    if probs is not None:
                        w[MISC] = misc_prob(w[MISC], "HeadProb", probs[k])
        refine_feats(self.tree_feats, todo)

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        return fill_in_chunks(sentences, self._fill)


def load(model_dir: Path, config: Dict[str, Any], device: str = "cpu", projective: bool = False,
         probs: bool = False, batch_tokens: Optional[int] = None, workers: Optional[int] = None, feats: bool = True,
         int8: bool = False, **_: Any) -> ParseStage:
    """Loader of arch ``biaffine.v1``: ``device`` cpu|cuda|auto, ``projective`` (Eisner instead of
    Chu-Liu-Edmonds), ``probs`` (MISC HeadProb = the chosen head's marginal probability),
    ``workers`` (see :class:`ParseStage`), ``feats`` (run the folder's FEATS classifier),
    ``batch_tokens`` (default by device, :func:`~nlpipe.nn.batching.batch_tokens_for`). On the CPU the
    network runs in numpy unless ``projective`` or ``probs`` asks for torch's tree algorithms, or
    ``int8`` for the torch network in int8 (:mod:`nlpipe.nn.quantize`, CPU only)."""
    if int8 and device == "cuda":
        raise NlpipeError("--int8 runs the parser on the CPU; it does not go with --device cuda")
    device = "cpu" if int8 else resolve_device(device)
    model = BiaffineModel.load(Path(model_dir), config, device, numpy=not (projective or probs or int8))
    if int8:
        from nlpipe.nn.quantize import int8 as quantized

        model.net = quantized(model.net)
    return ParseStage(model, projective=projective, probs=probs, batch_tokens=batch_tokens_for(device, batch_tokens),
                      workers=workers, tree_feats=load_tree_feats(Path(model_dir), feats))


# ---------------------------------------------------------------------------------------------
# The transition parser (arch ``transition-dfs.v1``)

TRANSITION_ARCH = "transition-dfs.v1"
TRANSITION_BATCH = 4096   # sentences parsed in lockstep at most


class TransitionParseStage(Adapter, stage="parse"):
    """Predicts HEAD and DEPREL with the greedy transition parser (:mod:`nlpipe.models.transition`)."""

    max_len = 500

    def __init__(self, model: Any, margin: Optional[float] = None, checkpoints: Optional[Sequence[int]] = None,
                 batch_sentences: int = TRANSITION_BATCH, tree_feats: Optional[TreeFeats] = None):
        self.model = model
        self.tree_feats = tree_feats
        self.margin = None if margin is None or margin < 0 else float(margin)
        self.checkpoints = checkpoints
        self.batch_sentences = batch_sentences
        self.templates_used = 0   # running totals, for benchmarks and ``nlpipe eval``
        self.actions = 0

    def fill(self, chunk: List[Sentence]) -> None:
        """Write HEAD and DEPREL of every word of ``chunk`` (sentences without words are skipped)."""
        todo = tagged_sentences(chunk)
        # lockstep batches of similar length, so that short sentences do not wait for long ones
        todo.sort(key=lambda s: len(s.words))
        for start in range(0, len(todo), self.batch_sentences):
            part = todo[start:start + self.batch_sentences]
            inputs = [([w[FORM] for w in s.words], [w[UPOS] for w in s.words], [w[XPOS] for w in s.words])
                      for s in part]
            trees, used, actions = self.model.parse(inputs, self.margin, self.checkpoints)
            self.templates_used += used
            self.actions += actions
            for s, (heads, rels) in zip(part, trees):
                for w, h, r in zip(s.words, heads, rels):
                    w[HEAD] = str(h)
                    w[DEPREL] = r
        refine_feats(self.tree_feats, todo)

    @property
    def mean_templates(self) -> float:
        """Templates used per action so far."""
        return self.templates_used / self.actions if self.actions else 0.0

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        return fill_in_chunks(sentences, self.fill, self.batch_sentences)


def load_transition(model_dir: Path, config: Dict[str, Any], margin: Optional[float] = None,
                    checkpoints: Optional[str] = None, projective: bool = False, probs: bool = False,
                    feats: bool = True, int8: bool = False, **_: Any) -> TransitionParseStage:
    """Loader of arch ``transition-dfs.v1``: ``margin`` (dynamic feature selection; None or < 0: every
    template; default: the model's ``model.margin`` if set) and ``checkpoints`` (a schedule such as
    ``"4,8,16,32"``, see :func:`~nlpipe.linear.margin.checkpoint_schedule`). ``projective``,
    ``probs`` and ``int8`` belong to the biaffine parser and are refused; ``feats`` as in :func:`load`."""
    from nlpipe.linear.margin import checkpoint_schedule
    from nlpipe.models.transition.model import TransitionModel

    if projective or probs or int8:
        raise NlpipeError("--projective, --probs and --int8 are options of the biaffine parser, not the "
                          "transition parser")
    model = TransitionModel.load(Path(model_dir))
    settings = config.get("model", {})
    if margin is None:
        margin = settings.get("margin")
    try:
        schedule = checkpoint_schedule(checkpoints if checkpoints is not None else settings.get("checkpoints"))
    except ValueError as e:
        raise NlpipeError(str(e)) from None
    return TransitionParseStage(model, margin, schedule, tree_feats=load_tree_feats(Path(model_dir), feats))
