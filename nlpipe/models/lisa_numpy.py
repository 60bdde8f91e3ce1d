"""LISA inference in numpy: the CPU path of the ``predicates`` and ``srl`` stages (no torch import).

The same network as :class:`nlpipe.nn.lisa.LISA` in eval mode, from the plain arrays of its saved
state (``weights.pt`` read by :func:`nlpipe.io.model_dir.read_tensors_numpy`). Shapes as there:
``words, shapes, mask, heads [batch, T]`` (``heads``: 0-based parent positions, the root pointing to
itself), ``preds [P, 2]`` (batch row, position). Without given heads, the syntactic head attends to
the model's own parse: its argmax, its best tree (:func:`~nlpipe.decode.mst.diagonal_root_trees`) or
its tree marginals (:func:`~nlpipe.decode.matrix_tree.nonprojective_marginals`), see
:mod:`nlpipe.nn.syntax_modes`.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from nlpipe.decode.matrix_tree import nonprojective_marginals
from nlpipe.decode.mst import diagonal_root_trees
from nlpipe.models.biaffine_numpy import RelScorer
from nlpipe.models.neural_numpy import Linear, check_shapes, layer_norm, leaky_relu, linear_shapes, softmax

MASKED = -1e9  # attention logits of padding keys and arc scores of padding heads, as in the torch network


class _Layer:
    """One attention + feed-forward layer (post-norm), :class:`nlpipe.nn.lisa.AttentionLayer`."""

    def __init__(self, p: Dict[str, np.ndarray], prefix: str, heads: int):
        self.qkv, self.out = Linear(p, prefix + "qkv"), Linear(p, prefix + "out")
        self.ff1, self.ff2 = Linear(p, prefix + "ff1"), Linear(p, prefix + "ff2")
        self.norm1 = (p[prefix + "norm1.weight"], p[prefix + "norm1.bias"])
        self.norm2 = (p[prefix + "norm2.weight"], p[prefix + "norm2.bias"])
        self.h = heads

    def __call__(self, x: np.ndarray, mask: np.ndarray, rows: np.ndarray, heads: Optional[np.ndarray] = None,
                 weights: Optional[np.ndarray] = None) -> np.ndarray:
        """``x [b, T, d]`` (padding rows 0); ``rows``: the words' flat positions in ``b * T``, where
        the per-word products run (a batch is about 10% padding); ``heads [b, T]``: head 0 attends to
        each word's syntactic parent only; ``weights [b, T, T]``: head 0's attention weights (rows of
        padding 0). Padding rows of the result are 0: as keys they are masked, as values weighted 0."""
        b, n, d = x.shape
        dk = d // self.h
        words = x.reshape(b * n, d)[rows]                                             # [N, d]
        qkv = np.zeros((b * n, 3 * d), dtype=np.float32)
        qkv[rows] = self.qkv(words)
        q, k, v = qkv.reshape(b, n, 3, self.h, dk).transpose(2, 0, 3, 1, 4)         # [b, h, T, dk] each
        att = (q @ k.transpose(0, 1, 3, 2)) / np.float32(np.sqrt(dk))
        att = softmax(np.where(mask[:, None, None, :], att, np.float32(MASKED)))
        ctx = att @ v                                                                 # [b, h, T, dk]
        if heads is not None:
            # a one-hot attention row takes its parent's value, and nothing on padding rows
            ctx[:, 0] = np.take_along_axis(v[:, 0], heads[..., None], 1) * mask[..., None]
        elif weights is not None:
            ctx[:, 0] = weights @ v[:, 0]
        ctx = ctx.transpose(0, 2, 1, 3).reshape(b * n, d)[rows]
        words = layer_norm(words + self.out(ctx), *self.norm1)
        words = layer_norm(words + self.ff2(np.maximum(self.ff1(words), 0)), *self.norm2)
        out = np.zeros((b * n, d), dtype=np.float32)
        out[rows] = words
        return out.reshape(b, n, d)


def expected_shapes(hp: Dict[str, Any], sizes: Dict[str, int]) -> Dict[str, tuple]:
    """The arrays of a saved :class:`~nlpipe.nn.lisa.LISA` with hyper-parameters ``hp`` and
    vocabulary ``sizes`` (words, shapes, tags, rels, roles)."""
    d, ffn = int(hp["d_model"]), int(hp["ffn"])
    if int(hp["heads"]) < 1 or d % int(hp["heads"]):
        raise ValueError(f"d_model {d} is not a multiple of heads {hp['heads']}")
    out = {"tokens.words.weight": (sizes["words"], hp["word_dim"]),
           "tokens.shapes.weight": (sizes["shapes"], hp["shape_dim"]),
           "positions.weight": (hp["max_len"], d), "role_u": (hp["pred_dim"], sizes["roles"], hp["role_dim"])}
    out.update(linear_shapes("proj", hp["word_dim"] + hp["shape_dim"], d))
    for i in range(int(hp["layers"])):
        k = f"layers.{i}."
        for name, n_in, n_out in (("qkv", d, 3 * d), ("out", d, d), ("ff1", d, ffn), ("ff2", ffn, d)):
            out.update(linear_shapes(k + name, n_in, n_out))
        out.update({k + "norm1.weight": (d,), k + "norm1.bias": (d,), k + "norm2.weight": (d,), k + "norm2.bias": (d,)})
    out.update(linear_shapes("tagger", d, sizes["tags"]))
    if hp["syntax"]:
        a, r = int(hp["arc_dim"]), int(hp["rel_dim"])
        out.update({"parser.arc_w": (a, a), "parser.arc_b": (a,), "parser.rel_w": (sizes["rels"], r, r)})
        for name, dim in (("arc_dep", a), ("arc_head", a), ("rel_dep", r), ("rel_head", r)):
            out.update(linear_shapes(f"parser.{name}.linear", d, dim))
        out.update(linear_shapes("parser.rel_linear", 2 * r, sizes["rels"]))
    out.update(linear_shapes("pred_mlp.linear", d, hp["pred_dim"]))
    out.update(linear_shapes("role_mlp.linear", d, hp["role_dim"]))
    out.update(linear_shapes("role_bias", hp["role_dim"], sizes["roles"]))
    return out


def tree_marginals(s_arc: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Arc marginals ``[b, T, T]`` (float32) of the tree CRF over LISA's ``s_arc [b, T, T]`` (the
    root on the diagonal), padding rows 0: :func:`nlpipe.nn.lisa.tree_marginals` in numpy."""
    b, n, _ = s_arc.shape
    scores = np.full((b, n + 1, n + 1), MASKED, dtype=np.float64)
    scores[:, 1:, 1:] = s_arc
    idx = np.arange(n)
    scores[:, idx + 1, idx + 1] = MASKED
    scores[:, 1:, 0] = s_arc[:, idx, idx]
    m = nonprojective_marginals(scores, np.concatenate([np.ones((b, 1), dtype=bool), mask], 1))
    out = m[:, 1:, 1:]
    out[:, idx, idx] = m[:, 1:, 0]
    return (out * mask[..., None]).astype(np.float32)


