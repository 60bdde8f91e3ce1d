"""``nlpipe train pipeline``: a whole pipeline for one language from one treebank's train and dev files.

Each part is trained by its stage's own public training function, into ``OUT/<part>``:

    tokenize           the character segmenter (tokens, sentences, multiword tokens)
    pos                the tagger (UPOS, and XPOS, lemmas and FEATS where the treebank has them)
    pos-bilstm         the accurate BiLSTM tagger (the same columns), joined with the fast tagger
                       where that helps on dev (``--linear``; ``--set pos-bilstm.linear=null``: never);
                       where its dev scores beat the fast tagger's, it becomes ``pos`` (the one the
                       chain runs) and the fast one moves to ``pos-fast`` (:func:`keep_better_tagger`)
    parse-transition   the transition parser (linear, fast)
    parse              the biaffine parser: the folder named after its stage, so the one that
                       ``nlpipe annotate --models OUT`` runs for parse (the other: ``--model
                       parse=OUT/parse-transition``)

Where the treebank has FEATS, each parser folder also gets the FEATS classifier that runs after the
parse (``feats/``, :mod:`nlpipe.train.tree_feats`), chosen on the pipeline's tagger's dev output.

Nothing English goes into a model of another language: each trainer keeps its English resources (the
EWT word rules, GloVe vectors and clusters) for ``en`` only, and the pipeline passes ``--lang`` to
every one; ``--vectors`` gives the tagger and the biaffine parser vectors of the language. The
pipeline's own choices over the trainers' defaults: the tokenizer averages its weights with a shorter
memory (:data:`TOKENIZER_EMA`), fit for treebanks of 50k words, and sees its training sentences in a
new random order every epoch (:data:`TOKENIZER_SHUFFLE`) at a higher learning rate
(:data:`TOKENIZER_LR`). The parsers learn from the gold tags: on fr_sequoia, jack-knifed tags did not
help the transition parser (see docs/experiments.md).

The time budget (``max_minutes``, default :data:`DEFAULT_MINUTES`) is shared: the tokenizer may use
:data:`TOKENIZE_SHARE` of it and the BiLSTM tagger :data:`BILSTM_TAGGER_SHARE`, the fast tagger and
the transition parser run to their epochs' end, and the biaffine parser, trained last, gets what is
left. Options for one part's trainer come in
``part_options`` (``{"parse": {"epochs": 2}}``), over the pipeline's own choices.
"""
from __future__ import annotations

import inspect
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from nlpipe.errors import NlpipeError
from nlpipe.io.model_dir import CONFIG, UNDETERMINED, read_config

PARTS = ("tokenize", "pos", "pos-bilstm", "parse-transition", "parse")
STAGE_OF = {"tokenize": "tokenize", "pos": "pos", "pos-bilstm": "pos", "parse-transition": "parse",
            "parse": "parse"}
DEFAULT_MINUTES = 55.0         # a ~50k-word treebank on 2 CPU cores, with some time to spare under an hour
TOKENIZE_SHARE = 0.25
BILSTM_TAGGER_SHARE = 0.25
FAST_TAGGER = "pos-fast"       # the fast tagger's folder when the BiLSTM tagger took ``pos``
# the dev scores whose mean ranks the two taggers (those both models have)
TAGGER_SCORES = ("upos", "xpos", "ufeats", "alltags", "lemmas")
# The tokenizer's weight average per update: its own default, 0.998, suits EWT (~1M characters); on
# fr_sequoia (266k characters, ~43 updates an epoch) the average was still mostly the initial weights
# after 5 epochs (dev tokens F1 78.77), where 0.99 gave 90.83 after 3.
TOKENIZER_EMA = 0.99
# The tokenizer's training text: every sentence boundary cut and the sentences put in a new random order
# every epoch (as UDPipe 1 trains its tokenizer); the trainer's own default keeps the treebank's order (the
# shipped EWT model). On fr_sequoia (no paragraph marks: one 266k-character paragraph) 60 epochs gave dev
# tokens / sentences / words F1 99.49 / 90.64 / 99.38 where the treebank's order gave 99.45 / 88.67 / 99.34.
TOKENIZER_SHUFFLE = 1.0
# The tokenizer's learning rate (its own default 2e-3): on shuffled fr_sequoia, dev sentences F1 at the end
# 90.35 / 91.44 (seeds 1 / 2) where 2e-3 gave 90.64 / 88.37, and it learns faster in the first epochs,
# which counts when the time budget cuts the training short.
TOKENIZER_LR = 4e-3
MIN_PARSER_MINUTES = 1.0       # the biaffine parser's least budget when the others used up the rest

