"""Jack-knifed POS tags for parser training: every training sentence tagged by a tagger that did not
see it, so the parser learns from tags as noisy as the ones it will get at run time.

The training file is cut at document boundaries (``# newdoc``) into ``folds`` contiguous parts of
about equal size; for each part, ``nlpipe train pos`` (with the options given after ``--``, e.g.
those of the shipped model) learns from the other parts and ``nlpipe pos`` tags the part. The
tagged parts are written back in the input order; only the tagger's columns differ from the input:
UPOS and XPOS, and LEMMA and FEATS where the training file has them (the fold taggers then write them).

    nlpipe train jackknife --train TRAIN --dev DEV -o train.jackknifed.conllu \\
        [--folds 3] [--jobs 2] [--work DIR] -- [nlpipe train pos options]
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from nlpipe.io.conllu import Sentence, read_file
from nlpipe.io.outputs import check_output, open_output
from nlpipe.errors import NlpipeError


def document_folds(sentences: Sequence[Sentence], folds: int, interleave: bool = False,
                   warn: Optional[Callable[[str], None]] = None) -> List[List[int]]:
    """Sentence indices of ``folds`` parts, cut only where a document starts (a sentence with
    ``# newdoc``; a file without any is one document per sentence): contiguous parts each near
    len/folds, or with ``interleave`` the documents dealt out in turn (document i to part i mod
    folds), so that every part mixes the whole file's genres (treebanks are often sorted by genre,
    and a tagger tested on a genre it never saw tags worse than it will at run time). A file of
    fewer documents than folds is cut between any sentences instead, which ``warn`` is told."""
    if folds < 2:
        raise NlpipeError(f"--folds must be at least 2, not {folds}")
    starts = [i for i, s in enumerate(sentences) if s.starts_document]
    if not starts:
        starts = list(range(len(sentences)))
    elif starts[0] != 0:  # sentences before the first "# newdoc" make a document of their own
        starts.insert(0, 0)
    if len(starts) < folds:
        if len(sentences) < folds:
            raise NlpipeError(f"{len(sentences)} sentences cannot make {folds} folds")
        if warn is not None:
            warn(f"{len(starts)} document{'s' if len(starts) != 1 else ''} (# newdoc) cannot make {folds} folds: "
                 f"the folds are cut between sentences instead")
        starts = list(range(len(sentences)))
    if interleave:
        dealt: List[List[int]] = [[] for _ in range(folds)]
        for d, (a, b) in enumerate(zip(starts, starts[1:] + [len(sentences)])):
            dealt[d % folds].extend(range(a, b))
        return dealt
    bounds = [0]
    for k in range(1, folds):
        # the document start nearest to k/folds of the file, leaving one for each later fold
        later = [b for b in starts if b > bounds[-1]]
        later = later[:len(later) - (folds - k - 1)]
        bounds.append(min(later, key=lambda b: abs(b - k * len(sentences) / folds)))
    bounds.append(len(sentences))
    return [list(range(a, b)) for a, b in zip(bounds[:-1], bounds[1:])]


def _write(path: Path, sentences: Sequence[Sentence]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(s.to_string() for s in sentences)


def _nlpipe(args: Sequence[str], log: Path) -> None:
    with open(log, "w", encoding="utf-8") as err:
        r = subprocess.run([sys.executable, "-m", "nlpipe.cli", *args], stdout=subprocess.DEVNULL, stderr=err)
    if r.returncode != 0:
        tail = log.read_text(encoding="utf-8").strip().splitlines()[-1:] or ["(no output)"]
        raise NlpipeError(f"nlpipe {args[0]} {args[1] if len(args) > 1 else ''} failed (see {log}): {tail[0]}")


def jackknife(train: str, dev: str, out: str, folds: int = 3, pos_args: Sequence[str] = (),
              work: Optional[str] = None, jobs: int = 1, interleave: bool = False,
              warn: Optional[Callable[[str], None]] = None) -> List[List[int]]:
    """Write ``train`` with jack-knifed UPOS/XPOS (and LEMMA/FEATS, see the module docstring) to ``out``; returns the folds (sentence indices,
    see :func:`document_folds`). Fold files and models go to ``work`` (default: a temporary folder,
    removed after a success and kept, with the logs, after a failure)."""
    check_output(out, [train, dev])
    sentences = list(read_file(train))
    parts = document_folds(sentences, folds, interleave, warn)
    root = Path(work) if work else Path(tempfile.mkdtemp(prefix="nlpipe-jackknife-"))
    root.mkdir(parents=True, exist_ok=True)

    def run_fold(k: int) -> Path:
        d = root / f"fold-{k}"
        d.mkdir(exist_ok=True)
        held = set(parts[k])
        _write(d / "train.conllu", [s for i, s in enumerate(sentences) if i not in held])
        _write(d / "held.conllu", [sentences[i] for i in parts[k]])
        _nlpipe(["train", "pos", "--train", str(d / "train.conllu"), "--dev", dev, "--out", str(d / "model"),
                 *pos_args], d / "train.log")
        _nlpipe(["pos", "--model", str(d / "model"), str(d / "held.conllu"), "-o", str(d / "tagged.conllu")],
                d / "tag.log")
        return d / "tagged.conllu"

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        tagged_files = list(pool.map(run_fold, range(folds)))
    tagged: List[Optional[Sentence]] = [None] * len(sentences)
    for part, f in zip(parts, tagged_files):
        for i, s in zip(part, read_file(str(f))):
            tagged[i] = s
    if [s and s.forms() for s in tagged] != [s.forms() for s in sentences]:
        raise NlpipeError(f"tagged folds do not match {train} sentence for sentence")
    with open_output(out, [train, dev]) as f:
        f.writelines(s.to_string() for s in tagged if s is not None)
    if work is None:
        shutil.rmtree(root, ignore_errors=True)
    return parts
