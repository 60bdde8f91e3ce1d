"""The ``predicates`` and ``srl`` stages: one LISA model (arch ``lisa.v1``) serving both.

Reads FORM (and LEMMA for senses; HEAD with ``parse_from_input``; ``Pred=`` with
``predicates_from_input``); writes MISC ``Pred=`` (``predicates``) or ``Pred=`` and ``SRL=`` (``srl``),
and with ``probs`` ``PredProb=`` on the predicates it predicts (not on those the input gives), and with
``write_parse`` HEAD and DEPREL: the model's own best tree (Chu-Liu-Edmonds over its syntactic head's
arc scores, whatever that head attended to) labelled by its label scorer (``root`` for the root word
only). Sentences are read in chunks, sorted by length and run in batches; role labels of all
predicates of a batch are decoded together by the BIO-constrained Viterbi of :mod:`nlpipe.decode.chain`.

A model directory holds ``config.json``, ``vocab.json`` (words, joint POS/predicate tags, dependency
labels, sense tables; the BIO role labels are config ``labels``, older models repeat them as ``roles``) and ``weights.pt`` (plain tensors, ``weights_only=True``).
Predicate senses: the most frequent roleset of the lemma (LEMMA column, else the lower-cased form)
in the training data, else ``lemma.01``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional

from nlpipe.nn.batching import batch_tokens_for, length_batches
from nlpipe.io.conllu import DEPREL, HEAD, MISC, Sentence, misc_prob, misc_set
from nlpipe.io.misc import NO_SENSE, Frame, frames_to_misc, predicates, set_predicates
from nlpipe.tags import spans
from nlpipe.errors import STAGE_INPUT, NlpipeError
from nlpipe.models.lisa import Example, LisaModel, Prediction, example, read_heads
from nlpipe.nn.syntax_modes import own_parse as own_parse_of
from nlpipe.stages.base import COLUMNS, cpu_threads, fill_in_chunks, map_batches

# ---------------------------------------------------------------------------------------------
# The stages

class SrlStage:
    """``srl``: predicates and their roles; a sentence whose input has ``Pred=`` entries keeps them
    (predicted otherwise; ``predicates_from_input``: always the input's); ``predicates``: ``Pred=`` only.
    ``parse_from_input`` feeds the input's HEAD column to the syntactic head; otherwise it attends
    to the model's ``own_parse`` (argmax, tree or marginals; default: the model's syntax mode's).
    ``write_parse``: HEAD and DEPREL get the model's own best tree (``srl`` only)."""

    requires = frozenset({"tokenize"})
    # positions are learned up to the model's max_len; longer sentences pass through with a warning
    # (see nlpipe.runtime.pipeline); SRL= refers to word IDs, so no windows.

    def __init__(self, model: LisaModel, name: str = "srl", parse_from_input: bool = False,
                 predicates_from_input: bool = False, viterbi: bool = True, batch_tokens: int = 1000,
                 threads: int = 1, workers: Optional[int] = None, own_parse: Optional[str] = None,
                 write_parse: bool = False, probs: bool = False):
        """``workers``: batches labelled at once in threads by the numpy network (default
        :func:`~nlpipe.stages.base.cpu_threads`); ``threads``: torch threads of a torch network."""
        self.model, self.name, self.threads, self.probs = model, name, threads, probs
        self.workers = max(1, cpu_threads() if workers is None else workers) if model.inference is not None else 1
        syntax = bool(model.hyper.get("syntax"))
        if write_parse and not syntax:
            raise NlpipeError("--write-parse: this model has no syntactic head (trained with --no-syntax)")
        if write_parse and parse_from_input:
            raise NlpipeError("--write-parse writes the model's own parse: it does not go with --parse-from-input")
        self.own_parse = own_parse_of(model.hyper, own_parse) if syntax else "argmax"
        self.write_parse = write_parse and name == "srl"
        self.provides = frozenset({"predicates"} if name == "predicates" else {"predicates", "srl"})
        if self.write_parse:
            self.provides = self.provides | {"parse"}
        self.columns = COLUMNS[name]
        self.parse_from_input = parse_from_input and syntax
        self.predicates_from_input = predicates_from_input and name == "srl"
        self.viterbi, self.batch_tokens = viterbi, batch_tokens
        self.max_len = int(model.hyper["max_len"])
        if parse_from_input:
            self.requires = frozenset({"tokenize", "parse"})

    def _given(self, sent: Sentence) -> bool:
        """Label the input's predicates (``--predicates-from-input``, or ``srl`` on a sentence that
        already has ``Pred=``, e.g. from ``nlpipe predicates``) rather than predicting them?"""
        if self.name != "srl":
            return False
        return self.predicates_from_input or bool(predicates(sent))

    def _fill(self, chunk: List[Sentence]) -> None:
        todo = [s for s in chunk if s.words and len(s.words) <= self.max_len]
        # decided before any is labelled: the first group's own output adds Pred= to its sentences
        is_given = [self._given(s) for s in todo]
        for given in (False, True):
            group = [s for s, g in zip(todo, is_given) if g == given]
            examples = [example(s, STAGE_INPUT, heads=self.parse_from_input, predicates=given) for s in group]
            batches = length_batches([len(e.forms) for e in examples], self.batch_tokens)
            for batch, results in zip(batches, self._predict(examples, batches, given)):
                for i, (preds, roles, parse, pred_p) in zip(batch, results):
                    self._write(group[i], examples[i], preds, roles, given)
                    if parse is not None:
                        for w, h, rel in zip(group[i].words, *parse):
                            w[HEAD], w[DEPREL] = str(h), rel
                    if pred_p is not None:
                        at = dict(zip(preds, pred_p))
                        for k, w in enumerate(group[i].words):
                            w[MISC] = misc_set(w[MISC], "PredProb", None) if k not in at else \
                                misc_prob(w[MISC], "PredProb", at[k])

    def _predict(self, examples: List[Example], batches: List[List[int]], given: bool
                 ) -> Iterable[List[Prediction]]:
        """Results of every batch, in order, ``workers`` at once (:func:`~nlpipe.stages.base.map_batches`)."""
        def run(batch: List[int]) -> List[Prediction]:
            return self.model.predict([examples[i] for i in batch], self.parse_from_input, given, self.viterbi,
                                      self.threads, self.own_parse, self.write_parse, self.probs)

        return map_batches(run, batches, self.workers)

    def _write(self, sent: Sentence, ex: Example, preds: List[int], roles: List[List[str]],
               given: bool) -> None:
        if given:
            rolesets = list(ex.rolesets or [])
        else:
            rolesets = [self.model.sense(ex.forms[p], ex.lemmas[p]) for p in preds]
        if self.name == "predicates":  # Pred= only
            set_predicates(sent, {p: r if r != "-" else NO_SENSE for p, r in zip(preds, rolesets)})
            return
        frames = [Frame(p, "", "-" if r == NO_SENSE else r, spans(tags))
                  for p, r, tags in zip(preds, rolesets, roles)]
        frames_to_misc(sent, frames)

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        return fill_in_chunks(sentences, self._fill)


def check_input(sentences: List[Sentence], parse_from_input: bool = False, **_: Any) -> None:
    """``parse_from_input`` reads the HEAD column: an :class:`InputError` where it holds no parse."""
    if parse_from_input:
        for s in sentences:
            if s.words:
                read_heads(s, STAGE_INPUT)


def load(model_dir: Path, config: Dict[str, Any], device: str = "cpu", parse_from_input: bool = False,
         predicates_from_input: bool = False, viterbi: bool = True, batch_tokens: Optional[int] = None,
         threads: int = 1, workers: Optional[int] = None, own_parse: Optional[str] = None,
         write_parse: bool = False, probs: bool = False, **_: Any) -> SrlStage:
    """Loader of arch ``lisa.v1`` for the stages ``predicates`` and ``srl`` (``config["stage"]``).

    On the CPU the network runs in numpy, ``workers`` batches at once (see :class:`SrlStage`); on
    CUDA it runs in torch. ``threads``: torch threads while a torch network runs (0: leave torch's
    setting). One by default: the batches are small matrices, and on a busy 2-core machine a second
    thread mostly spin-waits (en_ewt test: 658 sentences/s with one thread, 178 with two; bench/srl.py).
    """
    from nlpipe.nn.device import resolve_device

    device = resolve_device(device)
    model = LisaModel.load(Path(model_dir), config, device, numpy=True)
    return SrlStage(model, name=config["stage"], parse_from_input=parse_from_input,
                    predicates_from_input=predicates_from_input, viterbi=viterbi,
                    batch_tokens=batch_tokens_for(device, batch_tokens),
                    threads=threads, workers=workers, own_parse=own_parse, write_parse=write_parse, probs=probs)


# ---------------------------------------------------------------------------------------------
# Training command
