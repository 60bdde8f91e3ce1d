"""LISA (Strubell et al. 2018): a self-attention encoder with one syntactically supervised head (torch).

Shapes: ``words, shapes [batch, T]`` ids, ``mask [batch, T]`` true on words; ``heads [batch, T]``
0-based positions of each word's syntactic parent, the root pointing to itself (LISA's convention);
``preds [P, 2]`` (batch row, position) of the predicates whose roles are scored.

- layers ``0 .. J-1`` of multi-head self-attention + feed-forward (pre-computed residual + layer norm);
- after layer ``pos_layer`` a joint POS x predicate softmax (labels ``TAG`` / ``TAG:P``);
- in layer ``parse_layer`` head 0 is the syntactic head: a biaffine score (:class:`BiaffineParser`'s
  arc and label scorers) gives its attention; the attention that flows upward is a one-hot matrix of
  the given ``heads`` (gold in training with ``syntax_mode`` lisa, the input's HEAD at test time), or
  without them the model's own parse: its argmax, its best tree or its tree marginals, as the mode
  (:mod:`nlpipe.nn.syntax_modes`) trains and decodes it;
- roles: bilinear ``pred_f^T U role_t`` scores of every BIO role label for every (predicate, token).

``syntax=False`` is the SA baseline: the same network without the supervised head.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from nlpipe.decode.tree_marginals import marginals, nonprojective_log_partition
from nlpipe.nn.biaffine import MASKED, MLP, BiaffineParser
from nlpipe.nn.embeddings import TokenEmbedding
from nlpipe.nn.spigot import best_trees, hard_tree
from nlpipe.nn.syntax_modes import own_parse, syntax_mode

DEFAULTS: Dict[str, Any] = {
    "word_dim": 50, "shape_dim": 8, "d_model": 192, "heads": 6, "ffn": 384, "layers": 4,
    "pos_layer": 1, "parse_layer": 2, "max_len": 300, "dropout": 0.2, "attn_dropout": 0.1,
    "word_dropout": 0.1, "arc_dim": 128, "rel_dim": 64, "pred_dim": 128, "role_dim": 128,
    "syntax": True, "lambda_arc": 1.0, "lambda_rel": 0.5, "syntax_mode": "lisa", "eta": 1.0,
}


def rooted(s_arc: torch.Tensor, mask: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """LISA's arc scores ``[batch, T, T]`` (the root on the diagonal) in the convention of
    :mod:`nlpipe.decode.tree_marginals`: ``([batch, T + 1, T + 1] scores, [batch, T + 1] mask)``,
    position 0 the root."""
    b, n, _ = s_arc.shape
    eye = torch.eye(n, dtype=torch.bool, device=s_arc.device)
    words = torch.cat([s_arc.diagonal(dim1=1, dim2=2)[..., None], s_arc.masked_fill(eye, MASKED)], 2)
    scores = torch.cat([s_arc.new_full((b, 1, n + 1), MASKED), words], 1)
    return scores, torch.cat([mask.new_ones(b, 1), mask], 1)


def tree_marginals(s_arc: torch.Tensor, mask: torch.Tensor, differentiable: bool = False) -> torch.Tensor:
    """Arc marginals ``[batch, T, T]`` of the non-projective tree CRF (one root word) over LISA's
    ``s_arc``, the root on the diagonal; padding rows 0."""
    m = marginals(*rooted(s_arc, mask), differentiable=differentiable)
    return m[:, 1:, 1:] + torch.diag_embed(m[:, 1:, 0])


def tree_nll(s_arc: torch.Tensor, mask: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
    """Negative log-likelihood of the gold trees ``heads [batch, T]`` under the tree CRF, per word."""
    gold = s_arc.double().gather(2, heads.clamp(min=0)[..., None])[..., 0].masked_fill(~mask, 0).sum(1)
    log_z = nonprojective_log_partition(*rooted(s_arc.double(), mask))
    return ((log_z - gold).sum() / mask.sum()).to(s_arc.dtype)


class _Given(nn.Module):
    """Encoder stand-in for :class:`BiaffineParser`: the token states are computed outside."""

    def __init__(self, dim: int):
        super().__init__()
        self.out_dim = dim

    def forward(self, states: torch.Tensor, *_: Any) -> torch.Tensor:
        return states


class AttentionLayer(nn.Module):
    """Multi-head self-attention + feed-forward, each with residual and layer norm (post-norm)."""

    def __init__(self, d: int, heads: int, ffn: int, dropout: float, attn_dropout: float):
        super().__init__()
        self.h, self.dk = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.dropout, self.attn_dropout = dropout, attn_dropout

    def forward(self, x: torch.Tensor, mask: torch.Tensor, head0: Optional[torch.Tensor] = None) -> torch.Tensor:
        """``head0 [batch, T, T]``: attention weights that replace head 0's (the syntactic head)."""
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.h, self.dk).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.dk)
        att = att.float().masked_fill(~mask[:, None, None, :], -1e9).softmax(-1)   # float32 under bf16 autocast
        att = F.dropout(att, self.attn_dropout, self.training)
        if head0 is not None:
            att = torch.cat([head0[:, None].to(att.dtype), att[:, 1:]], 1)
        ctx = (att @ v).transpose(1, 2).reshape(b, n, d)
        x = self.norm1(x + F.dropout(self.out(ctx), self.dropout, self.training))
        y = self.ff2(F.dropout(F.relu(self.ff1(x)), self.dropout, self.training))
        return self.norm2(x + F.dropout(y, self.dropout, self.training))


