"""A sequence tagger = token embedding + encoder (ID-CNN or Bi-LSTM) + optional CRF (torch).

Hyper-parameters live in a plain dict (saved as the ``model`` block of config.json); weights are the
module's ``state_dict`` as plain arrays (see :func:`export` / :func:`from_arrays`).
Shapes: ``words``, ``shapes``, ``tags`` ``[batch, time]`` int64; ``mask [batch, time]`` bool;
``affixes [batch, time, N_AFFIXES]`` int64 (only for models with ``affix_dim`` > 0, else None).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from nlpipe.nn.bilstm import BiLSTM
from nlpipe.nn.crf import CRF
from nlpipe.nn.embeddings import TokenEmbedding
from nlpipe.nn.idcnn import IDCNN

DEFAULTS: Dict[str, Dict[str, Any]] = {
    "idcnn": {"word_dim": 50, "shape_dim": 8, "word_dropout": 0.05, "width": 200,
              "dilations": [1, 2, 4, 1], "n_blocks": 2, "dropout_in": 0.5, "dropout_block": 0.3,
              "el_penalty": 1e-4},
    "bilstm": {"word_dim": 50, "shape_dim": 8, "word_dropout": 0.05, "hidden": 200, "dropout": 0.5},
}


class NeuralTagger(nn.Module):
    def __init__(self, hp: Dict[str, Any], n_words: int, labels: Sequence[str],
                 vectors: Optional[np.ndarray] = None, n_affixes: int = 0):
        super().__init__()
        self.hp = hp
        self.labels = list(labels)
        self.emb = TokenEmbedding(n_words, hp["word_dim"], hp["shape_dim"], hp["word_dropout"], vectors,
                                  n_affixes, hp.get("affix_dim", 0))
        k = len(labels)
        if hp["arch"] == "idcnn":
            self.enc: nn.Module = IDCNN(self.emb.dim, hp["width"], k, hp["dilations"], hp["n_blocks"],
                                        hp["dropout_in"], hp["dropout_block"])
        else:
            self.enc = BiLSTM(self.emb.dim, hp["hidden"], k, hp["dropout"])
        self.crf = CRF(labels) if hp.get("crf") else None
        if hp.get("freeze_words"):  # keep GloVe fixed so training words and GloVe-only words stay in one space
            self.emb.words.weight.requires_grad_(False)

    def forward(self, words: torch.Tensor, shapes: torch.Tensor, mask: torch.Tensor,
                drop: bool = True, affixes: Optional[torch.Tensor] = None) -> List[torch.Tensor]:
        """Label scores after every block (ID-CNN) or the one layer (Bi-LSTM): ``[batch, time, K]`` each."""
        return self.enc(self.emb(words, shapes, drop, affixes), mask, drop)

    def loss(self, words: torch.Tensor, shapes: torch.Tensor, tags: torch.Tensor,
             mask: torch.Tensor, affixes: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Mean over blocks of the token loss (cross-entropy, or CRF NLL) + expectation-linear penalty."""
        scores = self(words, shapes, mask, affixes=affixes)
        if self.crf is not None:
            losses = [self.crf.nll(s, tags, mask) for s in scores]
        else:
            losses = [F.cross_entropy(s[mask], tags[mask]) for s in scores]
        total = torch.stack(losses).mean()
        lam = self.hp.get("el_penalty", 0.0)
        if lam > 0 and self.training:
            clean = self(words, shapes, mask, drop=False, affixes=affixes)
            gap = [((s - c)[mask] ** 2).sum(-1).mean() for s, c in zip(scores, clean)]
            total = total + lam * torch.stack(gap).mean()
        return total

    @torch.no_grad()
    def predict(self, words: torch.Tensor, shapes: torch.Tensor, mask: torch.Tensor,
                affixes: Optional[torch.Tensor] = None) -> np.ndarray:
        """Final scores as numpy ``[batch, time, K]`` (log-softmax for greedy models)."""
        s = self(words, shapes, mask, drop=False, affixes=affixes)[-1]
        if self.crf is None:
            s = torch.log_softmax(s, -1)
        return s.float().cpu().numpy()

    def export(self) -> Dict[str, np.ndarray]:
        """The weights as plain arrays (word vectors in float16 to keep shipped models small)."""
        out = {k: v.detach().cpu().numpy() for k, v in self.state_dict().items()}
        out["emb.words.weight"] = out["emb.words.weight"].astype(np.float16)
        return out


def from_arrays(hp: Dict[str, Any], labels: Sequence[str], arrays: Dict[str, np.ndarray]) -> NeuralTagger:
    """Rebuild a tagger from :meth:`NeuralTagger.export` arrays."""
    n_affixes = int(arrays["emb.affixes.weight"].shape[0]) if "emb.affixes.weight" in arrays else 0
    model = NeuralTagger(hp, int(arrays["emb.words.weight"].shape[0]), labels, n_affixes=n_affixes)
    state = {k: torch.as_tensor(np.asarray(v, dtype=np.float32) if v.dtype == np.float16 else v)
             for k, v in arrays.items()}
    model.load_state_dict(state)
    return model.eval()
