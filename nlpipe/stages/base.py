"""What every stage shares: the Stage protocol and chunked annotation of a sentence stream.

A stage object has ``name``, ``requires``, ``provides``, ``columns`` and ``annotate(sentences)``,
which yields the same sentences with only the stage's own columns changed. The tokenizer is the one
stage whose input is raw text: besides ``annotate`` (each sentence's text tokenized, its boundaries
kept) it has ``tokenize(stream, name, mode)``, which also finds the sentences.

:data:`COLUMNS` declares, once per stage name, the columns it writes: the runtime reads it to know
whether a sentence already has a stage's annotation (``annotate --keep-existing``) and ``eval`` to
know what to blank before running a model and which columns a predicted file must fill.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Protocol, Tuple, TypeVar

from nlpipe.io.conllu import DEPREL, FEATS, HEAD, LEMMA, MISC, UPOS, XPOS, Sentence, misc_get, misc_set


@dataclass(frozen=True)
class Columns:
    """The CoNLL-U columns a stage writes: whole ``fields`` (column indices; the first one is always
    filled by the stage, the others may legitimately stay ``_``, e.g. XPOS in many treebanks) and
    ``misc`` keys (a stage may find nothing to mark, e.g. no entity)."""

    fields: Tuple[int, ...] = ()
    misc: Tuple[str, ...] = ()
    label: str = ""   # what the annotation is called in messages

    def absent(self, sentences: Iterable[Sentence]) -> Optional[str]:
        """Why none of ``sentences`` carries this annotation at all (``None``: some word does, or
        there are no words)."""
        words = False
        for s in sentences:
            if self.carried(s):
                return None
            words = words or bool(s.words)
        return self.missing if words else None

    def carried(self, sentence: Sentence) -> bool:
        """Whether some word of ``sentence`` carries this annotation (one of the fields not ``_``, a
        MISC key)."""
        if self.fields:
            return any(w[c] != "_" for w in sentence.words for c in self.fields)
        return any(misc_get(w[MISC], key) is not None for w in sentence.words for key in self.misc)

    @property
    def missing(self) -> str:
        """What :meth:`absent` says of words none of which carries this annotation."""
        return "every word has '_'" if self.fields else f"no word has {self.misc[0]}="

    def filled(self, sentence: Sentence) -> bool:
        """Whether ``sentence`` already carries this annotation."""
        if self.fields:
            return all(w[self.fields[0]] != "_" for w in sentence.words)
        return any(misc_get(w[MISC], key) is not None for w in sentence.words for key in self.misc)

    def blank(self, word: List[str]) -> None:
        """Remove this annotation from one word's row (in place)."""
        for c in self.fields:
            word[c] = "_"
        for key in self.misc:
            word[MISC] = misc_set(word[MISC], key, None)


COLUMNS: Dict[str, Columns] = {
    "pos": Columns(fields=(UPOS, XPOS, LEMMA, FEATS), label="UPOS/XPOS"),
    "parse": Columns(fields=(HEAD, DEPREL), label="HEAD/DEPREL"),
    "ner": Columns(misc=("NE",), label="entities"),
    "predicates": Columns(misc=("Pred",), label="predicates"),
    "srl": Columns(misc=("SRL",), label="semantic roles"),
}


REQUIRES: Dict[str, frozenset] = {
    "tokenize": frozenset(), "pos": frozenset({"tokenize"}), "parse": frozenset({"pos"}),
    "ner": frozenset({"tokenize"}), "predicates": frozenset({"tokenize"}), "srl": frozenset({"tokenize"}),
}


class Adapter:
    """A stage class declares only its stage's name (``class ParseStage(Adapter, stage="parse")``);
    ``name``, ``requires``, ``provides`` and ``columns`` follow from it."""

    name: str
    requires: frozenset
    provides: frozenset
    columns: Columns

    def __init_subclass__(cls, stage: str = "", **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if stage:
            cls.name, cls.requires, cls.columns = stage, REQUIRES[stage], COLUMNS[stage]
            if "provides" not in cls.__dict__:   # a class may provide more (pos: upos, xpos)
                cls.provides = frozenset({stage})


class Stage(Protocol):
    name: str
    requires: frozenset
    provides: frozenset
    columns: Columns

    def annotate(self, sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        ...


READ_AHEAD = 2000  # sentences a batching stage reads ahead and sorts by length before batching


def fill_in_chunks(sentences: Iterable[Sentence], fill: Callable[[List[Sentence]], None],
                   size: int = READ_AHEAD) -> Iterator[Sentence]:
    """Annotate a stream chunk by chunk: ``fill`` annotates up to ``size`` sentences in place (a
    batching stage sorts them by length inside the chunk), then they are yielded in input order."""
    chunk: List[Sentence] = []
    for s in sentences:
        chunk.append(s)
        if len(chunk) >= size:
            fill(chunk)
            yield from chunk
            chunk = []
    if chunk:
        fill(chunk)
        yield from chunk


# ---------------------------------------------------------------------------------------------
# CPU threads

THREADS_VAR = "NLPIPE_THREADS"
T = TypeVar("T")


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, e.g. under taskset or a container quota)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_threads() -> int:
    """Threads a stage runs its batches in on the CPU, each on one core: ``$NLPIPE_THREADS`` (set by
    ``annotate --jobs N`` to the cores / N of each worker), else the CPUs this process may run on when
    numpy's BLAS runs on one thread (``OPENBLAS_NUM_THREADS=1``, which the command line sets), else 1:
    a library user's numpy then spreads each matrix product over the cores itself."""
    value = os.environ.get(THREADS_VAR, "")
    if value.isascii() and value.isdigit() and int(value) > 0:
        return int(value)
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        return 1
    return usable_cpus()


def map_batches(run: Callable[[List[int]], T], batches: List[List[int]], workers: int, torch: Any = None
                ) -> Iterable[T]:
    """``run`` of every batch, in order; ``workers`` > 1 runs that many at once in threads, one core
    each: an array operation releases the GIL, and a network over a small batch keeps one core busy far
    better than it splits over two (``torch``, when given, computes on one thread meanwhile)."""
    workers = min(workers, len(batches))
    if workers < 2:
        return map(run, batches)
    threads = torch.get_num_threads() if torch is not None else 0
    if torch is not None:
        torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(run, batches))
    finally:
        if torch is not None:
            torch.set_num_threads(threads)
