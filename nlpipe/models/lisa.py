"""The LISA family: a sentence's inputs and gold frames (:class:`Example`), the model over
:class:`~nlpipe.nn.lisa.LISA` (vocabularies, tensors, predict) and its directory (``config.json``,
``vocab.json``, ``weights.pt``)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.io.conllu import FORM, HEAD, LEMMA, XPOS, Sentence
from nlpipe.io.misc import NO_SENSE, frames_from_misc, predicates
from nlpipe.decode import chain
from nlpipe.tags import bio_constraints, repair_ids, spans_to_bio
from nlpipe.errors import InputError
from nlpipe.nn.syntax_modes import syntax_mode
from nlpipe.nn.weights import load_model, save_model_dir
from nlpipe.decode.mst import diagonal_root_trees
from nlpipe.models.biaffine_numpy import pick_labels
from nlpipe.models.lisa_numpy import LisaInference, expected_shapes

ARCH = "lisa.v1"
PRED_SUFFIX = ":P"  # joint tag of a predicate: "VBD:P"
ROOT = "root"       # the DEPREL of the root word, where the labels have it

# What :meth:`LisaModel.predict` returns per sentence: predicate positions, BIO role tags per
# predicate and, when asked, the model's own parse as (HEAD numbers, DEPREL labels) and each
# predicate's probability (else None)
Prediction = Tuple[List[int], List[List[str]], Optional[Tuple[List[int], List[str]]], Optional[List[float]]]
# (predicates, flat (example, position) list, role log-probabilities, parses, predicate probabilities)
Scores = Tuple[List[List[int]], List[Tuple[int, int]], np.ndarray, List[Any], Optional[np.ndarray]]


# ---------------------------------------------------------------------------------------------
# Data

class Example:
    """One sentence's model inputs and (when known) gold annotation, as plain lists."""

    __slots__ = ("forms", "lemmas", "heads", "rels", "tags", "preds", "roles", "rolesets")

    def __init__(self, forms: List[str], lemmas: List[str]):
        self.forms, self.lemmas = forms, lemmas
        self.heads: Optional[List[int]] = None        # CoNLL-U HEAD numbers
        self.rels: Optional[List[str]] = None
        self.tags: Optional[List[str]] = None         # joint POS x predicate labels
        self.preds: Optional[List[int]] = None        # 0-based predicate positions
        self.roles: Optional[List[List[str]]] = None  # BIO role tags per predicate
        self.rolesets: Optional[List[str]] = None     # Pred= value per predicate


def read_heads(sent: Sentence, path: str) -> List[int]:
    """HEAD numbers of the words; an :class:`InputError` where one is not a word number."""
    n = len(sent.words)
    out = []
    for k, w in enumerate(sent.words):
        h = w[HEAD]
        if not h.isdigit() or int(h) > n:
            raise InputError(path, sent.line_of(w), f"HEAD '{h}' of word {k + 1} is not a word number 0..{n} "
                                                   f"(--parse-from-input needs a parsed input: run 'nlpipe parse')")
        out.append(int(h))
    return out


def gold_frames(sent: Sentence, path: str) -> Tuple[List[int], List[List[str]], List[str]]:
    """Predicate positions, BIO role tags (``V`` included) and Pred= values from MISC."""
    frames = frames_from_misc(sent, path)
    values = predicates(sent)
    n = len(sent.words)
    return ([f.pred for f in frames], [spans_to_bio(f.spans, n) for f in frames],
            [values[f.pred] or NO_SENSE for f in frames])


def example(sent: Sentence, path: str, gold: bool = False, heads: bool = False,
            predicates: bool = False) -> Example:
    """The example of a sentence; ``gold`` reads everything training needs (XPOS, tree, frames)."""
    words = sent.words
    ex = Example([w[FORM] for w in words], [w[LEMMA] for w in words])
    if gold or heads:
        ex.heads = read_heads(sent, path)
    if gold or predicates:
        ex.preds, ex.roles, ex.rolesets = gold_frames(sent, path)
    if gold:
        from nlpipe.io.conllu import DEPREL

        ex.rels = [w[DEPREL] for w in words]
        marked = set(ex.preds)
        ex.tags = [w[XPOS] + (PRED_SUFFIX if i in marked else "") for i, w in enumerate(words)]
    return ex


