"""int8 CPU inference of a torch network: dynamic quantization of its LSTM and linear layers.

Weights are stored as int8 and activations quantized batch by batch (torch's ``quantize_dynamic``).
On the shipped EWT parser it costs nothing measurable on dev (LAS 89.67 -> 89.68, UAS 91.61 ->
91.58) and saves about a seventh of the parser's CPU time (BENCHMARKS.md).
"""
from __future__ import annotations

import warnings
from typing import Any

from nlpipe.errors import NlpipeError


def int8(net: Any) -> Any:
    """``net`` (in eval mode, on the CPU) with its ``nn.LSTM`` and ``nn.Linear`` layers in int8."""
    import torch
    from torch import nn

    try:
        from torch.ao.quantization import quantize_dynamic
    except ImportError:  # pragma: no cover - a torch without eager-mode quantization
        raise NlpipeError(f"int8: torch {torch.__version__} has no dynamic quantization") from None
    with warnings.catch_warnings():  # torch announces the move of this API to torchao
        warnings.simplefilter("ignore")
        return quantize_dynamic(net.eval(), {nn.LSTM, nn.Linear}, dtype=torch.qint8)
