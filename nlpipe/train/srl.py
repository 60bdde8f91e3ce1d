"""`nlpipe train srl`: vocabularies, word-vector initialisation, the per-batch loss and the dev scorer of
LISA / SA (torch); the loop is :class:`nlpipe.train.loop.Trainer`.

Adam with linear warm-up then inverse square-root decay, gradient clipping, length-bucketed
batches; after every epoch the dev set is annotated through the stage's own code path and the
epoch with the best dev SRL F1 (gold predicates) is kept in the model directory.
"""
from __future__ import annotations

import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from nlpipe.io.conllu import Sentence, read_file
from nlpipe.errors import NlpipeError
from nlpipe.io.model_dir import UNDETERMINED, builds_model
from nlpipe.io.provenance import training_block
from nlpipe.nn.batching import length_batches
from nlpipe.nn.lisa import DEFAULTS, inverse_sqrt
from nlpipe.nn.syntax_modes import syntax_mode
from nlpipe.tags import label_order
from nlpipe.models.lisa import Example, LisaModel, example
from nlpipe.stages.srl import SrlStage
from nlpipe.train.loop import Trainer, seed_everything, stage_scores
from nlpipe.train.optim import adam
from nlpipe.train.vectors import embeddings, load_vectors, parts, record, vocabulary


def read_gold(path: str, max_len: int) -> List[Sentence]:
    """Annotated sentences of a training file (without empty or over-long ones)."""
    return [s for s in read_file(path) if s.words and len(s.words) <= max_len]


def build_vocab(examples: Sequence[Any], vector_words: Sequence[str], glove_top: int) -> Dict[str, Any]:
    """Word keys (training words, then frequent words of the word vectors), label sets and sense tables."""
    roles = sorted({t for e in examples for r in e.roles for t in r} - {"O"}, key=label_order)
    roles = sorted({t for e in examples for r in e.roles for t in r} - {"O"}, key=lambda t: (t[2:], t[0]))
    by_lemma: Dict[str, Counter] = defaultdict(Counter)
    by_form: Dict[str, Counter] = defaultdict(Counter)
    for e in examples:
        for p, r in zip(e.preds, e.rolesets):
            if r == "Y":
                continue
            if e.lemmas[p] not in ("_", ""):
                by_lemma[e.lemmas[p].lower()][r] += 1
            by_form[e.forms[p].lower()][r] += 1
    return {
        "words": vocabulary((f for e in examples for f in e.forms), vector_words, glove_top),
        "tags": sorted({t for e in examples for t in e.tags}),
        "rels": sorted({r for e in examples for r in e.rels}),
        "roles": ["O"] + roles,
        "senses": {k: c.most_common(1)[0][0] for k, c in sorted(by_lemma.items())},
        "form_senses": {k: c.most_common(1)[0][0] for k, c in sorted(by_form.items())},
    }


def dev_scores(model: Any, gold: List[Sentence]) -> Dict[str, float]:
    """Dev SRL F1 with gold predicates and predicate F1, through :class:`SrlStage` (percent)."""
    srl = stage_scores(SrlStage(model, "srl", predicates_from_input=True), "srl", gold, gold_predicates=True)
    preds = stage_scores(SrlStage(model, "predicates"), "predicates", gold)
    return {"f1": srl["f1"], "precision": srl["precision"], "recall": srl["recall"], "predicates_f1": preds["f1"],
            "sense_accuracy": preds["sense_accuracy"]}


class LisaTrainer(Trainer):
    """LISA's batches (length-bucketed, reshuffled every epoch), loss and dev scores; saves every
    new best epoch to ``out``."""

    name, key, shown = "srl", "f1", ("f1", "predicates_f1")

    def __init__(self, model: LisaModel, train: List[Example], dev: List[Sentence], batch_tokens: int,
                 out: Path, training: Callable[[Dict[str, Any], int], Dict[str, Any]], start: float, lang: str):
        self.model, self.net = model, model.net
        self.train, self.dev, self.out, self.training, self.start = train, dev, out, training, start
        self.lang = lang
        self._batches = length_batches([len(e.forms) for e in train], batch_tokens)

    def batches(self, rng: Any) -> List[List[int]]:
        rng.shuffle(self._batches)
        return self._batches

    def loss(self, batch: List[int]) -> Any:
        return self.model.net.loss(self.model.tensors([self.train[i] for i in batch], gold=True))

    def dev_scores(self) -> Dict[str, float]:
        return dev_scores(self.model, self.dev)

    def on_best(self, epoch: int, scores: Dict[str, float], steps: int) -> None:
        best = dict(scores, epoch=epoch, seconds=round(time.time() - self.start))
        self.model.save(self.out, self.training(best, steps), self.lang)


