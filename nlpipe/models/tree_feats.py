"""FEATS that the syntax decides, re-decided after the parse.

The tagger predicts FEATS from the words around a word. Some features follow from the tree
instead: an English base-form verb is imperative at the root of a clause without a subject and
infinitive under ``to`` or a modal (``Mood=Imp`` vs ``VerbForm=Inf``), a gerund or participle
depends on its relation, a pronoun's case on whether it is a subject. For the words of a few tag
groups (a group is one ``UPOS<TAB>XPOS`` pair; the groups kept are those where this did better
than the tagger on the training treebank's dev set), a linear classifier over features of the
predicted tree picks the FEATS among those the group had in training.

Features (:data:`TEMPLATES`) are strings hashed to 62-bit keys, one per template, and stored in
the templated models' tables (:mod:`nlpipe.linear.storage`). A parser model folder with a
``feats/`` subfolder applies it after every parse.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Container, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.io.conllu import DEPREL, FEATS, FORM, HEAD, UPOS, XPOS, Sentence
from nlpipe.errors import ModelError
from nlpipe.io.model_dir import model_errors, read_json, write_json
from nlpipe.linear.storage import key_rows, load_block, save_tables

FOLDER = "feats"
CONFIG_FILE = "tree_feats.json"
WEIGHTS_FILE = "weights.npz"
SEP = "\t"
KEY_MASK = (1 << 62) - 1
NONE = "-"
CACHE_LIMIT = 500_000   # feature values whose keys a model keeps
# relations whose first dependent's form is a feature of its head (``will``, ``to``, ``I``, ``it`` ...)
DEPENDENT_RELATIONS = ("aux", "mark", "nsubj", "expl", "obj", "cop")

TEMPLATES: Tuple[str, ...] = (
    "group", "lower", "rel", "head", "head+rel", "side+rel", "prev", "next", "s3", "lower+rel", "first",
    "children", *(f"dep:{r}" for r in DEPENDENT_RELATIONS),
)


def group_of(word: Sequence[str]) -> str:
    """The tag group of a word: ``UPOS<TAB>XPOS``."""
    return word[UPOS] + SEP + word[XPOS]


def _tag(word: Sequence[str]) -> str:
    return word[XPOS] if word[XPOS] != "_" else word[UPOS]


def _base(deprel: str) -> str:
    return deprel.split(":", 1)[0]


def word_features(words: Sequence[Sequence[str]], i: int, children: Sequence[Sequence[int]]) -> List[str]:
    """The value of every template (:data:`TEMPLATES`) for word ``i`` of a parsed sentence;
    ``children[i]``: the positions of its dependents."""
    w = words[i]
    g = group_of(w)
    sg = SEP + g
    low = w[FORM].lower()
    rel = _base(w[DEPREL])
    head = int(w[HEAD]) if w[HEAD].isdigit() else 0
    if 0 < head <= len(words):
        h = words[head - 1]
        head_tag, head_rel = _tag(h), _base(h[DEPREL])
    else:
        head_tag, head_rel = "ROOT", NONE
    side = "L" if head > i + 1 else "R"
    prev = words[i - 1][FORM].lower() if i else "<s>"
    nxt = words[i + 1][FORM].lower() if i + 1 < len(words) else "</s>"
    first_dep: Dict[str, str] = {}
    for k in children[i]:
        first_dep.setdefault(_base(words[k][DEPREL]), words[k][FORM].lower())
    rel_g = rel + sg
    return [g, low + sg, rel_g, head_tag + sg, head_rel + SEP + rel_g, side + SEP + rel_g, prev + sg, nxt + sg,
            low[-3:] + sg, low + SEP + rel, str(i == 0) + sg, "+".join(sorted(first_dep)) + sg,
            *(first_dep.get(r, NONE) + sg for r in DEPENDENT_RELATIONS)]


def feature_key(template: int, value: str) -> int:
    """The 62-bit key of one template's value (stable across runs and machines)."""
    digest = hashlib.blake2b(f"{template}\x1f{value}".encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & KEY_MASK


def children_of(words: Sequence[Sequence[str]]) -> List[List[int]]:
    """Per word, the positions of its dependents (HEAD outside the sentence is ignored)."""
    out: List[List[int]] = [[] for _ in words]
    for k, w in enumerate(words):
        h = int(w[HEAD]) if w[HEAD].isdigit() else 0
        if 0 < h <= len(words):
            out[h - 1].append(k)
    return out


KeyCache = List[Dict[str, int]]   # per template: value -> key


def new_cache() -> KeyCache:
    return [{} for _ in TEMPLATES]


def sentence_keys(words: Sequence[Sequence[str]], positions: Sequence[int],
                  cache: Optional[KeyCache] = None) -> np.ndarray:
    """Keys [len(positions), len(TEMPLATES)] of the words at ``positions`` of a parsed sentence;
    ``cache`` keeps the keys of values seen before (most values recur: hashing is the costly part)."""
    children = children_of(words)
    cache = new_cache() if cache is None else cache
    if sum(map(len, cache)) > CACHE_LIMIT:
        for c in cache:
            c.clear()
    rows = []
    for i in positions:
        values = word_features(words, i, children)
        row = list(map(dict.get, cache, values))
        if None in row:
            for j, key in enumerate(row):
                if key is None:
                    row[j] = cache[j][values[j]] = feature_key(j, values[j])
        rows.append(row)
    return np.array(rows, dtype=np.int64).reshape(len(positions), len(TEMPLATES))


def group_words(sentences: Sequence[Sentence], groups: Container[str], cache: Optional[KeyCache] = None
                ) -> Tuple[List[Tuple[int, int]], List[str], np.ndarray]:
    """The words of ``sentences`` whose tag group is in ``groups``: their (sentence, word) positions,
    their groups and their keys [n, len(TEMPLATES)]."""
    where: List[Tuple[int, int]] = []
    names: List[str] = []
    blocks = []
    for si, s in enumerate(sentences):
        words = s.words
        at = [i for i, w in enumerate(words) if group_of(w) in groups]
        if at:
            where.extend((si, i) for i in at)
            names.extend(group_of(words[i]) for i in at)
            blocks.append(sentence_keys(words, at, cache))
    keys = np.concatenate(blocks) if blocks else np.zeros((0, len(TEMPLATES)), dtype=np.int64)
    return where, names, keys


class TreeFeats:
    """The classifier: ``labels`` (FEATS strings), ``groups`` (tag group -> the label ids it may
    take), one key table and weight matrix [len(keys) + 1, len(labels)] per template."""

    def __init__(self, labels: Sequence[str], groups: Dict[str, Sequence[int]], keys: Sequence[np.ndarray],
                 weights: Sequence[np.ndarray]):
        if len(keys) != len(TEMPLATES) or len(weights) != len(TEMPLATES):
            raise ValueError(f"{len(TEMPLATES)} templates expected")
        self.labels = list(labels)
        self.groups = {g: np.asarray(ids, dtype=np.int64) for g, ids in groups.items()}
        for ids in self.groups.values():
            if len(ids) == 0 or ids.min() < 0 or ids.max() >= len(self.labels):
                raise ValueError("a group's labels are out of range")
        self.keys = list(keys)
        self.weights = list(weights)
        self._cache = new_cache()

    def scores(self, keys: np.ndarray) -> np.ndarray:
        """Label scores [len(keys), num_labels] of words given by their keys [n, len(TEMPLATES)]."""
        total = np.zeros((len(keys), len(self.labels)), dtype=np.float32)
        for j, (table, w) in enumerate(zip(self.keys, self.weights)):
            total += w[key_rows(table, keys[:, j])]
        return total

    def predict(self, groups: Sequence[str], keys: np.ndarray) -> List[str]:
        """The FEATS of words of tag groups ``groups`` (each one of :attr:`groups`) with ``keys``."""
        scores = self.scores(keys)
        names = np.array(groups, dtype=object)
        out = np.empty(len(groups), dtype=np.int64)
        for g in set(groups):
            rows = np.flatnonzero(names == g)
            ids = self.groups[g]
            out[rows] = ids[scores[np.ix_(rows, ids)].argmax(1)]
        return [self.labels[i] for i in out.tolist()]

    def apply(self, sentences: Sequence[Sentence]) -> None:
        """Re-decide, in place, the FEATS of the words of parsed ``sentences`` in a kept group."""
        where, groups, keys = group_words(sentences, self.groups, self._cache)
        for (si, i), feats in zip(where, self.predict(groups, keys)):
            sentences[si].words[i][FEATS] = feats

    # -- storage ----------------------------------------------------------------------------

    def save(self, folder: Path, training: Optional[Dict[str, Any]] = None) -> None:
        """``tree_feats.json`` (templates, labels, groups and the ``training`` block) and
        ``weights.npz`` in ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / CONFIG_FILE, {"templates": list(TEMPLATES), "labels": self.labels,
                                          "groups": {g: ids.tolist() for g, ids in sorted(self.groups.items())},
                                          "training": training or {}}, indent=1)
        save_tables(folder / WEIGHTS_FILE, self.keys, self.weights, len(self.labels))

    @classmethod
    def load(cls, folder: Path) -> "TreeFeats":
        """Read what :meth:`save` wrote (a :class:`~nlpipe.errors.ModelError` when it is broken)."""
        folder = Path(folder)
        config = read_json(folder / CONFIG_FILE)
        with model_errors(folder, "FEATS after the parse"):
            if config.get("templates") != list(TEMPLATES):
                raise ValueError("its feature templates are not this nlpipe's")
            labels = config["labels"]
            keys, block, start = load_block(folder / WEIGHTS_FILE, len(TEMPLATES), len(labels))
            ends = [*start[1:].tolist(), len(block)]
            weights = [block[a:b] for a, b in zip(start.tolist(), ends)]
            return cls(labels, config["groups"], keys, weights)

    @staticmethod
    def training_scores(model_dir: Path) -> Dict[str, Any]:
        """The scores recorded in the ``training`` block of a parser folder's classifier (``{}``: it
        has none, or its file cannot be read: listing models never fails on one)."""
        path = Path(model_dir) / FOLDER / CONFIG_FILE
        if not path.is_file():
            return {}
        try:
            scores = read_json(path).get("training", {}).get("scores", {})
        except (ModelError, AttributeError):
            return {}
        return dict(scores) if isinstance(scores, dict) else {}

    @classmethod
    def load_optional(cls, model_dir: Path) -> Optional["TreeFeats"]:
        """The classifier of a parser model folder, None when it has none."""
        folder = Path(model_dir) / FOLDER
        return cls.load(folder) if folder.is_dir() else None
