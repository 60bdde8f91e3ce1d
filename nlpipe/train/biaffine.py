"""`nlpipe train parse` (biaffine): vocabularies, word-vector initialisation, the per-batch loss and the
dev scorer of :class:`~nlpipe.models.biaffine.BiaffineModel`; the loop is :class:`nlpipe.train.loop.Trainer`.

Adam with an exponential learning-rate decay per epoch, gradient clipping, a moving average of the
weights (``ema``); after every epoch the dev file is parsed by :class:`~nlpipe.stages.parse.ParseStage`
and the epoch with the best dev LAS is saved to the model directory at once.
"""
from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, IO, List, Optional, Sequence, Union

import numpy as np

from nlpipe.io.conllu import Sentence, read_file
from nlpipe.io.model_dir import UNDETERMINED, builds_model, read_config
from nlpipe.io.provenance import training_block
from nlpipe.nn.batching import length_batches
from nlpipe.nn.device import resolve_device
from nlpipe.nn.precision import check_precision
from nlpipe.models.biaffine import DEFAULT_HYPER, BiaffineModel, Example, _example, read_treebank_paragraphs
from nlpipe.stages.parse import ParseStage
from nlpipe.train.loop import Trainer, seed_everything, stage_scores
from nlpipe.train.run_on import join_neighbours
from nlpipe.train.vectors import Vectors, embeddings, load_vectors, parts, record, vocabulary


def build_vocab(train: Sequence[Example], vector_words: Sequence[str], glove_top: int, min_affix: int = 2
                ) -> Dict[str, List[str]]:
    """Vocabularies: training words plus the ``glove_top`` most frequent words of the word vectors
    (by word key; none without vectors)."""
    from nlpipe.nn.features import parser_affix_keys as affix_keys

    affixes = Counter(a for e in train for f in e.forms for a in affix_keys(f))
    return {
        "words": vocabulary((f for e in train for f in e.forms), vector_words, glove_top),
        "affixes": sorted(a for a, c in affixes.items() if c >= min_affix),
        "upos": sorted({t for e in train for t in e.upos}),
        "xpos": sorted({t for e in train for t in e.xpos}),
        "rels": sorted({r for e in train for r in e.rels}, key=lambda r: (r != "root", r)),
    }


def dev_scores(model: BiaffineModel, gold: List[Sentence], batch_tokens: int = 5000) -> Dict[str, float]:
    """UAS/LAS (UD style, via :mod:`nlpipe.metrics`) of ``model`` on gold sentences, parsed by the stage."""
    result = stage_scores(ParseStage(model, batch_tokens=batch_tokens), "parse", gold)
    return {k: result[k] for k in ("uas", "las", "uas_nopunct", "las_nopunct")}


class BiaffineTrainer(Trainer):
    """The biaffine parser's batches, loss and dev score; saves every new best epoch to ``out``."""

    name, key, shown = "parse", "las", ("uas", "las")

    def __init__(self, model: BiaffineModel, train: List[Example], dev: List[Sentence], batch_tokens: int,
                 out: Path, training: Dict[str, Any], start: float, lang: str):
        self.model, self.net = model, model.net
        self.train, self.dev, self.out, self.training, self.start = train, dev, out, training, start
        self.lang = lang
        self._batches = length_batches([len(e.forms) + 1 for e in train], batch_tokens)  # + the root

    def batches(self, rng: Any) -> List[List[int]]:
        rng.shuffle(self._batches)
        return self._batches

    def loss(self, batch: List[int]) -> Any:
        t = self.model.tensors([self.train[i] for i in batch], gold=True)
        mask, heads, rels = t.pop("mask"), t.pop("heads"), t.pop("rels")
        s_arc, rel_states = self.net(t, mask)
        return self.net.loss(s_arc, rel_states, heads, rels, mask)

    def dev_scores(self) -> Dict[str, float]:
        return dev_scores(self.model, self.dev)

    def on_best(self, epoch: int, scores: Dict[str, float], steps: int) -> None:
        training = dict(self.training, epochs_run=epoch, minutes=round((time.time() - self.start) / 60, 1),
                        best_epoch=epoch, scores={"dev_uas": scores["uas"], "dev_las": scores["las"]})
        self.model.save(self.out, training, self.lang)


