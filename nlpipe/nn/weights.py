"""A torch network's weights as plain half-precision tensors (``weights.pt``), and the running
average of weights that training evaluates and saves.

Files are written and read through :mod:`nlpipe.io.model_dir` (tensors only, read back with
``weights_only=True``: loading never unpickles arbitrary objects; any damage is a ModelError).
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, TypeVar

from nlpipe.io.model_dir import (model_errors, read_json, read_tensors, read_tensors_numpy, write_config, write_json,
                                 write_tensors)

M = TypeVar("M")
VOCAB = "vocab.json"
WEIGHTS = "weights.pt"


def save_half(net: Any, path: Path) -> None:
    """Write ``net``'s state dict to ``path`` with floating-point tensors as float16."""
    write_tensors(path, {k: v.detach().cpu().half() if v.is_floating_point() else v.detach().cpu()
                         for k, v in net.state_dict().items()})


def load_half(net: Any, path: Path) -> None:
    """Load a file written by :func:`save_half` into ``net`` (floats back to float32)."""
    state = read_tensors(path)
    with model_errors(Path(path).parent, f"network weights {Path(path).name}"):
        net.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})


class WeightAverage:
    """Exponential moving average of a network's state (``avg = decay * avg + (1 - decay) * w`` per step).

    Evaluating and saving the averaged weights gives steadier, usually better, dev scores than the
    last step's weights, at no cost at run time. With ``warmup`` the decay of step ``t`` is
    ``min(decay, (1 + t) / (10 + t))`` (as TensorFlow's ``ExponentialMovingAverage`` with
    ``num_updates``): the average then never reaches back much further than the last tenth of the
    steps, so it leaves the random initial weights behind as fast on a small treebank's few
    batches as on a large one's many.
    """

    def __init__(self, net: Any, decay: float, warmup: bool = False):
        if not 0.0 < decay < 1.0:
            raise ValueError(f"weight-average decay must be in (0, 1), not {decay}")
        self.decay, self.warmup, self.steps = decay, warmup, 0
        self.state: Dict[str, Any] = {k: v.detach().clone() for k, v in net.state_dict().items()}

    def step_decay(self) -> float:
        """The decay of the next update."""
        t = self.steps + 1
        return min(self.decay, (1 + t) / (10 + t)) if self.warmup else self.decay

    def update(self, net: Any) -> None:
        """Fold ``net``'s current weights into the average (call after each optimiser step)."""
        import torch

        decay = self.step_decay()
        self.steps += 1
        with torch.no_grad():
            for k, v in net.state_dict().items():
                if v.is_floating_point():
                    self.state[k].mul_(decay).add_(v, alpha=1 - decay)
                else:
                    self.state[k].copy_(v)

    @contextlib.contextmanager
    def swapped_in(self, net: Any) -> Iterator[None]:
        """Inside the block ``net`` holds the averaged weights; its own come back afterwards."""
        own = {k: v.detach().clone() for k, v in net.state_dict().items()}
        net.load_state_dict(self.state)
        try:
            yield
        finally:
            net.load_state_dict(own)


def save_model_dir(out_dir: Path, vocab: Dict[str, Any], net: Any, config: Dict[str, Any],
                   labels_key: Optional[str] = None) -> None:
    """Write a torch stage's model directory: ``vocab.json``, ``weights.pt`` (see :func:`save_half`)
    and ``config.json``. The label set is kept once, in config ``labels``: ``vocab[labels_key]``
    (the same list) is left out of ``vocab.json``."""
    if labels_key is not None:
        if list(vocab[labels_key]) != list(config["labels"]):
            raise ValueError(f"vocabulary '{labels_key}' differs from the config's labels")
        vocab = {k: v for k, v in vocab.items() if k != labels_key}
    write_json(Path(out_dir) / VOCAB, vocab)
    save_half(net, Path(out_dir) / WEIGHTS)
    write_config(out_dir, config)


def read_model_dir(model_dir: Path, what: str, build: Callable[..., M],
                   config: Optional[Dict[str, Any]] = None, labels_key: Optional[str] = None,
                   numpy: bool = False) -> M:
    """The model ``build(vocab)`` makes from ``vocab.json``, with ``weights.pt`` loaded into its
    ``net`` (in eval mode); any damage is a ModelError about ``what``. With ``labels_key``,
    ``vocab[labels_key]`` is the config's ``labels`` (models saved before the label set was kept
    once still have it in ``vocab.json``, where it is read). With ``numpy``, ``build(vocab, params)``
    gets the weights as numpy arrays instead (as stored: half precision), read without torch."""
    vocab = read_json(Path(model_dir) / VOCAB)
    params = read_tensors_numpy(Path(model_dir) / WEIGHTS) if numpy else None
    with model_errors(Path(model_dir), what):
        if labels_key is not None and labels_key not in vocab:
            vocab[labels_key] = (config or {})["labels"]
        if params is not None:
            return build(vocab, params)
        model = build(vocab)
    load_half(model.net, Path(model_dir) / WEIGHTS)  # type: ignore[attr-defined]
    model.net.eval()  # type: ignore[attr-defined]
    return model


def load_model(cls: Callable[..., M], model_dir: Path, what: str, config: Dict[str, Any], labels_key: str,
               device: str = "cpu", numpy: bool = False) -> M:
    """``cls(vocab, config["model"], ...)`` of a folder: with ``numpy`` (``device`` cpu only) built on
    the weights as numpy arrays (``params=``), else with its torch network on ``device``."""
    if numpy and device == "cpu":
        return read_model_dir(Path(model_dir), what, lambda vocab, params: cls(vocab, config["model"], params=params),
                              config, labels_key, numpy=True)
    return read_model_dir(Path(model_dir), what, lambda vocab: cls(vocab, config["model"], device), config,
                          labels_key)
