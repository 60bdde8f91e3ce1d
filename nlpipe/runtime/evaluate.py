"""``nlpipe eval``: score a predicted file, or run a model on gold input and score what it writes.

:func:`evaluate` returns a JSON-able dict (scores in percent, full precision); :func:`summary`
turns it into a few human lines. ``eval ud`` (:data:`UD`) scores a predicted file on all the
CoNLL 2018 shared task metrics and :func:`summary` prints them as that task's script does. With a
model, the stage runs through the code path of the command-line filter
(:class:`nlpipe.runtime.pipeline.Pipeline`, so that the stage's limit on sentence length and its
windows apply; tokenize: the tokenizer on the raw text), on gold sentences with the stage's own
columns (:data:`nlpipe.stages.base.COLUMNS`) blanked, and its speed is reported too.
"""
from __future__ import annotations

import io
import time
from typing import Any, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from nlpipe import metrics
from nlpipe.io.conllu import FEATS, FORM, LEMMA, Sentence, read_file
from nlpipe.io.misc import ne_tags
from nlpipe.io.raw_text import raw_text
from nlpipe.errors import NlpipeError
from nlpipe.registry import STAGES, load_stage
from nlpipe.runtime.chain import Pipeline
from nlpipe.stages.base import COLUMNS
from nlpipe.tags import SCHEMES as TAG_SCHEMES, detect_scheme

SCHEMES = ("auto",) + TAG_SCHEMES
UD = "ud"   # not a stage: the whole file on the CoNLL 2018 shared task metrics (metrics.ud_scores)


def _pct(x: float) -> float:
    return 100.0 * x


def _prf(score: metrics.Score) -> Dict[str, Any]:
    return {"precision": _pct(score.precision), "recall": _pct(score.recall), "f1": _pct(score.f1),
            "gold": score.gold, "pred": score.system, "correct": score.correct}


# ---------------------------------------------------------------------------------------------
# Inputs

def _copy(sent: Sentence) -> Sentence:
    return Sentence(list(sent.comments), [list(r) for r in sent.rows], sent.end, sent.eol, sent.prefix,
                    sent.line)


def strip_stage(stage: str, sentences: Iterable[Sentence], gold_predicates: bool = False) -> List[Sentence]:
    """Copies of ``sentences`` without the columns ``stage`` writes (``srl``: also the predicates,
    unless ``gold_predicates``: the SRL model then labels the gold ones)."""
    blanked = [COLUMNS[stage]] if stage in COLUMNS else []
    if stage == "srl" and not gold_predicates:
        blanked.append(COLUMNS["predicates"])
    out = []
    for sent in sentences:
        c = _copy(sent)
        for w in c.words:
            for columns in blanked:
                columns.blank(w)
        out.append(c)
    return out


def unfilled_warning(stage: str, why: Optional[str], path: str) -> Optional[str]:
    """A warning when no word of the predicted file has what ``stage`` writes and is scored on
    (``why``: :meth:`Columns.absent`'s answer): the file is then probably not the stage's output,
    and every score will be 0."""
    return None if why is None else \
        f"{path} has no {COLUMNS[stage].label} at all ({why}): not the output of 'nlpipe {stage}'?"


def gold_warning(stage: str, why: Optional[str], path: str) -> Optional[str]:
    """A warning when the gold file has nothing ``stage`` is scored on (a treebank without SRL, say)."""
    return None if why is None else \
        f"{path} has no {COLUMNS[stage].label} at all ({why}): there is nothing to score {stage} against"


class Watched:
    """A file's sentences, passed on as they are read (the aligned scores stream both files), noting
    what the warnings and the ``pos`` scores ask of the whole file: :meth:`absent` for ``stage``'s
    columns, and in :attr:`filled` FEATS and LEMMA when some word has them."""

    def __init__(self, sentences: Iterable[Sentence], stage: str):
        self._sentences = sentences
        self._columns = COLUMNS.get(stage)
        self._words = self._carried = False
        self.filled: Set[int] = set()

    def __iter__(self) -> Iterator[Sentence]:
        for s in self._sentences:
            if s.words:
                self._words = True
                if self._columns is not None and not self._carried:
                    self._carried = self._columns.carried(s)
                if len(self.filled) < 2:
                    self.filled.update(c for c in (FEATS, LEMMA) if any(w[c] != "_" for w in s.words))
            yield s

    def absent(self) -> Optional[str]:
        """:meth:`Columns.absent` of the sentences read so far."""
        return self._columns.missing if self._columns is not None and self._words and not self._carried \
            else None


def _train_forms(path: str) -> Set[str]:
    forms: Set[str] = set()
    for sent in read_file(path):
        forms.update(w[FORM] for w in sent.words)
    return forms


