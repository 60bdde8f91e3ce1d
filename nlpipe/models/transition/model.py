"""The transition parser's model and its greedy batched parsing with dynamic feature selection.

Classes are the actions of :mod:`.system` (SHIFT, SWAP, LEFT-ARC and RIGHT-ARC per label). Each
template owns a sorted key table and a weight matrix (row 0: unknown keys), stored with
:mod:`nlpipe.linear.storage` like the POS tagger's. Parsing moves all sentences of a batch one
action per round; per round the features of every unfinished configuration are looked up with
numpy, template by template, and the action scores are sums of weight rows. With a margin a
configuration stops adding templates at the first checkpoint where its best legal action leads
every other by the margin (:func:`nlpipe.linear.margin.margin_stops`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.io.model_dir import model_errors, read_json, write_json
from nlpipe.linear.attributes import normalize
from nlpipe.linear.clusters import CLUSTERS_FILE, SIZES, Clusters
from nlpipe.linear.margin import margin_stops
from nlpipe.linear.storage import compact_tables, load_block, save_tables
from nlpipe.models.transition.features import FeaturePlan, Template, atom_sizes, check_radix, parse_template
from nlpipe.models.transition.lookup import RowTable
from nlpipe.models.transition.system import Configurations, num_actions
from nlpipe.vocab import UNK_NULL_ROOT, Vocab, label_vocab

WEIGHTS_FILE = "weights.npz"
VOCAB_FILE = "vocab.json"
UNK, NULL, ROOT = 0, 1, 2          # reserved ids of the word, tag and cluster vocabularies
CLUSTER_LEVEL = 1                  # index into nlpipe.linear.clusters.SIZES: 256 clusters
CACHE_LIMIT = 500000               # forms whose word and cluster ids are remembered
ILLEGAL = np.float32(-1e9)         # score of an action a configuration may not take

# a sentence as the parser sees it: forms, UPOS, XPOS
Words = Tuple[Sequence[str], Sequence[str], Sequence[str]]


class TransitionModel:
    """Vocabularies (normalized words, UPOS, XPOS, labels), ordered templates, key tables, weights."""

    def __init__(self, words: Sequence[str], upos: Sequence[str], xpos: Sequence[str], labels: Sequence[str],
                 templates: Sequence[str], keys: Sequence[np.ndarray], weights: Sequence[np.ndarray],
                 clusters: Optional[Clusters] = None, cluster_level: int = CLUSTER_LEVEL):
        self.words, self.upos, self.xpos, self.labels = list(words), list(upos), list(xpos), list(labels)
        self.clusters = clusters
        self.cluster_level = cluster_level
        self._form_cache: Dict[str, int] = {}          # form -> packed word and cluster ids
        if "root" not in self.labels:
            raise ValueError("the label set has no 'root'")
        self.root_label = self.labels.index("root")
        # ids 0-2 reserved (UNK, NULL, ROOT); the words as stored, a literal "<unk>" among them kept
        self.word_vocab = Vocab(self.words, UNK_NULL_ROOT, UNK, normalize, filter=False)
        self.upos_vocab = Vocab(self.upos, UNK_NULL_ROOT, UNK, filter=False)
        self.xpos_vocab = Vocab(self.xpos, UNK_NULL_ROOT, UNK, filter=False)
        self.label_vocab = label_vocab(self.labels)
        self.template_names = list(templates)
        self.templates: List[Template] = [parse_template(t) for t in templates]
        self.sizes = atom_sizes(len(self.word_vocab), len(self.upos_vocab), len(self.xpos_vocab), len(self.labels),
                                SIZES[cluster_level] + 3 if clusters is not None else 3)
        self.keys = [np.asarray(k, dtype=np.int64) for k in keys]
        self.weights = [np.asarray(w, dtype=np.float32) for w in weights]
        C = self.num_actions
        if len(self.keys) != len(self.templates) or len(self.weights) != len(self.templates):
            raise ValueError("one key table and one weight matrix per template expected")
        self._radix = []
        for t, k, w in zip(self.template_names, self.keys, self.weights):
            self._radix.append(check_radix(parse_template(t), self.sizes))
            if w.shape != (len(k) + 1, C):
                raise ValueError(f"template {t}: weights {w.shape}, expected {(len(k) + 1, C)}")
            if len(k) and (k[0] < 0 or k[-1] >= self._radix[-1] or np.any(k[1:] <= k[:-1])):
                raise ValueError(f"template {t}: keys are not sorted, unique and in range")
        self.plan = FeaturePlan(self.templates, self.sizes)
        self._block: Optional[np.ndarray] = None        # all weight rows stacked (built for parsing)
        self._table: Optional[RowTable] = None

    @property
    def num_actions(self) -> int:
        return num_actions(len(self.labels))

    # -- features ------------------------------------------------------------------------------

    def token_matrix(self, sentences: Sequence[Words], cfg: Configurations) -> np.ndarray:
        """Word, UPOS, XPOS and cluster ids [cfg.size, 4] of every flat token of ``cfg`` (the columns of
        :data:`~nlpipe.models.transition.features.TOKEN_ATTRIBUTES`; NULL and ROOT included)."""
        out = np.full((cfg.size, 4), ROOT, dtype=np.int64)
        out[0] = NULL
        words = np.ones(cfg.size, dtype=bool)
        words[0] = False
        words[cfg.base] = False
        ui, xi = self.upos_vocab.index, self.xpos_vocab.index
        cache, packed = self._form_cache, self._packed_ids
        n = int(words.sum())
        # one packed int per form (flag | word id << 32 | cluster id): np.fromiter over ints is several
        # times faster than numpy converting a list of tuples
        ids = np.fromiter((cache.get(f) or packed(f) for s in sentences for f in s[0]), dtype=np.int64, count=n)
        out[words, 0] = (ids >> 32) & 0x3FFFFFFF
        out[words, 3] = ids & 0xFFFFFFFF
        out[words, 1] = np.fromiter((ui.get(t, UNK) for s in sentences for t in s[1]), dtype=np.int64, count=n)
        out[words, 2] = np.fromiter((xi.get(t, UNK) for s in sentences for t in s[2]), dtype=np.int64, count=n)
        return out

    def _packed_ids(self, form: str) -> int:
        w, c = self.form_ids(form)
        p = (1 << 62) | (w << 32) | c           # the flag bit keeps every packed value truthy
        if len(self._form_cache) < CACHE_LIMIT:
            self._form_cache[form] = p
        return p

    def form_ids(self, form: str) -> Tuple[int, int]:
        """(word id, word-cluster id) of ``form``; UNK when not in the vocabulary or the cluster table."""
        c = UNK
        if self.clusters is not None:
            ids = self.clusters.lookup(form)
            c = UNK if ids is None else ids[self.cluster_level] + 3
        return self.word_vocab.index.get(normalize(form), UNK), c

    def prepare(self, block: Optional[np.ndarray] = None) -> None:
        """Build the stacked weight block (or take ``block``, whose row slices ``weights`` are) and
        the key -> row tables that parsing uses. Done on the first parse; call again after
        changing ``keys`` or ``weights`` in place (training does)."""
        self._block = np.concatenate(self.weights) if block is None else block
        self._table = RowTable(self.keys, self._radix)

    def full_scores(self, keys: np.ndarray) -> np.ndarray:
        """Action scores [n, actions] of every template for the keys [n, templates] of n configurations."""
        if self._table is None or self._block is None:
            self.prepare()
        assert self._table is not None and self._block is not None
        out = np.zeros((len(keys), self._block.shape[1]), dtype=self._block.dtype)
        for r in np.ascontiguousarray(self._table.rows(keys, slice(None)).T):
            out += self._block[r]
        return out

    # -- parsing -------------------------------------------------------------------------------

    def parse(self, sentences: Sequence[Words], margin: Optional[float] = None,
              checkpoints: Optional[Sequence[int]] = None) -> Tuple[List[Tuple[List[int], List[str]]], int, int]:
        """Greedy parses of non-empty sentences: ((heads, labels) per sentence, templates used
        summed over all actions, number of actions). ``margin=None`` uses every template;
        ``checkpoints`` (template counts) restricts the margin test to those prefixes (None: after
        every template)."""
        if not sentences:
            return [], 0, 0
        if self._table is None or self._block is None:
            self.prepare()
        table, block, plan = self._table, self._block, self.plan
        assert table is not None and block is not None
        cfg = Configurations([len(s[0]) for s in sentences], len(self.labels), self.root_label)
        tokens = self.token_matrix(sentences, cfg)
        k = len(self.templates)
        if margin is None:
            bounds = [0, k]
        else:
            bounds = sorted({0, k} | {c for c in (checkpoints or range(1, k)) if 0 < c < k})
        groups = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
        used_total, actions_total = 0, 0
        active = cfg.active()
        # one take per template into a reused buffer (a fresh array per take costs page faults; one
        # gather of [n, templates, classes] measured 1.6x slower)
        buf = np.empty((len(active), block.shape[1]), dtype=block.dtype)
        start = np.where(cfg.legal_table, np.float32(0), ILLEGAL)    # initial scores per legal_code
        while len(active):
            s = start[cfg.legal_code(active)]
            pred = np.empty(len(active), dtype=np.int64)
            slot = np.arange(len(active))          # row of ``s`` -> index into ``active``
            state = plan.state(cfg, active)
            for g in groups:
                tmp = buf[:len(slot)]
                keys = plan.block_keys(cfg, tokens, state, g)
                for r in np.ascontiguousarray(table.rows(keys, g).T):
                    block.take(r, axis=0, out=tmp)
                    s += tmp
                if g.stop < k:
                    fin, arg = margin_stops(s, margin)
                    if fin.any():
                        pred[slot[fin]] = arg[fin]
                        used_total += g.stop * int(fin.sum())
                        keep = ~fin
                        slot, s = slot[keep], s[keep]
                        state = (state[0][keep], state[1][keep])
                        if not len(slot):
                            break
            if len(slot):
                pred[slot] = s.argmax(axis=1)
                used_total += k * len(slot)
            actions_total += len(active)
            cfg.apply(active, pred)
            active = cfg.unfinished(active)
        labels = self.labels
        return [(h, [labels[x] for x in l]) for h, l in cfg.trees()], used_total, actions_total

    # -- storage ------------------------------------------------------------------------------

    def compact(self, threshold: float = 1e-3) -> None:
        """Round to float16, drop small weights and empty rows (see :mod:`nlpipe.linear.storage`)."""
        compact_tables(self.keys, self.weights, threshold)
        self._block = self._table = None

    def num_parameters(self) -> int:
        return int(sum(np.count_nonzero(w) for w in self.weights))

    def save(self, model_dir: Path) -> None:
        """Write ``weights.npz`` (sparse float16 tables), ``vocab.json`` and, with word clusters,
        ``clusters.npz``."""
        model_dir = Path(model_dir)
        model_dir.mkdir(parents=True, exist_ok=True)
        save_tables(model_dir / WEIGHTS_FILE, self.keys, self.weights, self.num_actions)
        write_json(model_dir / VOCAB_FILE, {"words": self.words, "upos": self.upos, "xpos": self.xpos,
                                            "labels": self.labels, "templates": self.template_names,
                                            "cluster_level": self.cluster_level})
        if self.clusters is not None:
            self.clusters.save(model_dir / CLUSTERS_FILE)
        elif (model_dir / CLUSTERS_FILE).exists():
            (model_dir / CLUSTERS_FILE).unlink()

    @classmethod
    def load(cls, model_dir: Path) -> "TransitionModel":
        """Read a model written by :meth:`save`; any damage raises :class:`ModelError`."""
        model_dir = Path(model_dir)
        v = read_json(model_dir / VOCAB_FILE)
        with model_errors(model_dir, "transition parser model"):
            keys, block, start = load_block(model_dir / WEIGHTS_FILE, len(v["templates"]),
                                            num_actions(len(v["labels"])))
            weights = [block[s:s + len(kj) + 1] for s, kj in zip(start.tolist(), keys)]
            clusters = Clusters.load(model_dir / CLUSTERS_FILE) if (model_dir / CLUSTERS_FILE).exists() else None
            level = int(v.get("cluster_level", CLUSTER_LEVEL))
            if not 0 <= level < len(SIZES):
                raise ValueError(f"cluster level {level} out of range")
            model = cls(v["words"], v["upos"], v["xpos"], v["labels"], v["templates"], keys, weights, clusters, level)
            model.prepare(block)
            return model
