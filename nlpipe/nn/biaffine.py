"""Biaffine dependency parser (Dozat & Manning 2017): ``forward -> scores``, ``loss``, ``decode``.

Shapes: ``mask [batch, N]`` is true at the root (position 0) and the words; ``s_arc [batch, N, N]``
scores ``s_arc[b, dep, head]``; ``heads, rels [batch, N]`` (position 0 and padding ignored);
``s_rel [batch, N, n_rels]`` holds label scores of each word for one given head per word.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from nlpipe.decode.eisner import eisner
from nlpipe.decode.mst import chu_liu_edmonds, projective_mask, tree_mask
from nlpipe.nn.parser_encoder import ParserEncoder, dropout

# Arc scores of impossible heads (padding). Finite, so that chart gradients stay finite.
MASKED = -1e9


class MLP(nn.Module):
    """Linear, leaky ReLU, dropout (one mask per sequence with ``shared``)."""

    def __init__(self, in_dim: int, out_dim: int, dropout: float, shared: bool = False):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)
        self.dropout = dropout
        self.shared = shared

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(F.leaky_relu(self.linear(x), 0.1), self.dropout, self.training, self.shared)


class BiaffineParser(nn.Module):
    def __init__(self, encoder: ParserEncoder, n_rels: int, arc_dim: int = 400, rel_dim: int = 100,
                 dropout: float = 0.33, root_rel: int = 0, shared_dropout: bool = False):
        super().__init__()
        self.encoder = encoder
        d = encoder.out_dim
        self.arc_dep = MLP(d, arc_dim, dropout, shared_dropout)
        self.arc_head = MLP(d, arc_dim, dropout, shared_dropout)
        self.rel_dep = MLP(d, rel_dim, dropout, shared_dropout)
        self.rel_head = MLP(d, rel_dim, dropout, shared_dropout)
        self.arc_w = nn.Parameter(torch.zeros(arc_dim, arc_dim))
        self.arc_b = nn.Parameter(torch.zeros(arc_dim))  # head prior: score of h being a head
        self.rel_w = nn.Parameter(torch.zeros(n_rels, rel_dim, rel_dim))
        self.rel_linear = nn.Linear(2 * rel_dim, n_rels)
        self.root_rel = root_rel

    def forward(self, feats: Dict[str, torch.Tensor], mask: torch.Tensor
                ) -> Tuple[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        """Features -> ``(s_arc [batch, N, N], (rel_dep, rel_head) [batch, N, rel_dim])``."""
        h = self.encoder(feats["words"], feats["shapes"], feats["affixes"], feats["upos"], feats["xpos"],
                         mask)
        dep, head = self.arc_dep(h), self.arc_head(h)
        s_arc = torch.bmm(dep @ self.arc_w, head.transpose(1, 2)) + (head @ self.arc_b)[:, None, :]
        s_arc = s_arc.masked_fill(~mask[:, None, :], MASKED)
        return s_arc, (self.rel_dep(h), self.rel_head(h))

    def rel_scores(self, rel_states: Tuple[torch.Tensor, torch.Tensor], heads: torch.Tensor) -> torch.Tensor:
        """Label scores ``[batch, N, n_rels]`` of each word attached to ``heads [batch, N]``."""
        dep, head = rel_states
        hsel = head.gather(1, heads.clamp(min=0)[..., None].expand(-1, -1, head.shape[-1]))
        b, n, r = dep.shape
        # dep_i U_l head_i for every label l, as one matrix product ([b*n, r] x [r, L*r]; nn.Bilinear is slow)
        du = (dep.reshape(b * n, r) @ self.rel_w.permute(1, 0, 2).reshape(r, -1)).view(b * n, -1, r)
        bilinear = torch.bmm(du, hsel.reshape(b * n, r, 1)).view(b, n, -1)
        return bilinear + self.rel_linear(torch.cat([dep, hsel], -1))

    def loss(self, s_arc: torch.Tensor, rel_states: Tuple[torch.Tensor, torch.Tensor], heads: torch.Tensor,
             rels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Cross-entropy of the gold heads plus that of the gold labels given the gold heads."""
        words = mask.clone()
        words[:, 0] = False
        arc_loss = F.cross_entropy(s_arc[words], heads[words])
        rel_loss = F.cross_entropy(self.rel_scores(rel_states, heads)[words], rels[words])
        return arc_loss + rel_loss

    @torch.no_grad()
    def decode(self, s_arc: torch.Tensor, rel_states: Tuple[torch.Tensor, torch.Tensor], mask: torch.Tensor,
               projective: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
        """Well-formed trees (one root dependent) and labels: ``(heads, rels) [batch, N]``.

        The greedy heads are kept where they already form a tree (a projective one when
        ``projective``); only the other sentences go through Chu-Liu-Edmonds (or Eisner).
        """
        lengths = mask.sum(1) - 1
        log_p = s_arc.log_softmax(-1)
        heads = log_p.argmax(-1)
        heads[:, 0] = 0
        heads = heads.masked_fill(~mask, 0)
        h_np, len_np = heads.cpu().numpy(), lengths.cpu().numpy()
        ok = tree_mask(h_np, len_np)
        if projective:
            ok &= projective_mask(h_np, len_np)
            redo = torch.from_numpy(np.flatnonzero(~ok)).to(heads.device)
            if len(redo):
                n = int(lengths[redo].max()) + 1
                heads[redo, :n] = eisner(log_p[redo, :n, :n], mask[redo, :n])
        elif not ok.all():
            lp = log_p.cpu().double().numpy()
            for b in np.flatnonzero(~ok):
                n = int(lengths[b]) + 1
                heads[b, :n] = torch.from_numpy(chu_liu_edmonds(lp[b, :n, :n]))
        s_rel = self.rel_scores(rel_states, heads)
        is_root = heads == 0
        s_rel[..., self.root_rel] = s_rel[..., self.root_rel].masked_fill(~is_root, float("-inf"))
        rels = s_rel.argmax(-1).masked_fill(is_root, self.root_rel)
        return heads, rels
