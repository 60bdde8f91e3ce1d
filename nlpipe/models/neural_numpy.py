"""The numpy building blocks of torch-free CPU inference: linear layers, activations, layer norm.

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
