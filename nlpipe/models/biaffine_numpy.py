"""Biaffine parser inference in numpy: the CPU path of the ``parse`` stage (no torch import).

The same network as :class:`nlpipe.nn.biaffine.BiaffineParser` in eval mode, from the plain arrays of
its saved state, and the same decoding (greedy heads, Chu-Liu-Edmonds where they are not a tree).
Shapes as there: ``mask [batch, N]`` true at the root (position 0) and the words; ``s_arc [batch, N,
N]`` scores ``s_arc[b, dep, head]``.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from nlpipe.decode.mst import chu_liu_edmonds, tree_mask
from nlpipe.models.neural_numpy import BiLSTMStack, Linear, check_shapes, leaky_relu, linear_shapes, log_softmax

MASKED = -1e9  # arc scores of padding heads, as in the torch network


def expected_shapes(hp: Dict[str, Any], sizes: Dict[str, int]) -> Dict[str, tuple]:
    """The arrays of a saved :class:`~nlpipe.nn.biaffine.BiaffineParser` with hyper-parameters ``hp``
    and vocabulary ``sizes`` (words, shapes, affixes, upos, xpos, rels)."""
    e, h, r, a = "encoder.", int(hp["hidden"]), int(hp["rel_dim"]), int(hp["arc_dim"])
    out = {e + "tokens.words.weight": (sizes["words"], hp["word_dim"]),
           e + "tokens.shapes.weight": (sizes["shapes"], hp["shape_dim"]),
           e + "affixes.weight": (sizes["affixes"], hp["affix_dim"]),
           e + "upos.weight": (sizes["upos"], hp["tag_dim"]), e + "xpos.weight": (sizes["xpos"], hp["tag_dim"]),
           "arc_w": (a, a), "arc_b": (a,), "rel_w": (sizes["rels"], r, r)}
    n_in = hp["word_dim"] + hp["shape_dim"] + hp["affix_dim"] + 2 * hp["tag_dim"]
    for i in range(int(hp["layers"])):
        for side in ("fwd", "bwd"):
            k = f"{e}lstm.{side}.{i}."
            out.update({k + "weight_ih_l0": (4 * h, n_in if i == 0 else 2 * h), k + "weight_hh_l0": (4 * h, h),
                        k + "bias_ih_l0": (4 * h,), k + "bias_hh_l0": (4 * h,)})
    for name, dim in (("arc_dep", a), ("arc_head", a), ("rel_dep", r), ("rel_head", r)):
        out.update(linear_shapes(name + ".linear", 2 * h, dim))
    out.update(linear_shapes("rel_linear", 2 * r, sizes["rels"]))
    return out


class BiaffineInference:
    """Heads and labels of a saved biaffine parser; :meth:`predict` takes the id arrays of
    :meth:`nlpipe.models.biaffine.BiaffineModel.arrays`. ``expected``: the shapes the config makes
    (:func:`expected_shapes`), checked first."""

    def __init__(self, params: Dict[str, Any], root_rel: int, expected: Dict[str, tuple]):
        check_shapes(params, expected)
        p = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in params.items()}
        e = "encoder."
        self.words, self.shapes = p[e + "tokens.words.weight"], p[e + "tokens.shapes.weight"]
        self.affixes = p[e + "affixes.weight"].copy()
        self.affixes[0] = 0.0                                                  # padding_idx: never summed
        self.upos, self.xpos = p[e + "upos.weight"], p[e + "xpos.weight"]
        self.lstm = BiLSTMStack(p, e + "lstm.")
        self.arc_dep, self.arc_head = Linear(p, "arc_dep.linear"), Linear(p, "arc_head.linear")
        self.arc_w, self.arc_b = p["arc_w"], p["arc_b"]
        self.rels = RelScorer(p, "", root_rel)

    def encode(self, a: Dict[str, np.ndarray], lengths: np.ndarray) -> np.ndarray:
        """Token states ``[b, N, 2H]`` from the id arrays (``lengths``: positions of each row, root included)."""
        x = np.concatenate([self.words[a["words"]], self.shapes[a["shapes"]], self.affixes[a["affixes"]].sum(2),
                            self.upos[a["upos"]], self.xpos[a["xpos"]]], -1)
        return self.lstm(x, lengths)

    def predict(self, a: Dict[str, np.ndarray], mask: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``(heads, rels) [b, N]``: well-formed trees (one root dependent) and their labels."""
        lengths = mask.sum(1)
        h = self.encode(a, lengths)
        dep, head = leaky_relu(self.arc_dep(h)), leaky_relu(self.arc_head(h))
        b, n, a = dep.shape
        dep_w = (dep.reshape(b * n, a) @ self.arc_w).reshape(b, n, a)
        s_arc = dep_w @ head.transpose(0, 2, 1) + (head.reshape(b * n, a) @ self.arc_b).reshape(b, 1, n)
        log_p = log_softmax(np.where(mask[:, None, :], s_arc, np.float32(MASKED)))
        heads = log_p.argmax(-1)
        heads[:, 0] = 0
        heads[~mask] = 0
        words = lengths - 1
        for row in np.flatnonzero(~tree_mask(heads, words)):
            n = int(words[row]) + 1
            heads[row, :n] = chu_liu_edmonds(log_p[row, :n, :n].astype(np.float64))
        words_mask = mask.copy()
        words_mask[:, 0] = False
        rels = np.zeros_like(heads)
        rels[words_mask] = self.labels(h, heads, words_mask)
        return heads, rels

    def labels(self, h: np.ndarray, heads: np.ndarray, words: np.ndarray) -> np.ndarray:
        """The label of each word (``words [b, N]`` true) attached to its head in ``heads``, as a flat
        ``[n_words]`` array; only the words are scored (not the root or the padding)."""
        return self.rels(h, heads, words, heads[words] == 0)


