"""SRL training data: UD CoNLL-U (UPOS/XPOS/HEAD/DEPREL) joined with PropBank spans in MISC.

:func:`join_propbank` keeps the UD sentences of the documents that have PropBank annotation and writes
their frames as MISC ``Pred=``/``SRL=`` (:func:`nlpipe.io.misc.frames_to_misc`); sentences of
unannotated documents are dropped (the issue: train and score only annotated ones).
``nlpipe train srl-data UD.conllu PROPS.gold_conll -o OUT.conllu`` does it for one split.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Optional

from nlpipe.io.conllu import Sentence, read_conllu, write_conllu
from nlpipe.io.formats import AlignReport, SrlSentence, align_conll2012, doc_key, read_conll2012
from nlpipe.io.inputs import open_input
from nlpipe.io.misc import Frame, frames_to_misc
from nlpipe.io.outputs import check_output, open_output


def join_propbank(ud: Iterable[Sentence], props: List[SrlSentence],
                  report: Optional[AlignReport] = None) -> Iterator[Sentence]:
    """UD sentences of annotated documents with their frames in MISC (others dropped)."""
    report = report if report is not None else AlignReport()
    annotated = {doc_key(s.doc_id) for s in props}
    current: Optional[str] = None
    for sent, frames in align_conll2012(ud, props, report):
        newdoc = sent.meta("newdoc id")
        if newdoc is not None:
            current = newdoc
        if current not in annotated:
            continue
        try:
            frames_to_misc(sent, frames)
        except ValueError as e:  # overlapping spans of one frame: keep the first, drop the rest
            report.messages.append(f"{sent.meta('sent_id')}: {e}; overlapping spans dropped")
            frames_to_misc(sent, [_without_overlaps(f) for f in frames])
        yield sent


def _without_overlaps(frame: Frame) -> Frame:
    """The frame without argument spans that overlap an earlier (longer-first) one."""
    covered = set()
    kept = []
    for s, e, label in sorted(frame.spans, key=lambda x: (x[0], -x[1])):
        if label != "V" and covered.intersection(range(s, e)):
            continue
        if label != "V":
            covered.update(range(s, e))
        kept.append((s, e, label))
    frame.spans = sorted(kept)
    return frame


def write_srl_data(ud_path: str, props_path: str, out_path: str) -> Dict[str, Any]:
    """Join ``ud_path`` (CoNLL-U) with ``props_path`` (CoNLL-2012 span props) into ``out_path``;
    return the counts of what was written and dropped."""
    check_output(out_path, [ud_path, props_path])
    stream, name = open_input(props_path)
    with stream:
        props = list(read_conll2012(stream, name))
    report = AlignReport()
    ud_stream, ud_name = open_input(ud_path)
    with ud_stream, open_output(out_path, [ud_path, props_path]) as out:
        n = write_conllu(join_propbank(read_conllu(ud_stream, ud_name), props, report), out)
    return {"output": out_path, "sentences": n, "predicates": report.predicates,
            "predicates_dropped": report.predicates_dropped, "spans": report.spans,
            "spans_dropped": report.spans_dropped, "spans_trimmed": report.spans_trimmed,
            "documents_without_props": report.documents_without_props,
            "documents_unmatched": report.documents_unmatched, "messages": list(report.messages)}
