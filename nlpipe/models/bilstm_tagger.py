"""The accurate POS tagger (arch ``bilstm-tagger.v1``): vocabularies, id arrays, the network (numpy on
the CPU, torch for training and CUDA) and its folder.

The folder holds ``config.json`` (the joint ``UPOS<TAB>XPOS`` labels as ``labels``, the
hyper-parameters under ``model``), ``vocab.json`` (``words``: the trained word table's keys;
``vectors``: the pre-trained table's; ``affixes``; ``chars``: the character CNN's; ``feats``: the
FEATS strings of the FEATS head; ``lemmas``: the lemma rules of the lemma head, as
:func:`~nlpipe.models.lemmatizer.lemma_rule` writes them; each empty where the model has no such
part; ``feats_dictionary``, where training chose one: ``[form, FEATS, ...]`` rows, the only FEATS a
word of that normalized form may get, as the linear tagger's FEATS dictionary; ``feats_by_tag``, where
training chose it: ``[UPOS<TAB>XPOS, FEATS, ...]`` rows, the FEATS a word with that tag had in
training, the only ones it may get), ``weights.pt`` (half
precision) and, for a treebank with lemmas, ``lemma/``: a :class:`~nlpipe.models.lemmatizer.Lemmatizer`
with its own word attributes, reading this tagger's labels. Config ``model.lemma_from`` says where
lemmas come from (:data:`LEMMA_SOURCES`). Config ``model.linear`` (``{"dir": "linear", "weight": w}``),
where training chose one, names a linear tagger in the folder whose joint-label log-probabilities,
times ``w``, are added to this one's before the tag is chosen (a product of the two taggers; see
:attr:`TaggerModel.tag_prior`).
"""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.linear.attributes import normalize
from nlpipe.linear.dictionary import RULED_OUT
from nlpipe.models.bilstm_tagger_numpy import HEADS, TaggerInference, expected_shapes
from nlpipe.models.neural_numpy import log_softmax
from nlpipe.nn.features import FORM_CACHE, N_AFFIXES, affix_keys, cached_rows, word_shape, word_vocab
from nlpipe.nn.weights import load_model, save_model_dir
from nlpipe.vocab import Vocab

ARCH = "bilstm-tagger.v1"
LEMMA_DIR = "lemma"
# where a word's lemma comes from: the Lemmatizer (lexicon by form and tag, then its rule
# classifier); the lemma head's rule; the Lemmatizer's lexicon, then the head; the lexicon of forms
# that always had one lemma in training, then the head (lexicons trained since 2026-11-29 have no
# form-alone entries: there it is the head alone)
LEMMA_SOURCES = ("lemmatizer", "head", "lexicon+head", "forms+head")
MAX_CHARS = 20         # characters of a word the character CNN reads

# hyper-parameters of a new tagger (vector_dim: the vectors' size, 0 without vectors; char_filters 0:
# no character CNN; lemma_head: train a lemma head too). The lemma head is off, and the character
# CNN too where there are word vectors: on en_ewt dev neither won; without vectors (fr_sequoia) the
# CNN did, see CHAR_FILTERS_WITHOUT_VECTORS (docs/experiments.md, 2026-11-28). 192 units beat 128
# on both dev sets. rank: 0, or the size of the projection each layer after the first reads the
# one below through (nlpipe.nn.parser_encoder.BiLSTMStack).
DEFAULT_HYPER: Dict[str, Any] = {
    "word_dim": 64, "vector_dim": 0, "shape_dim": 8, "affix_dim": 64, "hidden": 192, "layers": 2,
    "dropout": 0.33, "word_dropout": 0.25, "char_dim": 32, "char_filters": 0, "char_width": 3,
    "lemma_head": False, "rank": 0,
}
CHAR_FILTERS_WITHOUT_VECTORS = 64   # the character CNN's default where the tagger has no word vectors


def padded(rows: Sequence[np.ndarray], width: int) -> np.ndarray:
    """Rows ``[n_i, width]`` of sentences as one ``[len(rows), longest, width]`` array, padding 0."""
    out = np.zeros((len(rows), max((len(r) for r in rows), default=0), width), dtype=np.float32)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


