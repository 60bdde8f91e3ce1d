"""ID-CNN inference in numpy: the fast CPU path of the NER stage (no torch import).

A batch of sequences is concatenated into one ``[n, dim]`` matrix, so each width-3 dilated
convolution is one matrix product over the whole batch plus two shifted sums. The shifted taps are
masked where they would reach across a sequence boundary, which is exactly zero padding per sequence.
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import numpy as np


def _conv(x: np.ndarray, w3: np.ndarray, b: np.ndarray, d: int,
          masks: Dict[int, Tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """ReLU of the width-3 convolution, dilation ``d``, of ``x [n, c_in]``.

    ``w3 [c_in, 3 * c_out]`` holds the taps for positions -d, 0, +d; ``masks[d]`` = (left, right)
    ``[n, 1]`` 0/1 arrays saying whether position i-d (i+d) is in the same sequence as i.
    """
    c = b.shape[0]
    y = x @ w3                                   # [n, 3c]
    out = y[:, c:2 * c] + b
    left, right = masks[d]
    out[d:] += y[:-d, :c] * left[d:]
    out[:-d] += y[d:, 2 * c:] * right[:-d]
    np.maximum(out, 0, out=out)
    return out


class IDCNNInference:
    """Final-block label scores of an ID-CNN from the plain arrays of a saved :class:`~nlpipe.nn.tagger.NeuralTagger` state."""

    def __init__(self, params: Dict[str, np.ndarray], dilations: Sequence[int], n_blocks: int,
                 dtype: type = np.float32):
        def taps(w: np.ndarray) -> np.ndarray:     # torch Conv1d [out, in, 3] -> [in, 3 * out]
            return np.ascontiguousarray(np.concatenate([w[:, :, k].T for k in range(3)], axis=1), dtype=dtype)

        self.words = params["emb.words.weight"].astype(dtype)
        self.shapes = params["emb.shapes.weight"].astype(dtype)
        self.affixes = params["emb.affixes.weight"].astype(dtype) if "emb.affixes.weight" in params else None
        self.first = (taps(params["enc.first.weight"]), params["enc.first.bias"].astype(dtype))
        self.block = [(taps(params[f"enc.block.{i}.weight"]), params[f"enc.block.{i}.bias"].astype(dtype), d)
                      for i, d in enumerate(dilations)]
        self.out_w = np.ascontiguousarray(params["enc.out.weight"].T, dtype=dtype)
        self.out_b = params["enc.out.bias"].astype(dtype)
        self.n_blocks = n_blocks
        self.dilations = list(dilations)

    def scores(self, seqs: Sequence[Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]]
               ) -> Tuple[np.ndarray, np.ndarray]:
        """Label scores of ``(word ids, shape ids, affix ids [len, N_AFFIXES] or None)`` sequences:
        ``(packed [n, K], starts [batch])``.

        Sequence ``i`` has its scores in rows ``starts[i] : starts[i] + len(seqs[i][0])``.
        """
        lengths = np.array([len(q[0]) for q in seqs], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        words = np.concatenate([q[0] for q in seqs])
        shapes = np.concatenate([q[1] for q in seqs])
        n = len(words)
        pos = np.arange(n) - np.repeat(starts, lengths)          # position within its sequence
        remain = np.repeat(lengths, lengths) - pos - 1           # positions after it
        dt = self.out_w.dtype
        masks = {d: ((pos >= d).astype(dt)[:, None], (remain >= d).astype(dt)[:, None])
                 for d in set(self.dilations) | {1}}
        parts = [self.words[words], self.shapes[shapes]]
        if self.affixes is not None:  # EmbeddingBag(sum) with padding row 0 = zeros
            parts.append(self.affixes[np.concatenate([q[2] for q in seqs])].sum(1))
        x = np.concatenate(parts, axis=1)
        h = _conv(x, *self.first, 1, masks)
        for _ in range(self.n_blocks):
            for w3, b, d in self.block:
                h = _conv(h, w3, b, d, masks)
        return h @ self.out_w + self.out_b, starts
