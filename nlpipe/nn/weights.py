"""Saving and loading a torch network's weights as plain half-precision tensors (``weights.pt``).

The file holds only tensors, read back with ``weights_only=True``: loading never unpickles arbitrary
objects. Any failure to read a model directory becomes a :class:`~nlpipe.errors.ModelError` naming it.
"""
from __future__ import annotations

import contextlib
import json
import pickle
import re
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, TypeVar

from nlpipe.errors import ModelError
from nlpipe.io.model_dir import write_config

M = TypeVar("M")


def save_half(net: Any, path: Path) -> None:
    """Write ``net``'s state dict to ``path`` with floating-point tensors as float16."""
    import torch

    state = {k: v.detach().cpu().half() if v.is_floating_point() else v.detach().cpu()
             for k, v in net.state_dict().items()}
    torch.save(state, path)


def load_half(net: Any, path: Path) -> None:
    """Load a file written by :func:`save_half` into ``net`` (floats back to float32)."""
    import torch

    with warnings.catch_warnings():  # torch warns about the pickle protocol of files it then refuses
        warnings.simplefilter("ignore")
        state = torch.load(path, map_location="cpu", weights_only=True)
    net.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})


class WeightAverage:
    """Exponential moving average of a network's state (``avg = decay * avg + (1 - decay) * w`` per step).

    Evaluating and saving the averaged weights gives steadier, usually better, dev scores than the
    last step's weights, at no cost at run time.
    """

    def __init__(self, net: Any, decay: float):
        if not 0.0 < decay < 1.0:
            raise ValueError(f"weight-average decay must be in (0, 1), not {decay}")
        self.decay = decay
        self.state: Dict[str, Any] = {k: v.detach().clone() for k, v in net.state_dict().items()}

    def update(self, net: Any) -> None:
        """Fold ``net``'s current weights into the average (call after each optimiser step)."""
        import torch

        with torch.no_grad():
            for k, v in net.state_dict().items():
                if v.is_floating_point():
                    self.state[k].mul_(self.decay).add_(v, alpha=1 - self.decay)
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


@contextlib.contextmanager
def model_errors(model_dir: Path, what: str) -> Iterator[None]:
    """Turn a missing file or unreadable content inside the block into a ModelError about ``what``."""
    try:
        yield
    except FileNotFoundError as e:
        raise ModelError(f"{model_dir}: incomplete {what} ({Path(e.filename).name} missing)") from None
    except pickle.UnpicklingError as e:  # what torch's weights_only loader refuses; its advice is not ours
        if "GLOBAL" in str(e):
            raise ModelError(f"{model_dir}: the {what}'s weights hold objects that nlpipe does not load "
                             "(only plain tensors)") from None
        raise ModelError(f"{model_dir}: corrupt or incompatible {what} (not a file of plain tensors)") from None
    except (ValueError, KeyError, RuntimeError, TypeError, EOFError) as e:
        raise ModelError(f"{model_dir}: corrupt or incompatible {what} ({first_sentence(str(e))})") from None


def first_sentence(message: str, limit: int = 200) -> str:
    """The first sentence (or line) of a library's error message, at most ``limit`` characters."""
    head = re.split(r"(?<=[.!?])\s|\n", message.strip(), maxsplit=1)[0].rstrip(".")
    return head if len(head) <= limit else head[:limit].rsplit(" ", 1)[0] + " ..."


def save_model_dir(out_dir: Path, vocab: Dict[str, Any], net: Any, config: Dict[str, Any]) -> None:
    """Write a torch stage's model directory: ``vocab.json``, ``weights.pt`` (see :func:`save_half`)
    and ``config.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    save_half(net, out_dir / "weights.pt")
    write_config(out_dir, config)


def read_model_dir(model_dir: Path, what: str, build: Callable[[Dict[str, Any]], M]) -> M:
    """The model ``build(vocab)`` makes from ``vocab.json``, with ``weights.pt`` loaded into its
    ``net`` (in eval mode); any damage is a ModelError about ``what``."""
    with model_errors(Path(model_dir), what):
        vocab = json.loads((Path(model_dir) / "vocab.json").read_text(encoding="utf-8"))
        model = build(vocab)
        load_half(model.net, Path(model_dir) / "weights.pt")  # type: ignore[attr-defined]
    model.net.eval()  # type: ignore[attr-defined]
    return model
