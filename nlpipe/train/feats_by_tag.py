"""The BiLSTM tagger's FEATS restricted by its tag: a word tagged ``UPOS<TAB>XPOS`` gets only a FEATS
string that words with that tag had in training (where that gains UFeats + AllTags on dev).

The FEATS head and the tag head are trained side by side but decided apart, so a word tagged NNS
could get ``Number=Sing``; the more a treebank's XPOS says about the features, the more the tag
rules out. ``nlpipe train pos --arch bilstm`` chooses the restriction on dev; for a tagger trained
before it::

    python -m nlpipe.train.feats_by_tag MODEL_DIR TRAIN.conllu DEV.conllu

writes the rows into the folder's ``vocab.json`` (``feats_by_tag``) where they gain UFeats +
AllTags on dev, and the choice into ``config.json`` (``training.feats_by_tag``); nothing else changes.
"""
from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Sequence, Set

from nlpipe.io.conllu import FEATS, UPOS, XPOS, read_file
from nlpipe.io.model_dir import CONFIG, read_json, write_json
from nlpipe.nn.weights import VOCAB
from nlpipe.stages.pos import LABEL_SEP


def feats_by_tag_rows(pairs: Iterable[Sequence[str]]) -> List[List[str]]:
    """``[tag, FEATS, ...]`` rows, sorted, from ``(tag, FEATS)`` pairs of training words."""
    seen: Dict[str, Set[str]] = defaultdict(set)
    for tag, feats in pairs:
        seen[tag].add(feats)
    return [[tag, *sorted(feats)] for tag, feats in sorted(seen.items())]


def choose_feats_by_tag(model: Any, rows: List[List[str]], score: Callable[[], Dict[str, float]],
                        say: Callable[[str], None]) -> bool:
    """Leave ``rows`` in ``model`` (a :class:`~nlpipe.models.bilstm_tagger.TaggerModel`) where
    ``score()`` (dev scores) gives a higher UFeats + AllTags with them than without (ties: without);
    returns whether it does. AllTags counts too: the restriction is about FEATS agreeing with the tags."""
    model.set_feats_by_tag([])
    before = score()
    model.set_feats_by_tag(rows)
    after = score()
    keep = after["ufeats"] + after.get("alltags", 0) > before["ufeats"] + before.get("alltags", 0)
    say(f"feats: dev UFeats / AllTags with the FEATS of each tag in training {after['ufeats']:.2f} / "
        f"{after.get('alltags', 0):.2f}, without {before['ufeats']:.2f} / {before.get('alltags', 0):.2f}: "
        + ("kept" if keep else "left out"))
    if not keep:
        model.set_feats_by_tag([])
    return keep


def main(argv: List[str]) -> None:
    """``MODEL_DIR TRAIN.conllu DEV.conllu`` (see the module's docstring)."""
    from nlpipe.registry import load_stage
    from nlpipe.train.loop import stage_scores

    model_dir, train, dev = Path(argv[0]), argv[1], argv[2]
    stage = load_stage("pos", str(model_dir))
    rows = feats_by_tag_rows((w[UPOS] + LABEL_SEP + w[XPOS], w[FEATS]) for s in read_file(train) for w in s.words)
    dev_sents = list(read_file(dev))
    keep = choose_feats_by_tag(stage.model, rows, lambda: stage_scores(stage, "pos", dev_sents), print)
    vocab = read_json(model_dir / VOCAB)
    vocab.pop("feats_by_tag", None)
    if keep:
        vocab["feats_by_tag"] = rows
    write_json(model_dir / VOCAB, vocab)
    config = read_json(model_dir / CONFIG)
    config["training"]["feats_by_tag"] = keep
    write_json(model_dir / CONFIG, config, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
