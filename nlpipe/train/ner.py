"""`nlpipe train ner`: read the data, build vocabulary and model, train, save, score (torch).

The loop is :class:`nlpipe.train.loop.Trainer` (Adam, gradient clipping, patience); after every
epoch the dev units are tagged by :class:`~nlpipe.stages.ner.NERStage` over the model's weights as
they would be saved, and the epoch with the best dev entity F1 is kept.
"""
from __future__ import annotations

import collections
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import torch

from nlpipe.io.conllu import read_conllu
from nlpipe.io.formats import read_conll2003, read_uner
from nlpipe.io.inputs import open_input, sniff
from nlpipe.io.misc import ne_tags
from nlpipe.tags import label_order, repair, to_bio
from nlpipe.errors import NlpipeError
from nlpipe.io.model_dir import UNDETERMINED, builds_model, write_arrays, write_config
from nlpipe.io.provenance import record_test, training_block
from nlpipe.nn.batching import length_batches
from nlpipe.nn.device import resolve_device
from nlpipe.nn.precision import check_precision
from nlpipe.nn.features import AffixVocab, affix_keys, word_vocab
from nlpipe.vocab import Vocab, write_vocab
from nlpipe.nn.tagger import DEFAULTS, NeuralTagger
from nlpipe.stages.ner import NERStage
from nlpipe.train.loop import Trainer, seed_everything
from nlpipe.train.optim import adam
from nlpipe.train.tagger import Sequence_, gold_sentences, make_sequences, span_f1, tensorize
from nlpipe.train.vectors import embeddings, load_vectors, parts, record, vocabulary

Sent = Tuple[List[str], List[str], bool]


def sniff_format(path: str) -> str:
    """``conll2003``, ``uner`` or ``conllu`` from the first token line of ``path``."""
    stream, _ = open_input(path)
    with stream:
        kind, _ = sniff(stream.buffer)
    if kind == "empty":
        raise NlpipeError(f"{path}: empty data file")
    return kind if kind in ("conll2003", "conllu") else "uner"


def read_ner_file(path: str, fmt: str = "auto") -> List[Sent]:
    """Sentences ``(words, BIO tags, starts a document)`` of a CoNLL-2003, UNER or CoNLL-U file.

    The file's tags may be BIO, IOB1 or BIOES, as for ``nlpipe eval ner``; they are converted to BIO,
    what the models train on (:func:`nlpipe.tags.to_bio` keeps every span).
    """
    fmt = sniff_format(path) if fmt == "auto" else fmt
    stream, name = open_input(path)
    with stream:
        if fmt == "conll2003":
            sents = [(s.words, s.tags, s.newdoc) for s in read_conll2003(stream, name, bio=False)]
        elif fmt == "uner":
            sents = [(s.words, s.tags, s.newdoc) for s in read_uner(stream, name, map_draft=True)]
        else:
            sents = [(s.forms(), ne_tags(s, name), s.starts_document) for s in read_conllu(stream, name)]
    return [(words, to_bio(tags), newdoc) for words, tags, newdoc in sents]


def build_affixes(train: List[Sent], min_count: int) -> List[str]:
    """Affix keys seen at least ``min_count`` times in the training words, most frequent first."""
    counts = collections.Counter(a for words, _, _ in train for w in words for a in affix_keys(w))
    return [a for a, c in counts.most_common() if c >= min_count]


class TaggerTrainer(Trainer):
    """The neural tagger's batches (length-bucketed, reshuffled every epoch), loss and dev F1."""

    name, key = "ner", "f1"

    def __init__(self, model: NeuralTagger, vocab: Vocab, affixes: Optional[AffixVocab], hp: Dict[str, Any],
                 train: List[Sequence_], dev: List[Sequence_], batch_tokens: int, device: str):
        self.net, self.vocab, self.affixes, self.hp = model, vocab, affixes, hp
        self.train, self.dev, self.batch_tokens, self.device = train, dev, batch_tokens, device
        self.label_index = {t: i for i, t in enumerate(model.labels)}
        self.lengths = [len(s.words) for s in train]
        self.gold = gold_sentences(dev)

    def batches(self, rng: Any) -> List[List[int]]:
        return length_batches(self.lengths, self.batch_tokens, rng)

    def loss(self, batch: List[int]) -> Any:
        words, shapes, tags, mask, aff = tensorize([self.train[i] for i in batch], self.vocab, self.label_index,
                                                   torch.device(self.device), self.affixes)
        return self.net.loss(words, shapes, tags, mask, aff)

    def dev_scores(self) -> Dict[str, float]:
        stage = NERStage.from_arrays(self.hp, list(self.net.labels), self.vocab, self.affixes, self.net.export(),
                                     self.device)
        return {"f1": span_f1(self.gold, stage_predict(stage, self.dev))}