# ---------------------------------------------------------------------------------------------
# Scoring

# Scored over character-aligned words: both files stream through metrics.aligned_scores once.
ALIGNED = (UD, "tokenize", "pos", "parse")


def score(stage: str, gold: Iterable[Sentence], pred: Iterable[Sentence], gold_path: str = "<gold>",
          pred_path: str = "<pred>", train_forms: Optional[Set[str]] = None,
          scheme: str = "auto") -> Dict[str, Any]:
    """Scores of ``pred`` against ``gold`` for ``stage`` (or :data:`UD`) as a JSON-able dict (percentages).
    The :data:`ALIGNED` stages read each file once, a sentence at a time."""
    result: Dict[str, Any] = {"stage": stage}
    if stage in ALIGNED:
        watched = gold if isinstance(gold, Watched) else Watched(gold, stage)
        m = metrics.aligned_scores(watched, pred, gold_path, pred_path, train_forms if stage == "pos" else None,
                                   heads=stage in (UD, "parse"))
        if stage == UD:
            result["metrics"] = {name.lower(): _ud_score(m[name.lower()]) for name in metrics.UD_METRICS}
            return result
        words = m["words"]
        result.update(words=words.gold, pred_words=words.system, aligned_words=words.correct)
        if words.correct != words.gold or words.system != words.gold:
            result["words_f1"] = _pct(words.f1)
        if stage == "tokenize":
            detail = {name: m[name] for name in ("tokens", "sentences", "words")}
            for name, s in detail.items():
                result[name + "_f1"] = _pct(s.f1)
            result["detail"] = {name: _prf(s) for name, s in detail.items()}
        elif stage == "pos":
            # UFeats and AllTags where the gold has features, Lemmas where it has lemmas
            has = {c: c in watched.filled for c in (FEATS, LEMMA)}
            wanted = {"ufeats": has[FEATS], "alltags": has[FEATS], "lemmas": has[LEMMA]}
            for name in ("upos", "xpos", "ufeats", "alltags", "lemmas", "unseen_upos", "unseen_xpos"):
                if name in m and wanted.get(name, True):
                    result[name] = _pct(m[name].f1)
            if train_forms is not None:
                result["unseen_words"] = m["unseen_upos"].gold
        else:
            for name in ("uas", "las", "uas_nopunct", "las_nopunct"):
                result[name] = _pct(m[name].f1)
            result["nopunct_words"] = m["uas_nopunct"].gold
        return result

    gold, pred = list(gold), list(pred)
    what = f"{stage} scores"
    metrics.check_same_words(gold, pred, gold_path, pred_path, what)
    result["sentences"] = len(gold)
    result["words"] = sum(len(s.words) for s in gold)
    if stage == "ner":
        gt = [ne_tags(s, gold_path) for s in gold]
        pt = [ne_tags(s, pred_path) for s in pred]
        detected = detect_scheme(gt + pt)
        if scheme in ("bio", "iob1") and detected == "bioes":
            raise NlpipeError(f"--scheme {scheme} given but the tags use E-/S- (BIOES)")
        overall, types, tag_acc = metrics.span_scores(gt, pt)
        result.update(_prf(overall))
        result.update(scheme=detected if scheme == "auto" else scheme, tag_accuracy=_pct(tag_acc.accuracy),
                      types={k: _prf(v) for k, v in types.items()})
    elif stage == "predicates":
        ps = metrics.predicate_scores(gold, pred)
        result.update(_prf(ps["predicates"]))
        result.update(sense_accuracy=_pct(ps["sense"].accuracy), sense_f1=_pct(ps["labeled"].f1))
    elif stage == "srl":
        overall, roles, props, perfect = metrics.srl_scores(gold, pred, gold_path, pred_path)
        result.update(_prf(overall))
        ps = metrics.predicate_scores(gold, pred)
        result.update(propositions=props, perfect_propositions=_pct(perfect / props) if props else 0.0,
                      roles={k: _prf(v) for k, v in roles.items()},
                      predicates=dict(_prf(ps["predicates"]), sense_accuracy=_pct(ps["sense"].accuracy)))
    else:
        raise NlpipeError(f"unknown stage '{stage}' (expected one of: {', '.join(STAGES)})")
    return result


def _ud_score(score: metrics.Score) -> Dict[str, Any]:
    out = _prf(score)
    if score.aligned is not None:
        out.update(aligned=score.aligned, aligned_accuracy=_pct(score.accuracy))
    return out