Log = Callable[[str], None]


@dataclass
class PipelineOptions:
    """What the whole pipeline shares; ``part_options`` override one part's trainer arguments."""

    lang: str = UNDETERMINED
    seed: int = 1
    threads: int = 1
    device: str = "cpu"
    precision: str = "fp32"       # the torch trainers' arithmetic (nlpipe.nn.precision)
    max_minutes: Optional[float] = None
    vectors: Any = None            # word vectors for the taggers and the biaffine parser: a text file, or Vectors
    parts: Sequence[str] = PARTS
    part_options: Dict[str, Dict[str, Any]] = field(default_factory=dict)


def vector_options(options: PipelineOptions) -> Dict[str, Any]:
    """``vectors=`` for the tagger and the biaffine parser when ``--vectors`` was given; otherwise each
    trainer's own default (English GloVe for ``en`` only, none for other languages)."""
    return {} if options.vectors is None else {"vectors": options.vectors}


def trainer_of(part: str) -> Tuple[Callable[..., Any], Any]:
    """(the public training function of ``part``, the dataclass or the dict of defaults of its
    hyper-parameters, or None)."""
    if part == "tokenize":
        from nlpipe.train.tokenize import train
        return train, None
    if part == "pos":
        from nlpipe.train import pos
        return pos.train_model, pos.TrainOptions
    if part == "pos-bilstm":
        from nlpipe.models.bilstm_tagger import DEFAULT_HYPER
        from nlpipe.train import bilstm_tagger
        return bilstm_tagger.train, DEFAULT_HYPER
    if part == "parse-transition":
        from nlpipe.train import transition
        return transition.train_transition, transition.TrainOptions
    from nlpipe.train import biaffine
    return biaffine.train, None


def option_names(part: str) -> Tuple[List[str], List[str]]:
    """(the keyword arguments of ``part``'s training function that ``--set`` may give, the names of
    its hyper-parameters)."""
    trainer, hyper = trainer_of(part)
    params = [k for k in inspect.signature(trainer).parameters
              if k not in ("log", "out", "out_dir", "options", "train", "dev", "train_path", "dev_path")]
    return params, sorted(hyper if isinstance(hyper, dict) else getattr(hyper, "__dataclass_fields__", {}))


def check_part_options(options: PipelineOptions) -> None:
    """Refuse, before anything is trained, an option that a part's trainer does not take."""
    for part, given in options.part_options.items():
        params, fields = option_names(part)
        unknown = sorted(k for k in given if k not in params and k not in fields)
        if unknown:
            raise NlpipeError(f"--set {part}.{unknown[0]}: the {part} trainer has no option '{unknown[0]}' "
                              f"(it takes: {', '.join(sorted(set(params) | set(fields)))})")


