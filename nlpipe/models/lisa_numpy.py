"""LISA inference in numpy: the CPU path of the ``predicates`` and ``srl`` stages (no torch import).

The same network as :class:`nlpipe.nn.lisa.LISA` in eval mode, from the plain arrays of its saved
state (``weights.pt`` read by :func:`nlpipe.io.model_dir.read_tensors_numpy`). Shapes as there:
``words, shapes, mask, heads [batch, T]`` (``heads``: 0-based parent positions, the root pointing to
itself), ``preds [P, 2]`` (batch row, position).
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from nlpipe.models.neural_numpy import Linear, layer_norm, leaky_relu, softmax

MASKED = -1e9  # attention logits of padding keys and arc scores of padding heads, as in the torch network


class _Layer:
    """One attention + feed-forward layer (post-norm), :class:`nlpipe.nn.lisa.AttentionLayer`."""

    def __init__(self, p: Dict[str, np.ndarray], prefix: str, heads: int):
        self.qkv, self.out = Linear(p, prefix + "qkv"), Linear(p, prefix + "out")
        self.ff1, self.ff2 = Linear(p, prefix + "ff1"), Linear(p, prefix + "ff2")
        self.norm1 = (p[prefix + "norm1.weight"], p[prefix + "norm1.bias"])
        self.norm2 = (p[prefix + "norm2.weight"], p[prefix + "norm2.bias"])
        self.h = heads

    def __call__(self, x: np.ndarray, mask: np.ndarray, heads: Optional[np.ndarray]) -> np.ndarray:
        """``x [b, T, d]``; ``heads [b, T]``: head 0 attends to each word's syntactic parent only."""
        b, n, d = x.shape
        dk = d // self.h
        q, k, v = self.qkv(x).reshape(b, n, 3, self.h, dk).transpose(2, 0, 3, 1, 4)   # [b, h, T, dk] each
        att = (q @ k.transpose(0, 1, 3, 2)) / np.float32(np.sqrt(dk))
        att = softmax(np.where(mask[:, None, None, :], att, np.float32(MASKED)))
        ctx = att @ v                                                                 # [b, h, T, dk]
        if heads is not None:
            # a one-hot attention row takes its parent's value, and nothing on padding rows
            ctx[:, 0] = np.take_along_axis(v[:, 0], heads[..., None], 1) * mask[..., None]
        ctx = ctx.transpose(0, 2, 1, 3).reshape(b, n, d)
        x = layer_norm(x + self.out(ctx), *self.norm1)
        return layer_norm(x + self.ff2(np.maximum(self.ff1(x), 0)), *self.norm2)


class LisaInference:
    """Token states, joint tag scores and role scores of a saved LISA network."""

    def __init__(self, params: Dict[str, Any], hp: Dict[str, Any]):
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
        self.pred_mlp, self.role_mlp = Linear(p, "pred_mlp.linear"), Linear(p, "role_mlp.linear")
        u = p["role_u"]                                                                # [dp, L, dr]
        self.role_u = u.reshape(u.shape[0], -1)
        self.n_roles, self.role_dim = u.shape[1], u.shape[2]
        self.role_bias = Linear(p, "role_bias")

    def _own_heads(self, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The argmax head of every word, ``[b, T]``, from the biaffine arc scores."""
        dep, head = leaky_relu(self.arc_dep(x)), leaky_relu(self.arc_head(x))
        s_arc = (dep @ self.arc_w) @ head.transpose(0, 2, 1) + (head @ self.arc_b)[:, None, :]
        return np.where(mask[:, None, :], s_arc, np.float32(MASKED)).argmax(-1)

    def encode(self, words: np.ndarray, shapes: np.ndarray, mask: np.ndarray,
               heads: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
        """``(states [b, T, d], tag scores [b, T, n_tags])``; ``heads`` None: the model's own parse."""
        b, n = words.shape
        x = self.proj(np.concatenate([self.words[words], self.shapes[shapes]], -1)) + self.positions[:n]
        tags = None
        for i, layer in enumerate(self.layers):
            parse = self.syntax and i == self.hp["parse_layer"]
            if parse and heads is None:
                heads = self._own_heads(x, mask)
            x = layer(x, mask, np.clip(heads, 0, n - 1) if parse else None)
            if i == self.hp["pos_layer"]:
                tags = self.tagger(x)
        assert tags is not None
        return x, tags

    def role_scores(self, states: np.ndarray, preds: np.ndarray) -> np.ndarray:
        """BIO role logits ``[P, T, n_roles]`` of every token for each predicate of ``preds [P, 2]``."""
        pred = leaky_relu(self.pred_mlp(states[preds[:, 0], preds[:, 1]]))              # [P, dp]
        rows, inverse = np.unique(preds[:, 0], return_inverse=True)
        role = leaky_relu(self.role_mlp(states[rows]))[inverse]                       # [P, T, dr]
        pu = (pred @ self.role_u).reshape(len(pred), self.n_roles, self.role_dim)      # [P, L, dr]
        return role @ pu.transpose(0, 2, 1) + self.role_bias(role)
