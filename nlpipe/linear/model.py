"""The templated linear model: one weight matrix per template, plain-file save and load.

Template ``j`` owns a sorted array of int64 keys ``keys[j]`` and a weight matrix
``weights[j]`` of shape [len(keys[j]) + 1, num_labels]; row 0 scores keys that are not in the
array (rare in training or unseen). Templates are stored in the model's evaluation order, so
"the first n templates" is a prefix of the lists. A loaded model keeps its weights sparse
(:class:`~nlpipe.linear.storage.SparseRows`) and scores through :meth:`TemplatedModel.take` and
:meth:`TemplatedModel.add`; the dense matrices are built the first time ``weights`` is read
(training).
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from nlpipe.io.model_dir import model_errors, read_json, write_json
from nlpipe.linear.attributes import PAD, Attributes
from nlpipe.linear.clusters import CLUSTERS_FILE, Clusters
from nlpipe.linear.dictionary import LabelDictionary
from nlpipe.linear.storage import SparseRows, compact_tables, load_sparse, save_tables
from nlpipe.linear.templates import Layout, Template, check_radix, full_keys, parse_template

WEIGHTS_FILE = "weights.npz"
DENSE_LIMIT = 1 << 20   # templates with fewer possible keys than this get a direct key -> row table
VOCAB_FILE = "vocab.json"
SHARED = "shared"       # vocab.json's attributes of a model saved with the attributes of the one it is loaded with


class TemplatedModel:
    """Labels, word attributes, ordered templates and their keys and weights."""

    def __init__(self, labels: Sequence[str], attributes: Attributes, templates: Sequence[str],
                 keys: Sequence[np.ndarray], weights: Union[Sequence[np.ndarray], SparseRows],
                 first_labels: Optional[Sequence[str]] = None, dictionary: Optional[LabelDictionary] = None):
        """``weights``: one dense matrix per template, or all of them sparse (a loaded model);
        ``first_labels``: the labels of the earlier pass that ``ptag`` templates read, when they
        differ from this model's own (a morphology pass reading the POS tags); None: the same.
        ``dictionary``: the labels allowed to words seen in training (None: every label to every word)."""
        self.labels = list(labels)
        self.dictionary = dictionary
        self.first_labels = None if first_labels is None else list(first_labels)
        self.attributes = attributes
        self.templates: List[Template] = [parse_template(t) for t in templates]
        self.keys = [np.asarray(k, dtype=np.int64) for k in keys]
        self._sparse: Optional[SparseRows] = None
        self._weights: Optional[List[np.ndarray]] = None
        n, L = len(self.templates), len(self.labels)
        if isinstance(weights, SparseRows):
            self._sparse = weights
            shapes = [(int(r), weights.num_labels) for r in weights.nrows]
        else:
            self._weights = [np.asarray(w, dtype=np.float32) for w in weights]
            shapes = [w.shape for w in self._weights]
        if len(self.keys) != n or len(shapes) != n:
            raise ValueError("one key array and one weight matrix per template expected")
        self._radix = []
        for t, k, shape in zip(self.templates, self.keys, shapes):
            self._radix.append(check_radix(t, attributes.sizes, L, self.first_size))
            if shape != (len(k) + 1, L):
                raise ValueError(f"template {t.name}: weights {shape}, expected {(len(k) + 1, L)}")
            if len(k) and (k[0] < 0 or k[-1] >= self._radix[-1] or np.any(k[1:] <= k[:-1])):
                raise ValueError(f"template {t.name}: keys are not sorted, unique and in range")
        self._dense: List[Optional[np.ndarray]] = [None] * n
        self._first_index: Optional[Dict[str, int]] = None

    @property
    def weights(self) -> List[np.ndarray]:
        """The dense weight matrix [len(keys[j]) + 1, num_labels] of every template (built from
        the sparse rows of a loaded model the first time it is read; then scoring uses it)."""
        if self._weights is None:
            assert self._sparse is not None
            self._weights, self._sparse = self._sparse.dense(), None
        return self._weights

    @weights.setter
    def weights(self, weights: Sequence[np.ndarray]) -> None:
        self._weights, self._sparse = [np.asarray(w, dtype=np.float32) for w in weights], None

    def take(self, j: int, rows: np.ndarray) -> np.ndarray:
        """Weight rows ``rows`` of template ``j``: a new array [len(rows), num_labels]."""
        if self._sparse is not None:
            return self._sparse.take(j, rows)
        return np.take(self.weights[j], rows, axis=0)     # take: 2x faster than []

    def add(self, j: int, rows: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out`` [len(rows), num_labels] (C-contiguous) plus the rows ``rows`` of template ``j``, in place."""
        if self._sparse is not None:
            self._sparse.add(j, rows, out)
        else:
            out += np.take(self.weights[j], rows, axis=0)
        return out

    @property
    def num_labels(self) -> int:
        return len(self.labels)

    @property
    def first_size(self) -> int:
        """Number of labels of the pass ``ptag`` templates read (its padding id)."""
        return len(self.labels) if self.first_labels is None else len(self.first_labels)

    def first_ids(self, labels: Iterable[str]) -> np.ndarray:
        """Ids [n] in this model's ``ptag`` space of the labels an earlier pass predicted; a label
        this model does not know gets the padding id :attr:`first_size`."""
        if self._first_index is None:
            self._first_index = {l: i for i, l in enumerate(self.labels if self.first_labels is None
                                                             else self.first_labels)}
        get, none = self._first_index.get, self.first_size
        return np.array([get(l, none) for l in labels], dtype=np.int64)

    @property
    def template_names(self) -> List[str]:
        return [t.name for t in self.templates]

    def subset(self, indices: Sequence[int]) -> "TemplatedModel":
        """A model over the templates ``indices`` (in that order), sharing weight arrays."""
        return TemplatedModel(self.labels, self.attributes, [self.templates[i].name for i in indices],
                              [self.keys[i] for i in indices], [self.weights[i] for i in indices], self.first_labels,
                              self.dictionary)

    # -- features ---------------------------------------------------------------------------

    def layout(self, sentences: Sequence[Sequence[str]]) -> Tuple[Layout, np.ndarray]:
        """Padded layout and attribute-id matrix [layout.size, n_attrs] of sentences of forms; the
        layout also keeps the attribute rows of the distinct forms (``type_atoms``) and each token's
        row among them (``type_of``), for scoring word-only templates once per type."""
        return self.layout_flat([f for s in sentences for f in s], [len(s) for s in sentences])

    def layout_flat(self, forms: Sequence[str], lengths: Sequence[int]) -> Tuple[Layout, np.ndarray]:
        """:meth:`layout` of the sentences of ``lengths`` words whose forms, concatenated, are ``forms``."""
        layout = Layout(lengths)
        layout.type_atoms, layout.type_of = self.attributes.type_matrix(forms)
        # column-major: a template reads one attribute column at many positions (templates.static_keys)
        atoms = np.full((layout.size, layout.type_atoms.shape[1]), PAD, dtype=layout.type_atoms.dtype, order="F")
        atoms[layout.g] = layout.type_atoms[layout.type_of]
        return layout, atoms

    def rows(self, j: int, keys: np.ndarray) -> np.ndarray:
        """Weight rows of template ``j`` for ``keys`` (0 where a key is unknown)."""
        dense = self._dense[j]
        if dense is None and self._radix[j] <= DENSE_LIMIT:
            dense = np.zeros(self._radix[j], dtype=np.int32)
            dense[self.keys[j]] = np.arange(1, len(self.keys[j]) + 1, dtype=np.int32)
            self._dense[j] = dense
        if dense is not None:
            return dense[keys]
        table = self.keys[j]
        if len(table) == 0:
            return np.zeros(len(keys), dtype=np.intp)
        pos = np.searchsorted(table, keys)
        np.minimum(pos, len(table) - 1, out=pos)
        hit = table[pos] == keys
        return np.where(hit, pos + 1, 0)

    @property
    def needs_first_pass(self) -> bool:
        """Whether some template reads the tags of a first tagging pass (``ptag``)."""
        return any(t.first for t in self.templates)

    def token_rows(self, j: int, atoms: np.ndarray, tags: np.ndarray, g: np.ndarray,
                   first: Optional[np.ndarray] = None) -> np.ndarray:
        """Rows of template ``j`` for padded positions ``g`` with tag history ``tags`` (and
        first-pass tags ``first``, padded layout, for templates that read them)."""
        keys = full_keys(self.templates[j], atoms, tags, g, self.attributes.sizes, self.num_labels, first,
                         self.first_size)
        return self.rows(j, keys)

    # -- storage ----------------------------------------------------------------------------

    def compact(self, threshold: float = 1e-3) -> None:
        """Round weights to float16, zero those below ``threshold`` and drop all-zero rows."""
        compact_tables(self.keys, self.weights, threshold)
        self._dense = [None] * len(self.weights)

    def num_parameters(self) -> int:
        if self._sparse is not None:
            return self._sparse.num_entries
        return int(sum(np.count_nonzero(w) for w in self.weights))

    def save(self, model_dir: Path, with_clusters: bool = True, shared: Optional[Attributes] = None) -> None:
        """Write ``weights.npz`` (all templates concatenated, sparse float16), ``vocab.json`` and, for
        models with word-cluster attributes, ``clusters.npz`` (unless ``with_clusters`` is False:
        the table is then passed to :meth:`load`, e.g. shared with the first pass's model).
        ``shared``: the attributes of the model this one is always loaded with (a tagger's first
        pass); when this model's are the same, ``vocab.json`` says so instead of repeating them."""
        model_dir = Path(model_dir)
        model_dir.mkdir(parents=True, exist_ok=True)
        save_tables(model_dir / WEIGHTS_FILE, self.keys, self.weights, self.num_labels)
        same = shared is not None and (shared is self.attributes or shared.to_json() == self.attributes.to_json())
        vocab = {"labels": self.labels, "templates": self.template_names,
                 "attributes": SHARED if same else self.attributes.to_json()}
        if self.first_labels is not None:
            vocab["first_labels"] = self.first_labels
        if self.dictionary is not None:
            vocab["dictionary"] = self.dictionary.to_json()
        write_json(model_dir / VOCAB_FILE, vocab)
        if self.attributes.clusters is not None and with_clusters:
            self.attributes.clusters.save(model_dir / CLUSTERS_FILE)
        elif (model_dir / CLUSTERS_FILE).exists():
            (model_dir / CLUSTERS_FILE).unlink()

    @classmethod
    def load(cls, model_dir: Path, clusters: Optional[Clusters] = None,
             attributes: Optional[Attributes] = None) -> "TemplatedModel":
        """Read a model written by :meth:`save`; ``clusters`` is the cluster table of a model saved
        without its own; ``attributes``, those of a model loaded before (a first tagging pass), are
        shared when this model's are the same (one vocabulary in memory, one word-type cache),
        and required by a model saved with ``shared``; any damage raises :class:`ModelError`."""
        model_dir = Path(model_dir)
        vocab = read_json(model_dir / VOCAB_FILE)
        with model_errors(model_dir, "tagger model"):
            labels, names = vocab["labels"], vocab["templates"]
            if (model_dir / CLUSTERS_FILE).exists():
                clusters = Clusters.load(model_dir / CLUSTERS_FILE)
            if vocab["attributes"] == SHARED:
                if attributes is None:
                    raise ValueError("the word attributes are the first pass's, and none were given")
            elif attributes is None or vocab["attributes"] != attributes.to_json() \
                    or attributes.clusters is not clusters:
                attributes = Attributes.from_json(vocab["attributes"], clusters)
            # templates with tag history are scored in many small rounds (see dfs.tag): dense
            whole = [bool(parse_template(t).history) for t in names]
            keys, rows = load_sparse(model_dir / WEIGHTS_FILE, len(names), len(labels), whole)
            dictionary = vocab.get("dictionary")
            if dictionary is not None:
                dictionary = LabelDictionary.from_json(dictionary, labels, attributes)
            return cls(labels, attributes, names, keys, rows, vocab.get("first_labels"), dictionary)
