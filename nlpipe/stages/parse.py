"""The ``parse`` stage: glue between CoNLL-U and the two parsers (loading, batching, predicting).

Reads FORM, UPOS and XPOS; writes HEAD and DEPREL (and with ``probs`` MISC ``HeadProb``), nothing
else. A biaffine model directory holds ``config.json`` (arch ``biaffine.v1``), ``vocab.json`` (words,
affixes, tags; the labels are config ``labels``, older models repeat them as ``rels``) and ``weights.pt`` (a plain tensor dict, loaded with ``weights_only=True``).
A transition parser directory (arch ``transition-dfs.v1``, :mod:`nlpipe.models.transition`) holds
``config.json``, ``vocab.json`` and ``weights.npz`` (sparse float16 template weights).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.nn.batching import length_batches
from nlpipe.io.conllu import DEPREL, FORM, HEAD, MISC, UPOS, XPOS, Sentence, misc_set, read_file
from nlpipe.errors import STAGE_INPUT, InputError, NlpipeError
from nlpipe.nn.device import resolve_device
from nlpipe.nn.weights import read_model_dir, save_model_dir
from nlpipe.stages.base import Adapter, fill_in_chunks

ARCH = "biaffine.v1"


# ---------------------------------------------------------------------------------------------
# Data

class Example:
    """One sentence's parser inputs (and gold tree when known) as plain lists."""

    __slots__ = ("forms", "upos", "xpos", "heads", "rels")

    def __init__(self, forms: List[str], upos: List[str], xpos: List[str],
                 heads: Optional[List[int]] = None, rels: Optional[List[str]] = None):
        self.forms, self.upos, self.xpos, self.heads, self.rels = forms, upos, xpos, heads, rels


def _example(sent: Sentence, path: str, gold: bool) -> Example:
    words = sent.words
    ex = Example([w[FORM] for w in words], [w[UPOS] for w in words], [w[XPOS] for w in words])
    if gold:
        heads = []
        n = len(words)
        for k, w in enumerate(words):
            h = w[HEAD]
            if not h.isdigit() or int(h) > n:
                raise InputError(path, sent.line_of(w), f"HEAD '{h}' of word {k + 1} is not a word number "
                                                        f"0..{n}; training needs gold trees")
            heads.append(int(h))
        ex.heads, ex.rels = heads, [w[DEPREL] for w in words]
    return ex


def read_treebank(path: str) -> List[Example]:
    """Gold examples of a CoNLL-U file (sentences without words are skipped), for training."""
    return [_example(s, path, True) for s in read_file(path) if s.words]



# ---------------------------------------------------------------------------------------------
# Model wrapper: vocabularies + torch module

# model hyper-parameters of a new biaffine parser
DEFAULT_HYPER: Dict[str, Any] = {
    "word_dim": 50, "shape_dim": 8, "affix_dim": 50, "tag_dim": 32, "hidden": 200, "layers": 3,
    "arc_dim": 400, "rel_dim": 100, "dropout": 0.33, "word_dropout": 0.2, "tag_dropout": 0.2,
    "shared_dropout": True,
}