class RelScorer:
    """The biaffine label scorer of a saved network (arrays ``{prefix}rel_dep.linear``, ``rel_head``,
    ``rel_w``, ``rel_linear``): the best label of each word for a given head."""

    def __init__(self, p: Dict[str, np.ndarray], prefix: str, root_rel: Optional[int]):
        """``root_rel``: the label of the root word and of no other word (None: no such label)."""
        self.rel_dep, self.rel_head = Linear(p, prefix + "rel_dep.linear"), Linear(p, prefix + "rel_head.linear")
        rel_w = p[prefix + "rel_w"]                                            # [L, r, r]
        self.n_rels, r = rel_w.shape[0], rel_w.shape[1]
        self.rel_w = np.ascontiguousarray(rel_w.transpose(1, 0, 2).reshape(r, -1))   # [r, L * r]
        self.rel_linear = Linear(p, prefix + "rel_linear")
        self.root_rel = root_rel

    def __call__(self, h: np.ndarray, heads: np.ndarray, words: np.ndarray, is_root: np.ndarray) -> np.ndarray:
        """Labels ``[n_words]`` of the words (``words [b, N]`` true) attached to the positions
        ``heads [b, N]`` of the states ``h [b, N, d]``; ``is_root [n_words]``: which is the root word."""
        dep = leaky_relu(self.rel_dep(h[words]))                               # [w, r]
        rows = np.nonzero(words)[0]
        head = leaky_relu(self.rel_head(h[rows, heads[words]]))               # [w, r]
        w, r = dep.shape
        bilinear = ((dep @ self.rel_w).reshape(w, self.n_rels, r) @ head[:, :, None])[:, :, 0]
        s_rel = bilinear + self.rel_linear(np.concatenate([dep, head], -1))    # [w, L]
        return pick_labels(s_rel, is_root, self.root_rel)


def pick_labels(s_rel: np.ndarray, is_root: np.ndarray, root_rel: Optional[int]) -> np.ndarray:
    """The best label ids ``[...]`` of the scores ``s_rel [..., L]``: ``root_rel`` for the root
    words (``is_root [...]``) and for no other (None: the plain argmax). ``s_rel`` is changed."""
    if root_rel is None:
        return s_rel.argmax(-1)
    s_rel[..., root_rel] = np.where(is_root, s_rel[..., root_rel], -np.inf)
    out = s_rel.argmax(-1)
    out[is_root] = root_rel
    return out


def tree_rows(heads: np.ndarray, rels: np.ndarray, lengths: List[int], labels: List[str]
              ) -> List[Tuple[List[int], List[str]]]:
    """Per sentence (``lengths``: words): its HEAD numbers and DEPREL labels, root position dropped."""
    return [(heads[i, 1:n + 1].tolist(), [labels[r] for r in rels[i, 1:n + 1]]) for i, n in enumerate(lengths)]