@builds_model("out")
def train(log: Callable[[str], None], train_path: str, dev_path: str, out: str, no_syntax: bool = False,
          syntax: Optional[str] = None, eta: Optional[float] = None,
          layers: Optional[int] = None, d_model: Optional[int] = None, heads: Optional[int] = None,
          epochs: int = 60, max_minutes: float = 40.0, patience: int = 8, lr: float = 1e-3, warmup: int = 800,
          batch_tokens: int = 1500, ema: float = 0.0, vectors: Optional[str] = None,
          glove_words: Optional[str] = None,
          glove_vectors: Optional[str] = None, glove_top: int = 40000, seed: int = 1, threads: int = 1,
          init: Optional[str] = None, init_steps: int = 0, lang: str = UNDETERMINED, device: str = "cpu",
          precision: str = "fp32") -> Dict[str, Any]:
    """Train LISA (or SA with ``no_syntax``) and save the best dev epoch to ``out``; return a summary.
    ``syntax``: how the syntactic head learns (:mod:`nlpipe.nn.syntax_modes`; default lisa, or with
    ``init`` the model's); ``eta``: SPIGOT's step size (default 1); ``ema`` in (0, 1): dev scores and
    the saved model use a moving average of the weights (decay ``ema`` per step).
    ``lang``: the training data's language code, recorded in the model; ``vectors``,
    ``glove_words``, ``glove_vectors``: the word vectors, as :func:`~nlpipe.train.vectors.load_vectors`
    takes them (default: GloVe 6B 50d for English, none otherwise).

    ``device``: cpu, cuda or auto (the network trains and is scored on dev there). ``init`` continues
    training a saved model (its vocabularies and hyper-parameters; a fresh
    optimizer) with the learning-rate schedule taken up at step ``init_steps`` after a short warm-up.
    ``precision``: fp32 or bf16 (:mod:`nlpipe.nn.precision`).
    """
    from nlpipe.nn.device import resolve_device
    from nlpipe.nn.precision import check_precision

    device = resolve_device(device)
    check_precision(precision, device, log)
    rng = seed_everything(seed, threads)
    if no_syntax and syntax not in (None, "lisa"):
        raise NlpipeError(f"--syntax {syntax} needs the syntactic head: it does not go with --no-syntax")
    hp = dict(DEFAULTS, syntax=not no_syntax)
    for key, val in (("layers", layers), ("d_model", d_model), ("heads", heads)):
        if val is not None:
            hp[key] = val
    if hp["d_model"] % hp["heads"]:
        raise NlpipeError(f"--d-model {hp['d_model']} is not a multiple of --heads {hp['heads']}")
    hp["pos_layer"] = min(hp["pos_layer"], hp["layers"] - 1)
    hp["parse_layer"] = min(hp["parse_layer"], hp["layers"] - 1)
    if init:
        from nlpipe.io.model_dir import read_config

        config = read_config(Path(init), "srl")
        model = LisaModel.load(Path(init), config, device)
        hp = model.hyper
        hp.setdefault("eta", DEFAULTS["eta"])
        vocab = model.vocab
        source = config.get("training", {}).get("vectors")
    for key, val in (("syntax_mode", syntax), ("eta", eta)):
        if val is not None:
            hp[key] = val
    hp["syntax_mode"] = syntax_mode(hp)
    train_sents = read_gold(train_path, hp["max_len"])
    dev_sents = [s for s in read_file(dev_path) if s.words]
    train_ex = [example(s, train_path, gold=True) for s in train_sents]
    if not any(ex.preds for ex in train_ex):   # the SRL half of the model would learn nothing
        raise NlpipeError(f"{train_path}: no predicates in the training data (MISC Pred= and SRL= entries; "
                          f"'nlpipe train srl-data' joins PropBank files to UD trees)")
    if not init:
        from nlpipe.nn.features import word_vocab

        vecs = load_vectors(vectors, lang, (f for e in train_ex for f in e.forms), glove_top, glove_words,
                            glove_vectors, log)
        if vecs is not None:
            hp["word_dim"] = vecs.dim
        g_words, g_vectors = parts(vecs, hp["word_dim"])
        vocab = build_vocab(train_ex, g_words, glove_top)
        init_vectors, _ = embeddings(word_vocab(vocab["words"]).entries, g_words, g_vectors, hp["word_dim"], seed)
        model = LisaModel(vocab, hp, device, init_vectors)
        source = record(vecs, top=glove_top)
        del vecs, g_vectors
    n_params = sum(p.numel() for p in model.net.parameters())
    log(f"srl: {'LISA, --syntax ' + hp['syntax_mode'] if hp['syntax'] else 'SA'}; {len(train_ex)} train / {len(dev_sents)} dev sentences; "
        f"{len(vocab['words'])} words, {len(vocab['tags'])} tags, {len(vocab['roles'])} role labels; "
        f"{n_params} parameters")
    opt = adam(model.net.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)

    def step_lr(step: int) -> float:
        return (inverse_sqrt(step + init_steps, lr, warmup) * min(1.0, step / 100) if init
                else inverse_sqrt(step, lr, warmup))

    base = training_block({"train": train_path, "dev": dev_path}, {}, lr=lr, warmup=warmup,
                          batch_tokens=batch_tokens, seed=seed,
                          vectors=source,
                          syntax=hp["syntax"], syntax_mode=hp["syntax_mode"], continued_from=init,
                          ema=ema or None, precision=precision)   # the data files are hashed once

    def training(best: Dict[str, Any], steps: int) -> Dict[str, Any]:
        return dict(base, epochs=best["epoch"], seconds=best["seconds"], steps=init_steps + steps,
                    scores={"dev_srl_f1_gold_predicates": round(best["f1"], 2),
                            "dev_predicates_f1": round(best["predicates_f1"], 2)})

    start = time.time()
    trainer = LisaTrainer(model, train_ex, dev_sents, batch_tokens, Path(out), training, start, lang)
    run = trainer.fit(opt, epochs, rng, log, clip=1.0, ema=ema, ema_warmup=bool(ema) and not init,
                      step_lr=step_lr, patience=patience,
                      max_minutes=max_minutes, start=start, precision=precision)
    best = run.best
    return {"model": out, "dev": {k: best[k] for k in ("f1", "precision", "recall", "predicates_f1")},
            "epoch": run.best_epoch, "seconds": round(time.time() - start), "syntax": hp["syntax"],
            "syntax_mode": hp["syntax_mode"]}