class TaggerModel:
    """The vocabularies, the label sets and the network together. ``vocab``: ``words``, ``vectors``,
    ``affixes`` (entries without the specials), ``tags`` (joint labels) and ``feats`` (may be empty)."""

    def __init__(self, vocab: Dict[str, List[str]], hyper: Dict[str, Any], device: str = "cpu",
                 params: Optional[Dict[str, np.ndarray]] = None):
        """``params``: the arrays of a saved network, run in numpy (no torch import); otherwise a
        torch :class:`~nlpipe.nn.bilstm_tagger.BiLSTMTagger` on ``device``."""
        self.vocab, self.hyper = vocab, hyper
        self.words = word_vocab(vocab["words"])
        self.vectors = word_vocab(vocab["vectors"])
        self.affixes = Vocab(vocab["affixes"])
        self.chars = Vocab(vocab.get("chars") or []) if hyper.get("char_dim") else None
        self.labels = {k: list(vocab.get(k) or []) for k in HEADS}
        self.sizes = {"words": len(self.words), "vectors": len(self.vectors), "affixes": len(self.affixes),
                      "chars": len(self.chars) if self.chars is not None else 0,
                      **{k: len(self.labels[k]) for k in HEADS}}
        self.set_feats_dictionary(vocab.get("feats_dictionary") or [])
        self.set_feats_by_tag(vocab.get("feats_by_tag") or [])
        self._forms: Dict[str, Tuple[int, ...]] = {}
        self._chars: Dict[str, List[int]] = {}              # character ids of the forms seen
        self._char_features: Dict[str, np.ndarray] = {}     # numpy: the character CNN's output by form
        # sentences of a batch -> per sentence [n, n_tags] weighted log-probabilities of another tagger,
        # added to this one's tag log-probabilities (None: the tags are this network's alone)
        self.tag_prior: Optional[Callable[[Sequence[Sequence[str]]], List[np.ndarray]]] = None
        self.inference: Optional[TaggerInference] = None
        self.torch: Any = None
        if params is not None:
            self.inference = TaggerInference(params, expected_shapes(hyper, self.sizes))
            return
        import torch

        from nlpipe.nn.bilstm_tagger import BiLSTMTagger

        self.torch = torch
        self.net = BiLSTMTagger(hyper, len(self.words), len(self.vectors), len(self.affixes),
                                {k: self.sizes[k] for k in HEADS}, self.sizes["chars"])
        self.device = torch.device(device)
        self.net.to(self.device)

    def set_feats_dictionary(self, rows: Sequence[Sequence[str]]) -> None:
        """Restrict the FEATS head: each row ``[normalized form, FEATS, ...]`` lists the only FEATS
        (of the head's labels) a word of that form may get; no rows: no restriction."""
        index = {f: i for i, f in enumerate(self.labels["feats"])}
        sets: Dict[Tuple[int, ...], int] = {}
        self._feats_set: Dict[str, int] = {}
        for form, *labels in rows:
            ids = tuple(sorted({index[l] for l in labels if l in index}))
            if ids:
                self._feats_set[form] = sets.setdefault(ids, len(sets) + 1)
        self.vocab = dict(self.vocab, feats_dictionary=[list(r) for r in rows])
        if not rows:
            del self.vocab["feats_dictionary"]
        self._feats_masks = np.full((len(sets) + 1, len(index)), RULED_OUT, dtype=np.float32)
        self._feats_masks[0] = 0.0
        for ids, k in sets.items():
            self._feats_masks[k, list(ids)] = 0.0

    def set_feats_by_tag(self, rows: Sequence[Sequence[str]]) -> None:
        """Restrict the FEATS head by the word's tag: each row ``[UPOS<TAB>XPOS, FEATS, ...]`` lists
        the only FEATS (of the head's labels) a word with that tag may get; a tag without a row, or no
        rows at all: no restriction."""
        self.vocab = dict(self.vocab, feats_by_tag=[list(r) for r in rows])
        self._tag_feats: Optional[np.ndarray] = None
        if not rows:
            del self.vocab["feats_by_tag"]
            return
        tags = {t: i for i, t in enumerate(self.labels["tags"])}
        feats = {f: i for i, f in enumerate(self.labels["feats"])}
        mask = np.zeros((len(tags), len(feats)), dtype=np.float32)             # [n_tags, n_feats]
        for tag, *labels in rows:
            ids = [feats[f] for f in labels if f in feats]
            if tag in tags and ids:
                mask[tags[tag]] = RULED_OUT
                mask[tags[tag], ids] = 0.0
        self._tag_feats = mask

    def feats_masks(self, sentences: Sequence[Sequence[str]], n: int) -> Optional[np.ndarray]:
        """``[b, n, n_feats]`` scores to add to the FEATS head's (0, or ruling a FEATS out); None
        without a dictionary."""
        if not self._feats_set:
            return None
        ids = np.zeros((len(sentences), n), dtype=np.int64)
        for i, s in enumerate(sentences):
            ids[i, :len(s)] = [self._feats_set.get(normalize(f), 0) for f in s]
        return self._feats_masks[ids]

    def form_ids(self, forms: Sequence[str]) -> np.ndarray:
        """``[len(forms), 3 + N_AFFIXES]``: word id, vector id, shape id, affix ids of every form."""
        rows = cached_rows(forms, self._forms, lambda f: (self.words.id(f), self.vectors.id(f), word_shape(f),
                                                          *(self.affixes.id(k) for k in affix_keys(f))))
        return np.array(rows, dtype=np.int64).reshape(len(forms), 3 + N_AFFIXES)

    def char_ids(self, form: str) -> List[int]:
        """Character ids of a form (at most :data:`MAX_CHARS`: a longer one's first and last halves)."""
        got = self._chars.get(form)
        if got is None:
            text = form if len(form) <= MAX_CHARS else form[:MAX_CHARS // 2] + form[-(MAX_CHARS // 2):]
            if len(self._chars) > FORM_CACHE:
                self._chars.clear()
            got = self._chars[form] = [self.chars.id(c) for c in text] or [1]   # type: ignore[union-attr]
        return got

    def char_array(self, words: Sequence[Sequence[str]]) -> np.ndarray:
        """``[b, N, L]`` character ids of rows of forms (0 padding)."""
        rows = [[self.char_ids(f) for f in s] for s in words]
        n = max(len(r) for r in rows)
        length = max((len(c) for r in rows for c in r), default=1)
        out = np.zeros((len(rows), n, length), dtype=np.int64)
        for i, r in enumerate(rows):
            for k, c in enumerate(r):
                out[i, k, :len(c)] = c
        return out

    def char_features(self, sentences: Sequence[Sequence[str]]) -> np.ndarray:
        """numpy: ``[b, N, filters]`` the character CNN's output, computed once per form."""
        cache = self._char_features      # shared by the threads of map_batches: read once, then local
        got = {f: cache.get(f) for s in sentences for f in s}
        new = sorted(f for f, v in got.items() if v is None)
        if new:
            if len(cache) > FORM_CACHE:
                cache.clear()
            for f, v in zip(new, self.inference.char_features(self.char_array([new])[0])):  # type: ignore[union-attr]
                cache[f] = got[f] = v
        out = np.zeros((len(sentences), max(len(s) for s in sentences), self.hyper["char_filters"]), np.float32)
        for i, s in enumerate(sentences):
            if s:
                out[i, :len(s)] = [got[f] for f in s]
        return out

    def arrays(self, sentences: Sequence[Sequence[str]]) -> Dict[str, np.ndarray]:
        """Padded id arrays ``words, vectors, shapes, mask [b, N]``, ``affixes [b, N, N_AFFIXES]``,
        ``lengths [b]`` of sentences of forms; with a character CNN also ``chars [b, N, L]`` (torch)
        or ``char_features [b, N, filters]`` (numpy)."""
        lengths = np.array([len(s) for s in sentences], dtype=np.int64)
        b, n = len(sentences), int(lengths.max())
        ids = np.zeros((b, n, 3 + N_AFFIXES), dtype=np.int64)
        for i, s in enumerate(sentences):
            ids[i, :len(s)] = self.form_ids(s)
        out = {"words": ids[..., 0], "vectors": ids[..., 1], "shapes": ids[..., 2],
               "affixes": np.ascontiguousarray(ids[..., 3:]), "mask": np.arange(n)[None, :] < lengths[:, None],
               "lengths": lengths}
        if self.chars is not None:
            if self.inference is not None:
                out["char_features"] = self.char_features(sentences)
            else:
                out["chars"] = self.char_array(sentences)
        return out

    def label_arrays(self, gold: Sequence[Dict[str, Sequence[str]]], n: int) -> Dict[str, np.ndarray]:
        """``[b, n]`` gold label ids of every head from each sentence's labels by head (padding 0;
        a label the head does not have: ``ignore``, -100, which the loss skips)."""
        out = {}
        for k in HEADS:
            if self.labels[k]:
                index = {l: i for i, l in enumerate(self.labels[k])}
                a = np.zeros((len(gold), n), dtype=np.int64)
                for i, g in enumerate(gold):
                    a[i, :len(g[k])] = [index.get(l, -100) for l in g[k]]
                out[k] = a
        return out

    def tensors(self, a: Dict[str, np.ndarray]) -> Dict[str, Any]:
        """Id arrays as torch tensors on the model's device."""
        return {k: self.torch.from_numpy(v).to(self.device) for k, v in a.items()}

    def predict(self, sentences: Sequence[Sequence[str]], prior: Optional[Callable[[], List[np.ndarray]]] = None,
                scores: bool = False) -> Dict[str, Any]:
        """Label ids of every head for every word of one batch of sentences (lists of forms);
        ``prior``: a function giving :attr:`tag_prior`'s rows for these sentences, called once the
        network has run, so that they may be computed meanwhile (None: computed here where there is a
        tag prior). With ``scores``, also ``"tag_scores"``: per sentence ``[n, n_tags]``, the scores the
        tags were chosen from (logits; with a prior, the product's log-probabilities)."""
        if prior is None and self.tag_prior is not None:
            prior = partial(self.tag_prior, sentences)
        if self.inference is not None:
            return self._predict_numpy(sentences, prior, scores)
        a = self.arrays(sentences)
        masks = self.feats_masks(sentences, a["mask"].shape[1])
        torch = self.torch
        self.net.eval()
        with torch.no_grad():
            out = self.net(self.tensors(a))
            if masks is not None:
                out["feats"] = out["feats"] + torch.from_numpy(masks).to(out["feats"].device)
            if prior is not None:
                out["tags"] = (torch.log_softmax(out["tags"].float(), -1)
                               + torch.from_numpy(padded(prior(), len(self.labels["tags"]))).to(out["tags"].device))
            if self._tag_feats is not None and "feats" in out:
                out["feats"] = out["feats"] + torch.from_numpy(self._tag_feats).to(out["feats"].device)[
                    out["tags"].argmax(-1)]
            best = {k: s.argmax(-1).cpu().numpy() for k, s in out.items()}
            tag_scores = out["tags"].float().cpu().numpy()
        ids: Dict[str, Any] = {k: [row[:len(s)].tolist() for row, s in zip(v, sentences)] for k, v in best.items()}
        if scores:
            ids["tag_scores"] = [row[:len(s)] for row, s in zip(tag_scores, sentences)]
        return ids

    def distinct_arrays(self, sentences: Sequence[Sequence[str]]) -> Tuple[Dict[str, np.ndarray], np.ndarray]:
        """numpy: ``(arrays, which)``: the id arrays of :meth:`arrays` for the distinct forms of the
        sentences, ``[U]`` (``affixes [U, N_AFFIXES]``, ``char_features [U, filters]``), and each word's
        form among them ``which [n_words]``, sentence after sentence."""
        index: Dict[str, int] = {}
        which = np.fromiter((index.setdefault(f, len(index)) for s in sentences for f in s), dtype=np.int64)
        forms = list(index)
        ids = self.form_ids(forms)
        a = {"words": ids[:, 0], "vectors": ids[:, 1], "shapes": ids[:, 2], "affixes": np.ascontiguousarray(ids[:, 3:])}
        if self.chars is not None:
            a["char_features"] = self.char_features([forms])[0]
        return a, which

    def _predict_numpy(self, sentences: Sequence[Sequence[str]], prior: Optional[Callable[[], List[np.ndarray]]],
                       scores: bool) -> Dict[str, Any]:
        """:meth:`predict` in numpy: each distinct form's input once, and only the words' rows scored
        (no padding)."""
        a, which = self.distinct_arrays(sentences)
        lengths = np.array([len(s) for s in sentences], dtype=np.int64)
        out, packing = self.inference.packed_scores(a, lengths, which)   # type: ignore[union-attr]
        words = packing.word_rows
        masks = self.feats_masks(sentences, int(lengths.max()))
        if masks is not None:
            out["feats"] = out["feats"] + masks.reshape(-1, masks.shape[-1])[packing.index]
        if prior is not None:
            out["tags"] = log_softmax(out["tags"]) + np.concatenate(prior())[words]
        if self._tag_feats is not None and "feats" in out:
            out["feats"] = out["feats"] + self._tag_feats[out["tags"].argmax(-1)]
        ends = np.cumsum(lengths)[:-1]

        def by_sentence(x: np.ndarray) -> List[np.ndarray]:
            ordered = np.empty_like(x)
            ordered[words] = x
            return np.split(ordered, ends)

        ids: Dict[str, Any] = {k: [row.tolist() for row in by_sentence(s.argmax(-1))] for k, s in out.items()}
        if scores:
            ids["tag_scores"] = by_sentence(out["tags"])
        return ids

    # saving and loading: config.json + vocab.json + weights.pt
    def save(self, out_dir: Path, training: Dict[str, Any], lang: str, lemma: Optional[str],
             lemma_from: Optional[str], linear: Optional[Dict[str, Any]] = None) -> None:
        """Write the folder (``lemma``: the lemmatizer's subfolder, None without one; ``lemma_from``:
        one of :data:`LEMMA_SOURCES`, None without lemmas; ``linear``: config ``model.linear``, None
        without a linear tagger)."""
        settings = dict(self.hyper, label_format="UPOS<TAB>XPOS", lemma=lemma, lemma_from=lemma_from)
        if linear is not None:
            settings["linear"] = linear
        save_model_dir(out_dir, self.vocab, self.net,
                       {"stage": "pos", "arch": ARCH, "language": lang, "labels": self.labels["tags"],
                        "model": settings, "training": training}, labels_key="tags")

    @classmethod
    def load(cls, model_dir: Path, config: Dict[str, Any], device: str = "cpu", numpy: bool = False) -> "TaggerModel":
        """The model of a folder; with ``numpy`` (``device`` cpu only) its network runs in numpy."""
        return load_model(cls, model_dir, "tagger model", config, "tags", device, numpy)