class LisaInference:
    """Token states, joint tag scores, role scores and (for ``--write-parse``) dependency labels of
    a saved LISA network. ``expected``: the shapes the config makes (:func:`expected_shapes`), checked
    first; ``root_rel``: the label id of the root word (None: the labels have no ``root``)."""

    def __init__(self, params: Dict[str, Any], hp: Dict[str, Any], expected: Dict[str, tuple],
                 root_rel: Optional[int] = None):
        check_shapes(params, expected)
        p = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in params.items()}
        self.hp = hp
        self.words, self.shapes = p["tokens.words.weight"], p["tokens.shapes.weight"]
        self.proj, self.positions = Linear(p, "proj"), p["positions.weight"]
        self.layers = [_Layer(p, f"layers.{i}.", int(hp["heads"])) for i in range(int(hp["layers"]))]
        self.tagger = Linear(p, "tagger")
        self.syntax = bool(hp["syntax"])
        if self.syntax:
            self.arc_dep, self.arc_head = Linear(p, "parser.arc_dep.linear"), Linear(p, "parser.arc_head.linear")
            self.arc_w, self.arc_b = p["parser.arc_w"], p["parser.arc_b"]
            self.rels = RelScorer(p, "parser.", root_rel)
        self.pred_mlp, self.role_mlp = Linear(p, "pred_mlp.linear"), Linear(p, "role_mlp.linear")
        u = p["role_u"]                                                                # [dp, L, dr]
        self.role_u = u.reshape(u.shape[0], -1)
        self.n_roles, self.role_dim = u.shape[1], u.shape[2]
        self.role_bias = Linear(p, "role_bias")

    def arc_scores(self, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Biaffine arc scores ``[b, T, T]`` (dep, head; the root on the diagonal), padding heads masked."""
        dep, head = leaky_relu(self.arc_dep(x)), leaky_relu(self.arc_head(x))
        s_arc = (dep @ self.arc_w) @ head.transpose(0, 2, 1) + (head @ self.arc_b)[:, None, :]
        return np.where(mask[:, None, :], s_arc, np.float32(MASKED))

    def encode(self, words: np.ndarray, shapes: np.ndarray, mask: np.ndarray,
               heads: Optional[np.ndarray] = None, own: str = "argmax") -> Dict[str, np.ndarray]:
        """``states [b, T, d]``, ``tags [b, T, n_tags]`` (scores) and, with syntax, ``parse_states``
        (the syntactic layer's input), ``s_arc`` (without given ``heads``) and, where head 0 attended
        one-hot, ``heads``.
        ``heads`` None: the model's own parse, ``own`` (argmax, tree or marginals)."""
        b, n = words.shape
        rows = np.flatnonzero(mask.ravel())
        x = np.zeros((b * n, self.positions.shape[1]), dtype=np.float32)
        x[rows] = (self.proj(np.concatenate([self.words[words.ravel()[rows]], self.shapes[shapes.ravel()[rows]]], -1))
                   + self.positions[rows % n])
        x = x.reshape(b, n, -1)
        out: Dict[str, np.ndarray] = {}
        for i, layer in enumerate(self.layers):
            weights = None
            if self.syntax and i == self.hp["parse_layer"]:
                out["parse_states"] = x
                if heads is None:   # the arc scores are left out where the given parse makes them moot
                    s_arc = out["s_arc"] = self.arc_scores(x, mask)
                    if own == "marginals":
                        weights = tree_marginals(s_arc, mask)
                    else:
                        heads = diagonal_root_trees(s_arc, mask.sum(1)) if own == "tree" else s_arc.argmax(-1)
                if weights is None:
                    heads = out["heads"] = np.clip(heads, 0, n - 1)
                x = layer(x, mask, rows, heads, weights)
            else:
                x = layer(x, mask, rows)
            if i == self.hp["pos_layer"]:
                out["tags"] = self.tagger(x)
        out["states"] = x
        return out

    def labels(self, parse_states: np.ndarray, heads: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """DEPREL ids ``[b, T]`` of the words attached to ``heads [b, T]`` (the root to itself)."""
        out = np.zeros(heads.shape, dtype=np.int64)
        is_root = (heads == np.arange(heads.shape[1])[None])[mask]
        out[mask] = self.rels(parse_states, heads, mask, is_root)
        return out

    def role_scores(self, states: np.ndarray, preds: np.ndarray) -> np.ndarray:
        """BIO role logits ``[P, T, n_roles]`` of every token for each predicate of ``preds [P, 2]``."""
        pred = leaky_relu(self.pred_mlp(states[preds[:, 0], preds[:, 1]]))              # [P, dp]
        rows, inverse = np.unique(preds[:, 0], return_inverse=True)
        role = leaky_relu(self.role_mlp(states[rows]))[inverse]                       # [P, T, dr]
        pu = (pred @ self.role_u).reshape(len(pred), self.n_roles, self.role_dim)      # [P, L, dr]
        return role @ pu.transpose(0, 2, 1) + self.role_bias(role)