class BiaffineModel:
    """The vocabularies and the :class:`~nlpipe.nn.biaffine.BiaffineParser` module together."""

    def __init__(self, vocab: Dict[str, List[str]], hyper: Dict[str, Any], device: str = "cpu"):
        import torch

        from nlpipe.nn.biaffine import BiaffineParser
        from nlpipe.nn.features import word_key
        from nlpipe.nn.parser_encoder import ParserEncoder, make_vocab
        from nlpipe.vocab import Vocab, label_vocab

        self.torch = torch
        self.vocab = vocab
        self.hyper = hyper
        self.words = make_vocab(vocab["words"], word_key)
        self.affixes = Vocab(vocab["affixes"])
        self.upos = make_vocab(vocab["upos"])
        self.xpos = make_vocab(vocab["xpos"])
        self.rel_vocab = label_vocab(vocab["rels"])
        self.rels = self.rel_vocab.entries
        shared = bool(hyper.get("shared_dropout", False))    # models trained before it existed: False
        encoder = ParserEncoder(len(self.words), len(self.affixes), len(self.upos), len(self.xpos),
                                word_dim=hyper["word_dim"], shape_dim=hyper["shape_dim"],
                                affix_dim=hyper["affix_dim"], tag_dim=hyper["tag_dim"],
                                hidden=hyper["hidden"], layers=hyper["layers"], dropout=hyper["dropout"],
                                word_dropout=hyper["word_dropout"], tag_dropout=hyper["tag_dropout"],
                                shared_dropout=shared)
        self.net = BiaffineParser(encoder, len(self.rels), arc_dim=hyper["arc_dim"], rel_dim=hyper["rel_dim"],
                                  dropout=hyper["dropout"], root_rel=self.rel_vocab.id("root"),
                                  shared_dropout=shared)
        self.device = torch.device(device)
        self.net.to(self.device)

    def tensors(self, examples: Sequence[Example], gold: bool = False) -> Dict[str, Any]:
        """Padded ``[batch, N]`` id tensors (root at 0) and ``mask``; with ``gold`` also heads/rels."""
        from nlpipe.nn.parser_encoder import N_AFFIXES, sentence_features

        torch = self.torch
        b = len(examples)
        n = max(len(e.forms) for e in examples) + 1
        arrays = {k: np.zeros((b, n), dtype=np.int64) for k in ("words", "shapes", "upos", "xpos")}
        arrays["affixes"] = np.zeros((b, n, N_AFFIXES), dtype=np.int64)
        mask = np.zeros((b, n), dtype=bool)
        heads = np.zeros((b, n), dtype=np.int64)
        rels = np.zeros((b, n), dtype=np.int64)
        for i, e in enumerate(examples):
            f = sentence_features(e.forms, e.upos, e.xpos, self.words, self.affixes, self.upos, self.xpos)
            m = len(e.forms) + 1
            for k, v in f.items():
                arrays[k][i, :m] = v
            mask[i, :m] = True
            if gold:
                heads[i, 1:m] = e.heads
                rels[i, 1:m] = self.rel_vocab.ids(e.rels)
        out = {k: torch.from_numpy(v).to(self.device) for k, v in arrays.items()}
        out["mask"] = torch.from_numpy(mask).to(self.device)
        if gold:
            out["heads"] = torch.from_numpy(heads).to(self.device)
            out["rels"] = torch.from_numpy(rels).to(self.device)
        return out

    def predict(self, examples: Sequence[Example], projective: bool = False, probs: bool = False
                ) -> List[Tuple[List[int], List[str], Optional[List[float]]]]:
        """``(heads, labels, head probabilities or None)`` per example (one batch)."""
        from nlpipe.decode.tree_marginals import marginals

        torch = self.torch
        self.net.eval()
        with torch.no_grad():
            t = self.tensors(examples)
            mask = t.pop("mask")
            s_arc, rel_states = self.net(t, mask)
            heads, rels = self.net.decode(s_arc, rel_states, mask, projective)
            p = None
            if probs:
                m = marginals(s_arc.log_softmax(-1), mask, projective)
                p = m.gather(2, heads[..., None]).squeeze(2).cpu().numpy()
        heads_np, rels_np = heads.cpu().numpy(), rels.cpu().numpy()
        out = []
        for i, e in enumerate(examples):
            n = len(e.forms) + 1
            out.append((heads_np[i, 1:n].tolist(), [self.rels[r] for r in rels_np[i, 1:n]],
                        p[i, 1:n].tolist() if p is not None else None))
        return out

    # saving and loading: config.json + vocab.json + weights.pt (half precision on disk)
    def save(self, out_dir: Path, training: Dict[str, Any], lang: str) -> None:
        save_model_dir(out_dir, self.vocab, self.net, {"stage": "parse", "arch": ARCH, "language": lang,
                                                       "model": self.hyper, "labels": self.rels,
                                                       "training": training}, labels_key="rels")

    @classmethod
    def load(cls, model_dir: Path, config: Dict[str, Any], device: str = "cpu") -> "BiaffineModel":
        model = read_model_dir(Path(model_dir), "parser model", lambda vocab: cls(vocab, config["model"], device),
                               config, "rels")
        model.net.to(model.device)
        return model


# ---------------------------------------------------------------------------------------------
# The stage

def tagged_sentences(chunk: List[Sentence]) -> List[Sentence]:
    """The sentences of ``chunk`` that have words; an :class:`InputError` for one without POS tags
    (both parsers read them)."""
    todo = [s for s in chunk if s.words]
    for s in todo:
        if all(w[UPOS] == "_" and w[XPOS] == "_" for w in s.words):
            raise InputError(STAGE_INPUT, s.line or None, "sentence without POS tags (UPOS and XPOS are '_'); "
                                                        "the parser reads them: run 'nlpipe pos' first")
    return todo