@builds_model("out")
def train(log: Callable[[str], None], arch: str, crf: bool, context: str, train_file: str, dev_file: str,
          test_file: Optional[str], out: str, fmt: str, device: str, width: Optional[int],
          blocks: Optional[int], dilations: Optional[str], hidden: Optional[int], epochs: int,
          lr: Optional[float], batch_tokens: int, glove_top: int, glove_words: Optional[str], glove_vectors: Optional[str], seed: int,
          time_limit: Optional[float], threads: Optional[int], word_dropout: Optional[float] = None,
          freeze_words: bool = False, affix_dim: int = 0, min_affix: int = 2,
          lang: str = UNDETERMINED, vectors: Optional[str] = None, precision: str = "fp32") -> Dict[str, Any]:
    """Train and save an NER model; return ``{"dev": {...}, "test": {...}, "model": out, ...}``.
    ``lang``: the training data's language code, recorded in the model; ``vectors``,
    ``glove_words``, ``glove_vectors``: the word vectors, as :func:`~nlpipe.train.vectors.load_vectors`
    takes them (default: GloVe 6B 50d for English, none otherwise); ``precision``: fp32 or bf16
    (:mod:`nlpipe.nn.precision`)."""
    start = time.time()
    seed_everything(seed, threads)
    dev_name = resolve_device(device)
    check_precision(precision, dev_name, log)
    tdev = torch.device(dev_name)
    train_s, dev_s = read_ner_file(train_file, fmt), read_ner_file(dev_file, fmt)
    labels = ["O"] + sorted({t for _, tags, _ in train_s for t in tags} - {"O"},
                            key=label_order)
    if len(labels) == 1:   # a model that can only say "O": the file is not what the user meant
        raise NlpipeError(f"{train_file}: no named entities in the training data (CoNLL-U: MISC NE=B-PER "
                          f"style tags; CoNLL-2003 and UNER: the entity column)")
    unknown = {t for _, tags, _ in dev_s for t in tags} - set(labels)
    if unknown:
        raise NlpipeError(f"{dev_file}: tags not in the training data: {', '.join(sorted(unknown))}")
    hp: Dict[str, Any] = dict(DEFAULTS[arch], arch=arch, crf=crf, context=context)
    for key, val in (("width", width), ("n_blocks", blocks), ("hidden", hidden)):
        if val is not None:
            hp[key] = val
    if word_dropout is not None:
        hp["word_dropout"] = word_dropout
    if freeze_words:
        hp["freeze_words"] = True
    hp["affix_dim"] = affix_dim
    if dilations:
        hp["dilations"] = [int(d) for d in dilations.split(",")]
    lr = lr if lr is not None else (5e-4 if arch == "idcnn" else 1e-3)
    vecs = load_vectors(vectors, lang, (w for words, _, _ in train_s for w in words), glove_top, glove_words,
                        glove_vectors, log)
    if vecs is not None:
        hp["word_dim"] = vecs.dim
    g_words, g_vectors = parts(vecs, hp["word_dim"])
    vocab = word_vocab(vocabulary((w for words, _, _ in train_s for w in words), g_words, glove_top, by_frequency=True))
    init_vectors, known = embeddings(vocab.entries, g_words, g_vectors, hp["word_dim"], seed)
    affixes = AffixVocab(build_affixes(train_s, min_affix)) if affix_dim > 0 else None
    log(f"ner: {arch}{'-crf' if crf else ''} {context}; {len(train_s)} train / {len(dev_s)} dev sentences; "
        f"vocab {len(vocab)} ({known} with vectors); {len(affixes) if affixes else 0} affixes; labels {len(labels)}; device {dev_name}")
    document = context == "document"
    train_q, dev_q = make_sequences(train_s, document), make_sequences(dev_s, document)
    model = NeuralTagger(hp, len(vocab), labels, init_vectors, n_affixes=len(affixes) if affixes else 0)
    model.to(tdev)
    # seeded again once the model is built: batch order and dropout do not depend on how many draws
    # its initialisation took (as NER models have always been trained)
    rng = seed_everything(seed)
    run = TaggerTrainer(model, vocab, affixes, hp, train_q, dev_q, batch_tokens, dev_name).fit(
        adam(model.parameters(), lr=lr, betas=(0.9, 0.9)), epochs, rng, log, clip=5.0, patience=15,
        max_minutes=None if time_limit is None else time_limit / 60, precision=precision)
    best = {"dev_f1": round(run.best["f1"], 2), "epoch": run.best_epoch, "seconds": round(time.time() - start, 1)}
    result: Dict[str, Any] = {"model": out, "arch": arch, "crf": crf, "context": context,
                              "dev": {"f1": best["dev_f1"]}, "epoch": best["epoch"], "seconds": best["seconds"]}
    save(Path(out), model, vocab, affixes, hp, labels, lang,
         training_block({"train": train_file, "dev": dev_file}, {"f1": best["dev_f1"]}, seed=seed,
                        epochs=best["epoch"], lr=lr, batch_tokens=batch_tokens,
                        vectors=record(vecs, top=glove_top), precision=precision,
                        seconds=best["seconds"]))
    if test_file:
        from nlpipe.io.model_dir import read_config

        config = read_config(Path(out), "ner")
        stage = NERStage(Path(out), config, device=dev_name)
        test_q = make_sequences(read_ner_file(test_file, fmt), document)
        f1 = span_f1(gold_sentences(test_q), stage_predict(stage, test_q))
        result["test"] = {"f1": round(f1, 2), "file": test_file}
        record_test(config["training"], test_file, {"f1": round(f1, 2)})
        write_config(Path(out), config)
    return result


def stage_predict(stage: Any, seqs: List[Sequence_]) -> List[List[str]]:
    """Per-sentence tags from the stage's own inference path (what `nlpipe ner` runs)."""
    tags, _ = stage.tag([s.words for s in seqs])
    out = []
    for s, t in zip(seqs, tags):
        bounds = s.starts + [len(s.words)]
        for a, b in zip(bounds, bounds[1:]):
            out.append(repair(t[a:b]))
    return out


def save(out: Path, model: NeuralTagger, vocab: Vocab, affixes: Optional[AffixVocab], hp: Dict[str, Any],
         labels: List[str], lang: str, training: Dict[str, Any]) -> None:
    """Write config.json, words.txt, weights.npz (and affixes.txt for models with affix features)."""
    write_arrays(out / "weights.npz", model.export())
    write_vocab(out / "words.txt", vocab)
    if affixes is not None:
        write_vocab(out / "affixes.txt", affixes)
    write_config(out, {"stage": "ner", "arch": f"{hp['arch']}.v1", "language": lang, "labels": labels,
                       "model": hp, "training": training})
