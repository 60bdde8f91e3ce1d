"""Named-entity recognition stage: ID-CNN (or Bi-LSTM) taggers writing MISC ``NE=B-PER`` tags.

Inference of an ID-CNN on the CPU runs in numpy (:mod:`nlpipe.models.idcnn_numpy`) so that the
filter starts without importing torch; Bi-LSTM models and ``device=cuda`` use torch. Sentences are
streamed in chunks; each chunk is length-sorted into batches and decoded in one vectorised call
(greedy + BIO repair, or CRF Viterbi). ``--context document`` models see whole documents
(``# newdoc`` comments) and still write per sentence. Training: :mod:`nlpipe.train.ner`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.io.conllu import MISC, Sentence
from nlpipe.io.misc import misc_prob, set_ne_tags
from nlpipe.decode import chain
from nlpipe.tags import repair
from nlpipe.errors import ModelError
from nlpipe.io.model_dir import read_arrays
from nlpipe.nn.device import resolve_device
from nlpipe.nn.features import N_AFFIXES, AffixVocab, shape_ids, word_vocab
from nlpipe.stages.base import READ_AHEAD, Adapter
from nlpipe.vocab import Vocab, read_vocab

WEIGHTS = "weights.npz"
MAX_DOC_TOKENS = 2000  # a document longer than this is tagged in pieces of about this many tokens
WORDS = "words.txt"
AFFIXES = "affixes.txt"


def _units(sentences: Iterable[Sentence], document: bool, max_sents: int,
           max_doc_tokens: int) -> Iterator[List[List[Sentence]]]:
    """Chunks of units (a unit = one sentence, or one document's sentences) to run as one batch."""
    chunk: List[List[Sentence]] = []
    n = 0
    unit: List[Sentence] = []
    unit_len = 0
    for s in sentences:
        if document:
            if unit and (s.starts_document or unit_len + len(s.words) > max_doc_tokens):
                chunk.append(unit)
                n += len(unit)
                unit, unit_len = [], 0
            unit.append(s)
            unit_len += len(s.words)
        else:
            chunk.append([s])
            n += 1
        if n >= max_sents:
            yield chunk
            chunk, n = [], 0
    if unit:
        chunk.append(unit)
    if chunk:
        yield chunk


class NERStage(Adapter, stage="ner"):
    """The ``ner`` stage: ``annotate`` writes MISC ``NE=`` (and ``NEProb=`` when ``probs``)."""

    def __init__(self, model_dir: Path, config: Dict[str, Any], device: str = "cpu", probs: bool = False,
                 chunk_sentences: int = READ_AHEAD, batch_tokens: int = 20000):
        hp = config.get("model")
        labels = config.get("labels")
        if not isinstance(hp, dict) or not isinstance(labels, list) or hp.get("arch") not in ("idcnn", "bilstm"):
            raise ModelError(f"{model_dir}: config.json lacks a valid 'model' block or 'labels'")
        vocab = read_vocab(Path(model_dir) / WORDS, word_vocab([]))
        affixes = read_vocab(Path(model_dir) / AFFIXES, AffixVocab([])) if hp.get("affix_dim") else None
        self._build(str(model_dir), hp, labels, vocab, affixes, read_arrays(Path(model_dir) / WEIGHTS), device, probs,
                    chunk_sentences, batch_tokens)

    @classmethod
    def from_arrays(cls, hp: Dict[str, Any], labels: List[str], vocab: Vocab, affixes: Optional[AffixVocab],
                    arrays: Dict[str, np.ndarray], device: str = "cpu", **options: Any) -> "NERStage":
        """The stage over a model in memory (:meth:`~nlpipe.nn.tagger.NeuralTagger.export` arrays),
        as training scores it on dev."""
        stage = cls.__new__(cls)
        stage._build("<model in training>", hp, labels, vocab, affixes, arrays, device, **options)
        return stage

    def _build(self, name: str, hp: Dict[str, Any], labels: List[str], vocab: Vocab, affixes: Optional[AffixVocab],
               arrays: Dict[str, np.ndarray], device: str = "cpu", probs: bool = False,
               chunk_sentences: int = READ_AHEAD, batch_tokens: int = 20000) -> None:
        self.hp, self.labels, self.probs = hp, labels, probs
        self.document = hp.get("context", "sentence") == "document"
        self.chunk_sentences, self.batch_tokens = chunk_sentences, batch_tokens
        self.vocab, self.affixes = vocab, affixes
        self.crf = None
        if hp.get("crf"):
            try:
                self.crf = chain.ConstrainedChain(labels, arrays["crf.trans"], arrays["crf.start"], arrays["crf.end"])
            except KeyError:
                raise ModelError(f"{name}: CRF model without CRF weights") from None
        self.device = resolve_device(device)
        try:
            if hp["arch"] == "idcnn" and self.device == "cpu":
                from nlpipe.models.idcnn_numpy import IDCNNInference

                self.numpy_model: Optional[Any] = IDCNNInference(arrays, hp["dilations"], hp["n_blocks"])
                self.torch_model = None
            else:
                import torch

                from nlpipe.nn.tagger import from_arrays

                self.numpy_model = None
                self.torch_model = from_arrays(hp, labels, arrays).to(torch.device(self.device))
        except (KeyError, RuntimeError, ValueError) as e:
            raise ModelError(f"{name}: weights do not match config.json ({type(e).__name__}: {e})") from None

    def scores(self, seqs: Sequence[List[str]]) -> List[np.ndarray]:
        """Per-sequence label scores ``[len, K]`` (log-probabilities for greedy models with ``probs``)."""
        feats = [(self.vocab.ids(ws), shape_ids(ws), self.affixes.affix_ids(ws) if self.affixes else None)
                 for ws in seqs]
        if self.numpy_model is not None:
            packed, starts = self.numpy_model.scores(feats)
            if self.crf is None and self.probs:  # greedy argmax does not need normalised scores
                packed = packed - packed.max(1, keepdims=True)
                packed = packed - np.log(np.exp(packed).sum(1, keepdims=True))
            return [packed[st:st + len(f[0])] for f, st in zip(feats, starts)]
        import torch

        dev = torch.device(self.device)
        n = max(len(f[0]) for f in feats)
        words = np.zeros((len(feats), n), dtype=np.int64)
        shapes = np.zeros((len(feats), n), dtype=np.int64)
        affixes = np.zeros((len(feats), n, N_AFFIXES), dtype=np.int64) if self.affixes else None
        for i, (w, s, a) in enumerate(feats):
            words[i, :len(w)] = w
            shapes[i, :len(s)] = s
            if affixes is not None:
                affixes[i, :len(w)] = a
        t_words, t_shapes = torch.as_tensor(words, device=dev), torch.as_tensor(shapes, device=dev)
        t_aff = torch.as_tensor(affixes, device=dev) if affixes is not None else None
        out = self.torch_model.predict(t_words, t_shapes, t_shapes > 0, t_aff)
        return [out[i, :len(f[0])] for i, f in enumerate(feats)]

    def tag(self, seqs: Sequence[List[str]]) -> Tuple[List[List[str]], List[np.ndarray]]:
        """BIO tags (and the chosen tags' probabilities) for word sequences, batched by length."""
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        tags: List[List[str]] = [[] for _ in seqs]
        probs: List[np.ndarray] = [np.zeros(0) for _ in seqs]
        batch: List[int] = []
        for pos, i in enumerate(order):
            batch.append(i)
            last = pos == len(order) - 1
            if last or (len(batch) + 1) * len(seqs[order[pos + 1]]) > self.batch_tokens:
                self._tag_batch([seqs[j] for j in batch], batch, tags, probs)
                batch = []
        return tags, probs

    def _tag_batch(self, seqs: List[List[str]], idx: List[int], tags: List[List[str]],
                   probs: List[np.ndarray]) -> None:
        scores = self.scores(seqs)
        lengths = np.array([len(s) for s in seqs])
        k = len(self.labels)
        padded = np.full((len(seqs), int(lengths.max()), k), 0.0, dtype=np.float32)
        for r, s in enumerate(scores):
            padded[r, :len(s)] = s
        ids = chain.decode(padded, lengths, self.labels, self.crf)
        if self.probs:
            marg = self.crf.marginals(padded, lengths) if self.crf is not None else np.exp(padded)
            chosen = np.take_along_axis(marg, ids[:, :, None], axis=2)[:, :, 0]
        for r, i in enumerate(idx):
            tags[i] = [self.labels[j] for j in ids[r, :lengths[r]]]
            if self.probs:
                probs[i] = chosen[r, :lengths[r]]

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        for chunk in _units(sentences, self.document, self.chunk_sentences, MAX_DOC_TOKENS):
            seqs = [[f for s in unit for f in s.forms()] for unit in chunk]
            nonempty = [q for q in seqs if q]
            tags, probs = self.tag(nonempty) if nonempty else ([], [])
            it = iter(zip(tags, probs))
            for unit, words in zip(chunk, seqs):
                if not words:
                    unit_tags, unit_probs = [], np.zeros(0)
                else:
                    unit_tags, unit_probs = next(it)
                a = 0
                for s in unit:
                    n = len(s.words)
                    set_ne_tags(s, repair(unit_tags[a:a + n]))  # a document unit may be cut inside an entity
                    if self.probs:
                        for word, p in zip(s.words, unit_probs[a:a + n]):
                            word[MISC] = misc_prob(word[MISC], "NEProb", p)
                    a += n
                    yield s


def load(model_dir: Path, config: Dict[str, Any], **options: Any) -> NERStage:
    """Stage loader named in :data:`nlpipe.registry.ARCHS` (``idcnn.v1``, ``bilstm.v1``)."""
    return NERStage(Path(model_dir), config, **options)
