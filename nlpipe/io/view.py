"""``nlpipe view``: a self-contained HTML page drawing each sentence's parse, entities and roles.

One inline SVG per sentence, no script and nothing fetched, so the page works offline and the same
input gives the same bytes. Above the words, an arc from each head to its dependent with the DEPREL
(the root's arc comes from above); under each word its UPOS; under those, a band per named entity
(``NE=``) and one row per predicate (``Pred=``) with a bracket under each argument (``SRL=``).
"""
from __future__ import annotations

import html
from typing import Iterable, List, Optional, Sequence, Tuple

from nlpipe.io.conllu import Sentence
from nlpipe.tags import spans

CHAR = 8.5        # px per character of the word font
GAP = 18          # px between words
LEVEL = 22        # px of arc height per level
ROW = 22          # px per entity / role row
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")

STYLE = """body{font-family:sans-serif;margin:1.5em;color:#222}
h2{font-size:1em;font-weight:normal;color:#555;margin:1.2em 0 .2em}
svg text{font-family:sans-serif}
.form{font-size:15px}.upos{font-size:11px;fill:#777}.rel{font-size:11px;fill:#333}
.arc{fill:none;stroke:#555;stroke-width:1.2}.lab{font-size:11px;fill:#fff}
.role{font-size:11px}.pred{font-size:11px;font-weight:bold}"""


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _levels(arcs: Sequence[Tuple[int, int]]) -> List[int]:
    """A height level for each arc (1 + the highest level of the arcs inside it)."""
    order = sorted(range(len(arcs)), key=lambda k: abs(arcs[k][0] - arcs[k][1]))
    level = [0] * len(arcs)
    for k in order:
        a, b = sorted(arcs[k])
        inside = [level[j] for j in order if j != k and level[j] and a <= min(arcs[j]) and max(arcs[j]) <= b]
        level[k] = 1 + max(inside, default=0)
    return level


def sentence_svg(sentence: Sentence) -> str:
    """The SVG drawing of one sentence."""
    words = list(sentence)
    widths = [max(len(w.form), len(w.upos or ""), 2) * CHAR + GAP for w in words]
    rolesets = [w.pred for w in words if w.pred is not None]
    centres, x = [], 10.0 + max((len(r) * 7.0 + 8 for r in rolesets), default=0.0)   # room for the roleset names
    for wd in widths:
        centres.append(x + wd / 2)
        x += wd
    width = x + 10
    arcs = [(w.head, k + 1) for k, w in enumerate(words) if w.head is not None and w.head != k + 1]
    tree = [(h, d) for h, d in arcs if h != 0]
    levels = _levels(tree)
    top = (max(levels, default=0) + 1) * LEVEL + 14
    base = top + 22                                   # the words' baseline
    parts: List[str] = []
    for (h, d), lv in zip(tree, levels):
        x1, x2, y = centres[h - 1], centres[d - 1], top
        peak = top - lv * LEVEL
        parts.append(f'<path class="arc" d="M{x1:.1f},{y} C{x1:.1f},{peak} {x2:.1f},{peak} {x2:.1f},{y}"/>')
        parts.append(f'<path d="M{x2 - 4:.1f},{y - 7} L{x2:.1f},{y} L{x2 + 4:.1f},{y - 7}" fill="#555"/>')
        rel = words[d - 1].deprel or ""
        parts.append(f'<text class="rel" x="{(x1 + x2) / 2:.1f}" y="{top - lv * LEVEL * 0.75 - 3:.1f}" '
                     f'text-anchor="middle">{_esc(rel)}</text>')
    for h, d in arcs:
        if h == 0:
            x2 = centres[d - 1]
            parts.append(f'<path class="arc" d="M{x2:.1f},4 L{x2:.1f},{top}"/>')
            parts.append(f'<path d="M{x2 - 4:.1f},{top - 7} L{x2:.1f},{top} L{x2 + 4:.1f},{top - 7}" fill="#555"/>')
            parts.append(f'<text class="rel" x="{x2 + 5:.1f}" y="14">{_esc(words[d - 1].deprel or "root")}</text>')
    for c, w in zip(centres, words):
        parts.append(f'<text class="form" x="{c:.1f}" y="{base}" text-anchor="middle">{_esc(w.form)}</text>')
        if w.upos:
            parts.append(f'<text class="upos" x="{c:.1f}" y="{base + 14}" text-anchor="middle">{_esc(w.upos)}</text>')
    y = base + 24
    ents = spans([w.ne for w in words])
    if ents:
        for s, e, label in ents:
            x1, x2 = centres[s] - widths[s] / 2 + 3, centres[e - 1] + widths[e - 1] / 2 - 3
            colour = COLOURS[sum(map(ord, label)) % len(COLOURS)]
            parts.append(f'<rect x="{x1:.1f}" y="{y}" width="{x2 - x1:.1f}" height="16" rx="4" fill="{colour}"/>')
            parts.append(f'<text class="lab" x="{(x1 + x2) / 2:.1f}" y="{y + 12}" text-anchor="middle">'
                         f'{_esc(label)}</text>')
        y += ROW
    for p, w in enumerate(words):
        if w.pred is None:
            continue
        tags = [x.roles.get(p + 1, "O") for x in words]
        parts.append(f'<text class="pred" x="4" y="{y + 12}">{_esc(w.pred)}</text>')
        x1, x2 = centres[p] - widths[p] / 2 + 3, centres[p] + widths[p] / 2 - 3
        parts.append(f'<rect x="{x1:.1f}" y="{y + 1}" width="{x2 - x1:.1f}" height="14" rx="3" fill="#ddd"/>')
        parts.append(f'<text class="role" x="{centres[p]:.1f}" y="{y + 12}" text-anchor="middle">V</text>')
        for s, e, label in spans(tags):
            x1, x2 = centres[s] - widths[s] / 2 + 3, centres[e - 1] + widths[e - 1] / 2 - 3
            parts.append(f'<path class="arc" d="M{x1:.1f},{y + 2} L{x1:.1f},{y + 8} L{x2:.1f},{y + 8} '
                         f'L{x2:.1f},{y + 2}"/>')
            parts.append(f'<text class="role" x="{(x1 + x2) / 2:.1f}" y="{y + 20}" text-anchor="middle">'
                         f'{_esc(label)}</text>')
        y += ROW + 4
    height = y + 6
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}">' + "".join(parts) + "</svg>")


def page(sentences: Iterable[Sentence], title: str, sent: Optional[str] = None) -> str:
    """The HTML page of ``sentences`` (only the one whose sent_id is ``sent``, when given)."""
    body: List[str] = []
    for s in sentences:
        if sent is not None and s.sent_id != sent:
            continue
        body.append(f"<h2>{_esc(s.sent_id or '')} {_esc(s.text)}</h2>\n{sentence_svg(s)}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_esc(title)}</title><style>{STYLE}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")
