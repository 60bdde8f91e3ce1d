"""The biaffine parser family: a sentence's inputs (:class:`Example`), the model over
:class:`~nlpipe.nn.biaffine.BiaffineParser` (vocabularies, tensors, predict) and its directory
(``config.json``, ``vocab.json``, ``weights.pt``)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.io.conllu import DEPREL, FORM, HEAD, UPOS, XPOS, Sentence, read_file
from nlpipe.errors import InputError
from nlpipe.nn.weights import load_model, save_model_dir
from nlpipe.models.biaffine_numpy import BiaffineInference, expected_shapes, tree_rows

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
            if int(h) == k + 1:   # a predicted file may hold one (eval reads it); a gold tree may not
                raise InputError(path, sent.line_of(w), f"HEAD {h} of word {k + 1} is the word itself; "
                                                        f"training needs gold trees")
            heads.append(int(h))
        ex.heads, ex.rels = heads, [w[DEPREL] for w in words]
    return ex


def read_treebank(path: str) -> List[Example]:
    """Gold examples of a CoNLL-U file (sentences without words are skipped), for training."""
    return read_treebank_paragraphs(path)[0]


def read_treebank_paragraphs(path: str) -> Tuple[List[Example], List[bool]]:
    """:func:`read_treebank`, and whether each example's sentence begins a paragraph
    (:attr:`~nlpipe.io.conllu.Sentence.starts_paragraph`; the file's first sentence does, and a
    skipped sentence passes its mark on to the next one)."""
    examples: List[Example] = []
    starts: List[bool] = []
    new_paragraph = True
    for s in read_file(path):
        new_paragraph = new_paragraph or s.starts_paragraph
        if s.words:
            examples.append(_example(s, path, True))
            starts.append(new_paragraph)
            new_paragraph = False
    return examples, starts



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

    def __init__(self, vocab: Dict[str, List[str]], hyper: Dict[str, Any], device: str = "cpu",
                 params: Optional[Dict[str, np.ndarray]] = None):
        """``params``: the arrays of a saved network, run in numpy on the CPU (no torch import);
        otherwise a torch :class:`~nlpipe.nn.biaffine.BiaffineParser` on ``device`` (training, CUDA,
        projective decoding and head probabilities)."""
        from nlpipe.nn.features import make_vocab, word_key
        from nlpipe.vocab import Vocab, label_vocab

        self.vocab = vocab
        self.hyper = hyper
        self.words = make_vocab(vocab["words"], word_key)
        self.affixes = Vocab(vocab["affixes"])
        self.upos = make_vocab(vocab["upos"])
        self.xpos = make_vocab(vocab["xpos"])
        self.rel_vocab = label_vocab(vocab["rels"])
        self.rels = self.rel_vocab.entries
        self._forms: Dict[str, Tuple[int, ...]] = {}    # ids of the forms seen (nn.features.sentence_features)
        self.inference: Optional[BiaffineInference] = None
        if params is not None:
            from nlpipe.nn.features import SHAPES

            sizes = {"words": len(self.words), "shapes": len(SHAPES), "affixes": len(self.affixes),
                     "upos": len(self.upos), "xpos": len(self.xpos), "rels": len(self.rels)}
            self.inference = BiaffineInference(params, self.rel_vocab.id("root"), expected_shapes(hyper, sizes))
            return
        import torch

        from nlpipe.nn.biaffine import BiaffineParser
        from nlpipe.nn.parser_encoder import ParserEncoder

        self.torch = torch
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

    def arrays(self, examples: Sequence[Example], gold: bool = False) -> Dict[str, np.ndarray]:
        """Padded ``[batch, N]`` id arrays (root at 0) and ``mask``; with ``gold`` also heads/rels."""
        from nlpipe.nn.features import N_AFFIXES, sentence_features

        b = len(examples)
        n = max(len(e.forms) for e in examples) + 1
        arrays = {k: np.zeros((b, n), dtype=np.int64) for k in ("words", "shapes", "upos", "xpos")}
        arrays["affixes"] = np.zeros((b, n, N_AFFIXES), dtype=np.int64)
        mask = np.zeros((b, n), dtype=bool)
        heads = np.zeros((b, n), dtype=np.int64)
        rels = np.zeros((b, n), dtype=np.int64)
        for i, e in enumerate(examples):
            f = sentence_features(e.forms, e.upos, e.xpos, self.words, self.affixes, self.upos, self.xpos,
                                  self._forms)
            m = len(e.forms) + 1
            for k, v in f.items():
                arrays[k][i, :m] = v
            mask[i, :m] = True
            if gold:
                heads[i, 1:m] = e.heads
                rels[i, 1:m] = self.rel_vocab.ids(e.rels)
        arrays["mask"] = mask
        if gold:
            arrays.update(heads=heads, rels=rels)
        return arrays

    def tensors(self, examples: Sequence[Example], gold: bool = False) -> Dict[str, Any]:
        """:meth:`arrays` as torch tensors on the model's device."""
        return {k: self.torch.from_numpy(v).to(self.device) for k, v in self.arrays(examples, gold).items()}

    def predict(self, examples: Sequence[Example], projective: bool = False, probs: bool = False
                ) -> List[Tuple[List[int], List[str], Optional[List[float]]]]:
        """``(heads, labels, head probabilities or None)`` per example (one batch); the numpy network
        takes neither ``projective`` nor ``probs`` (load the model on torch for them)."""
        if self.inference is not None:
            if projective or probs:
                raise ValueError("projective decoding and head probabilities need the torch network")
            a = self.arrays(examples)
            heads_np, rels_np = self.inference.predict(a, a["mask"])
            return [(h, r, None) for h, r in tree_rows(heads_np, rels_np, [len(e.forms) for e in examples],
                                                         self.rels)]
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
    def load(cls, model_dir: Path, config: Dict[str, Any], device: str = "cpu", numpy: bool = False
             ) -> "BiaffineModel":
        """The model of a folder; with ``numpy`` (``device`` cpu only) its network runs in numpy."""
        return load_model(cls, model_dir, "parser model", config, "rels", device, numpy)
