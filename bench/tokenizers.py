#!/usr/bin/env python3
"""Tokenizers on en_ewt test raw text: tokens / sentences / words F1 and speed on one core.

    python bench/tokenizers.py [--repeat N] [--json]

Two settings, both built from the `# text` lines of
${NLPIPE_CORPORA:-../shared/corpora}/en_ewt/en_ewt-ud-test.conllu:

- ``paragraphs``: a paragraph's sentences joined by one space, a blank line between paragraphs
  (exactly the input of ``nlpipe eval tokenize``, :func:`nlpipe.runtime.evaluate.raw_text`);
- ``one line per document``: a document's sentences joined by one space, one document per line and
  no blank lines (no paragraph breaks: every sentence end must be found from the text).

Systems: nlpipe trained (the character model), nlpipe rules (Punkt + EWT word rules), NLTK Punkt
trained on EWT train text + the Treebank word tokenizer, and spaCy 3 rules (``blank("en")`` +
sentencizer) and UDPipe 1 (a model trained on EWT train, path in $UDPIPE_MODEL) when installed.
All outputs are scored by :mod:`nlpipe.runtime.evaluate` (conll18_ud_eval.py semantics). Speed: tokenization
alone (models loaded, output sentences built in memory, nothing written), best of ``--repeat`` runs,
one thread (OMP/BLAS threads set to 1 before numpy loads), as wall-clock and as process CPU time (the
latter is steadier on a busy machine); tokens are gold tokens; the ratio column is the wall-clock
speed relative to nlpipe trained.
"""
from __future__ import annotations

import os
import sys

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nlpipe.io.conllu import Sentence, parse_string, read_file  # noqa: E402
from nlpipe.runtime.evaluate import raw_text, score  # noqa: E402
from nlpipe.registry import load_stage  # noqa: E402
from nlpipe.stages.tokenize import SentenceSpan, Tokenizer  # noqa: E402

CORPORA = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))


def one_line_per_document(sentences: List[Sentence]) -> str:
    """A document's sentences joined by one space; one document per line."""
    docs: List[List[str]] = []
    for s in sentences:
        if not docs or s.meta("newdoc") is not None:
            docs.append([])
        docs[-1].append(s.text())
    return "".join(" ".join(d) + "\n" for d in docs)


class SpanTokenizer(Tokenizer):
    """A third-party tokenizer behind nlpipe's output code: ``spans(paragraph)`` gives
    (sentence start, end, [(token start, end)])."""

    def __init__(self, spans: Callable[[str], Iterable[Tuple[int, int, List[Tuple[int, int]]]]]):
        self.spans = spans

    def segment(self, paragraphs: Iterable[str]) -> Iterator[Tuple[str, Iterable[SentenceSpan]]]:
        for text in paragraphs:
            yield text, [(s, e, [(a, b, None) for a, b in toks]) for s, e, toks in self.spans(text)]


def nltk_tokenizer(train_text: str) -> Tokenizer:
    from nltk.tokenize import TreebankWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer, PunktTrainer

    trainer = PunktTrainer()
    trainer.train(train_text, finalize=True)
    punkt = PunktSentenceTokenizer(trainer.get_params())
    words = TreebankWordTokenizer()

    def spans(text: str):
        for s, e in punkt.span_tokenize(text):
            toks = [(s + a, s + b) for a, b in words.span_tokenize(text[s:e])]
            if toks:
                yield s, e, toks

    return SpanTokenizer(spans)


def spacy_tokenizer() -> Optional[Tokenizer]:
    try:
        import spacy
    except ImportError:
        return None
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")

    def spans(text: str):
        for sent in nlp(text).sents:
            toks = [(t.idx, t.idx + len(t.text)) for t in sent if not t.is_space]
            if toks:
                yield toks[0][0], toks[-1][1], toks

    return SpanTokenizer(spans)


