"""POS stage: a greedy linear tagger with dynamic feature selection writing UPOS and XPOS.

The model predicts one joint label ``UPOS<TAB>XPOS`` per word (so the two columns always agree
with a pair seen in training). ``margin`` sets the speed/accuracy trade-off of dynamic feature
selection: a word stops adding templates once its best label leads by ``margin``; ``None`` (or a
negative value) always uses every template. A two-pass model (``second/`` in the model directory,
``model.second`` in its config) tags every batch twice: the second pass's templates also read the
tags the first pass predicted (``ptag``), the right context included; the margin and checkpoints
apply to both passes unless ``first_margin``/``first_checkpoints`` set the first pass's apart (the
first pass's tags are only features of the second, so the two can trade speed differently).

A model trained on a treebank with FEATS and LEMMA also writes them (``model.feats``,
``model.lemma`` in its config): a third linear pass predicts the whole FEATS string of every word
from its attributes and the final POS tags around it (``ptag``), with its own margin
(``feats_margin``), and a :class:`~nlpipe.models.lemmatizer.Lemmatizer` gives the lemma.

With ``probs`` the stage also writes MISC ``UPOSProb``, ``XPOSProb`` (see :meth:`PosTagger.tag_probs`)
and, for a lemma the rule classifier chose, ``LemmaProb`` (a lemma from the lexicon has none).
"""
from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.io.conllu import FEATS, FORM, LEMMA, MISC, UPOS, XPOS, Sentence, misc_prob
from nlpipe.errors import ModelError, NlpipeError
from nlpipe.linear.dfs import checkpoint_schedule, tag
from nlpipe.linear.model import TemplatedModel
from nlpipe.linear.templates import Layout
from nlpipe.models.lemmatizer import Lemmatizer
from nlpipe.models.neural_numpy import log_softmax, softmax
from nlpipe.stages.base import Adapter

ARCH = "dfs-tagger.v1"
LABEL_SEP = "\t"
BATCH_SENTENCES = 4096


