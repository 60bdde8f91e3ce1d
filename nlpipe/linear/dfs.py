"""Greedy left-to-right tagging with dynamic feature selection (Strubell et al.), batched in numpy.

Prefix scores P_i = sum_{j<=i} W_j[Phi_j(x)] are built in the model's template order; a token
stops at the first prefix where its best label leads the second by ``margin`` (``None``: use
all templates). Templates before the first tag-history template are scored for every token of the
batch at once; the rest go in rounds, each taking the waiting tokens whose two previous tags are
final, and only for tokens that have not stopped yet. The checkpointed variant tests the margin
only after given template counts (e.g. 2, 4, 8, 16, 32), which makes the tests few enough to pay
for themselves in numpy; the exact algorithm tests after every template.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from nlpipe.linear.dictionary import LOWER
from nlpipe.linear.margin import checkpoint_schedule, margin_stops  # noqa: F401 (checkpoint_schedule: re-exported)
from nlpipe.linear.model import TemplatedModel
from nlpipe.linear.templates import Layout, context_keys, static_keys, word_only


def _add(model: TemplatedModel, j: int, rows: np.ndarray, total: Optional[np.ndarray]) -> np.ndarray:
    """``total`` plus the weight rows ``rows`` of template ``j``, in place (a new array when there is no total)."""
    if total is None:
        return model.take(j, rows)
    return model.add(j, rows, total)


def _due(margin: Optional[float], step: int, k: int, test: Sequence[bool]) -> bool:
    """Whether the margin is tested after ``step + 1`` templates."""
    return margin is not None and step + 1 < k and bool(test[step + 1])


def tag(model: TemplatedModel, layout: Layout, atoms: np.ndarray, margin: Optional[float] = None,
        limit: Optional[int] = None, checkpoints: Optional[Sequence[int]] = None,
        first: Optional[np.ndarray] = None, label_scores: Optional[np.ndarray] = None
        ) -> Tuple[np.ndarray, np.ndarray]:
    """Label ids [num_tokens] and templates used per token for a batch in ``layout``.

    ``limit`` uses only the first ``limit`` templates (a fixed prefix); ``margin=None`` always
    uses all of them (then the static templates are summed in one vectorised pass).
    ``checkpoints`` (template counts) restricts the margin test to those prefixes (the
    checkpointed variant: fewer, cheaper tests, templates between two checkpoints are summed
    without testing); None tests after every template (exact dynamic feature selection).
    ``first``: the label ids a first tagging pass predicted, in the padded layout (padding =
    ``model.first_size``); needed by the second pass of a two-pass tagger (``ptag`` templates).
    ``label_scores``: a [num_tokens, num_labels] float32 array that receives, row by row, the label
    scores each token's label was chosen from (the prefix sum where it stopped: its argmax).
    """
    k = len(model.templates) if limit is None else min(limit, len(model.templates))
    test = np.ones(k + 1, dtype=bool)
    if checkpoints is not None:
        test[:] = False
        test[[c for c in checkpoints if c <= k]] = True
    L = model.num_labels
    n = layout.num_tokens
    g = layout.g
    tags = np.full(layout.size, L, dtype=np.int64)
    pred = np.zeros(n, dtype=np.int64)
    used = np.zeros(n, dtype=np.int32)
    history = [bool(model.templates[j].history) for j in range(k)]
    dictionary = model.dictionary
    masks = None if dictionary is None else dictionary.masks
    # label set of every token under the model's dictionary (set 0: every label allowed)
    tset = None if dictionary is None else dictionary.sets(atoms[g, LOWER])
    if margin is None:
        phase1 = [j for j in range(k) if not history[j]]
        phase2 = [j for j in range(k) if history[j]]
    else:
        h0 = history.index(True) if True in history else k
        phase1, phase2 = list(range(h0)), list(range(h0, k))

    # Phase 0: templates that read only the word itself are scored once per word type of the
    # batch -- all of them without a margin (a sum does not depend on the order), else the leading
    # run of them in the template order, with the margin tests inside the run done per type.
    act = np.arange(n)
    ga = g
    s: Optional[np.ndarray] = None
    if margin is None:
        block = [j for j in phase1 if word_only(model.templates[j])]
        rest = [j for j in phase1 if not word_only(model.templates[j])]
    else:
        r = 0
        while r < len(phase1) and word_only(model.templates[phase1[r]]):
            r += 1
        block, rest = phase1[:r], phase1[r:]
    if not block or layout.type_atoms is None or n == 0:
        block, rest = [], phase1
    else:
        ta, type_of = layout.type_atoms, layout.type_of
        sizes = model.attributes.sizes
        tact = np.arange(len(ta))
        tpred = np.zeros(len(ta), dtype=np.int64)
        tused = np.zeros(len(ta), dtype=np.int32)
        tscores = None if label_scores is None else np.zeros((len(ta), L), dtype=np.float32)
        # a word's dictionary restriction is part of every prefix's score: it opens the sum
        su: Optional[np.ndarray] = None if masks is None else np.take(masks, dictionary.sets(ta[:, LOWER]), axis=0)
        for step, j in enumerate(block):
            su = _add(model, j, model.rows(j, static_keys(model.templates[j], ta, tact, sizes)), su)
            if _due(margin, step, k, test):
                fin, arg = margin_stops(su, margin)
                if fin.any():
                    tpred[tact[fin]] = arg[fin]
                    tused[tact[fin]] = step + 1
                    if tscores is not None:
                        tscores[tact[fin]] = su[fin]
                    keep = ~fin
                    kept = np.flatnonzero(keep)
                    tact, su = tact[kept], np.take(su, kept, axis=0)
        tu = tused[type_of]
        if margin is not None and tu.any():
            done = np.flatnonzero(tu > 0)
            pred[done] = tpred[type_of[done]]
            used[done] = tu[done]
            if label_scores is not None:
                label_scores[done] = tscores[type_of[done]]
            tags[g[done]] = pred[done]
            act = np.flatnonzero(tu == 0)
            ga = g[act]
            if len(act) == 0:
                return pred, used
        tslot = np.zeros(len(ta), dtype=np.int64)
        tslot[tact] = np.arange(len(tact))
        s = np.take(su, tslot[type_of[act]], axis=0)

    # Phase 1: the other templates before the first tag-history template, for every token at once.
    start = len(block)
    if s is None and margin is not None and checkpoints is not None:
        grouped = _grouped_lead(model, rest, test, k, atoms, tags, ga, first, margin,
                                None if tset is None else (tset[act], masks))
        if grouped is not None:
            c1, fin, arg, gs, inv = grouped
            s = np.take(gs, inv[~fin], axis=0)
            done = act[fin]
            if label_scores is not None:
                label_scores[done] = np.take(gs, inv[fin], axis=0)
            pred[done] = arg[fin]
            used[done] = c1
            tags[ga[fin]] = arg[fin]
            keep = ~fin
            act, ga = act[keep], ga[keep]
            if len(act) == 0:
                return pred, used
            rest, start = rest[c1:], c1
    if s is None and tset is not None:       # the dictionary's restriction opens the sum
        s = np.take(masks, tset[act], axis=0)
    for step, j in enumerate(rest, start=start):
        s = _add(model, j, model.token_rows(j, atoms, tags, ga, first), s)
        if _due(margin, step, k, test):
            fin, arg = margin_stops(s, margin)
            if fin.any():
                done = act[fin]
                p = arg[fin]
                pred[done] = p
                if label_scores is not None:
                    label_scores[done] = s[fin]
                used[done] = step + 1
                tags[ga[fin]] = p
                keep = ~fin
                kept = np.flatnonzero(keep)       # take: faster than a boolean mask on the rows of s
                act, s, ga = act[kept], np.take(s, kept, axis=0), ga[kept]
                if len(act) == 0:
                    return pred, used
    if s is None:
        s = np.zeros((len(act), L), dtype=np.float32)
    if not phase2:
        pred[act] = s.argmax(axis=1)
        if label_scores is not None:
            label_scores[act] = s
        used[act] = len(phase1)
        return pred, used

    # Phase 2: a token is scored once the tags at t-1 and t-2 are final, so each round takes
    # every waiting token whose left neighbours are done (all sentence starts in the first round).
    # Static templates of phase 2 are looked up for all waiting tokens at once beforehand.
    scores = s             # rows of the tokens in ``act``; slot[token] is the token's row
    slot = np.full(n, -1, dtype=np.int64)
    slot[act] = np.arange(len(act))
    static_rows = {j: model.token_rows(j, atoms, tags, ga, first) for j in phase2 if not history[j]}
    sizes = model.attributes.sizes
    static_part = {j: context_keys(model.templates[j], atoms, ga, sizes, L, first, model.first_size)
                   for j in phase2 if history[j]}
    final = np.ones(layout.size, dtype=bool)
    final[ga] = False
    waiting = act
    last = len(phase2) - 1
    while len(waiting):
        gw = g[waiting]
        ready = final[gw - 1] & final[gw - 2]
        a = waiting[ready]
        waiting = waiting[~ready]
        ga = g[a]
        sa = slot[a]
        s = scores[sa]
        for step, j in enumerate(phase2):
            if j in static_rows:
                rows = static_rows[j][sa]
            else:
                key = static_part[j][sa]
                for off in model.templates[j].history:
                    key *= L + 1
                    key += tags[ga + off]
                rows = model.rows(j, key)
            model.add(j, rows, s)
            if margin is not None and step < last and test[len(phase1) + step + 1]:
                fin, arg = margin_stops(s, margin)
                if fin.any():
                    done = a[fin]
                    p = arg[fin]
                    pred[done] = p
                    if label_scores is not None:
                        label_scores[done] = s[fin]
                    used[done] = len(phase1) + step + 1
                    tags[ga[fin]] = p
                    final[ga[fin]] = True
                    keep = ~fin
                    kept = np.flatnonzero(keep)
                    a, s, ga, sa = a[kept], np.take(s, kept, axis=0), ga[kept], sa[kept]
                    if len(a) == 0:
                        break
        if len(a):
            p = s.argmax(axis=1)
            pred[a] = p
            if label_scores is not None:
                label_scores[a] = s
            used[a] = k
            tags[ga] = p
            final[ga] = True
    return pred, used


def _grouped_lead(model: TemplatedModel, rest: List[int], test: np.ndarray, k: int, atoms: np.ndarray,
                  tags: np.ndarray, ga: np.ndarray, first: Optional[np.ndarray], margin: float,
                  restrict: Optional[Tuple[np.ndarray, np.ndarray]] = None
                  ) -> Optional[Tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The templates up to the first checkpoint, scored once per distinct combination of their
    weight rows when the combinations are few (e.g. the first-pass tag templates that open a second
    pass: a token's scores there depend only on the tags around it). ``restrict``: the tokens'
    dictionary sets and the mask of each set, part of the combination.

    Returns (templates used, tokens whose margin holds, every token's argmax, the scores of each
    combination, each token's combination), or None when the per-token loop is as cheap (no
    checkpoint in reach, or most combinations distinct).
    """
    c1 = next((c for c in range(1, len(rest) + 1) if test[c]), 0)
    if c1 == 0 or c1 >= k:
        return None
    lead = rest[:c1]
    rows = [model.token_rows(j, atoms, tags, ga, first) for j in lead]
    combo = rows[0].astype(np.int64)
    bound = len(model.keys[lead[0]]) + 1      # combinations so far (Python int: exact)
    for j, r in zip(lead[1:], rows[1:]):
        n_rows = len(model.keys[j]) + 1
        bound *= n_rows
        if bound >= 1 << 62:
            return None
        combo = combo * n_rows + r
    if restrict is not None:
        bound *= len(restrict[1])
        if bound >= 1 << 62:
            return None
        combo = combo * len(restrict[1]) + restrict[0]
    uniq, rep, inv = np.unique(combo, return_index=True, return_inverse=True)
    if 2 * len(uniq) > len(combo):
        return None
    gs = model.take(lead[0], rows[0][rep])
    if restrict is not None:
        gs += np.take(restrict[1], restrict[0][rep], axis=0)
    for j, r in zip(lead[1:], rows[1:]):
        model.add(j, r[rep], gs)
    gfin, garg = margin_stops(gs, margin)
    return c1, gfin[inv], garg[inv], gs, inv


def tag_sentences(model: TemplatedModel, sentences: List[List[str]], margin: Optional[float] = None,
                  limit: Optional[int] = None, checkpoints: Optional[Sequence[int]] = None
                  ) -> Tuple[List[List[str]], np.ndarray]:
    """Tag sentences of forms; return label strings per sentence and templates used per token."""
    layout, atoms = model.layout(sentences)
    pred, used = tag(model, layout, atoms, margin, limit, checkpoints)
    labels = model.labels
    out, i = [], 0
    for s in sentences:
        out.append([labels[p] for p in pred[i:i + len(s)].tolist()])
        i += len(s)
    return out, used
