"""Torch modules, batching and weights of the neural stages.

Importing this package bounds oneDNN's primitive cache (unless the user set its size): torch's CPU
LSTM builds one oneDNN primitive per input shape, each holding about a megabyte, and keeps up to
1024 of them. A parser's batches come in ever new (batch, length) shapes, so its memory grew with
the input (issue 26) until a thousand shapes had been seen; a few entries are enough for the reuse
within a batch. oneDNN reads the variable when it builds its first primitive, so this must run
before the process first uses oneDNN (every torch model of nlpipe lives in this package).
"""
from __future__ import annotations

import os

PRIMITIVE_CACHE = 16  # oneDNN primitives kept (its default: 1024)

if "ONEDNN_PRIMITIVE_CACHE_CAPACITY" not in os.environ and "DNNL_PRIMITIVE_CACHE_CAPACITY" not in os.environ:
    os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = str(PRIMITIVE_CACHE)
