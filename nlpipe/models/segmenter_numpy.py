"""Inference of the character segmenter in numpy (no torch import at tokenize time).

The network: character embedding (plus, optionally, an embedding of the rule tokenizer's token-end
bit for the character, and one of its space-join value), a width-3 convolution, then residual
width-3 convolutions with
growing dilations (``h = mask * (h + relu(conv_d(h)))``), then a linear layer to the three labels.
Positions of the mask's zeros (padding between paragraphs) are zero after every layer, so
paragraphs concatenated with a gap of at least the largest dilation do not see each other, exactly
as with zero padding per paragraph.

Long inputs run in windows of ``window`` characters, each with :attr:`SegmenterInference.radius`
characters of context on both sides, so memory stays bounded and the scores are the same as over
the whole input (the outputs depend on nothing further away than the receptive field).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.models.segmenter import PAD


def _taps(w: np.ndarray) -> np.ndarray:
    """torch Conv1d weight [out, in, 3] -> [in, 3 * out] (taps for positions -d, 0, +d)."""
    return np.ascontiguousarray(np.concatenate([w[:, :, k].T for k in range(3)], axis=1), dtype=np.float32)


def _conv(x: np.ndarray, w3: np.ndarray, b: np.ndarray, d: int) -> np.ndarray:
    """ReLU of the width-3 convolution with dilation ``d`` of ``x [n, c_in]``, zero padded."""
    c = b.shape[0]
    y = x @ w3
    out = y[:, c:2 * c] + b
    if d < len(x):
        out[d:] += y[:-d, :c]
        out[:-d] += y[d:, 2 * c:]
    np.maximum(out, 0, out=out)
    return out


class SegmenterInference:
    """Label scores ``[n, 3]`` for character ids, from the arrays of a trained segmenter."""

    def __init__(self, params: Dict[str, np.ndarray], dilations: Sequence[int], window: int = 4096):
        f32 = np.float32
        self.emb = params["emb.weight"].astype(f32)
        # optional input feature: embedding of the rule tokenizer's token-end bit, added to the character's
        self.rule = params["rule.weight"].astype(f32) if "rule.weight" in params else None
        # optional input feature: embedding of the space-join value (nlpipe.models.space_joins)
        self.lex = params["lex.weight"].astype(f32) if "lex.weight" in params else None
        self.first = (_taps(params["first.weight"]), params["first.bias"].astype(f32))
        self.block: List[Tuple[np.ndarray, np.ndarray, int]] = [
            (_taps(params[f"block.{i}.weight"]), params[f"block.{i}.bias"].astype(f32), int(d))
            for i, d in enumerate(dilations)]
        self.out_w = np.ascontiguousarray(params["out.weight"].T, dtype=f32)
        self.out_b = params["out.bias"].astype(f32)
        self.dilations = [int(d) for d in dilations]
        self.radius = 1 + sum(self.dilations)
        self.gap = max(self.dilations + [1])
        self.window = window

    def scores(self, ids: np.ndarray, bits: Optional[np.ndarray] = None,
               lex: Optional[np.ndarray] = None) -> np.ndarray:
        """Scores ``[n, 3]`` of each position of ``ids [n]`` (pieces separated by at least :attr:`gap`
        PAD ids); ``bits [n]``: the rule feature, ``lex [n]``: the space-join values, each required
        exactly when the model uses it."""
        if (self.rule is None) != (bits is None):
            raise ValueError("the rule feature must be given exactly when the model was trained with it")
        if (self.lex is None) != (lex is None):
            raise ValueError("the space joins must be given exactly when the model was trained with them")
        n = len(ids)
        out = np.empty((n, self.out_b.shape[0]), dtype=np.float32)
        r, w = self.radius, self.window
        for s in range(0, n, w):
            e = min(n, s + w)
            a, b = max(0, s - r), min(n, e + r)
            out[s:e] = self._run(ids[a:b], None if bits is None else bits[a:b],
                                 None if lex is None else lex[a:b])[s - a:e - a]
        return out

    def _run(self, ids: np.ndarray, bits: Optional[np.ndarray], lex: Optional[np.ndarray]) -> np.ndarray:
        mask = (ids != PAD).astype(np.float32)[:, None]
        x = self.emb[ids]
        if bits is not None:
            x += self.rule[bits]
        if lex is not None:
            x += self.lex[lex]
        if bits is not None or lex is not None:
            x *= mask
        h = _conv(x, *self.first, 1)
        h *= mask
        for w3, b, d in self.block:
            h += _conv(h, w3, b, d)
            h *= mask
        return h @ self.out_w + self.out_b
