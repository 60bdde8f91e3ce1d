"""Torch modules, batching and weights of the neural stages.

Importing this package turns oneDNN's primitive cache off (unless the user sized it): torch's CPU
LSTM builds a oneDNN primitive for each input shape, about a megabyte each, and the cache keeps up
to 1024 of them. A parser's batches come in ever new (batch, length) shapes, so the memory of
``nlpipe annotate`` grew with the input until a thousand shapes had been seen (issue 26); even a
cache of 4 or 16 entries left it growing (the freed entries fragment the heap). Building each
primitive anew cost no measurable time (bench/memory.py, BENCHMARKS.md). oneDNN reads the variable
when it builds its first primitive, so this must run before the process first uses oneDNN (every
torch model of nlpipe lives in this package).
"""
from __future__ import annotations

import os

PRIMITIVE_CACHE = 0  # oneDNN primitives kept between calls (its default: 1024)

if "ONEDNN_PRIMITIVE_CACHE_CAPACITY" not in os.environ and "DNNL_PRIMITIVE_CACHE_CAPACITY" not in os.environ:
    os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = str(PRIMITIVE_CACHE)