def _run_model(stage: str, gold: List[Sentence], gold_path: str, model: Optional[str], device: str,
               gold_predicates: bool, gold_parse: bool = False,
               options: Optional[Dict[str, Any]] = None,
               tags: str = "gold") -> Tuple[List[Sentence], Dict[str, float], List[str]]:
    """Run the stage on ``gold`` (columns blanked) as the filter runs it; return (predicted sentences,
    speed dict, warnings). ``options`` go to the stage's loader (e.g. ``margin``); ``tags``
    (parse): ``"predicted"`` blanks the POS columns too and runs the shipped tagger first.

    Only the annotation itself is timed; loading is reported as ``load_seconds``.
    """
    t0 = time.perf_counter()
    warnings: List[str] = []
    if stage == "tokenize":
        annotator = load_stage("tokenize", model)
        load_seconds = time.perf_counter() - t0
        text = raw_text(gold)
        t1 = time.perf_counter()
        pred = list(annotator.tokenize(io.StringIO(text), gold_path))
    else:
        # an srl model that predicts predicates itself is told to label the gold ones instead
        extra = {"predicates_from_input": True} if stage == "srl" and gold_predicates else {}
        if stage == "srl" and gold_parse:
            extra["parse_from_input"] = True   # the gold file's HEAD column feeds the syntactic head
        steps = [load_stage(stage, model, device=device, **extra, **(options or {}))]
        requires = getattr(steps[0], "requires", frozenset())
        if stage == "srl" and not gold_predicates and ({"predicates", "Pred"} & set(requires)):
            steps.insert(0, load_stage("predicates", None, device=device))
        if stage == "parse" and tags == "predicted":
            steps.insert(0, load_stage("pos", None, device=device))
        load_seconds = time.perf_counter() - t0
        pred = strip_stage(stage, gold, gold_predicates)
        if stage == "parse" and tags == "predicted":
            pred = strip_stage("pos", pred)
        t1 = time.perf_counter()
        Pipeline(steps).annotate(pred, gold_path, warnings.append)   # in place, as for a chunk of the filter
        annotator = steps[-1]
    seconds = time.perf_counter() - t1
    tokens = sum(len(s.tokens) for s in gold)
    speed = {"load_seconds": load_seconds, "seconds": seconds,
             "tokens_per_s": tokens / seconds if seconds > 0 else 0.0,
             "sentences_per_s": len(gold) / seconds if seconds > 0 else 0.0}
    if hasattr(annotator, "mean_templates"):   # dynamic feature selection: templates per decision
        speed["mean_templates"] = annotator.mean_templates
    return pred, speed, warnings


def evaluate(stage: str, gold: str, pred: Optional[str] = None, model: Optional[str] = None,
             train: Optional[str] = None, scheme: str = "auto", device: str = "cpu",
             gold_predicates: bool = False, gold_parse: bool = False,
             options: Optional[Dict[str, Any]] = None, tags: str = "gold") -> Dict[str, Any]:
    """Score ``pred`` (a file) or ``model`` (run on ``gold``) against the gold CoNLL-U file.

    ``train`` adds scores on words unseen in that file (pos); ``scheme`` names the NE tag encoding
    (``auto`` detects it; decoding follows conlleval for all); ``gold_predicates`` keeps gold
    ``Pred`` when running an SRL model; ``gold_parse`` gives it the gold HEAD column as its parse;
    ``options`` go to the model's loader (``margin``); ``tags`` (parse with a model): the POS tags the
    parser reads, the gold file's (``"gold"``) or the shipped tagger's (``"predicted"``).
    """
    if stage not in STAGES and stage != UD:
        raise NlpipeError(f"unknown stage '{stage}' (expected one of: {', '.join(STAGES + (UD,))})")
    if stage == UD and pred is None:
        raise NlpipeError("eval ud scores a predicted file: give --pred (e.g. the output of 'nlpipe annotate')")
    if scheme not in SCHEMES:
        raise NlpipeError(f"unknown scheme '{scheme}' (expected one of: {', '.join(SCHEMES)})")
    if pred is not None and model is not None:
        raise NlpipeError("give either --pred or --model, not both")
    gold_sents = Watched(read_file(gold), stage)
    train_forms = _train_forms(train) if train else None
    speed = None
    run_warnings: List[str] = []
    if pred is not None:
        pred_sents = Watched(read_file(pred), stage)
        pred_name = pred
        result = score(stage, gold_sents, pred_sents, gold, pred_name, train_forms, scheme)
    else:
        if tags not in ("gold", "predicted"):
            raise NlpipeError(f"unknown tags '{tags}' (expected gold or predicted)")
        gold_list = list(gold_sents)
        predicted, speed, run_warnings = _run_model(stage, gold_list, gold, model, device, gold_predicates,
                                                    gold_parse, options, tags)
        result = score(stage, gold_list, predicted, gold, f"<{stage} model output>", train_forms, scheme)
    warnings = [gold_warning(stage, gold_sents.absent(), gold)]
    if pred is not None:
        warnings.append(unfilled_warning(stage, pred_sents.absent(), pred))
    warnings += run_warnings
    result["gold_file"] = gold
    if pred is not None:
        result["pred_file"] = pred
    else:
        result["model"] = model or "default"
        result["speed"] = speed
        result.update(options or {})
        if stage == "srl":
            result["gold_predicates"] = gold_predicates
            result["gold_parse"] = gold_parse
        if stage == "parse":
            result["tags"] = tags
    if any(warnings):
        result["warnings"] = [w for w in warnings if w]
    return result