def _given(part: str, options: PipelineOptions, defaults: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(keyword arguments of ``part``'s training function, its hyper-parameters):
    the pipeline's ``defaults`` updated with the user's options for ``part``."""
    params, fields = option_names(part)
    given = {**defaults, **options.part_options.get(part, {})}
    hyper = {k: given.pop(k) for k in list(given) if k in fields and k not in params}
    return given, hyper


# ---------------------------------------------------------------------------------------------
# The parts

def train_tokenizer(train: str, dev: str, out: Path, options: PipelineOptions, minutes: Optional[float],
                    log: Log) -> None:
    from nlpipe.train.tokenize import train as trainer

    defaults: Dict[str, Any] = {"lang": options.lang, "seed": options.seed, "threads": options.threads,
                                "device": options.device, "precision": options.precision}
    if minutes is not None:
        defaults["time_limit"] = 60.0 * minutes
    if "ema_decay" in inspect.signature(trainer).parameters:
        defaults["ema_decay"] = TOKENIZER_EMA
    if "shuffle" in inspect.signature(trainer).parameters:
        defaults["shuffle"] = TOKENIZER_SHUFFLE
        defaults["lr"] = TOKENIZER_LR
    kwargs, _ = _given("tokenize", options, defaults)
    trainer(train, dev, str(out), log=log, **kwargs)


def train_tagger(train: str, dev: str, out: Path, options: PipelineOptions, minutes: Optional[float],
                 log: Log) -> None:
    from nlpipe.train import pos

    defaults: Dict[str, Any] = {"lang": options.lang, "seed": options.seed, **vector_options(options)}
    kwargs, hyper = _given("pos", options, defaults)
    try:
        pos.train_model(train, dev, str(out), pos.TrainOptions(**hyper), log=log, **kwargs)
    except ValueError as e:
        raise NlpipeError(f"pos: training failed: {e}") from None


def train_bilstm_tagger(train: str, dev: str, out: Path, options: PipelineOptions, minutes: Optional[float],
                        log: Log) -> None:
    from nlpipe.train.bilstm_tagger import train as trainer

    defaults: Dict[str, Any] = {"lang": options.lang, "seed": options.seed, "threads": options.threads,
                                "device": options.device, "precision": options.precision,
                                **vector_options(options)}
    if minutes is not None:
        defaults["max_minutes"] = minutes
    if "pos" in options.parts and (out.parent / "pos" / CONFIG).is_file():
        defaults["linear"] = str(out.parent / "pos")    # the fast tagger trained just before
    kwargs, hyper = _given("pos-bilstm", options, defaults)
    hyper = {**(kwargs.pop("hyper", None) or {}), **hyper}   # --set pos-bilstm.hidden=256 or .hyper={...}
    trainer(train, dev, str(out), log=_Stream(log), hyper=hyper or None, **kwargs)


def tagger_score(scores: Dict[str, Any], keys: Sequence[str]) -> float:
    """The mean of a tagger's dev ``scores`` (without their ``dev_`` prefix) over ``keys``."""
    return sum(float(scores[k]) for k in keys) / len(keys)


def keep_better_tagger(root: Path, log: Log) -> Optional[bool]:
    """Where ``root`` holds both taggers (``pos``, ``pos-bilstm``), keep as ``pos`` the one with the
    better mean of the dev scores both have (:data:`TAGGER_SCORES`; a tie keeps the fast one): the
    BiLSTM tagger moves to ``pos`` and the fast one to :data:`FAST_TAGGER` when it wins. Returns
    whether it won (None: not both taggers there)."""
    import shutil

    fast, accurate = root / "pos", root / "pos-bilstm"
    if not (fast / CONFIG).is_file() or not (accurate / CONFIG).is_file():
        return None
    a, b = dev_scores(read_config(fast)), dev_scores(read_config(accurate))
    keys = [k for k in TAGGER_SCORES if k in a and k in b]
    if not keys:
        return None
    fast_score, accurate_score = tagger_score(a, keys), tagger_score(b, keys)
    won = accurate_score > fast_score
    log(f"pos: dev mean of {', '.join(keys)}: BiLSTM {accurate_score:.2f}, fast {fast_score:.2f}: "
        + (f"the BiLSTM tagger is {fast}, the fast one {root / FAST_TAGGER}" if won
           else f"the fast tagger stays {fast}"))
    if won:
        shutil.rmtree(root / FAST_TAGGER, ignore_errors=True)
        fast.rename(root / FAST_TAGGER)
        accurate.rename(fast)
    return won


def train_transition(train: str, dev: str, out: Path, options: PipelineOptions, minutes: Optional[float],
                     log: Log) -> None:
    from nlpipe.train import transition

    kwargs, hyper = _given("parse-transition", options, {"lang": options.lang, "seed": options.seed,
                                                         "pos_source": "gold (the training file)"})
    transition.train_transition(train, dev, str(out), transition.TrainOptions(**hyper),
                                log=_Stream(log), **kwargs)


def train_biaffine(train: str, dev: str, out: Path, options: PipelineOptions, minutes: Optional[float],
                   log: Log) -> None:
    from nlpipe.train import biaffine

    defaults: Dict[str, Any] = {"lang": options.lang, "seed": options.seed, "threads": options.threads,
                                "device": options.device, "precision": options.precision,
                                "pos_source": "gold (the training file)",
                                **vector_options(options)}
    if minutes is not None:
        defaults["max_minutes"] = minutes
    kwargs, _ = _given("parse", options, defaults)
    biaffine.train(train, dev, str(out), log=_Stream(log), **kwargs)


def train_feats_after_parse(train: str, dev: str, root: Path, parsers: Sequence[str], options: PipelineOptions,
                            log: Log) -> Dict[str, Dict[str, Any]]:
    """Give the parsers ``parsers`` (parts) in ``root`` the FEATS classifier that runs after the
    parse, trained once (when the treebank has FEATS and ``root`` holds the tagger, whose output on
    dev chooses each parser's groups); returns part -> what :func:`add_to_parsers` says of it."""
    from nlpipe.train.tree_feats import add_to_parsers, has_feats

    tagger = root / "pos"
    if not parsers or not (tagger / CONFIG).is_file() or not has_feats(train):
        return {}
    results = add_to_parsers(train, dev, [str(root / p) for p in parsers], str(tagger), device=options.device,
                             log=log)
    return dict(zip(parsers, results))


# part -> its trainer, in the order they run (the biaffine parser last: it takes what time is left)
TRAINERS: Dict[str, Callable[..., None]] = {
    "tokenize": train_tokenizer,
    "pos": train_tagger,
    "pos-bilstm": train_bilstm_tagger,
    "parse-transition": train_transition,
    "parse": train_biaffine,
}


class _Stream:
    """A writable text stream over a log function (for trainers that log to a stream)."""

    def __init__(self, log: Log):
        self.log = log

    def write(self, text: str) -> int:
        for line in text.rstrip("\n").split("\n"):
            if line:
                self.log(line)
        return len(text)

    def flush(self) -> None:
        pass


# ---------------------------------------------------------------------------------------------
# The pipeline

def check_treebank(train: str, dev: str) -> None:
    """Fail early, naming the file, when train or dev cannot be read."""
    for role, path in (("--train", train), ("--dev", dev)):
        if not Path(path).is_file():
            raise NlpipeError(f"{role} {path}: no such file")


def train_pipeline(train: str, dev: str, out: str, options: Optional[PipelineOptions] = None,
                   log: Log = lambda m: print(m, file=sys.stderr)) -> Dict[str, Any]:
    """Train every part of ``options.parts`` into ``out/<part>``; return ``{"model": out,
    "language", "minutes", "parts": [{"part", "stage", "model", "minutes", "scores"}]}`` with each
    part's dev scores as recorded in its ``config.json``."""
    options = options or PipelineOptions()
    unknown = [p for p in options.parts if p not in TRAINERS]
    if unknown:
        raise NlpipeError(f"unknown part(s) {', '.join(unknown)} (expected some of: {', '.join(PARTS)})")
    for part in options.part_options:
        if part not in TRAINERS:
            raise NlpipeError(f"--set {part}...: no part '{part}' (expected one of: {', '.join(PARTS)})")
    check_part_options(options)
    check_treebank(train, dev)
    budget = DEFAULT_MINUTES if options.max_minutes is None else options.max_minutes
    start = time.time()
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    done: List[Dict[str, Any]] = []
    for part in [p for p in TRAINERS if p in options.parts]:
        left = budget - (time.time() - start) / 60
        minutes = share(part, budget, left)
        log(f"pipeline: training {part} -> {root / part}"
            + (f" (at most {minutes:.1f} min)" if minutes is not None else ""))
        t0 = time.time()
        TRAINERS[part](train, dev, root / part, options, minutes, lambda m, p=part: log(f"[{p}] {m}"))
        config = read_config(root / part)
        done.append({"part": part, "stage": STAGE_OF[part], "model": str(root / part),
                     "minutes": round((time.time() - t0) / 60, 1),
                     "scores": dev_scores(config)})
        if part == "pos-bilstm" and "pos" in options.parts and keep_better_tagger(root, log):
            for entry in done:    # the folders' new names
                entry["part"] = {"pos": FAST_TAGGER, "pos-bilstm": "pos"}.get(entry["part"], entry["part"])
                entry["model"] = str(root / entry["part"])
    feats = train_feats_after_parse(train, dev, root, [p for p in TRAINERS if p in options.parts and STAGE_OF[p] == "parse"],
                                    options, lambda m: log(f"[feats] {m}"))
    for entry in done:   # dev UFeats of the tagger, then after this parser's FEATS (equal: none kept)
        result = feats.get(entry["part"], {})
        for key in ("ufeats_tagger", "ufeats_after_parse"):
            if result.get(f"dev_{key}") is not None:
                entry["scores"][key] = result[f"dev_{key}"]
    return {"model": str(root), "language": options.lang, "minutes": round((time.time() - start) / 60, 1),
            "parts": done}


def share(part: str, budget: float, left: float) -> Optional[float]:
    """Minutes ``part`` may take: the tokenizer and the BiLSTM tagger a share of the budget, the
    biaffine parser what is left (at least :data:`MIN_PARSER_MINUTES`); None for parts that run to their epochs' end."""
    if part == "tokenize":
        return max(MIN_PARSER_MINUTES, min(left, TOKENIZE_SHARE * budget))
    if part == "pos-bilstm":
        return max(MIN_PARSER_MINUTES, min(left, BILSTM_TAGGER_SHARE * budget))
    if part == "parse":
        return max(MIN_PARSER_MINUTES, left)
    return None


def dev_scores(config: Dict[str, Any]) -> Dict[str, Any]:
    """The dev scores of a model's training block, without their ``dev_`` prefix."""
    scores = (config.get("training") or {}).get("scores") or {}
    return {k[4:]: v for k, v in scores.items() if k.startswith("dev_") and v is not None}


def score_table(result: Dict[str, Any]) -> List[str]:
    """Lines of a table of each part's dev scores: one block per part, one metric a line."""
    lines = []
    for p in result["parts"]:
        lines.append(f"{p['part']} ({p['stage']}, {p['minutes']} min): {p['model']}")
        for metric, value in p["scores"].items():
            lines.append(f"  dev {metric:<16} {value:>7.2f}" if isinstance(value, (int, float))
                         else f"  dev {metric:<16} {value}")
    return lines


def parse_part_option(text: str) -> Tuple[str, str, Any]:
    """``"parse.epochs=2"`` -> ``("parse", "epochs", 2)``; the value read as JSON when it is JSON
    (numbers, true/false/null), else kept as a string. Dashes in the name become underscores."""
    import json

    head, sep, value = text.partition("=")
    part, dot, name = head.partition(".")
    if not sep or not dot or not part or not name:
        raise NlpipeError(f"--set expects PART.OPTION=VALUE (e.g. parse.epochs=2), got '{text}'")
    try:
        parsed: Any = json.loads(value)
    except ValueError:
        parsed = value
    return part, name.replace("-", "_"), parsed
