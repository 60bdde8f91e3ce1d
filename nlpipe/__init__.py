"""nlpipe: a classic command-line NLP pipeline over CoNLL-U."""
from __future__ import annotations

from nlpipe.version import __version__  # noqa: F401


def load(stage: str, model: "str | None" = None, **options):
    """Load a stage (``"tokenize"``, ``"pos"``, ...) with its default or the given model.

    The returned object has ``annotate(sentences)``; see :mod:`nlpipe.registry`.
    """
    from nlpipe.registry import load_stage

    return load_stage(stage, model, **options)