def heads_tensor(heads: List[List[int]], n: int) -> np.ndarray:
    """CoNLL-U HEAD numbers (1-based, 0 = root) -> 0-based parent positions, the root pointing to itself."""
    out = np.zeros((len(heads), n), dtype=np.int64)
    for i, hs in enumerate(heads):
        for j, h in enumerate(hs):
            out[i, j] = h - 1 if h > 0 else j
    return out


# ---------------------------------------------------------------------------------------------
# Model wrapper: vocabularies + torch module

class LisaModel:
    """Vocabularies, sense tables and the :class:`~nlpipe.nn.lisa.LISA` module together."""

    def __init__(self, vocab: Dict[str, Any], hyper: Dict[str, Any], device: str = "cpu",
                 vectors: Optional[np.ndarray] = None, params: Optional[Dict[str, np.ndarray]] = None):
        """``params``: the arrays of a saved network, run in numpy on the CPU (no torch import);
        otherwise a torch :class:`~nlpipe.nn.lisa.LISA` on ``device`` (training, CUDA)."""
        from nlpipe.nn.features import word_vocab
        from nlpipe.vocab import label_vocab

        self.vocab, self.hyper = vocab, hyper
        self.syntax_mode = syntax_mode(hyper)   # checked before anything is built
        self.words = word_vocab(vocab["words"])
        self.tag_vocab, self.rel_vocab, self.role_vocab = (label_vocab(vocab[k]) for k in ("tags", "rels", "roles"))
        self.tags: List[str] = vocab["tags"]
        self.is_pred = np.array([t.endswith(PRED_SUFFIX) for t in self.tags])
        self.rels: List[str] = vocab["rels"]
        self.roles: List[str] = vocab["roles"]
        self.allowed, self.allowed_start = bio_constraints(self.roles)
        self.constraints = chain.Constraints(self.allowed, self.allowed_start)
        self.senses: Dict[str, str] = vocab.get("senses", {})
        self.form_senses: Dict[str, str] = vocab.get("form_senses", {})
        self.inference: Optional[LisaInference] = None
        if params is not None:
            from nlpipe.nn.features import SHAPES

            sizes = {"words": len(self.words), "shapes": len(SHAPES), "tags": len(self.tags), "rels": len(self.rels),
                     "roles": len(self.roles)}
            self.inference = LisaInference(params, hyper, expected_shapes(hyper, sizes), self._root_rel())
            return
        import torch

        from nlpipe.nn.lisa import LISA

        self.torch = torch
        self.net = LISA(hyper, len(self.words), len(self.tags), len(self.rels), len(self.roles), vectors)
        self.device = torch.device(device)
        self.net.to(self.device)

    def sense(self, form: str, lemma: str) -> str:
        """Roleset of a predicted predicate (see the module docstring)."""
        if lemma not in ("_", ""):
            key = lemma.lower()
            return self.senses.get(key) or f"{key}.01"
        key = form.lower()
        return self.senses.get(key) or self.form_senses.get(key) or f"{key}.01"

    def arrays(self, examples: Sequence[Example], gold: bool = False, heads: bool = False) -> Dict[str, np.ndarray]:
        """Padded ``[batch, T]`` arrays; ``gold`` adds tags, rels, heads, preds and roles."""
        from nlpipe.nn.features import shape_ids

        b = len(examples)
        n = max(len(e.forms) for e in examples)
        words = np.zeros((b, n), dtype=np.int64)
        shapes = np.zeros((b, n), dtype=np.int64)
        for i, e in enumerate(examples):
            words[i, :len(e.forms)] = self.words.ids(e.forms)
            shapes[i, :len(e.forms)] = shape_ids(e.forms)
        arrays: Dict[str, np.ndarray] = {"words": words, "shapes": shapes, "mask": shapes > 0}
        if gold or heads:
            arrays["heads"] = heads_tensor([e.heads for e in examples], n)
        if gold:
            tags = np.zeros((b, n), dtype=np.int64)
            rels = np.zeros((b, n), dtype=np.int64)
            preds, roles = [], []
            for i, e in enumerate(examples):
                m = len(e.forms)
                tags[i, :m] = self.tag_vocab.ids(e.tags)
                rels[i, :m] = self.rel_vocab.ids(e.rels)
                for p, r in zip(e.preds, e.roles):
                    preds.append((i, p))
                    row = np.zeros(n, dtype=np.int64)
                    row[:m] = self.role_vocab.ids(r)
                    roles.append(row)
            arrays.update(tags=tags, rels=rels, preds=np.array(preds, dtype=np.int64).reshape(-1, 2),
                          roles=np.array(roles, dtype=np.int64).reshape(-1, n))
        return arrays

    def tensors(self, examples: Sequence[Example], gold: bool = False, heads: bool = False) -> Dict[str, Any]:
        """:meth:`arrays` as torch tensors on the model's device."""
        return {k: self.torch.from_numpy(v).to(self.device)
                for k, v in self.arrays(examples, gold, heads).items()}

    def predict(self, examples: Sequence[Example], given_heads: bool, given_preds: bool,
                viterbi: bool = True, threads: int = 0, own: str = "argmax", parse: bool = False,
                probs: bool = False) -> List[Prediction]:
        """``(predicate positions, BIO role tags per predicate, parse, each predicate's probability)``
        for each example (one batch). Without ``given_heads`` the syntactic head attends to the model's
        ``own`` parse (argmax, tree or marginals); ``parse``: also the model's best tree as (HEAD,
        DEPREL), else None; ``probs`` with predicted predicates: the tagger's probability mass on the
        joint tags that mark a predicate, else None. ``threads`` > 0 runs a torch network with that
        many torch threads (restored afterwards)."""
        probs = probs and not given_preds
        if self.inference is not None:
            preds, flat, scores, parses, pred_p = self._scores_numpy(examples, given_heads, given_preds, own, parse,
                                                                     probs)
        else:
            torch = self.torch
            previous = torch.get_num_threads()
            if threads > 0 and threads != previous:
                torch.set_num_threads(threads)
            try:
                preds, flat, scores, parses, pred_p = self._scores_torch(examples, given_heads, given_preds, own,
                                                                         parse, probs)
            finally:
                if torch.get_num_threads() != previous:
                    torch.set_num_threads(previous)
        chosen = [None if pred_p is None else pred_p[i, p].tolist() for i, p in enumerate(preds)]
        labelled = self._decode(examples, preds, flat, scores, viterbi) if flat else [(p, []) for p in preds]
        return [(p, r, t, c) for (p, r), t, c in zip(labelled, parses, chosen)]

    def _parses(self, heads: np.ndarray, rels: np.ndarray, examples: Sequence[Example]
                ) -> List[Optional[Tuple[List[int], List[str]]]]:
        """(HEAD numbers, DEPREL labels) of each example from LISA's ``heads, rels [b, T]``."""
        out: List[Optional[Tuple[List[int], List[str]]]] = []
        for i, e in enumerate(examples):
            n = len(e.forms)
            h = heads[i, :n]
            out.append(([0 if int(h[j]) == j else int(h[j]) + 1 for j in range(n)],
                        [self.rels[r] for r in rels[i, :n]]))
        return out

    def _predicates(self, examples: Sequence[Example], given_preds: bool, tags: Any, mask: np.ndarray
                    ) -> Tuple[List[List[int]], List[Tuple[int, int]]]:
        """Predicate positions per example (given, or where the joint tag ``tags [b, T]`` says so),
        and the flat ``(example, position)`` list."""
        if given_preds:
            preds = [list(e.preds or []) for e in examples]
        else:
            is_pred = self.is_pred[tags] & mask
            preds = [np.flatnonzero(is_pred[i]).tolist() for i in range(len(examples))]
        return preds, [(i, p) for i, ps in enumerate(preds) for p in ps]

    def _scores_numpy(self, examples: Sequence[Example], given_heads: bool, given_preds: bool, own: str,
                      parse: bool, probs: bool = False) -> Scores:
        """Predicates, role log-probabilities ``[P, T, n_roles]``, parses (see :meth:`predict`) and,
        with ``probs``, every word's probability of being a predicate ``[b, T]``, by the numpy network."""
        from nlpipe.models.neural_numpy import log_softmax, softmax

        assert self.inference is not None
        a = self.arrays(examples, heads=given_heads)
        mask = a["mask"]
        out = self.inference.encode(a["words"], a["shapes"], mask, a.get("heads"), own)
        parses: List[Any] = [None] * len(examples)
        if parse:
            s_arc = out["s_arc"] if "s_arc" in out else self.inference.arc_scores(out["parse_states"], mask)
            heads = diagonal_root_trees(s_arc, mask.sum(1))
            parses = self._parses(heads, self.inference.labels(out["parse_states"], heads, mask), examples)
        tags = out["tags"]
        preds, flat = self._predicates(examples, given_preds, tags.argmax(-1) if not given_preds else None, mask)
        pred_p = (softmax(tags) * self.is_pred).sum(-1) if probs else None
        if not flat:
            return preds, flat, np.zeros((0, 0, len(self.roles))), parses, pred_p
        scores = log_softmax(self.inference.role_scores(out["states"], np.array(flat, dtype=np.int64)))
        return preds, flat, scores, parses, pred_p

    def _scores_torch(self, examples: Sequence[Example], given_heads: bool, given_preds: bool, own: str,
                      parse: bool, probs: bool = False) -> Scores:
        """As :meth:`_scores_numpy`, by the torch network."""
        torch = self.torch
        self.net.eval()
        with torch.no_grad():
            t = self.tensors(examples, heads=given_heads)
            mask = t["mask"]
            out = self.net.encode(t["words"], t["shapes"], mask, t.get("heads"), own)
            parses: List[Any] = [None] * len(examples)
            if parse:
                heads = diagonal_root_trees(out["s_arc"].cpu().numpy(), mask.sum(1).cpu().numpy())
                s_rel = self.net.rel_scores(out, torch.from_numpy(heads).to(self.device)).cpu().numpy()
                is_root = heads == np.arange(heads.shape[1])[None]
                parses = self._parses(heads, pick_labels(s_rel, is_root, self._root_rel()), examples)
            tags = None if given_preds else out["tags"].argmax(-1).cpu().numpy()
            preds, flat = self._predicates(examples, given_preds, tags, mask.cpu().numpy())
            pred_p = None
            if probs:
                is_pred = torch.from_numpy(self.is_pred).to(self.device)
                pred_p = out["tags"].softmax(-1)[..., is_pred].sum(-1).cpu().numpy()
            if not flat:
                return preds, flat, np.zeros((0, 0, len(self.roles))), parses, pred_p
            idx = torch.tensor(flat, dtype=torch.long, device=self.device)
            return preds, flat, self.net.role_scores(out["states"], idx).log_softmax(-1).cpu().numpy(), parses, pred_p

    def _root_rel(self) -> Optional[int]:
        """The id of the root word's DEPREL (None: the labels have no ``root``)."""
        return self.rels.index(ROOT) if ROOT in self.rels else None

    def _decode(self, examples: Sequence[Example], preds: List[List[int]], flat: List[Tuple[int, int]],
                scores: np.ndarray, viterbi: bool) -> List[Tuple[List[int], List[List[str]]]]:
        """BIO role tags of each predicate from ``scores [P, T, n_roles]`` (Viterbi or greedy + repair)."""
        lengths = np.array([len(examples[i].forms) for i, _ in flat])
        ids = scores.argmax(-1)
        if viterbi:
            # Allowed transitions score 0 (forbidden: the semiring zero), so a valid argmax sequence is
            # already the Viterbi path: decode the rest.
            ok = self.allowed[ids[:, :-1], ids[:, 1:]] | (np.arange(1, ids.shape[1])[None] >= lengths[:, None])
            redo = np.flatnonzero(~(ok.all(1) & self.allowed_start[ids[:, 0]]))
            if len(redo):
                n = int(lengths[redo].max())
                ids[redo, :n] = self.constraints.viterbi(scores[redo, :n], lengths[redo])
        else:
            ids = repair_ids(ids, lengths, self.roles)
        results: List[Tuple[List[int], List[List[str]]]] = [(p, []) for p in preds]
        for row, (i, _) in enumerate(flat):
            results[i][1].append([self.roles[j] for j in ids[row, :lengths[row]]])
        return results

    # saving and loading: config.json + vocab.json + weights.pt (half precision on disk)
    def save(self, out_dir: Path, training: Dict[str, Any], lang: str) -> None:
        save_model_dir(out_dir, self.vocab, self.net, {"stage": "srl", "also_stages": ["predicates"], "arch": ARCH,
                                                       "language": lang, "model": self.hyper, "labels": self.roles,
                                                       "training": training}, labels_key="roles")

    @classmethod
    def load(cls, model_dir: Path, config: Dict[str, Any], device: str = "cpu", numpy: bool = False
             ) -> "LisaModel":
        """The model of a folder; with ``numpy`` (``device`` cpu only) its network runs in numpy."""
        return load_model(cls, model_dir, "LISA model", config, "roles", device, numpy)