def udpipe_system() -> Optional[Callable[[str], List[Sentence]]]:
    """UDPipe 1's tokenizer (default options) from the model in $UDPIPE_MODEL, or None."""
    path = os.environ.get("UDPIPE_MODEL")
    try:
        from ufal.udpipe import Model, Pipeline, ProcessingError
    except ImportError:
        return None
    if not path:
        return None
    model = Model.load(path)
    if model is None:
        sys.exit(f"bench/tokenizers.py: cannot load the UDPipe model {path}")
    pipeline = Pipeline(model, "tokenize", Pipeline.NONE, Pipeline.NONE, "conllu")

    def system(text: str) -> List[Sentence]:
        error = ProcessingError()
        out = pipeline.process(text, error)
        if error.occurred():
            sys.exit(f"bench/tokenizers.py: UDPipe failed: {error.message}")
        return parse_string(out)

    return system


def nlpipe_system(tokenizer: Optional[Tokenizer], name: str) -> Optional[Callable[[str], List[Sentence]]]:
    if tokenizer is None:
        return None
    return lambda text: list(tokenizer.tokenize(io.StringIO(text), name))


def run(system: Callable[[str], List[Sentence]], text: str, gold: List[Sentence], gold_path: str,
        repeat: int) -> Dict[str, Any]:
    best = best_cpu = float("inf")
    pred: List[Sentence] = []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        pred = system(text)
        best = min(best, time.perf_counter() - t)
        best_cpu = min(best_cpu, time.process_time() - c)
    r = score("tokenize", gold, pred, gold_path, "<prediction>")
    tokens = sum(len(s.tokens) for s in gold)
    return {"tokens_f1": r["tokens_f1"], "sentences_f1": r["sentences_f1"], "words_f1": r["words_f1"],
            "seconds": best, "tokens_per_s": tokens / best, "cpu_seconds": best_cpu,
            "tokens_per_cpu_s": tokens / max(best_cpu, 1e-9)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="Print the results as one JSON object.")
    args = ap.parse_args()
    test_path = CORPORA / "en_ewt" / "en_ewt-ud-test.conllu"
    train_path = CORPORA / "en_ewt" / "en_ewt-ud-train.conllu"
    if not test_path.is_file():
        sys.exit(f"bench/tokenizers.py: {test_path} not found (set NLPIPE_CORPORA)")
    gold = list(read_file(str(test_path)))
    settings = {"paragraphs": raw_text(gold), "one line per document": one_line_per_document(gold)}

    name = str(test_path)
    systems: Dict[str, Optional[Callable[[str], List[Sentence]]]] = {
        "nlpipe trained": nlpipe_system(load_stage("tokenize", "tokenize-char-ewt"), name),
        "nlpipe rules": nlpipe_system(load_stage("tokenize", "tokenize-rules-ewt"), name),
        "NLTK Punkt (EWT train) + Treebank": nlpipe_system(
            nltk_tokenizer(raw_text(list(read_file(str(train_path))))), name),
        "spaCy rules (blank en + sentencizer)": nlpipe_system(spacy_tokenizer(), name),
        "UDPipe 1 (EWT train)": udpipe_system(),
    }
    missing = {"spaCy rules (blank en + sentencizer)": "spaCy is not installed",
               "UDPipe 1 (EWT train)": "UDPipe 1 (ufal.udpipe + $UDPIPE_MODEL) is not installed"}
    results: Dict[str, Dict[str, Any]] = {}
    for setting, text in settings.items():
        results[setting] = {}
        for system_name, system in systems.items():
            results[setting][system_name] = run(system, text, gold, name, args.repeat) if system else None
    if args.json:
        print(json.dumps(results, sort_keys=True))
        return
    print(f"en_ewt test ({sum(len(s.tokens) for s in gold)} tokens, {len(gold)} sentences); "
          f"one thread; best of {args.repeat}")
    for setting, rows in results.items():
        base = rows["nlpipe trained"]["tokens_per_s"]
        print(f"\n### {setting}\n")
        print("| system | tokens F1 | sentences F1 | words F1 | tokens/s | tokens/CPU-s | speed vs nlpipe trained |")
        print("|---|---|---|---|---|---|---|")
        for system_name, r in rows.items():
            if r is None:
                print(f"| {system_name} | - | - | - | - | - | not run: {missing[system_name]} |")
                continue
            print(f"| {system_name} | {r['tokens_f1']:.2f} | {r['sentences_f1']:.2f} | {r['words_f1']:.2f} | "
                  f"{r['tokens_per_s']:,.0f} | {r['tokens_per_cpu_s']:,.0f} | {r['tokens_per_s'] / base:.2f}x |")


if __name__ == "__main__":
    main()
