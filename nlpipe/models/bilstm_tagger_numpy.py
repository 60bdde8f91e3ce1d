"""BiLSTM tagger inference in numpy: the CPU path of the accurate ``pos`` tagger (no torch import).

The same network as :class:`nlpipe.nn.bilstm_tagger.BiLSTMTagger` in eval mode, from the plain arrays
of its saved state. Shapes as there: id arrays ``[b, N]`` (``affixes [b, N, N_AFFIXES]``), ``lengths
[b]`` words per row; the best label of every head ``[b, N]``.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from nlpipe.models.neural_numpy import BiLSTMStack, Linear, Packing, check_shapes, linear_shapes
from nlpipe.nn.features import SHAPES

# the outputs: the joint UPOS<TAB>XPOS label, the whole FEATS string, the lemma's rewrite rule
HEADS = ("tags", "feats", "lemmas")


def expected_shapes(hp: Dict[str, Any], sizes: Dict[str, int]) -> Dict[str, tuple]:
    """The arrays of a saved tagger with hyper-parameters ``hp`` and ``sizes`` (``words``, ``vectors``,
    ``affixes``, ``chars``, and the labels of each head in :data:`HEADS`; a head of 0 labels is absent)."""
    h = int(hp["hidden"])
    out = {"words.weight": (sizes["words"], hp["word_dim"]), "shapes.weight": (len(SHAPES), hp["shape_dim"]),
           "affixes.weight": (sizes["affixes"], hp["affix_dim"])}
    if hp["vector_dim"]:
        out["vectors.weight"] = (sizes["vectors"], hp["vector_dim"])
    n_in = hp["word_dim"] + hp["vector_dim"] + hp["shape_dim"] + hp["affix_dim"]
    if hp.get("char_dim"):
        f = hp["char_filters"]
        out.update({"chars.embed.weight": (sizes["chars"], hp["char_dim"]),
                    "chars.conv.weight": (f, hp["char_dim"], hp["char_width"]), "chars.conv.bias": (f,)})
        n_in += f
    rank = int(hp.get("rank", 0))
    for i in range(int(hp["layers"])):
        if i and rank:
            out[f"lstm.proj.{i}.weight"] = (rank, 2 * h)
        for side in ("fwd", "bwd"):
            k = f"lstm.{side}.{i}."
            out.update({k + "weight_ih_l0": (4 * h, n_in if i == 0 else rank or 2 * h), k + "weight_hh_l0": (4 * h, h),
                        k + "bias_ih_l0": (4 * h,), k + "bias_hh_l0": (4 * h,)})
    for name in HEADS:
        if sizes.get(name):
            out.update(linear_shapes(f"heads.{name}", 2 * h, sizes[name]))
    return out


class TaggerInference:
    """The best label of every head for batches of id arrays; ``expected``: the shapes the config
    makes (:func:`expected_shapes`), checked first."""

    def __init__(self, params: Dict[str, Any], expected: Dict[str, tuple]):
        check_shapes(params, expected)
        p = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in params.items()}
        self.words, self.shapes = p["words.weight"], p["shapes.weight"]
        self.vectors = p.get("vectors.weight")
        self.affixes = p["affixes.weight"].copy()
        self.affixes[0] = 0.0                                                  # padding_idx: never summed
        self.lstm = BiLSTMStack(p, "lstm.")
        self.char_embed = p.get("chars.embed.weight")
        if self.char_embed is not None:
            weight = p["chars.conv.weight"]                                    # [filters, dim, width]
            self.char_width = weight.shape[2]
            self.char_conv = np.ascontiguousarray(weight.transpose(2, 1, 0).reshape(-1, weight.shape[0]))
            self.char_bias = p["chars.conv.bias"]
        self.heads = {name: Linear(p, f"heads.{name}") for name in HEADS if f"heads.{name}.weight" in p}

    def char_features(self, chars: np.ndarray) -> np.ndarray:
        """The character CNN: ``chars [m, L]`` ids of ``m`` words (0 padding) -> ``[m, filters]``."""
        m, length = chars.shape
        pad = self.char_width // 2
        x = np.zeros((m, length + 2 * pad, self.char_embed.shape[1]), dtype=np.float32)
        x[:, pad:pad + length] = self.char_embed[chars]
        # each position's window of ``width`` characters, flattened (width, dim), against the filters
        windows = np.concatenate([x[:, k:k + length] for k in range(self.char_width)], -1)
        y = (windows.reshape(m * length, -1) @ self.char_conv).reshape(m, length, -1) + self.char_bias
        real = chars > 0
        real[:, 0] = True
        y[~real] = -np.inf
        return y.max(1)

    def inputs(self, a: Dict[str, np.ndarray]) -> np.ndarray:
        """The first layer's inputs ``[..., in]`` of id arrays ``words, vectors, shapes [...]`` and
        ``affixes [..., N_AFFIXES]``; the character CNN's output comes from ``a["char_features"]
        [..., filters]`` where given (e.g. kept per form), else from ``a["chars"] [..., L]``."""
        parts = [self.words[a["words"]]]
        if self.vectors is not None:
            parts.append(self.vectors[a["vectors"]])
        parts += [self.shapes[a["shapes"]], self.affixes[a["affixes"]].sum(-2)]
        if self.char_embed is not None:
            chars = a.get("char_features")
            if chars is None:
                *lead, length = a["chars"].shape
                chars = self.char_features(a["chars"].reshape(-1, length)).reshape(*lead, -1)
            parts.append(chars)
        return np.concatenate(parts, -1)

    def scores(self, a: Dict[str, np.ndarray], lengths: np.ndarray) -> Dict[str, np.ndarray]:
        """Label scores ``[b, N, n_labels]`` of every head from padded id arrays ``[b, N]``
        (:meth:`inputs`; ``lengths [b]``: words per row; padding positions 0)."""
        out, packing = self.packed_scores(a, lengths)
        return {name: packing.unpack(s) for name, s in out.items()}

    def packed_scores(self, a: Dict[str, np.ndarray], lengths: np.ndarray, which: Optional[np.ndarray] = None
                      ) -> Tuple[Dict[str, np.ndarray], Packing]:
        """Label scores ``[P, n_labels]`` of every head for the words only, packed as the returned
        :class:`~nlpipe.models.neural_numpy.Packing` says (``lengths [b]``: words per row), from
        padded id arrays ``[b, N]`` (:meth:`inputs`), or with ``which [P]`` from the id arrays of
        distinct forms ``[U]``, word ``k`` (sentence after sentence) being form ``which[k]``."""
        h, packing = self.lstm.packed(self.inputs(a), lengths, which)
        return {name: head(h) for name, head in self.heads.items()}, packing
