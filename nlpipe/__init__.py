"""nlpipe: a classic command-line NLP pipeline over CoNLL-U.

In Python::

    import nlpipe
    doc = nlpipe.Pipeline(lang="en")("The cat sat on the mat.")
    for sentence in doc:
        for word in sentence:
            print(word.form, word.upos, word.head, word.deprel)
"""
from __future__ import annotations

from typing import Any

from nlpipe.version import __version__  # noqa: F401

# name -> module; imported on first use, so that `import nlpipe` (and every command) stays fast
_LAZY = {
    "Pipeline": "nlpipe.runtime.strings",
    "Document": "nlpipe.io.document",
    "Sentence": "nlpipe.io.conllu",
    "Word": "nlpipe.io.conllu",
}


def load(stage: str, model: "str | None" = None, **options):
    """Load a stage (``"tokenize"``, ``"pos"``, ...) with its default or the given model.

    The returned object has ``annotate(sentences)``; see :mod:`nlpipe.registry`.
    """
    from nlpipe.registry import load_stage

    return load_stage(stage, model, **options)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'nlpipe' has no attribute {name!r}")