class LISA(nn.Module):
    def __init__(self, hp: Dict[str, Any], n_words: int, n_tags: int, n_rels: int, n_roles: int,
                 vectors: Optional[np.ndarray] = None):
        super().__init__()
        self.hp = hp
        d = hp["d_model"]
        self.tokens = TokenEmbedding(n_words, hp["word_dim"], hp["shape_dim"], hp["word_dropout"], vectors)
        self.proj = nn.Linear(self.tokens.dim, d)
        self.positions = nn.Embedding(hp["max_len"], d)
        nn.init.normal_(self.positions.weight, std=0.02)
        self.layers = nn.ModuleList(AttentionLayer(d, hp["heads"], hp["ffn"], hp["dropout"], hp["attn_dropout"])
                                    for _ in range(hp["layers"]))
        self.tagger = nn.Linear(d, n_tags)
        self.parser = (BiaffineParser(_Given(d), n_rels, hp["arc_dim"], hp["rel_dim"], hp["dropout"])
                       if hp["syntax"] else None)
        self.pred_mlp = MLP(d, hp["pred_dim"], hp["dropout"])
        self.role_mlp = MLP(d, hp["role_dim"], hp["dropout"])
        self.role_u = nn.Parameter(torch.zeros(hp["pred_dim"], n_roles, hp["role_dim"]))
        self.role_bias = nn.Linear(hp["role_dim"], n_roles)
        nn.init.xavier_uniform_(self.role_u.view(hp["pred_dim"], -1))

    def encode(self, words: torch.Tensor, shapes: torch.Tensor, mask: torch.Tensor,
               heads: Optional[torch.Tensor] = None, own: Optional[str] = None) -> Dict[str, torch.Tensor]:
        """Token states and the auxiliary scores: ``states``, ``tags`` and (with syntax) ``s_arc``,
        ``rel_dep``, ``rel_head``, ``attention [batch, T, T]`` (head 0's) and ``heads`` (where that
        attention is one-hot: the heads it attended to).

        ``heads`` None: the model attends to its own parse, ``own`` (argmax, tree or marginals;
        default: its mode's, see :mod:`nlpipe.nn.syntax_modes`). In training, the tree of ``ste`` and
        ``spigot`` passes their surrogate gradients back and the marginals their true gradient.
        """
        b, n = words.shape
        x = self.proj(self.tokens(words, shapes))
        x = x + self.positions(torch.arange(n, device=words.device))[None]
        x = F.dropout(x, self.hp["dropout"], self.training)
        out: Dict[str, torch.Tensor] = {}
        for i, layer in enumerate(self.layers):
            head0 = None
            if self.parser is not None and i == self.hp["parse_layer"]:
                s_arc, rel_states = self.parser({"words": x, "shapes": None, "affixes": None, "upos": None,
                                                 "xpos": None}, mask)
                out.update(s_arc=s_arc, rel_dep=rel_states[0], rel_head=rel_states[1])
                head0, attended = self._syntactic_attention(s_arc, mask, heads, own)
                out["attention"] = head0
                if attended is not None:
                    out["heads"] = attended
            x = layer(x, mask, head0)
            if i == self.hp["pos_layer"]:
                out["tags"] = self.tagger(x)
        out["states"] = x
        return out

    def _syntactic_attention(self, s_arc: torch.Tensor, mask: torch.Tensor, heads: Optional[torch.Tensor],
                             own: Optional[str]) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Head 0's attention ``[batch, T, T]`` and, where it is one-hot, the heads ``[batch, T]``."""
        n = s_arc.shape[-1]
        if heads is None:
            how = own_parse(self.hp, own)
            mode = syntax_mode(self.hp)
            if how == "marginals":
                return tree_marginals(s_arc, mask, differentiable=self.training) * mask[..., None], None
            if how == "tree" and self.training and mode in ("ste", "spigot"):
                tree = hard_tree(s_arc, mask, self.hp["eta"] if mode == "spigot" else None)
                return tree, tree.argmax(-1)
            heads = best_trees(s_arc, mask) if how == "tree" else s_arc.argmax(-1)
        return F.one_hot(heads.clamp(0, n - 1), n).float() * mask[..., None], heads

    def role_scores(self, states: torch.Tensor, preds: torch.Tensor) -> torch.Tensor:
        """BIO role logits ``[P, T, n_roles]`` of every token for each predicate in ``preds [P, 2]``."""
        pred = self.pred_mlp(states)[preds[:, 0], preds[:, 1]]                    # [P, dp]
        role = self.role_mlp(states)[preds[:, 0]]                                  # [P, T, dr]
        pu = (pred @ self.role_u.view(pred.shape[1], -1)).view(len(pred), -1, role.shape[-1])  # [P, L, dr]
        return role @ pu.transpose(1, 2) + self.role_bias(role)

    def rel_scores(self, out: Dict[str, torch.Tensor], heads: torch.Tensor) -> torch.Tensor:
        """DEPREL logits ``[batch, T, n_rels]`` of each word attached to ``heads``."""
        assert self.parser is not None
        return self.parser.rel_scores((out["rel_dep"], out["rel_head"]), heads)

    def loss(self, batch: Dict[str, torch.Tensor]) -> Tuple[torch.Tensor, Dict[str, float]]:
        """Eq. 4.4: SRL + POS/predicate + lambda1 parse attention + lambda2 labels given the gold heads.

        The arc term is the per-word cross-entropy of the gold heads, or with ``syntax_mode``
        marginals the tree CRF's negative log-likelihood per word; only ``lisa`` attends to the gold
        parse (teacher forcing)."""
        mask = batch["mask"]
        mode = syntax_mode(self.hp)
        teacher = self.parser is not None and mode == "lisa"   # the other modes attend to their own parse
        out = self.encode(batch["words"], batch["shapes"], mask, batch["heads"] if teacher else None)
        parts = {"tags": F.cross_entropy(out["tags"][mask], batch["tags"][mask])}
        preds = batch["preds"]
        if len(preds):
            s_role = self.role_scores(out["states"], preds)
            role_mask = mask[preds[:, 0]]
            parts["srl"] = F.cross_entropy(s_role[role_mask], batch["roles"][role_mask])
        if self.parser is not None:
            parts["arc"] = self.hp["lambda_arc"] * (
                tree_nll(out["s_arc"], mask, batch["heads"]) if mode == "marginals"
                else F.cross_entropy(out["s_arc"][mask], batch["heads"][mask]))
            parts["rel"] = self.hp["lambda_rel"] * F.cross_entropy(
                self.rel_scores(out, batch["heads"])[mask], batch["rels"][mask])
        total = sum(parts.values())
        return total, {k: v.item() for k, v in parts.items()}


def inverse_sqrt(step: int, peak: float, warmup: int) -> float:
    """Learning rate: linear warm-up to ``peak`` over ``warmup`` steps, then ``peak * sqrt(warmup/step)``."""
    step = max(step, 1)
    return peak * min(step / warmup, math.sqrt(warmup / step))
