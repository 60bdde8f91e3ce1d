"""Saving and loading a torch network's weights as plain half-precision tensors (``weights.pt``).

The file holds only tensors, read back with ``weights_only=True``: loading never unpickles arbitrary
objects. Any failure to read a model directory becomes a :class:`~nlpipe.errors.ModelError` naming it.
"""
from __future__ import annotations

import contextlib
import pickle
from pathlib import Path
from typing import Any, Iterator

from ..errors import ModelError


def save_half(net: Any, path: Path) -> None:
    """Write ``net``'s state dict to ``path`` with floating-point tensors as float16."""
    import torch

    state = {k: v.detach().cpu().half() if v.is_floating_point() else v.detach().cpu()
             for k, v in net.state_dict().items()}
    torch.save(state, path)


def load_half(net: Any, path: Path) -> None:
    """Load a file written by :func:`save_half` into ``net`` (floats back to float32)."""
    import torch

    state = torch.load(path, map_location="cpu", weights_only=True)
    net.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})


@contextlib.contextmanager
def model_errors(model_dir: Path, what: str) -> Iterator[None]:
    """Turn a missing file or unreadable content inside the block into a ModelError about ``what``."""
    try:
        yield
    except FileNotFoundError as e:
        raise ModelError(f"{model_dir}: incomplete {what} ({Path(e.filename).name} missing)") from None
    except (ValueError, KeyError, RuntimeError, TypeError, EOFError, pickle.UnpicklingError) as e:
        raise ModelError(f"{model_dir}: corrupt or incompatible {what} ({str(e)[:200]})") from None
