"""The ``--device`` option of the neural stages: ``cpu``, ``cuda`` or ``auto`` -> a torch device name."""
from __future__ import annotations

from nlpipe.errors import NlpipeError

DEVICES = ("cpu", "cuda", "auto")


def resolve_device(device: str) -> str:
    """``cpu``, or ``cuda`` (``auto``: when one is available); torch is imported only for cuda and auto,
    so CPU inference of the numpy-backed stages stays torch-free."""
    if device not in DEVICES:
        raise NlpipeError(f"unknown device '{device}' (expected cpu, cuda or auto)")
    if device == "cpu":
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise NlpipeError("--device cuda: no CUDA device is available")
    return "cpu"
