"""The one vocabulary class: strings -> ids for words, affixes, tags and labels.

A trained model's weights are indexed by these ids, so each kind's layout is a parameter, not a
convention of its own:

==========================  =======================================  ==========  =========  ========
kind                        specials (ids 0, 1, ...)                 unknown id  key        filter
==========================  =======================================  ==========  =========  ========
neural words (NER, LISA)    ``<pad> <unk>``                          1           word_key   yes
neural affixes              ``<pad> <unk>``                          1           none       yes
biaffine words              ``<pad> <unk> <root>``                   1           word_key   yes
biaffine UPOS, XPOS         ``<pad> <unk> <root>``                   1           none       yes
transition words            ``<unk> <null> <root>``                  0           normalize  no
transition UPOS, XPOS       ``<unk> <null> <root>``                  0           none       no
linear word attributes      ``<unk> <pad>``                          0           none       no
labels (rels, roles, tags)  none                                     0           none       --
==========================  =======================================  ==========  =========  ========

``filter``: entries equal to a special are dropped and the specials themselves are found by
:meth:`Vocab.id` (a word whose key is ``<pad>`` gets id 0). Without it the specials only reserve
their ids: entries are kept as they are (the transition parser's vocabulary may hold a literal
``<unk>`` word, at its own id) and the specials' names are not looked up.

Files (:func:`write_vocab`, :func:`read_vocab`): one entry a line, specials first, so that line i
holds id i; :func:`read_vocab` also reads a file without the specials. The lists in ``vocab.json``
(biaffine parser, LISA, transition parser) are the entries without the specials
(:meth:`Vocab.own_entries`; ``Vocab(list, ...)`` reads them). A label set is kept once, in config
``labels``.

Not a vocabulary of this kind: the segmenter's characters (an unknown character's id is the bucket
of its Unicode category, :class:`nlpipe.models.segmenter.CharVocab`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence

import numpy as np

from nlpipe.io.model_dir import read_lines, write_lines

PAD, UNK, ROOT, NULL = "<pad>", "<unk>", "<root>", "<null>"
PAD_UNK = (PAD, UNK)
PAD_UNK_ROOT = (PAD, UNK, ROOT)
UNK_NULL_ROOT = (UNK, NULL, ROOT)
_CACHE_LIMIT = 200000  # forms remembered by a keyed vocabulary; most text reuses few forms


class Vocab:
    """A fixed list of strings with ids: the ``specials`` first, then the entries in order.

    ``unknown`` is the id of a string not in the vocabulary; ``key`` maps a string to its lookup
    key (words: digits to 0 and lower case) before the lookup; ``filter`` see the module docstring.
    Where an entry occurs twice its last id is the one found (as the shipped models were trained).
    """

    def __init__(self, entries: Iterable[str], specials: Sequence[str] = PAD_UNK, unknown: int = 1,
                 key: Optional[Callable[[str], str]] = None, filter: bool = True):
        specials = tuple(specials)
        entries = list(entries)
        if filter:
            entries = [e for e in entries if e not in specials]
        if not 0 <= unknown < max(len(specials), 1):
            raise ValueError(f"unknown id {unknown} is not one of the {len(specials)} special ids")
        self.specials, self.unknown, self.key, self.filter = specials, unknown, key, filter
        self.entries: List[str] = list(specials) + entries    # entries[i] has id i
        first = 0 if filter else len(specials)
        self.index: Dict[str, int] = dict(zip(self.entries[first:], range(first, len(self.entries))))
        self._cache: Dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Vocab) and self.entries == other.entries and self.unknown == other.unknown
                and self.specials == other.specials and self.key is other.key and self.filter == other.filter)

    def own_entries(self) -> List[str]:
        """The entries without the specials (what ``vocab.json`` lists)."""
        return self.entries[len(self.specials):]

    def id(self, s: str) -> int:
        """Id of ``s`` (its key's, with a key function); :attr:`unknown` when absent."""
        if self.key is None:
            return self.index.get(s, self.unknown)
        i = self._cache.get(s)
        if i is None:
            i = self.index.get(self.key(s), self.unknown)
            if len(self._cache) < _CACHE_LIMIT:
                self._cache[s] = i
        return i

    def ids(self, strings: Iterable[str]) -> np.ndarray:
        """Ids of ``strings``, int64 ``[len(strings)]``."""
        return np.array([self.id(s) for s in strings], dtype=np.int64)

    def like(self, entries: Iterable[str]) -> "Vocab":
        """A vocabulary of ``entries`` with this one's layout (specials, unknown id, key, filter)."""
        return type(self)(entries, self.specials, self.unknown, self.key, self.filter)


def write_vocab(path: Path, vocab: Vocab) -> None:
    """Write ``vocab`` one entry a line, specials included (line i holds id i)."""
    write_lines(path, vocab.entries)


def read_vocab(path: Path, layout: Vocab) -> Vocab:
    """The vocabulary in ``path`` with the layout of ``layout`` (e.g. ``Vocab([], PAD_UNK, 1, word_key)``).
    A file written by :func:`write_vocab` starts with the specials; an older file without them is
    read too (its entries follow the specials)."""
    lines = read_lines(path)
    n = len(layout.specials)
    if tuple(lines[:n]) == layout.specials:
        lines = lines[n:]
    return layout.like(lines)


def label_vocab(labels: Iterable[str]) -> Vocab:
    """A label set's ids: no specials, the labels in order, an unknown label 0 (the label set is
    the model's own: a gold label outside it only occurs in training on other data)."""
    return Vocab(labels, (), 0)
