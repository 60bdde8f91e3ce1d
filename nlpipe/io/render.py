"""Readable outputs (``--to json|text|tree``): sentences written for people and scripts, not as CoNLL-U.

- ``json``: one JSON object a line per sentence (JSON Lines, streamed): ``sent_id``, ``text``,
  ``comments``, ``words`` (each: ``id form lemma upos xpos feats head deprel deps misc`` with ``null``
  for ``_``, then ``ne``, ``pred`` and ``roles`` as :class:`~nlpipe.io.conllu.Word` gives them) and
  ``tokens`` (multiword tokens: ``id`` such as ``"4-5"`` and ``form``).
- ``text``: one sentence a line, a blank line where a paragraph starts (``nlpipe convert --to text``).
- ``tree``: each sentence's dependency tree drawn in the terminal, one word a line in sentence order,
  as udapi's ``write.TextModeTrees`` draws it: a word hangs from its head's vertical line, two
  columns to the right of it (``╼`` a word without dependents, ``┮`` ``┶`` ``┾`` one with dependents
  below, above, both); then FORM, UPOS and DEPREL. Words without a HEAD hang from the root.
"""
from __future__ import annotations

import json
from typing import IO, Any, Dict, Iterable, List, Optional

from nlpipe.io.conllu import HEAD, ID, Sentence, Word, parse_string, write_conllu

FORMATS = ("conllu", "json", "text", "tree")


def sentence_json(sentence: Sentence) -> Dict[str, Any]:
    """A sentence as the JSON object ``--to json`` writes."""
    words = []
    for w in sentence:
        words.append({"id": w.id, "form": w.form, "lemma": w.lemma, "upos": w.upos, "xpos": w.xpos,
                      "feats": w.feats, "head": w.head, "deprel": w.deprel, "deps": w.deps, "misc": w.misc,
                      "ne": w.ne, "pred": w.pred, "roles": {str(k): v for k, v in w.roles.items()}})
    tokens = [{"id": r[ID], "form": r[1]} for r in sentence.rows if "-" in r[ID]]
    return {"sent_id": sentence.sent_id, "text": str(sentence.text), "comments": sentence.comments,
            "words": words, "tokens": tokens}


def heads(sentence: Sentence) -> List[int]:
    """The HEAD of each word (0: the root; ``_``, or a word pointing at itself, counts as the root)."""
    out = []
    for k, w in enumerate(sentence.words, 1):
        h = int(w[HEAD]) if w[HEAD].isdigit() else 0
        out.append(0 if h == k else h)
    return out


def _depths(head: List[int]) -> List[int]:
    """Each word's depth below the root (a word on a cycle hangs from the root)."""
    depth = [0] * (len(head) + 1)
    for k in range(1, len(head) + 1):
        path, h = [], k
        while h and not depth[h] and h not in path:
            path.append(h)
            h = head[h - 1]
        base = depth[h] if h and h not in path else 0
        for node in reversed(path):
            base += 1
            depth[node] = base
    return depth


def tree_lines(sentence: Sentence) -> List[str]:
    """The tree drawing of one sentence: a root line, then one line a word (no comments)."""
    head = heads(sentence)
    n = len(head)
    depth = _depths(head)
    children: List[List[int]] = [[] for _ in range(n + 1)]
    for k, h in enumerate(head, 1):
        children[h if depth[k] == depth[h] + 1 or h == 0 else 0].append(k)
    width = 2 * max(depth, default=0) + 2
    grid = [[" "] * width for _ in range(n + 1)]      # row 0: the root
    for node in range(n + 1):
        col = 2 * depth[node] + 1 if node else 1
        kids = children[node]
        if not kids:
            grid[node][col] = "╼"
            continue
        top, bottom = min(kids + [node]), max(kids + [node])
        for row in range(top, bottom + 1):
            if grid[row][col] == " ":
                grid[row][col] = "│"
        above, below = kids[0] < node, kids[-1] > node
        grid[node][col] = "┾" if above and below else ("┶" if above else "┮")
        for k in kids:
            grid[k][col] = "╭" if k == top else ("╰" if k == bottom else "├")
            grid[k][col + 1] = "─"
    grid[0][0] = "─"
    lines = ["".join(grid[0]).rstrip()]
    for k, w in enumerate(sentence, 1):
        if not children[k]:
            grid[k][2 * depth[k] + 1] = "╼"
        label = " ".join(x for x in (w.form, w.upos, w.deprel) if x is not None)
        lines.append("".join(grid[k][:2 * depth[k] + 2]) + " " + label)
    return lines


class Renderer:
    """Writes sentences to ``out`` in ``fmt`` (one of :data:`FORMATS`); :meth:`write` takes CoNLL-U
    text, so that it can stand where a CoNLL-U output stream stands."""

    def __init__(self, out: IO[str], fmt: str):
        if fmt not in FORMATS:
            raise ValueError(f"unknown output format {fmt!r} (expected one of {', '.join(FORMATS)})")
        self.out = out
        self.fmt = fmt
        self.count = 0

    def write(self, conllu: str) -> int:
        if self.fmt == "conllu":
            return self.out.write(conllu)
        self.write_sentences(parse_string(conllu))
        return len(conllu)

    def write_sentences(self, sentences: Iterable[Sentence]) -> int:
        """Write ``sentences``; return how many."""
        if self.fmt == "conllu":
            return write_conllu(sentences, self.out)
        n = 0
        for s in sentences:
            self.out.write(self._render(s))
            self.count += 1
            n += 1
        return n

    def _render(self, s: Sentence) -> str:
        if self.fmt == "json":
            return json.dumps(sentence_json(s), ensure_ascii=False) + "\n"
        if self.fmt == "text":
            return ("\n" if self.count and s.starts_paragraph else "") + s.text + "\n"
        comments = [c for c in (_comment("sent_id", s.sent_id), _comment("text", s.meta("text"))) if c]
        return "\n".join(comments + tree_lines(s)) + "\n\n"

    def flush(self) -> None:
        self.out.flush()


def _comment(key: str, value: Optional[str]) -> str:
    return f"# {key} = {value}" if value is not None else ""
