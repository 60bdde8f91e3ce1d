"""The ``--precision`` option of the torch trainers: ``fp32``, or ``bf16`` mixed precision.

With ``bf16`` the forward pass and loss of every training batch run under ``torch.autocast``: matrix
products, convolutions and the recurrent layers autocast covers in bfloat16 (on the CPU it leaves
packed LSTMs in float32); weights, gradients and optimizer state in float32; the losses in float32
(cross-entropy by autocast's own rule; the structured losses cast their scores with ``.float()``).
bfloat16 has float32's range, so no loss scaling is needed. It pays on GPUs and on CPUs with bfloat16
instructions (AVX512-BF16, AMX); elsewhere the CPU emulates it, slower than float32. Dev scoring and
saved models are float32 whatever the precision.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, ContextManager, Optional

from nlpipe.errors import NlpipeError

PRECISIONS = ("fp32", "bf16")
# the /proc/cpuinfo flags of native bfloat16 arithmetic (x86)
CPU_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def cpu_has_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> Optional[bool]:
    """Whether the CPU has bfloat16 instructions, from ``cpuinfo``'s flags; None where that file
    cannot be read or names no flags (another OS or architecture)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return bool(CPU_BF16_FLAGS & set(value.split()))
    return None


def check_precision(precision: str, device: str, warn: Callable[[str], None],
                    cuda_bf16: Optional[Callable[[], bool]] = None,
                    cpu_bf16: Callable[[], Optional[bool]] = cpu_has_bf16) -> None:
    """Refuse an unknown ``precision``, and ``bf16`` on a GPU without bfloat16 (``cuda_bf16``: the
    check, default ``torch.cuda.is_bf16_supported``); ``warn`` once where a CPU is known to lack
    bfloat16 instructions (it then runs much slower than fp32)."""
    if precision not in PRECISIONS:
        raise NlpipeError(f"unknown precision '{precision}' (expected {' or '.join(PRECISIONS)})")
    if precision == "fp32":
        return
    if device == "cuda":
        if cuda_bf16 is None:
            import torch

            cuda_bf16 = torch.cuda.is_bf16_supported
        if not cuda_bf16():
            raise NlpipeError("--precision bf16: this GPU has no bfloat16 arithmetic (use fp32)")
    elif cpu_bf16() is False:
        warn("warning: --precision bf16 on a CPU without bfloat16 instructions (AVX512-BF16, AMX): "
             "it emulates them, slower than fp32")


def autocast(precision: str, device_type: str) -> ContextManager[Any]:
    """The context of one batch's forward pass and loss: ``torch.autocast`` to bfloat16 for
    ``bf16``, nothing for ``fp32``; ``device_type``: ``cpu`` or ``cuda``."""
    if precision == "fp32":
        return contextlib.nullcontext()
    if precision != "bf16":
        raise ValueError(f"unknown precision {precision!r}")
    import torch

    return torch.autocast(device_type=device_type, dtype=torch.bfloat16)