@builds_model("out_dir")
def train(train_path: str, dev_path: str, out_dir: str, epochs: int = 100, max_minutes: float = 85.0,
          batch_tokens: int = 1000, lr: float = 2e-3, decay: float = 0.93, seed: int = 1, threads: int = 2,
          device: str = "cpu", vectors: Union[str, Vectors, None] = None, glove_words_file: Optional[str] = None,
          glove_vectors_file: Optional[str] = None, glove_top: int = 40000,
          hyper: Optional[Dict[str, Any]] = None, pos_source: str = "as in the training file",
          init: Optional[str] = None, ema: float = 0.999, patience: Optional[int] = 10, log: IO[str] = sys.stderr,
          lang: Optional[str] = None, run_on_rate: float = 0.0, precision: str = "fp32") -> Dict[str, Any]:
    """Train a biaffine parser; keep the epoch with the best dev LAS in ``out_dir``; return a summary.

    ``vectors``, ``glove_words_file``, ``glove_vectors_file``: the word vectors, as
    :func:`~nlpipe.train.vectors.load_vectors` takes them (default: GloVe 6B 50d for English
    ``lang``, none otherwise); the word embeddings take their size. ``init`` continues training an
    existing model (its vocabularies, hyper-parameters and vectors), e.g. on jack-knifed POS tags
    after training on gold ones. With ``ema`` in (0, 1) the weights evaluated on dev and saved are an
    exponential moving average of the trained ones (decay ``ema`` per batch, less over the first
    batches of a model trained from scratch: see :class:`~nlpipe.nn.weights.WeightAverage`). Training stops after ``epochs``, after
    ``patience`` epochs without a better dev LAS (None: never), or before passing ``max_minutes``,
    whichever comes first: a small treebank's epochs are short and its dev LAS decides, a large
    one's time budget. ``lang`` is the training data's language code, recorded in the model (default:
    ``init``'s, else undetermined). ``run_on_rate``: each training sentence is joined with this
    probability to the next one of its paragraph (:func:`~nlpipe.train.run_on.join_neighbours`), so
    that the parser learns the run-on sentences a tokenizer's missed sentence ends give it.
    ``precision``: fp32 or bf16 (:mod:`nlpipe.nn.precision`).
    """
    import torch

    from nlpipe.train.optim import adam

    def say(msg: str) -> None:
        log.write(msg + "\n")
        log.flush()

    start = time.time()
    device = resolve_device(device)
    check_precision(precision, device, say)
    rng = seed_everything(seed, threads)
    train_ex, starts = read_treebank_paragraphs(train_path)
    if run_on_rate:
        n = len(train_ex)
        train_ex = join_neighbours(train_ex, starts, run_on_rate, seed)
        say(f"parse: {n - len(train_ex)} pairs of training sentences joined (run-on rate {run_on_rate})")
    dev_sents = list(read_file(dev_path))
    for s in dev_sents:       # the dev file needs gold trees too
        if s.words:
            _example(s, dev_path, True)
    if init is not None:
        config = read_config(Path(init), "parse")
        model = BiaffineModel.load(Path(init), config, device)
        lang = lang or config.get("language") or UNDETERMINED
        vocab, hits, source = model.vocab, -1, config.get("training", {}).get("vectors")
    else:
        lang = lang or UNDETERMINED
        vecs = load_vectors(vectors, lang, (f for e in train_ex for f in e.forms), glove_top, glove_words_file,
                            glove_vectors_file, say)
        hyper = dict(DEFAULT_HYPER, **(hyper or {}))
        if vecs is not None:
            hyper["word_dim"] = vecs.dim
        vector_words, matrix = parts(vecs, hyper["word_dim"])
        vocab = build_vocab(train_ex, vector_words, glove_top)
        model = BiaffineModel(vocab, hyper, device)
        init_vectors, hits = embeddings(model.words.entries, vector_words, matrix, hyper["word_dim"])
        with torch.no_grad():
            model.net.encoder.tokens.words.weight.copy_(torch.from_numpy(init_vectors))
        source = record(vecs, top=glove_top)
        del vecs, matrix
    n_params = sum(p.numel() for p in model.net.parameters())
    say(f"parse: {len(train_ex)} training sentences, {len(vocab['words'])} words ({hits} with vectors), "
        f"{len(vocab['rels'])} labels, {n_params} parameters")
    opt = adam(model.net.parameters(), lr=lr, betas=(0.9, 0.9))
    warmup = bool(ema) and init is None   # the average forgets random weights fast, not a trained model's
    training = training_block({"train": train_path, "dev": dev_path}, {}, seed=seed, init=init, pos=pos_source,
                              ema=ema or None, ema_warmup=warmup or None, vectors=source,
                              run_on_rate=run_on_rate or None, precision=precision)
    trainer = BiaffineTrainer(model, train_ex, dev_sents, batch_tokens, Path(out_dir), training, start, lang)
    run = trainer.fit(opt, epochs, rng, say, clip=5.0, ema=ema, ema_warmup=warmup, patience=patience,
                      max_minutes=max_minutes, start=start, precision=precision,
                      scheduler=torch.optim.lr_scheduler.ExponentialLR(opt, decay))
    return {"best": run.best, "minutes": round(run.minutes, 1), "history": run.history, "model": str(out_dir)}
