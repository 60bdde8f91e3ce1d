"""The ``pos`` stage over the accurate BiLSTM tagger (arch ``bilstm-tagger.v1``,
:mod:`nlpipe.models.bilstm_tagger`): UPOS and XPOS from one joint label, FEATS from the FEATS head
(a model without one leaves FEATS alone) and LEMMA from the folder's lemmatizer reading the tags,
the lemma head's rewrite rule, or both (config ``model.lemma_from``). Where the folder holds a linear
tagger (config ``model.linear``) the tags are those of the product of the two (:class:`LinearPrior`).

Sentences are tagged in length-sorted batches of a token budget (:mod:`nlpipe.nn.batching`), several
at once in threads on the CPU (:func:`~nlpipe.stages.base.map_batches`), in numpy unless the device
is CUDA.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.errors import ModelError, NlpipeError
from nlpipe.io.model_dir import read_config
from nlpipe.io.conllu import FEATS, FORM, LEMMA, MISC, UPOS, XPOS, Sentence, misc_prob
from nlpipe.models.bilstm_tagger import LEMMA_SOURCES, TaggerModel
from nlpipe.models.lemmatizer import Lemmatizer, apply_rule
from nlpipe.nn.batching import batch_tokens_for, length_batches
from nlpipe.nn.device import resolve_device
from nlpipe.stages.base import Adapter, cpu_threads, fill_in_chunks, map_batches
from nlpipe.stages.pos import ARCH as LINEAR_ARCH
from nlpipe.stages.pos import LABEL_SEP, PairProbs, PosTagger
from nlpipe.stages.pos import load as load_linear


# on the CPU a batch of more words than the parser's (nlpipe.nn.batching.CPU_BATCH_TOKENS, 1000): the
# two-layer BiLSTM's step matrices are larger, and en_ewt test x2 tags in 8% less CPU time at 4,000
CPU_BATCH_TOKENS = 4000


class LinearPrior:
    """The linear tagger's view of a batch, for :attr:`TaggerModel.tag_prior`: ``weight`` times its
    log-probabilities of the BiLSTM's joint labels ``tags`` (a label it lacks gets the word's lowest)."""

    def __init__(self, linear: PosTagger, tags: Sequence[str], weight: float):
        self.linear, self.weight = linear, float(weight)
        index = {label: i for i, label in enumerate(linear.labels)}
        self.columns = np.array([index.get(t, -1) for t in tags], dtype=np.int64)
        if (self.columns < 0).all():
            raise ValueError("the linear tagger has none of the BiLSTM tagger's labels")

    def rows(self, sentences: Sequence[Sequence[str]]) -> List[np.ndarray]:
        """``[len(s), n_tags]`` (float32) for each sentence ``s``. The linear tagger advances all
        sentences position by position, so one call over many sentences costs less than several
        over a few each."""
        lengths = [len(s) for s in sentences]
        logp = self.linear.label_log_probs([f for s in sentences for f in s], lengths)
        mapped = np.where(self.columns >= 0, logp[:, np.maximum(self.columns, 0)], logp.min(-1, keepdims=True))
        mapped *= np.float32(self.weight)
        return np.split(mapped, np.cumsum(lengths)[:-1]) if lengths else []

    def __call__(self, sentences: Sequence[Sequence[str]]) -> List[np.ndarray]:
        """:meth:`rows`."""
        return self.rows(sentences)


class BiLSTMPosTagger(Adapter, stage="pos"):
    """Writes UPOS, XPOS (and FEATS, LEMMA where the model has them) of every word."""

    provides = frozenset({"pos", "upos", "xpos"})

    def __init__(self, model: TaggerModel, lemmatizer: Optional[Lemmatizer] = None, batch_tokens: int = 1000,
                 workers: Optional[int] = None, lemma_from: str = "lemmatizer", probs: bool = False,
                 prob_scale: float = 1.0, lemma_prob_scale: float = 1.0):
        """``workers``: batches tagged at once in threads (default on the CPU:
        :func:`~nlpipe.stages.base.cpu_threads`; on CUDA 1); ``lemma_from``: one of
        :data:`~nlpipe.models.bilstm_tagger.LEMMA_SOURCES` (what it names must be there); ``probs``:
        also write MISC ``UPOSProb`` and ``XPOSProb`` (:class:`~nlpipe.stages.pos.PairProbs` of the
        scores the joint label was chosen from, times ``prob_scale``, fitted on dev by
        :mod:`nlpipe.train.calibrate`) and, for a lemma the Lemmatizer's rule
        classifier chose, ``LemmaProb`` (its scores times ``lemma_prob_scale``, as the linear tagger's)."""
        self.model, self.lemmatizer, self.batch_tokens = model, lemmatizer, batch_tokens
        if lemma_from not in LEMMA_SOURCES:
            raise ValueError(f"unknown lemma source {lemma_from!r}")
        if (lemma_from != "head" and lemmatizer is None) or (lemma_from != "lemmatizer" and not model.labels["lemmas"]):
            lemma_from = "lemmatizer" if lemmatizer is not None else "head"
        self.lemma_from = lemma_from
        self._rules = model.labels["lemmas"]
        tags = model.labels["tags"]
        if not tags or any(LABEL_SEP not in t for t in tags):
            raise ValueError("labels are not UPOS/XPOS pairs")
        if lemmatizer is not None and lemmatizer.tag_labels != tags:
            raise ValueError("the lemmatizer reads other POS labels than the tagger's")
        self._pairs = [tuple(t.split(LABEL_SEP, 1)) for t in tags]
        self.probs, self.prob_scale, self.lemma_prob_scale = probs, float(prob_scale), float(lemma_prob_scale)
        self._pair_probs = PairProbs(self._pairs, self.prob_scale)
        if model.labels["feats"] or lemmatizer is not None or self._rules:
            self.provides = self.provides | {"feats", "lemma"}
        if workers is None:
            workers = cpu_threads() if model.inference is not None or model.device.type == "cpu" else 1
        self.workers = max(1, workers)

    def _fill(self, chunk: List[Sentence]) -> None:
        todo = [s for s in chunk if s.words]
        if not todo:
            return
        forms = [[w[FORM] for w in s.words] for s in todo]
        batches = length_batches([len(f) for f in forms], self.batch_tokens)
        prior = self.model.tag_prior
        rows = None
        if isinstance(prior, LinearPrior):      # the whole chunk at once, in a thread while the network runs
            pool = ThreadPoolExecutor(1)
            rows = pool.submit(prior.rows, forms)
            pool.shutdown(wait=False)

        def run(batch: List[int]) -> Dict[str, List[List[int]]]:
            late = None if rows is None else lambda: [rows.result()[i] for i in batch]
            return self.model.predict([forms[i] for i in batch], late, scores=self.probs)

        tags: List[List[int]] = [[] for _ in todo]
        rules: List[List[int]] = [[] for _ in todo]
        feats = self.model.labels["feats"]
        for batch, best in zip(batches, map_batches(run, batches, self.workers, self.model.torch)):
            for i, row in zip(batch, best["tags"]):
                tags[i] = row
                for w, t in zip(todo[i].words, row):
                    w[UPOS], w[XPOS] = self._pairs[t]
            for i, row in zip(batch, best.get("feats", ())):
                for w, f in zip(todo[i].words, row):
                    w[FEATS] = feats[f]
            for i, row in zip(batch, best.get("lemmas", ())):
                rules[i] = row
            for i, sc in zip(batch, best.get("tag_scores", ())):
                self._pair_probs.write(todo[i].words, np.array(tags[i], dtype=np.int64), sc)
        lemmas, lemma_probs = self.lemmas(forms, tags, rules)
        if lemmas is not None:
            it = iter(lemmas)
            for s in todo:
                for w in s.words:
                    w[LEMMA] = next(it)
        if lemma_probs is not None:
            for w, p in zip((w for s in todo for w in s.words), lemma_probs):
                if p is not None:
                    w[MISC] = misc_prob(w[MISC], "LemmaProb", p)

    def lemmas(self, forms: List[List[str]], tags: List[List[int]], rules: List[List[int]]
               ) -> Tuple[Optional[List[str]], Optional[List[Optional[float]]]]:
        """(the lemma of every word (sentences of ``forms``, their tag ids and the lemma head's rule
        ids), from :attr:`lemma_from`, None for a model without lemmas; with :attr:`probs` and lemmas
        from the Lemmatizer, the rule classifier's probability of each, None for one from the lexicon)."""
        flat = [f for s in forms for f in s]
        ids = [t for row in tags for t in row]
        lemmatizer = self.lemmatizer
        if self.lemma_from != "lemmatizer" and not self._rules:
            return None, None
        if self.lemma_from == "lemmatizer":
            if lemmatizer is None:
                return None, None
            tag_ids = np.array(ids, dtype=np.int64)
            lengths = [len(s) for s in forms]
            if not self.probs:
                return lemmatizer.lemmatize_words(flat, tag_ids, lengths), None
            layout, atoms = lemmatizer.rules.layout_flat(flat, lengths)
            first = layout.scatter(tag_ids, len(self._pairs))
            lemmas = lemmatizer.lemmatize(flat, tag_ids, layout, atoms, first)
            return lemmas, lemmatizer.probabilities(flat, tag_ids, layout, atoms, first, lemmas, self.lemma_prob_scale)
        out = [apply_rule(f, self._rules[r]) or f for f, r in zip(flat, (r for row in rules for r in row))]
        if self.lemma_from == "lexicon+head":
            out = [lemmatizer.lookup(f, t) or lemma for f, t, lemma in zip(flat, ids, out)]   # type: ignore[union-attr]
        elif self.lemma_from == "forms+head":
            out = [lemmatizer.by_form.get(f) or lemma for f, lemma in zip(flat, out)]   # type: ignore[union-attr]
        return out, None

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        return fill_in_chunks(sentences, self._fill)


# options of the linear tagger's loader (nlpipe.stages.pos.load), refused here rather than ignored
LINEAR_OPTIONS = ("margin", "checkpoints", "first_margin", "first_checkpoints")


def load(model_dir: Path, config: Dict[str, Any], device: str = "cpu", batch_tokens: Optional[int] = None,
         workers: Optional[int] = None, probs: bool = False, **options: Any) -> BiLSTMPosTagger:
    """Loader of arch ``bilstm-tagger.v1``: ``device`` cpu (numpy) | cuda | auto (torch),
    ``batch_tokens`` (default by device, :func:`~nlpipe.nn.batching.batch_tokens_for`), ``workers``
    (see :class:`BiLSTMPosTagger`). The options of the linear tagger (:data:`LINEAR_OPTIONS`) do not
    apply: given (not None), they are refused."""
    given = [f"--{k.replace('_', '-')}" for k in LINEAR_OPTIONS if options.get(k) is not None]
    if given:
        raise NlpipeError(f"{', '.join(given)}: options of the fast linear tagger, and {model_dir} is not one "
                          f"(give it with -m, or nlpipe pos --fast for the one beside this one)")
    device = resolve_device(device)
    model = TaggerModel.load(Path(model_dir), config, device, numpy=device == "cpu")
    settings = config.get("model", {})
    lemma = settings.get("lemma")
    lemmatizer = Lemmatizer.load(Path(model_dir) / str(lemma)) if lemma else None
    linear = settings.get("linear")
    try:
        if linear:
            folder = Path(model_dir) / str(linear["dir"])
            linear_config = read_config(folder, "pos")
            if linear_config.get("arch") != LINEAR_ARCH:
                raise ValueError(f"{folder} is no linear tagger (arch {linear_config.get('arch')})")
            model.tag_prior = LinearPrior(load_linear(folder, linear_config, morph=False), model.labels["tags"],
                                          float(linear["weight"]))
    except (KeyError, TypeError, ValueError) as e:
        raise ModelError(f"{model_dir}: config model.linear: {e}") from None
    if batch_tokens is None and device == "cpu":
        batch_tokens = CPU_BATCH_TOKENS
    try:
        return BiLSTMPosTagger(model, lemmatizer, batch_tokens_for(device, batch_tokens), workers,
                               settings.get("lemma_from") or "lemmatizer", probs,
                               settings.get("prob_scale") or 1.0, settings.get("lemma_prob_scale") or 1.0)
    except ValueError as e:
        raise ModelError(f"{model_dir}: {e}") from None
