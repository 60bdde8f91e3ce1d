"""The numpy building blocks of torch-free CPU inference: linear layers, LSTMs, activations, layer norm.

Each takes the arrays of a saved torch state (float32) and computes what the torch layer computes in
eval mode; the models that use them (:mod:`nlpipe.models.lisa_numpy`,
:mod:`nlpipe.models.biaffine_numpy`) start without importing torch.
"""
from __future__ import annotations

from typing import Dict

import numpy as np


class Linear:
    """``nn.Linear`` from ``<prefix>.weight [out, in]`` and ``<prefix>.bias [out]``: ``[..., in] -> [..., out]``."""

    def __init__(self, params: Dict[str, np.ndarray], prefix: str):
        self.weight_t = np.ascontiguousarray(params[prefix + ".weight"].T, dtype=np.float32)
        bias = params.get(prefix + ".bias")
        self.bias = None if bias is None else np.asarray(bias, dtype=np.float32)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        # one 2-D product: numpy's stacked matmul of a 3-D array by a matrix is many times slower
        y = np.ascontiguousarray(x).reshape(-1, x.shape[-1]) @ self.weight_t
        if self.bias is not None:
            y += self.bias
        return y.reshape(*x.shape[:-1], y.shape[-1])


class LSTM:
    """One direction of one ``nn.LSTM`` layer. Every gate is computed from one ``exp``:
    ``sigmoid(x) = 1 / (1 + exp(-x))`` and ``tanh(x) = 2 sigmoid(2x) - 1``, with the factors -1 and -2
    folded into the weights (exact in floating point) and the rows reordered to i, f, o, g."""

    def __init__(self, p: Dict[str, np.ndarray], prefix: str):
        w_ih, w_hh = p[prefix + "weight_ih_l0"], p[prefix + "weight_hh_l0"]
        h = w_hh.shape[1]
        order = np.r_[0:2 * h, 3 * h:4 * h, 2 * h:3 * h]
        scale = np.where(np.arange(4 * h) < 3 * h, np.float32(-1.0), np.float32(-2.0))[:, None]
        self.w_ih = np.ascontiguousarray((w_ih[order] * scale).T)             # [in, 4H]
        self.w_hh = np.ascontiguousarray((w_hh[order] * scale).T)             # [H, 4H]
        self.bias = (p[prefix + "bias_ih_l0"] + p[prefix + "bias_hh_l0"])[order] * scale[:, 0]
        self.h = h

    def __call__(self, x: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """``[b, T, in] -> [b, T, H]`` from zero states, for rows sorted longest first (``lengths
        [b]``): the rows still running at a step are a prefix, and the recurrence skips the others
        (their outputs stay 0)."""
        b, n, _ = x.shape
        h = self.h
        real = np.arange(n)[None, :] < lengths[:, None]                         # [b, T]
        xw = (x.reshape(b * n, -1) @ self.w_ih + self.bias).reshape(b, n, 4 * h)
        out = np.zeros((b, n, h), dtype=np.float32)
        state = np.zeros((b, h), dtype=np.float32)
        cell = np.zeros((b, h), dtype=np.float32)
        one, two = np.float32(1.0), np.float32(2.0)
        with np.errstate(over="ignore"):                                        # exp -> inf: the gate is 0
            for t, k in enumerate(real.sum(0)):
                g = xw[:k, t] + state[:k] @ self.w_hh                          # [k, 4H]
                np.exp(g, out=g)
                g += one
                np.reciprocal(g, out=g)                                        # sigmoid of i, f, o, 2g
                u = g[:, 3 * h:]
                u *= two
                u -= one                                                       # tanh of g
                c = cell[:k]
                c *= g[:, h:2 * h]
                c += g[:, :h] * u
                state[:k] = out[:k, t] = g[:, 2 * h:3 * h] * np.tanh(c)
        return out


def reversal(lengths: np.ndarray, n: int) -> np.ndarray:
    """Flat row indices ``[b * n]`` that reverse each row of a ``[b, n, d]`` array within its length
    (padding stays put): ``x.reshape(b * n, d)[index]``."""
    t = np.arange(n)[None, :]
    return (np.where(t < lengths[:, None], lengths[:, None] - 1 - t, t) + n * np.arange(len(lengths))[:, None]).ravel()


def reverse_padded(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Reverse each sequence of ``x [b, T, d]`` within its length (``index``: :func:`reversal`)."""
    return x.reshape(-1, x.shape[-1])[index].reshape(x.shape)


class BiLSTMStack:
    """The stacked BiLSTM of :class:`nlpipe.nn.parser_encoder.BiLSTMStack` from its saved arrays
    (``<prefix>fwd.<i>.*``, ``<prefix>bwd.<i>.*``): ``x [b, T, in]`` and ``lengths [b]`` ->
    ``[b, T, 2H]``, padding positions 0 on the way in and out of each layer."""

    def __init__(self, p: Dict[str, np.ndarray], prefix: str):
        layers = sorted({int(k[len(prefix) + 4:].split(".")[0]) for k in p if k.startswith(prefix + "fwd.")})
        self.layers = [(LSTM(p, f"{prefix}fwd.{i}."), LSTM(p, f"{prefix}bwd.{i}.")) for i in layers]

    def __call__(self, x: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        order = np.argsort(-lengths, kind="stable")                            # longest first
        x, lengths = x[order], lengths[order]
        back = reversal(lengths, x.shape[1])
        for fwd, bwd in self.layers:
            x = np.concatenate([fwd(x, lengths), reverse_padded(bwd(reverse_padded(x, back), lengths), back)], -1)
        return x[np.argsort(order, kind="stable")]


def leaky_relu(x: np.ndarray, slope: float = 0.1) -> np.ndarray:
    """Leaky ReLU (slope 0.1, as the biaffine MLPs), in place."""
    return np.maximum(x, x * np.float32(slope), out=x)


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis."""
    e = np.exp(x - x.max(-1, keepdims=True))
    e /= e.sum(-1, keepdims=True)
    return e


def log_softmax(x: np.ndarray) -> np.ndarray:
    """Log-softmax over the last axis."""
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """``nn.LayerNorm`` over the last axis (biased variance, as torch)."""
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * weight + bias


def check_shapes(params: Dict[str, np.ndarray], expected: Dict[str, tuple]) -> None:
    """A ``ValueError`` unless ``params`` holds exactly the ``expected`` arrays with their shapes
    (what loading the state into the torch module would have checked)."""
    missing, extra = sorted(set(expected) - set(params)), sorted(set(params) - set(expected))
    if missing or extra:
        raise ValueError(f"weights do not fit the config: missing {missing[:3]}, unexpected {extra[:3]}")
    for k, shape in expected.items():
        if tuple(params[k].shape) != tuple(shape):
            raise ValueError(f"weights do not fit the config: {k} has shape {tuple(params[k].shape)}, "
                             f"the config makes it {tuple(shape)}")


def linear_shapes(prefix: str, n_in: int, n_out: int, bias: bool = True) -> Dict[str, tuple]:
    """The arrays of an ``nn.Linear(n_in, n_out)`` under ``prefix``."""
    out = {prefix + ".weight": (n_out, n_in)}
    if bias:
        out[prefix + ".bias"] = (n_out,)
    return out
