"""Peer systems trained on the same data as ours, for bench/pos.py, bench/parse.py and bench/ud.py.

UDPipe 1 (``ufal.udpipe``: tokenizer, MorphoDiTa tagger writing UPOS, XPOS where the treebank has
them, FEATS and LEMMA, Parsito transition parser) on any UD treebank, and spaCy 3 (tagger for XPOS,
morphologizer for UPOS, parser; the CPU "efficiency" pipeline from ``spacy init config``) on en_ewt,
both trained from scratch on the treebank's train file with its dev file held out. Models are
trained once and kept under ``--peers`` (git-ignored ``bench/.peers`` by default); the packages are
optional (``make bench-peers`` installs them):

    python bench/peers.py [--treebank en_ewt] [--peers bench/.peers] [--only udpipe|spacy]
                          [--udpipe-tokenizer epochs=100] [--udpipe-tagger iterations=6]
                          [--udpipe-parser iterations=6] [--udpipe-component tokenizer|tagger|parser]
                          [--spacy-epochs 20]

trains whatever is missing (on one core each) and prints where the models are and how long
training took; the options used and the seconds of each UDPipe component are kept in ``info.json``
beside the models. The treebank's files are ``TREEBANK-ud-{train,dev}.conllu`` under
``$NLPIPE_CORPORA/TREEBANK`` (or ``--corpus``); the UDPipe 1 model is ``udpipe1-TREEBANK.udpipe``.
UDPipe's components are trained one by one (``--udpipe-component`` trains one alone, so that the
tokenizer and the tagger can train in parallel processes; the parser needs the tagger) and kept
under ``udpipe1-TREEBANK.parts/`` until a run joins them.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nlpipe.io.conllu import (DEPREL, FEATS, FORM, HEAD, LEMMA, MISC, UPOS, XPOS,  # noqa: E402
                              parse_string, read_file, to_string)
from nlpipe.runtime.evaluate import strip_stage  # noqa: E402

CORPORA = Path(os.environ.get("NLPIPE_CORPORA", REPO.parent / "shared" / "corpora"))
PEERS = REPO / "bench" / ".peers"
UDPIPE_OPTIONS = {"tokenizer": "epochs=100", "tagger": "iterations=6", "parser": "iterations=6"}
SPACY_DIR = "spacy-en_ewt"
INFO = "info.json"
TITLES = {"udpipe": "UDPipe 1", "spacy": "spaCy"}


def installed(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def _info(peers: Path) -> Dict[str, Any]:
    p = peers / INFO
    return json.loads(p.read_text()) if p.is_file() else {}


def _save_info(peers: Path, key: str, value: Dict[str, Any]) -> None:
    info = _info(peers)
    info[key] = value
    (peers / INFO).write_text(json.dumps(info, indent=1))


# ---------------------------------------------------------------- UDPipe 1

def _udpipe_sentences(path: str) -> Any:
    from ufal.udpipe import InputFormat, ProcessingError, Sentence, Sentences

    reader = InputFormat.newConlluInputFormat()
    reader.setText(Path(path).read_text(encoding="utf-8"))
    out = Sentences()
    s = Sentence()
    err = ProcessingError()
    while reader.nextSentence(s, err):
        out.append(s)
        s = Sentence()
    if err.occurred():
        raise SystemExit(f"{path}: UDPipe cannot read it: {err.message}")
    return out


COMPONENTS = ("tokenizer", "tagger", "parser")


def treebank_files(corpus: Path, treebank: str) -> Dict[str, Path]:
    """``{"train", "dev", "test"}`` -> ``corpus/{treebank}-ud-{split}.conllu`` (UD's file names)."""
    return {split: corpus / f"{treebank}-ud-{split}.conllu" for split in ("train", "dev", "test")}


def udpipe_path(peers: Path, treebank: str = "en_ewt") -> Path:
    """Where the UDPipe 1 model of ``treebank`` is kept (tokenizer, tagger and parser in one file)."""
    return peers / f"udpipe1-{treebank}.udpipe"


def udpipe_info_key(treebank: str) -> str:
    return "udpipe" if treebank == "en_ewt" else f"udpipe-{treebank}"


def udpipe_components(info: Dict[str, Any]) -> List[str]:
    """The components of a trained UDPipe 1 model from its ``info.json`` entry (models trained
    before tokenizers were: tagger and parser)."""
    return [c for c in COMPONENTS if c in info.get("component_seconds", {"tagger": 0, "parser": 0})]


def _udpipe_train(train: Any, dev: Any, options: Dict[str, str]) -> bytes:
    from ufal.udpipe import ProcessingError, Trainer

    err = ProcessingError()
    model = Trainer.train("morphodita_parsito", train, dev, options["tokenizer"], options["tagger"],
                          options["parser"], err)
    if err.occurred():
        raise SystemExit(f"UDPipe training failed: {err.message}")
    return model


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def train_udpipe(corpus: Path, peers: Path, tagger: str, parser: str, tokenizer: str = "none",
                 treebank: str = "en_ewt", only: Optional[str] = None) -> Path:
    """UDPipe 1 on ``treebank`` train with dev held out: tokenizer, tagger (UPOS, XPOS where the treebank
    has them, FEATS, LEMMA) and parser, each with its UDPipe option string (``none``: not trained).

    Each component is trained on its own and kept under ``peers/udpipe1-TREEBANK.parts/`` (an
    interrupted run resumes; the parser is trained over the trained tagger, so it sees predicted tags as
    in UDPipe's own recipe), then the three are joined with UDPipe's ``from_model`` option. The
    options and seconds of each component go to ``info.json``. ``only`` (a component) trains that part
    alone and returns its path, so that parts can be trained in parallel processes."""
    out = udpipe_path(peers, treebank)
    if out.is_file():
        return out
    files = treebank_files(corpus, treebank)
    train = _udpipe_sentences(str(files["train"]))
    dev = _udpipe_sentences(str(files["dev"]))
    parts = peers / f"udpipe1-{treebank}.parts"
    wanted = {"tokenizer": tokenizer, "tagger": tagger, "parser": parser}
    seconds: Dict[str, Optional[float]] = {}
    for comp in COMPONENTS:
        path = parts / f"{comp}.udpipe"
        if wanted[comp] == "none" or path.is_file() or only not in (None, comp):
            continue
        opts = {c: "none" for c in COMPONENTS}
        opts[comp] = wanted[comp]
        if comp == "parser" and wanted["tagger"] != "none":
            opts["tagger"] = f"from_model=file:{parts / 'tagger.udpipe'}"
        print(f"peers: training the UDPipe 1 {comp} on {treebank} ({len(train)} sentences, options "
              f"{wanted[comp]!r})", file=sys.stderr, flush=True)
        t0 = time.time()
        _write(path, _udpipe_train(train, dev, opts))
        record = {"seconds": round(time.time() - t0, 1), "options": wanted[comp]}
        (parts / f"{comp}.json").write_text(json.dumps(record))
    if only is not None:
        return parts / f"{only}.udpipe"
    for comp in COMPONENTS:
        if wanted[comp] != "none":
            seconds[comp], wanted[comp] = _part_record(parts, comp, wanted[comp])
    joined = {c: "none" if wanted[c] == "none" else f"from_model=file:{parts / (c + '.udpipe')}"
              for c in COMPONENTS}
    _write(out, _udpipe_train(train, dev, joined))
    _save_info(peers, udpipe_info_key(treebank), {
        "seconds": round(sum(v for v in seconds.values() if v), 1), "component_seconds": seconds,
        "version": _udpipe_version(), "treebank": treebank, "train": str(files["train"]), "dev": str(files["dev"]),
        "options": "method morphodita_parsito, " + ", ".join(f"{c} {wanted[c]}" for c in COMPONENTS)})
    return out


def _part_record(parts: Path, comp: str, options: str) -> Tuple[Optional[float], str]:
    """Training seconds and options of a kept component (the options asked now when the part does
    not record its own, as parts trained before the records did not)."""
    record = parts / f"{comp}.json"
    if record.is_file():
        kept = json.loads(record.read_text())
        if kept["options"] != options:
            print(f"peers: the kept {comp} was trained with {kept['options']!r}, not {options!r} (delete "
                  f"{parts / (comp + '.udpipe')} to retrain it)", file=sys.stderr)
        return kept["seconds"], kept["options"]
    old = parts / f"{comp}.seconds"
    return (float(old.read_text()) if old.is_file() else None), options


def _udpipe_version() -> str:
    from ufal.udpipe import Version

    v = Version.current()
    return f"{v.major}.{v.minor}.{v.patch}"


def udpipe_runner(model_path: Path, parse: bool) -> Callable[[str], str]:
    """A function CoNLL-U text (gold tokens) -> CoNLL-U text tagged (and parsed) by UDPipe 1."""
    from ufal.udpipe import Model, Pipeline, ProcessingError

    model = Model.load(str(model_path))
    if model is None:
        raise SystemExit(f"{model_path}: UDPipe cannot load it")
    pipe = Pipeline(model, "conllu", Pipeline.DEFAULT, Pipeline.DEFAULT if parse else Pipeline.NONE, "conllu")

    def run(text: str, _model: Any = model) -> str:   # the pipeline needs the model kept alive
        err = ProcessingError()
        out = pipe.process(text, err)
        if err.occurred():
            raise SystemExit(f"UDPipe failed: {err.message}")
        return out

    return run


# ---------------------------------------------------------------- spaCy 3

def sentence_doc(s: Any, vocab: Any) -> Any:
    """A spaCy Doc with the words, tags and tree of one sentence (the root heads itself, label ROOT)."""
    from spacy.tokens import Doc

    heads = [int(w[HEAD]) - 1 if w[HEAD] != "0" else i for i, w in enumerate(s.words)]
    return Doc(vocab, words=[w[FORM] for w in s.words], spaces=["SpaceAfter=No" not in w[MISC] for w in s.words],
               tags=[w[XPOS] for w in s.words], pos=[w[UPOS] for w in s.words], heads=heads,
               deps=[w[DEPREL] if w[HEAD] != "0" else "ROOT" for w in s.words])


def write_doc(s: Any, doc: Any, parse: bool) -> None:
    """Copy a Doc's UPOS/XPOS (and tree, when ``parse``) into the sentence's columns."""
    for w, t in zip(s.words, doc):
        w[XPOS], w[UPOS] = t.tag_ or "_", t.pos_ or "X"
        if parse:
            w[HEAD] = "0" if t.head.i == t.i else str(t.head.i + 1)
            w[DEPREL] = "root" if t.dep_ == "ROOT" else t.dep_


def _docbin(path: Path, nlp: Any) -> Any:
    from spacy.tokens import DocBin

    db = DocBin()
    for s in read_file(str(path)):
        db.add(sentence_doc(s, nlp.vocab))
    return db


def train_spacy(corpus: Path, peers: Path, epochs: int) -> Path:
    """spaCy tagger (XPOS) + morphologizer (UPOS) + parser from scratch, CPU efficiency config."""
    import spacy
    from spacy.cli.init_config import init_config
    from spacy.cli.train import train

    out = peers / SPACY_DIR
    if (out / "model-best").is_dir():
        return out / "model-best"
    work = peers / "spacy-work"
    work.mkdir(parents=True, exist_ok=True)
    nlp = spacy.blank("en")
    for split in ("train", "dev"):
        _docbin(corpus / f"en_ewt-ud-{split}.conllu", nlp).to_disk(work / f"{split}.spacy")
    config = init_config(lang="en", pipeline=["tagger", "morphologizer", "parser"], optimize="efficiency")
    config["paths"]["train"] = str(work / "train.spacy")
    config["paths"]["dev"] = str(work / "dev.spacy")
    config["training"]["max_epochs"] = epochs
    config["training"]["max_steps"] = 0
    config["training"]["seed"] = 0
    config.to_disk(work / "config.cfg")
    print(f"peers: training spaCy {spacy.__version__} ({epochs} epochs at most)", file=sys.stderr, flush=True)
    t0 = time.time()
    train(work / "config.cfg", out, use_gpu=-1)
    _save_info(peers, "spacy", {"seconds": round(time.time() - t0, 1), "version": spacy.__version__,
                                "options": f"spacy init config --pipeline tagger,morphologizer,parser "
                                           f"--optimize efficiency; max_epochs {epochs}"})
    return out / "model-best"


def spacy_runner(model_dir: Path, parse: bool) -> Callable[[List[Any]], List[Any]]:
    """A function sentences (nlpipe, gold tokens) -> the same sentences with spaCy's UPOS/XPOS
    (and HEAD/DEPREL when ``parse``) written in place."""
    import spacy
    from spacy.tokens import Doc

    nlp = spacy.load(model_dir, exclude=[] if parse else ["parser"])

    def run(sents: List[Any]) -> List[Any]:
        # one sentence per Doc: the parser keeps preset sentence starts, so it cannot split one
        docs = (Doc(nlp.vocab, words=[w[FORM] for w in s.words],
                    sent_starts=[True] + [False] * (len(s.words) - 1)) for s in sents)
        for s, doc in zip(sents, nlp.pipe(docs, batch_size=256)):
            write_doc(s, doc, parse)
        return sents

    return run


def available(peers: Path = PEERS, parse: bool = False) -> Dict[str, Any]:
    """Trained en_ewt peer models under ``peers`` by name ("udpipe", "spacy"), each {"path", "info"}
    or {"skipped": why}; with ``parse``, a UDPipe 1 model trained without a parser is skipped."""
    info = _info(peers)
    out: Dict[str, Any] = {}
    for name, module, path in (("udpipe", "ufal.udpipe", udpipe_path(peers)),
                               ("spacy", "spacy", peers / SPACY_DIR / "model-best")):
        if not installed(module):
            out[name] = {"skipped": f"{module} is not installed (make bench-peers)"}
        elif not path.exists():
            out[name] = {"skipped": f"no model under {peers} (python bench/peers.py)"}
        elif name == "udpipe" and parse and "parser" not in udpipe_components(info.get(name, {})):
            out[name] = {"skipped": f"{path} has no parser (trained with --udpipe-parser none)"}
        else:
            out[name] = {"path": path, "info": info.get(name, {})}
    return out


def bare(sentences: List[Any]) -> List[Any]:
    """Copies of gold sentences with only the tokens: no lemma, tags, features or tree."""
    out = strip_stage("parse", strip_stage("pos", sentences))
    for s in out:
        for w in s.words:
            w[LEMMA] = w[FEATS] = "_"
    return out


def runner(name: str, path: Path, parse: bool) -> Callable[[List[Any]], List[Any]]:
    """``run(sentences) -> sentences`` tagged (and parsed) by peer ``name`` ("udpipe" or "spacy")."""
    if name == "spacy":
        return spacy_runner(path, parse)
    udpipe = udpipe_runner(path, parse)
    return lambda sents: parse_string(udpipe(to_string(sents)))


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peers", default=str(PEERS), help="where the peer models and info.json are kept")
    ap.add_argument("--treebank", default="en_ewt",
                    help="UD treebank name: its files are TREEBANK-ud-{train,dev}.conllu under --corpus")
    ap.add_argument("--corpus", help="folder of the treebank's files (default: $NLPIPE_CORPORA/TREEBANK)")
    ap.add_argument("--only", choices=("udpipe", "spacy"), help="train only this peer")
    ap.add_argument("--spacy-epochs", type=int, default=20, help="spaCy's max_epochs")
    ap.add_argument("--udpipe-tokenizer", default=UDPIPE_OPTIONS["tokenizer"],
                    help="UDPipe 1 tokenizer training options ('none': no tokenizer)")
    # UDPipe's defaults are 20 tagger and 10 parser iterations; fewer keep EWT training near an hour on one core
    ap.add_argument("--udpipe-tagger", default=UDPIPE_OPTIONS["tagger"], help="UDPipe 1 tagger training options")
    ap.add_argument("--udpipe-parser", default=UDPIPE_OPTIONS["parser"], help="UDPipe 1 parser training options")
    ap.add_argument("--udpipe-component", choices=COMPONENTS,
                    help="train only this UDPipe 1 component (kept for a later run to join; the parser "
                         "needs the tagger)")
    a = ap.parse_args(argv)
    peers = Path(a.peers)
    corpus = Path(a.corpus) if a.corpus else CORPORA / a.treebank
    files = treebank_files(corpus, a.treebank)
    for split in ("train", "dev"):
        if not files[split].is_file():
            sys.exit(f"bench/peers.py: {files[split]} not found (--treebank, --corpus, $NLPIPE_CORPORA)")
    peers.mkdir(parents=True, exist_ok=True)
    if a.only in (None, "udpipe"):
        print("UDPipe 1:", train_udpipe(corpus, peers, a.udpipe_tagger, a.udpipe_parser, a.udpipe_tokenizer,
                                        a.treebank, a.udpipe_component))
    if a.only in (None, "spacy"):
        if a.treebank != "en_ewt":
            print("spaCy: trained on en_ewt only (--only udpipe for other treebanks)", file=sys.stderr)
        else:
            print("spaCy:", train_spacy(corpus, peers, a.spacy_epochs))
    print(json.dumps(_info(peers), indent=1))


if __name__ == "__main__":
    main()
