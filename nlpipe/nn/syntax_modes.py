"""How LISA's syntactic head learns and what it attends to: the ``--syntax`` modes (torch-free, so
that the CLI, the numpy inference and the torch network read the same names).

Training modes (config ``model.syntax_mode``; a config without it is ``lisa``):

- ``lisa``: teacher forcing, head 0 attends to the gold tree (Strubell et al. 2018);
- ``marginals``: structured attention (Kim et al. 2017), head 0 attends with the arc marginals of the
  non-projective tree CRF over its arc scores; the SRL loss flows through them;
- ``ste``: head 0 attends to the model's own best tree (Chu-Liu-Edmonds); backward straight through;
- ``spigot``: the same forward; backward SPIGOT's projected surrogate (Peng et al. 2018).

Own parses (what head 0 attends to when no parse is given, ``nlpipe srl --own-parse``): ``argmax``
(each word's best head, not always a tree), ``tree`` (the best tree) or ``marginals``.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

MODES = ("lisa", "marginals", "ste", "spigot")
OWN_PARSES = ("argmax", "tree", "marginals")
# each mode attends at test time to what it attended to in training (lisa: as it always has)
DEFAULT_OWN = {"lisa": "argmax", "marginals": "marginals", "ste": "tree", "spigot": "tree"}


def syntax_mode(hp: Dict[str, Any]) -> str:
    """The mode of a model's hyper-parameters (``lisa`` where the key is missing: older models)."""
    mode = hp.get("syntax_mode", "lisa")
    if mode not in MODES:
        raise ValueError(f"unknown syntax_mode '{mode}' (known: {', '.join(MODES)})")
    return mode


def own_parse(hp: Dict[str, Any], asked: Optional[str] = None) -> str:
    """What the syntactic head attends to without a given parse: ``asked``, else the mode's default."""
    if asked is None:
        return DEFAULT_OWN[syntax_mode(hp)]
    if asked not in OWN_PARSES:
        raise ValueError(f"unknown own parse '{asked}' (known: {', '.join(OWN_PARSES)})")
    return asked