class ParseStage(Adapter, stage="parse"):
    """Predicts HEAD and DEPREL of every word; needs UPOS and XPOS."""

    # Scores grow with the square of the length (and the tree decoders faster): a longer sentence is
    # passed through with a warning naming it (see nlpipe.runtime.pipeline); HEAD refers to word IDs, so no windows.
    max_len = 500

    def __init__(self, model: BiaffineModel, projective: bool = False, probs: bool = False,
                 batch_tokens: int = 5000, workers: Optional[int] = None):
        """``workers``: batches parsed at once in threads, each with one torch thread (default: on
        CPU, torch's thread count; 1: one batch at a time with torch's threads)."""
        self.model = model
        self.projective = projective
        self.probs = probs
        self.batch_tokens = batch_tokens
        if workers is None:
            workers = model.torch.get_num_threads() if model.device.type == "cpu" else 1
        self.workers = max(1, workers)

    def _predict(self, examples: List[Example], batches: List[List[int]]) -> Iterable[list]:
        """Results of every batch, in order. On CPU, batches go to ``workers`` threads with one torch
        thread each: an LSTM over a small batch keeps one core busy far better than it splits
        over two (the ops release the GIL)."""
        def run(batch: List[int]) -> list:
            return self.model.predict([examples[i] for i in batch], self.projective, self.probs)

        workers = min(self.workers, len(batches))
        if workers < 2:
            return map(run, batches)
        from concurrent.futures import ThreadPoolExecutor

        torch = self.model.torch
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with ThreadPoolExecutor(workers) as pool:
                return list(pool.map(run, batches))
        finally:
            torch.set_num_threads(threads)

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
                        w[MISC] = misc_set(w[MISC], "HeadProb", f"{probs[k]:.3f}")

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        return fill_in_chunks(sentences, self._fill)


def load(model_dir: Path, config: Dict[str, Any], device: str = "cpu", projective: bool = False,
         probs: bool = False, batch_tokens: int = 1000, workers: Optional[int] = None, **_: Any) -> ParseStage:
    """Loader of arch ``biaffine.v1``: ``device`` cpu|cuda|auto, ``projective`` (Eisner instead of
    Chu-Liu-Edmonds), ``probs`` (MISC HeadProb = the chosen head's marginal probability),
    ``workers`` (see :class:`ParseStage`)."""
    model = BiaffineModel.load(Path(model_dir), config, resolve_device(device))
    return ParseStage(model, projective=projective, probs=probs, batch_tokens=batch_tokens, workers=workers)


# ---------------------------------------------------------------------------------------------
# The transition parser (arch ``transition-dfs.v1``)

TRANSITION_ARCH = "transition-dfs.v1"
TRANSITION_BATCH = 4096   # sentences parsed in lockstep at most


class TransitionParseStage(Adapter, stage="parse"):
    """Predicts HEAD and DEPREL with the greedy transition parser (:mod:`nlpipe.models.transition`)."""

    max_len = 500

    def __init__(self, model: Any, margin: Optional[float] = None, checkpoints: Optional[Sequence[int]] = None,
                 batch_sentences: int = TRANSITION_BATCH):
        self.model = model
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

    @property
    def mean_templates(self) -> float:
        """Templates used per action so far."""
        return self.templates_used / self.actions if self.actions else 0.0

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        return fill_in_chunks(sentences, self.fill, self.batch_sentences)


def load_transition(model_dir: Path, config: Dict[str, Any], margin: Optional[float] = None,
                    checkpoints: Optional[str] = None, projective: bool = False, probs: bool = False,
                    **_: Any) -> TransitionParseStage:
    """Loader of arch ``transition-dfs.v1``: ``margin`` (dynamic feature selection; None or < 0: every
    template; default: the model's ``model.margin`` if set) and ``checkpoints`` (a schedule such as
    ``"4,8,16,32"``, see :func:`~nlpipe.linear.margin.checkpoint_schedule`). ``projective`` and
    ``probs`` belong to the biaffine parser and are refused."""
    from nlpipe.linear.margin import checkpoint_schedule
    from nlpipe.models.transition.model import TransitionModel

    if projective or probs:
        raise NlpipeError("--projective and --probs are options of the biaffine parser, not the transition parser")
    model = TransitionModel.load(Path(model_dir))
    settings = config.get("model", {})
    if margin is None:
        margin = settings.get("margin")
    try:
        schedule = checkpoint_schedule(checkpoints if checkpoints is not None else settings.get("checkpoints"))
    except ValueError as e:
        raise NlpipeError(str(e)) from None
    return TransitionParseStage(model, margin, schedule)
