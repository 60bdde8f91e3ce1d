"""The numpy building blocks of torch-free CPU inference: linear layers, LSTMs, activations, layer norm.

Each takes the arrays of a saved torch state (float32) and computes what the torch layer computes in
eval mode; the models that use them (:mod:`nlpipe.models.lisa_numpy`,
:mod:`nlpipe.models.biaffine_numpy`) start without importing torch.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

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


def gate_weights(p: Dict[str, np.ndarray], prefix: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(w_ih [in, 4H], w_hh [H, 4H], bias [4H])`` of one direction of one ``nn.LSTM`` layer, as
    :class:`LSTM` computes its gates: the rows reordered to i, f, o, g and the factors -1 and -2 of
    ``sigmoid(x) = 1 / (1 + exp(-x))`` and ``tanh(x) = 2 sigmoid(2x) - 1`` folded in (exact in
    floating point)."""
    w_ih, w_hh = p[prefix + "weight_ih_l0"], p[prefix + "weight_hh_l0"]
    h = w_hh.shape[1]
    order = np.r_[0:2 * h, 3 * h:4 * h, 2 * h:3 * h]
    scale = np.where(np.arange(4 * h) < 3 * h, np.float32(-1.0), np.float32(-2.0))[:, None]
    bias = (p[prefix + "bias_ih_l0"] + p[prefix + "bias_hh_l0"])[order] * scale[:, 0]
    return np.ascontiguousarray((w_ih[order] * scale).T), np.ascontiguousarray((w_hh[order] * scale).T), bias


class LSTM:
    """The recurrence of one direction of one ``nn.LSTM`` layer, every gate computed from one ``exp``
    (see :func:`gate_weights`); the input's share of the gates comes precomputed (:class:`BiLSTMStack`
    projects both directions of a layer in one product)."""

    def __init__(self, w_hh: np.ndarray):
        """``w_hh [H, 4H]``: the recurrent weights as :func:`gate_weights` gives them."""
        self.w_hh = w_hh
        self.h = w_hh.shape[0]

    def run(self, xw: np.ndarray, steps: np.ndarray, index: Optional[np.ndarray] = None) -> np.ndarray:
        """The recurrence over the input's share of the gates (``x @ w_ih + bias``), packed time-major
        rows ``xw [P, 4H] -> [P, H]``, from zero states: ``steps [T]`` rows run at each step, a prefix
        of the rows of the step before (sequences sorted longest first), and step ``t``'s rows follow
        step ``t - 1``'s (see :class:`Packing`). With ``index [P]``, row ``i`` is ``xw[index[i]]``
        (``xw [U, 4H]``)."""
        h = self.h
        size = len(xw) if index is None else len(index)
        out = np.empty((size, h), dtype=np.float32)
        cell = np.zeros((int(steps[0]) if len(steps) else 0, h), dtype=np.float32)
        gates = np.empty((len(cell), 4 * h), dtype=np.float32)
        one, two = np.float32(1.0), np.float32(2.0)
        start = prev = 0
        with np.errstate(over="ignore"):                                        # exp -> inf: the gate is 0
            for k in steps.tolist():
                g = gates[:k]
                x = xw[start:start + k] if index is None else xw[index[start:start + k]]
                if start:                                                      # the state: the last outputs
                    np.matmul(out[start - prev:start - prev + k], self.w_hh, out=g)
                    g += x
                else:
                    g[...] = x
                np.exp(g, out=g)
                g += one
                np.reciprocal(g, out=g)                                        # sigmoid of i, f, o, 2g
                u = g[:, 3 * h:]
                u *= two
                u -= one                                                       # tanh of g
                c = cell[:k]
                c *= g[:, h:2 * h]
                np.multiply(g[:, :h], u, out=u)
                c += u
                o = out[start:start + k]
                np.tanh(c, out=o)
                o *= g[:, 2 * h:3 * h]
                prev = k
                start += k
        return out


class Packing:
    """Padded rows ``[b, T, ...]`` (``lengths [b]``) as packed time-major rows ``[P, ...]``, P the sum of
    the lengths: step t holds, longest sequence first, the rows of the sequences longer than t, so the
    recurrence of a step runs on one contiguous block and no padding is computed."""

    def __init__(self, lengths: np.ndarray, n: int):
        order = np.argsort(-lengths, kind="stable")                            # longest first
        longest_first = lengths[order]
        running = np.arange(n)[:, None] < longest_first[None, :]               # [T, b]
        self.steps = running.sum(1)                                            # [T]
        self.index = (order[None, :] * n + np.arange(n)[:, None])[running]     # [P] rows of x.reshape(b * n, ...)
        offsets = np.concatenate([[0], np.cumsum(self.steps)[:-1]])
        t, j = np.nonzero(running)
        # packed row of (t, j) -> packed row of (length_j - 1 - t, j): each sequence read backwards
        self.reverse = offsets[longest_first[j] - 1 - t] + j
        self.shape = (len(lengths), n)
        # packed row of (t, j) -> row of the same word among all words, sequence after sequence
        firsts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        self.word_rows = firsts[order][j] + t

    def pack(self, x: np.ndarray) -> np.ndarray:
        """``[b, T, d] -> [P, d]``."""
        return x.reshape(-1, x.shape[-1])[self.index]

    def unpack(self, x: np.ndarray) -> np.ndarray:
        """``[P, d] -> [b, T, d]``, padding positions 0."""
        out = np.zeros((self.shape[0] * self.shape[1], x.shape[-1]), dtype=x.dtype)
        out[self.index] = x
        return out.reshape(*self.shape, x.shape[-1])