class PosTagger(Adapter, stage="pos"):
    """The ``pos`` stage over a :class:`TemplatedModel`."""

    provides = frozenset({"pos", "upos", "xpos"})

    def __init__(self, model: TemplatedModel, margin: Optional[float] = None, limit: Optional[int] = None,
                 batch_sentences: int = BATCH_SENTENCES, checkpoints: Optional[str] = None,
                 second: Optional[TemplatedModel] = None, first_margin: Optional[float] = None,
                 first_checkpoints: Optional[str] = None, feats: Optional[TemplatedModel] = None,
                 lemmatizer: Optional[Lemmatizer] = None, feats_margin: Optional[float] = None,
                 probs: bool = False, prob_scale: float = 1.0, lemma_prob_scale: float = 1.0):
        """``second``: the second pass's model (its labels are the ones written); ``limit`` cuts
        the first pass to its first ``limit`` templates and leaves the second pass out.
        ``feats``/``lemmatizer``: the morphology pass and the lemmatizer, which read the final POS
        labels and share the final pass's word attributes; ``feats_margin`` is the feats pass's
        margin (None or negative: every template), tested at the second pass's checkpoints.
        ``first_margin``/``first_checkpoints``: the first pass's own margin and schedule when
        there is a second pass (default: ``margin``/``checkpoints``; a negative margin: every
        template). ``probs``: also write the confidences of UPOS, XPOS and LEMMA in MISC, from the
        scores of the tagger times ``prob_scale`` and of the lemma rules times ``lemma_prob_scale``."""
        self.model = model
        self.second = second if limit is None else None
        if self.second is not None:
            if not self.second.needs_first_pass:
                raise ValueError("the second pass reads no first-pass tags")
            # first-pass label id -> second-pass label id (the padding id where it lacks the label)
            self._to_second = np.append(self.second.first_ids(model.labels), self.second.first_size)
            a1, a2 = model.attributes, self.second.attributes
            self._same_attributes = a1 is a2 or (a1.vocabs == a2.vocabs and a1.amb == a2.amb)
        out = self.second if self.second is not None else model
        self.margin = _margin(margin)
        self.limit = limit
        self.checkpoints = checkpoint_schedule(checkpoints)
        self.first_margin, self.first_checkpoints = self.margin, self.checkpoints
        if self.second is not None:
            if first_margin is not None:
                self.first_margin = _margin(first_margin)
            if first_checkpoints is not None:
                self.first_checkpoints = checkpoint_schedule(first_checkpoints)
        self.batch_sentences = batch_sentences
        self._pairs = [tuple(l.split(LABEL_SEP, 1)) for l in out.labels]
        self.probs, self.prob_scale, self.lemma_prob_scale = probs, float(prob_scale), float(lemma_prob_scale)
        self._pair_probs = PairProbs(self._pairs, self.prob_scale)
        self.feats, self.lemmatizer = feats, lemmatizer
        self.feats_margin = _margin(feats_margin)
        for m in (feats, None if lemmatizer is None else lemmatizer.rules):
            if m is not None and (m.first_labels != out.labels or m.attributes is not out.attributes):
                raise ValueError("the morphology models read other POS labels or word attributes than the tagger's")
        if feats is not None or lemmatizer is not None:
            self.provides = self.provides | {"feats", "lemma"}
        self.templates_used = 0   # running totals, for benchmarks
        self.tokens_tagged = 0

    @property
    def mean_templates(self) -> float:
        """Templates used per word so far (both passes of a two-pass model counted)."""
        return self.templates_used / self.tokens_tagged if self.tokens_tagged else 0.0

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        """Tag sentences in batches; only UPOS and XPOS of each word change."""
        it = iter(sentences)
        while True:
            batch = list(islice(it, self.batch_sentences))
            if not batch:
                return
            self.tag_batch(batch)
            yield from batch

    def tag_probs(self, pred: np.ndarray, scores: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Probabilities [num_tokens] of the UPOS and of the XPOS of the chosen joint labels ``pred``
        [num_tokens], from the label scores [num_tokens, num_labels] they were chosen from.

        A softmax of the scores times :attr:`prob_scale` (hinge-trained scores are no logits: the scale
        is fitted on dev data, see :mod:`nlpipe.train.calibrate`). Under dynamic feature selection a
        word's scores are the prefix sum at which it stopped, the only one computed, and its label is
        their argmax, so the written pair is always the most probable one. A tag's probability sums
        those of the pairs that share it."""
        return self._pair_probs(pred, scores)

    @property
    def labels(self) -> List[str]:
        """The joint ``UPOS<TAB>XPOS`` labels written (the final pass's)."""
        return (self.second if self.second is not None else self.model).labels

    def label_log_probs(self, forms: List[str], lengths: List[int]) -> np.ndarray:
        """Log-probabilities ``[num_tokens, num_labels]`` of every joint label of :attr:`labels` for
        the words ``forms`` of sentences of ``lengths``: a log-softmax of the final pass's scores times
        :attr:`prob_scale` (see :meth:`tag_probs`)."""
        scores = np.empty((len(forms), len(self.labels)), dtype=np.float32)
        self.tag_ids(forms, lengths, scores)
        return log_softmax(self.prob_scale * scores)

    def tag_ids(self, forms: List[str], lengths: List[int], label_scores: Optional[np.ndarray] = None
                ) -> Tuple[np.ndarray, np.ndarray, Layout, np.ndarray]:
        """(joint label ids [num_tokens], templates used [num_tokens], the final pass's layout and
        atoms) of the words ``forms`` of sentences of ``lengths``; ``label_scores`` [num_tokens,
        num_labels] receives the final pass's scores (see :func:`~nlpipe.linear.dfs.tag`)."""
        layout, atoms = self.model.layout_flat(forms, lengths)
        pred, used = tag(self.model, layout, atoms, self.first_margin, self.limit, self.first_checkpoints,
                         label_scores=None if self.second is not None else label_scores)
        if self.second is not None:
            second = self.second
            if not self._same_attributes:
                layout, atoms = second.layout_flat(forms, lengths)
            first = layout.scatter(self._to_second[pred], second.num_labels)
            pred, used2 = tag(second, layout, atoms, self.margin, None, self.checkpoints, first=first,
                              label_scores=label_scores)
            used = used + used2
        return pred, used, layout, atoms

    def tag_batch(self, batch: List[Sentence]) -> None:
        words = [w for s in batch for w in s.words]
        forms = [w[FORM] for w in words]
        out = self.second if self.second is not None else self.model
        scores = np.empty((len(words), out.num_labels), dtype=np.float32) if self.probs else None
        pred, used, layout, atoms = self.tag_ids(forms, [len(s.words) for s in batch], scores)
        for w, (upos, xpos) in zip(words, map(self._pairs.__getitem__, pred.tolist())):
            w[UPOS] = upos
            w[XPOS] = xpos
        if scores is not None:
            self._pair_probs.write(words, pred, scores)
        if self.feats is not None or self.lemmatizer is not None:
            tags = layout.scatter(pred, out.num_labels)      # the layout of the final pass
            if self.feats is not None:
                fpred, _ = tag(self.feats, layout, atoms, self.feats_margin, None, self.checkpoints, first=tags)
                labels = self.feats.labels
                for w, f in zip(words, fpred.tolist()):
                    w[FEATS] = labels[f]
            if self.lemmatizer is not None:
                lemmas = self.lemmatizer.lemmatize(forms, pred, layout, atoms, tags)
                for w, lemma in zip(words, lemmas):
                    w[LEMMA] = lemma
                if self.probs:
                    for w, p in zip(words, self.lemmatizer.probabilities(forms, pred, layout, atoms, tags, lemmas,
                                                                          self.lemma_prob_scale)):
                        if p is not None:
                            w[MISC] = misc_prob(w[MISC], "LemmaProb", p)
        self.templates_used += int(used.sum())
        self.tokens_tagged += len(pred)


class PairProbs:
    """MISC ``UPOSProb`` and ``XPOSProb`` of chosen joint ``UPOS<TAB>XPOS`` labels: a softmax of
    ``scale`` times the label scores they were chosen from, a tag's probability summing those of the
    pairs that share it (the linear tagger's and the BiLSTM tagger's)."""

    def __init__(self, pairs: Sequence[Tuple[str, str]], scale: float = 1.0):
        self.scale = float(scale)
        # the UPOS and the XPOS of each joint label, as ids [num_labels]
        self.upos_ids, self.xpos_ids = (np.unique([pair[c] for pair in pairs], return_inverse=True)[1]
                                        for c in (0, 1))

    def __call__(self, pred: np.ndarray, scores: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Probabilities [num_tokens] of the UPOS and of the XPOS of the labels ``pred``
        [num_tokens], from the scores [num_tokens, num_labels]."""
        p = softmax(self.scale * scores)
        upos = (p * (self.upos_ids == self.upos_ids[pred][:, None])).sum(axis=1)
        xpos = (p * (self.xpos_ids == self.xpos_ids[pred][:, None])).sum(axis=1)
        return upos, xpos

    def write(self, words: Sequence[List[str]], pred: np.ndarray, scores: np.ndarray) -> None:
        """Set the two in the MISC of ``words`` (tagged ``pred``; no ``XPOSProb`` where XPOS is ``_``)."""
        upos_p, xpos_p = self(pred, scores)
        for w, pu, px in zip(words, upos_p.tolist(), xpos_p.tolist()):
            w[MISC] = misc_prob(w[MISC], "UPOSProb", pu)
            if w[XPOS] != "_":
                w[MISC] = misc_prob(w[MISC], "XPOSProb", px)


def _margin(margin: Optional[float]) -> Optional[float]:
    """A tagging margin: None (or negative) means every template."""
    return None if margin is None or margin < 0 else float(margin)


def load(model_dir: Path, config: Dict[str, Any], margin: Optional[float] = None, limit: Optional[int] = None,
         device: Optional[str] = None, checkpoints: Optional[str] = None, first_margin: Optional[float] = None,
         first_checkpoints: Optional[str] = None, feats_margin: Optional[float] = None, probs: bool = False,
         morph: bool = True, **_: Any) -> PosTagger:
    """Load the tagger; ``margin`` and ``checkpoints`` (a schedule, see
    :func:`~nlpipe.linear.dfs.checkpoint_schedule`), and ``first_margin``/``first_checkpoints`` for
    the first pass of a two-pass model, override the model's defaults (a setting given for both
    passes also overrides the model's first-pass one); ``probs``: see :class:`PosTagger`; ``morph``
    False leaves the FEATS pass and the lemmatizer unloaded (tags only); ``device`` is ignored (CPU only)."""
    model = TemplatedModel.load(Path(model_dir))
    second = None
    second_dir = config.get("model", {}).get("second")
    if second_dir:
        second = TemplatedModel.load(Path(model_dir) / str(second_dir), model.attributes.clusters,
                                     model.attributes)
    for m in (model, second):
        if m is not None and (not m.labels or any(LABEL_SEP not in l for l in m.labels)):
            raise ModelError(f"{model_dir}: labels are not UPOS/XPOS pairs")
    out = second if second is not None else model
    feats = lemmatizer = None
    feats_dir = config.get("model", {}).get("feats") if morph else None
    if feats_dir:
        feats = TemplatedModel.load(Path(model_dir) / str(feats_dir), out.attributes.clusters, out.attributes)
    lemma_dir = config.get("model", {}).get("lemma") if morph else None
    if lemma_dir:
        lemmatizer = Lemmatizer.load(Path(model_dir) / str(lemma_dir), out.attributes)
    for flag, spec in (("--checkpoints", checkpoints), ("--first-checkpoints", first_checkpoints)):
        try:
            checkpoint_schedule(spec)       # a bad option is the caller's error, not the model's
        except ValueError as e:
            raise NlpipeError(f"{flag}: {e}") from None
    saved = config.get("model", {})
    # each setting: given for its pass, else given for both passes, else the model's for that pass
    if first_margin is None and margin is None:
        first_margin = saved.get("first_margin")
    if first_checkpoints is None and checkpoints is None:
        first_checkpoints = saved.get("first_checkpoints")
    if margin is None:
        margin = saved.get("margin")
    if checkpoints is None:
        checkpoints = saved.get("checkpoints")
    if feats_margin is None:
        feats_margin = saved.get("feats_margin")
    try:
        return PosTagger(model, margin, limit, checkpoints=checkpoints, second=second, first_margin=first_margin,
                         first_checkpoints=first_checkpoints, feats=feats, lemmatizer=lemmatizer,
                         feats_margin=feats_margin, probs=probs, prob_scale=saved.get("prob_scale") or 1.0,
                         lemma_prob_scale=saved.get("lemma_prob_scale") or 1.0)
    except ValueError as e:
        raise ModelError(f"{model_dir}: {e}") from None
