"""Run-on training sentences for the parser: two gold trees joined as one."""
from __future__ import annotations

import pytest

from nlpipe.models.biaffine import Example
from nlpipe.train.run_on import join_neighbours, run_on


def _dog() -> Example:      # The dog barks .
    return Example(["The", "dog", "barks", "."], ["DET", "NOUN", "VERB", "PUNCT"], ["DT", "NN", "VBZ", "."],
                   [2, 3, 0, 3], ["det", "nsubj", "root", "punct"])


def _dogs() -> Example:     # Dogs bark .
    return Example(["Dogs", "bark", "."], ["NOUN", "VERB", "PUNCT"], ["NNS", "VBP", "."],
                   [2, 0, 2], ["nsubj", "root", "punct"])


def test_the_second_root_becomes_a_parataxis_of_the_first():
    joined = run_on(_dog(), _dogs())
    assert joined.forms == ["The", "dog", "barks", ".", "Dogs", "bark", "."]
    assert joined.upos == ["DET", "NOUN", "VERB", "PUNCT", "NOUN", "VERB", "PUNCT"]
    assert joined.xpos == ["DT", "NN", "VBZ", ".", "NNS", "VBP", "."]
    assert joined.heads == [2, 3, 0, 3, 6, 3, 6]
    assert joined.rels == ["det", "nsubj", "root", "punct", "nsubj", "parataxis", "punct"]


def test_sentences_without_trees_are_refused():
    with pytest.raises(ValueError):
        run_on(_dog(), Example(["Hi"], ["INTJ"], ["UH"]))


def test_neighbours_join_within_a_paragraph_only_and_each_sentence_once():
    examples = [_dog(), _dogs(), _dog(), _dogs(), _dog()]
    starts = [True, False, False, True, False]      # paragraphs: 0-2 and 3-4
    joined = join_neighbours(examples, starts, 1.0)
    assert [len(e.forms) for e in joined] == [7, 4, 7]      # 0+1, 2 alone (3 starts a paragraph), 3+4
    assert [sum(h == 0 for h in e.heads) for e in joined] == [1, 1, 1]
    assert join_neighbours(examples, starts, 0.0) == examples


def test_the_rate_decides_how_many_are_joined_and_the_seed_which():
    examples = [_dog() for _ in range(2000)]
    starts = [i == 0 for i in range(2000)]
    joined = join_neighbours(examples, starts, 0.2, seed=3)
    pairs = len(examples) - len(joined)
    # each sentence not yet joined starts a pair with probability 0.2: about 2000 * 0.2 / 1.2 pairs
    assert 280 <= pairs <= 390
    assert [len(e.forms) for e in joined] == [len(e.forms) for e in join_neighbours(examples, starts, 0.2, seed=3)]
    with pytest.raises(ValueError):
        join_neighbours(examples, starts, 1.5)