class BiLSTMStack:
    """The stacked BiLSTM of :class:`nlpipe.nn.parser_encoder.BiLSTMStack` from its saved arrays
    (``<prefix>fwd.<i>.*``, ``<prefix>bwd.<i>.*``, ``<prefix>proj.<i>.weight`` where the stack has a
    rank): ``x [b, T, in]`` and ``lengths [b]`` -> ``[b, T, 2H]``, padding positions 0 (never computed:
    the layers run on packed rows)."""

    def __init__(self, p: Dict[str, np.ndarray], prefix: str):
        layers = sorted({int(k[len(prefix) + 4:].split(".")[0]) for k in p if k.startswith(prefix + "fwd.")})
        self.layers: List[Tuple[LSTM, LSTM]] = []
        # both directions' input weights side by side: one product a layer ([in, 8H])
        self.w_ih: List[np.ndarray] = []
        self.bias: List[np.ndarray] = []
        # a layer's projection of the layer below ([2H, rank]), where it has one
        self.proj: Dict[int, np.ndarray] = {i: np.ascontiguousarray(p[f"{prefix}proj.{i}.weight"].T) for i in layers
                                            if f"{prefix}proj.{i}.weight" in p}
        for i in layers:
            fw_ih, fw_hh, f_bias = gate_weights(p, f"{prefix}fwd.{i}.")
            bw_ih, bw_hh, b_bias = gate_weights(p, f"{prefix}bwd.{i}.")
            self.layers.append((LSTM(fw_hh), LSTM(bw_hh)))
            self.w_ih.append(np.ascontiguousarray(np.concatenate([fw_ih, bw_ih], 1)))
            self.bias.append(np.concatenate([f_bias, b_bias]))

    def __call__(self, x: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        rows, packing = self.packed(x, lengths)
        return packing.unpack(rows)

    def packed(self, x: np.ndarray, lengths: np.ndarray, which: Optional[np.ndarray] = None
               ) -> Tuple[np.ndarray, "Packing"]:
        """The states of the words only: ``(rows [P, 2H], packing)``, packed as :class:`Packing`
        says (P = the sum of the lengths). With ``which [P]``, ``x [U, in]`` holds distinct inputs and
        word ``k`` (sequence after sequence) reads row ``which[k]``."""
        if which is None:
            packing = Packing(lengths, x.shape[1])
            rows, index = distinct_rows(packing.pack(x))
        else:
            packing = Packing(lengths, int(lengths.max(initial=0)))
            rows, index = x, which[packing.word_rows]
        back = packing.reverse
        for i, (fwd, bwd) in enumerate(self.layers):
            # a word's first-layer input is its type's: each distinct row projected once; the backward
            # direction reads its rows through ``back`` rather than from a reordered copy of its input
            if i in self.proj:
                x = x @ self.proj[i]
            xw = (rows if i == 0 else x) @ self.w_ih[i]
            xw += self.bias[i]
            forward, backward = xw[:, :4 * fwd.h], xw[:, 4 * fwd.h:]
            if i == 0:
                f = fwd.run(forward, packing.steps, index)
                b = bwd.run(backward, packing.steps, index[back])
            else:
                f, b = fwd.run(forward, packing.steps), bwd.run(backward, packing.steps, back)
            x = np.concatenate([f, b[back]], -1)
        return x, packing


def distinct_rows(x: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(rows [U, d], index [P])`` of ``x [P, d]``: its distinct rows (bit for bit) and where each
    row of ``x`` is among them, ``rows[index]`` equal to ``x``. A text repeats its words: the rows of
    a batch of a few thousand are a third or so distinct."""
    x = np.ascontiguousarray(x)
    if not len(x):
        return x, np.zeros(0, dtype=np.int64)
    keys = x.view(np.dtype((np.void, x.dtype.itemsize * x.shape[1])))[:, 0]
    _, first, index = np.unique(keys, return_index=True, return_inverse=True)
    return x[first], index.reshape(-1)


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