# ---------------------------------------------------------------------------------------------
# Human summary

def _f(x: float) -> str:
    return f"{x:.2f}"


def ud_table(result: Dict[str, Any]) -> str:
    """The :data:`UD` scores as the shared task's script prints them with ``-v``: one line per
    metric, precision, recall, F1 and the accuracy on aligned words, in percent."""
    lines = ["Metric     | Precision |    Recall |  F1 Score | AligndAcc",
             "-----------+-----------+-----------+-----------+-----------"]
    for name in metrics.UD_METRICS:
        m = result["metrics"][name.lower()]
        acc = f"{m['aligned_accuracy']:10.2f}" if "aligned_accuracy" in m else ""
        lines.append(f"{name:11}|{m['precision']:10.2f} |{m['recall']:10.2f} |{m['f1']:10.2f} |{acc}")
    return "\n".join(lines)


def summary(result: Dict[str, Any]) -> str:
    """A few lines for people: the headline scores rounded to 2 decimals, counts and speed."""
    stage = result["stage"]
    if stage == UD:
        return ud_table(result)
    lines = []
    if stage == "tokenize":
        lines.append(f"tokenize: tokens F1 {_f(result['tokens_f1'])}  sentences F1 {_f(result['sentences_f1'])}  "
                     f"words F1 {_f(result['words_f1'])}  ({result['detail']['tokens']['gold']} gold tokens, "
                     f"{result['detail']['sentences']['gold']} sentences)")
    elif stage == "pos":
        line = f"pos: UPOS {_f(result['upos'])}  XPOS {_f(result['xpos'])}"
        for key, name in (("ufeats", "UFeats"), ("alltags", "AllTags"), ("lemmas", "Lemmas")):
            if key in result:
                line += f"  {name} {_f(result[key])}"
        line += f"  ({result['words']} words)"
        if "unseen_upos" in result:
            line += (f"; unseen words ({result['unseen_words']}): UPOS {_f(result['unseen_upos'])}  "
                     f"XPOS {_f(result['unseen_xpos'])}")
        lines.append(line)
    elif stage == "parse":
        lines.append(f"parse: UAS {_f(result['uas'])}  LAS {_f(result['las'])}  ({result['words']} words); "
                     f"without punctuation: UAS {_f(result['uas_nopunct'])}  LAS {_f(result['las_nopunct'])}")
        if "tags" in result:
            lines.append("  POS tags: " + ("the gold file's (--tags predicted: the shipped tagger's)"
                                           if result["tags"] == "gold" else "predicted by the shipped tagger"))
    elif stage in ("ner", "predicates", "srl"):
        extra = {"ner": lambda r: f"  [{r['scheme']}, conlleval]",
                 "predicates": lambda r: f"  sense accuracy {_f(r['sense_accuracy'])}",
                 "srl": lambda r: f"  ({r['propositions']} propositions; predicates F1 "
                                  f"{_f(r['predicates']['f1'])})"}[stage](result)
        lines.append(f"{stage}: P {_f(result['precision'])}  R {_f(result['recall'])}  F1 {_f(result['f1'])}  "
                     f"({result['gold']} gold, {result['pred']} predicted, {result['correct']} correct){extra}")
        for label, s in sorted((result.get("types") or result.get("roles") or {}).items()):
            lines.append(f"  {label:<12} P {_f(s['precision']):>6}  R {_f(s['recall']):>6}  F1 {_f(s['f1']):>6}"
                         f"  ({s['gold']} gold)")
    if "words_f1" in result and stage in ("pos", "parse"):
        lines.append(f"  tokenization differs: words F1 {_f(result['words_f1'])} "
                     f"({result['aligned_words']} of {result['words']} gold words aligned)")
    speed = result.get("speed")
    if speed:
        lines.append(f"speed: {speed['tokens_per_s']:.0f} tokens/s, {speed['sentences_per_s']:.1f} sentences/s "
                     f"({speed['seconds']:.2f} s; model loaded in {speed['load_seconds']:.2f} s)")
        if "mean_templates" in speed:
            per = "word" if stage == "pos" else "transition"
            lines.append(f"feature templates per {per}: {speed['mean_templates']:.1f}")
    return "\n".join(lines)
