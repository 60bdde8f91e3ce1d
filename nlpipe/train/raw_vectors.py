"""Word vectors learned from raw text (``nlpipe train vectors --raw FILE``, ``train pos --raw FILE``),
for a language without published vectors: a positive PMI matrix of words against their neighbours,
reduced by a truncated SVD (Levy, Goldberg and Dagan 2015: window 2, context counts smoothed by the
power 0.75, the singular values' square roots as weights).

The text is read a line at a time; a word is a run of letters, digits and inner hyphens, or one
other non-space character (an apostrophe too: French ``d'acide`` gives ``acide``), keyed as the models
look words up
(:func:`~nlpipe.nn.features.word_key`). Rows: the ``top`` most frequent keys seen ``min_count``
times or more; contexts: the ``contexts`` most frequent keys. The co-occurrences are counted in
blocks of lines (memory follows the vocabulary, not the text) and the SVD runs on torch's sparse
matrices.
"""
from __future__ import annotations

import re
import time
from collections import Counter
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import numpy as np

from nlpipe.errors import NlpipeError
from nlpipe.io.provenance import data_entry
from nlpipe.nn.features import word_key
from nlpipe.train.vectors import Vectors

WORD = re.compile(r"\w+(?:-\w+)*|[^\w\s]")
BLOCK = 200_000         # lines counted at a time


def raw_words(paths: Sequence[str]) -> Iterator[List[str]]:
    """The word keys of each line of the UTF-8 files ``paths`` (an unreadable file: NlpipeError)."""
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    yield [word_key(w) for w in WORD.findall(line)]
        except OSError as e:
            raise NlpipeError(f"--raw {path}: cannot read ({e.strerror or e})") from None


def vectors_from_text(paths: Sequence[str], dim: int = 50, window: int = 2, min_count: int = 2,
                      top: int = 100_000, contexts: int = 20_000, seed: int = 1,
                      log: Callable[[str], None] = lambda s: None) -> Vectors:
    """Vectors ``[n_words, dim]`` (rows of unit length) of the words of the raw text files ``paths``
    (see the module docstring); at least ``dim`` + 1 words are needed."""
    import torch

    t0 = time.time()
    counts: Counter = Counter()
    tokens = 0
    for words in raw_words(paths):
        counts.update(words)
        tokens += len(words)
    kept = [w for w, c in counts.most_common(top) if c >= min_count]
    if len(kept) <= dim:
        raise NlpipeError(f"--raw: {len(kept)} words seen {min_count} times or more in {tokens} tokens; "
                          f"{dim}-dimensional vectors need more text")
    row: Dict[str, int] = {w: i for i, w in enumerate(kept)}
    col: Dict[str, int] = {w: i for i, w in enumerate(w for w, _ in counts.most_common(contexts))}
    n_rows, n_cols = len(row), len(col)
    cells: Counter = Counter()
    block: List[List[str]] = []

    def count(lines: List[List[str]]) -> None:
        # the block's lines one after the other, ``window`` places of no word between two lines
        gap = [None] * window
        words = [w for line in lines for w in (*line, *gap)]
        r = np.array([row.get(w, -1) for w in words], dtype=np.int64)
        c = np.array([col.get(w, -1) for w in words], dtype=np.int64)
        codes, weights = [], []
        for d in range(1, window + 1):
            for a, b in ((r[:-d], c[d:]), (r[d:], c[:-d])):
                ok = (a >= 0) & (b >= 0)
                codes.append(a[ok] * n_cols + b[ok])
                weights.append(np.full(int(ok.sum()), 1.0 / d))
        unique, at = np.unique(np.concatenate(codes), return_inverse=True)
        for code, k in zip(unique.tolist(), np.bincount(at, weights=np.concatenate(weights)).tolist()):
            cells[code] += k
    for words in raw_words(paths):
        block.append(words)
        if len(block) >= BLOCK:
            count(block)
            block = []
    count(block)
    if not cells:
        raise NlpipeError("--raw: no two words of the text stand side by side")
    codes = np.fromiter(cells.keys(), dtype=np.int64, count=len(cells))
    values = np.fromiter(cells.values(), dtype=np.float64, count=len(cells))
    r, c = codes // n_cols, codes % n_cols
    row_sum = np.bincount(r, weights=values, minlength=n_rows)
    col_sum = np.bincount(c, weights=values, minlength=n_cols) ** 0.75
    pmi = np.log(values * col_sum.sum() / (row_sum[r] * col_sum[c]))
    keep = pmi > 0
    matrix = torch.sparse_coo_tensor(np.stack([r[keep], c[keep]]), torch.from_numpy(pmi[keep]).float(),
                                     (n_rows, n_cols), check_invariants=True).coalesce()
    torch.manual_seed(seed)
    u, s, _ = torch.svd_lowrank(matrix, q=dim, niter=4)
    vectors = (u * s.sqrt()).numpy().astype(np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-8)
    log(f"vectors from raw text: {n_rows} words x {dim} from {tokens} tokens, {int(keep.sum())} positive "
        f"PMI cells ({time.time() - t0:.0f}s)")
    source = {"name": "learned from raw text (PPMI, context counts ^0.75, truncated SVD)",
              "raw": [data_entry(p) for p in paths], "dim": dim, "window": window, "min_count": min_count,
              "contexts": contexts}
    return Vectors(kept, vectors, source)


def write_vectors(vectors: Vectors, path: str) -> None:
    """A word2vec text file (``N DIM`` line, then a word and its numbers a line) that ``--vectors``
    reads back; written as every output is (:func:`~nlpipe.io.outputs.open_output`: no half-written
    file in place of an old one)."""
    from nlpipe.io.outputs import open_output

    with open_output(path) as f:
        f.write(f"{len(vectors.words)} {vectors.dim}\n")
        for w, v in zip(vectors.words, vectors.matrix):
            f.write(w + " " + " ".join(f"{x:.5f}" for x in v.tolist()) + "\n")


def vectors_or_raw(vectors: Any, raw: Sequence[str], seed: int = 1, glove_given: bool = False,
                   log: Callable[[str], None] = lambda s: None) -> Any:
    """A trainer's ``vectors`` argument from its ``--vectors`` (``vectors``) and ``--raw`` files:
    vectors learned from the raw text where there is some, else ``vectors`` as given; both (or
    ``--raw`` with the GloVe options, ``glove_given``): NlpipeError."""
    if not raw:
        return vectors
    if vectors is not None or glove_given:
        raise NlpipeError("--raw and --vectors/--glove-words/--glove-vectors do not combine: give one")
    return vectors_from_text(list(raw), seed=seed, log=log)
