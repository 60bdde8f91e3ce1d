"""The one training loop (nlpipe.train.loop) and the word-vector set-up (nlpipe.train.vectors).

The loop is driven with a one-weight network whose loss is the weight itself, so plain SGD with
learning rate 1 takes the weight down by exactly 1 per step: every expectation below is counted by
hand from that.
"""
from __future__ import annotations

import random
from typing import Dict, List

import numpy as np
import pytest
import torch

from nlpipe.train.loop import Selection, Trainer
from nlpipe.train.vectors import embeddings, vocabulary


class OneWeight(Trainer):
    """One batch per epoch; the loss is the weight (gradient 1); dev scores come from a script."""

    name, key = "toy", "score"

    def __init__(self, script: List[float], draw_in_dev: bool = False):
        self.net = torch.nn.Linear(1, 1, bias=False)
        with torch.no_grad():
            self.net.weight.fill_(0.0)
        self.script, self.draw_in_dev = list(script), draw_in_dev
        self.seen: List[float] = []    # the weight each dev scoring saw

    def batches(self, rng: random.Random) -> List[None]:
        return [None]

    def loss(self, batch: None) -> torch.Tensor:
        return self.net.weight.sum() + 0.0 * torch.rand(1).sum()

    def dev_scores(self) -> Dict[str, float]:
        if self.draw_in_dev:
            torch.rand(100)
        self.seen.append(float(self.net.weight.detach()))
        return {"score": self.script.pop(0) if self.script else -float(self.net.weight.detach())}

    def weight(self) -> float:
        return float(self.net.weight.detach())


def fit(trainer: Trainer, epochs: int, **options) -> Selection:
    lines: List[str] = []
    opt = torch.optim.SGD(trainer.net.parameters(), lr=1.0)
    run = trainer.fit(opt, epochs, random.Random(0), lines.append, **options)
    run.lines = lines  # type: ignore[attr-defined]
    return run


def test_the_best_dev_epochs_weights_are_kept():
    t = OneWeight([1.0, 3.0, 2.0])
    run = fit(t, 3)
    assert t.seen == [-1.0, -2.0, -3.0]
    assert run.best_epoch == 2 and run.best == {"score": 3.0, "epoch": 2}
    assert t.weight() == -2.0                              # epoch 2's weight, not the last one
    assert [h["epoch"] for h in run.history] == [1, 2, 3]
    assert [line.endswith(" *") for line in run.lines] == [True, True, False]
    assert run.lines[0].startswith("toy: epoch   1/3  loss 0.0000  dev score 1.00")   # loss: w before the step
    assert run.lines[1].startswith("toy: epoch   2/3  loss -1.0000  dev score 3.00")


def test_a_tie_keeps_the_earlier_epoch():
    t = OneWeight([2.0, 2.0])
    assert fit(t, 2).best_epoch == 1 and t.weight() == -1.0


def test_patience_stops_after_that_many_epochs_without_a_better_score():
    t = OneWeight([5.0, 1.0, 1.0, 9.0])
    run = fit(t, 10, patience=2)
    assert len(run.history) == 3 and run.best_epoch == 1 and t.weight() == -1.0
    assert "stopping after epoch 3: no better dev score in 2 epochs" in run.lines[-1]


def test_the_moving_average_is_scored_and_kept():
    # steps: w = -1, -2; average with decay 0.5: 0.5 * 0 + 0.5 * -1 = -0.5, then 0.5 * -0.5 + 0.5 * -2 = -1.25
    t = OneWeight([2.0, 1.0])
    run = fit(t, 2, ema=0.5)
    assert t.seen == [-0.5, -1.25]
    assert run.best_epoch == 1 and t.weight() == -0.5


def test_the_warmed_up_average_leaves_the_initial_weights_behind_sooner():
    # decay of step t: min(0.999, (1 + t) / (10 + t)) = 2/11, then 3/12
    # average: 2/11 * 0 + 9/11 * -1 = -9/11, then 3/12 * -9/11 + 9/12 * -2 = -75/44
    t = OneWeight([2.0, 1.0])
    fit(t, 2, ema=0.999, ema_warmup=True)
    assert t.seen == pytest.approx([-9 / 11, -75 / 44])


def test_the_warm_up_ends_at_the_decay_asked_for():
    from nlpipe.nn.weights import WeightAverage

    average = WeightAverage(torch.nn.Linear(1, 1), 0.999, warmup=True)
    average.steps = 20000           # (1 + t) / (10 + t) > 0.999 from t = 8991 on
    assert average.step_decay() == 0.999
    average.steps = 89              # t = 90: 91 / 100
    assert average.step_decay() == pytest.approx(0.91)


def test_step_lr_sets_the_learning_rate_of_every_step():
    t = OneWeight([])
    fit(t, 3, step_lr=lambda step: float(step))        # -1, then -2, then -3
    assert t.seen == [-1.0, -3.0, -6.0]


def test_the_time_limit_stops_before_an_epoch_that_would_pass_it():
    lines: List[str] = []
    run = Selection("toy", "score", 10, lines.append, max_minutes=1.0, start=0.0)  # started long ago
    run.record(1, {"score": 1.0})
    assert run.stop(1) and "the next one would pass 1 minutes" in lines[-1]
    assert not Selection("toy", "score", 10, lines.append, max_minutes=1e9).stop(1)


def test_dev_scoring_leaves_the_training_random_stream_alone():
    torch.manual_seed(0)
    quiet = OneWeight([1.0, 2.0])
    fit(quiet, 2)
    after_quiet = torch.rand(1)
    torch.manual_seed(0)
    drawing = OneWeight([1.0, 2.0], draw_in_dev=True)
    fit(drawing, 2)
    assert torch.equal(torch.rand(1), after_quiet)


def test_vocabulary_keys_training_words_then_frequent_glove_words():
    glove = ["the", "a", "1980", "Dog", "rare"]
    assert vocabulary(["Dog", "the", "THE", "1990"], glove, top=4) == ["dog", "the", "0000", "a"]
    assert vocabulary(["Dog", "the", "THE", "1990"], glove, top=4, by_frequency=True) == ["the", "dog", "0000", "a"]


def test_embeddings_take_the_first_glove_vector_of_a_key_and_noise_elsewhere():
    vectors = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)
    out, hits = embeddings(["<pad>", "<unk>", "the", "zzz"], ["the", "The", "x"], vectors, 2)
    assert hits == 1
    assert out[0].tolist() == [0.0, 0.0] and out[2].tolist() == [1.0, 2.0]
    assert out.shape == (4, 2) and out[3].tolist() not in vectors.tolist()


def test_trainer_subclass_must_give_its_batches():
    with pytest.raises(NotImplementedError):
        Trainer().batches(random.Random(0))


def test_stage_scores_run_the_stage_on_blanked_gold_columns():
    from nlpipe.io.conllu import UPOS, XPOS, parse_string
    from nlpipe.train.loop import stage_scores

    gold = parse_string("1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_\n\n")

    class AllNouns:
        seen: List[str] = []

        def annotate(self, sentences):
            for s in sentences:
                for w in s.words:
                    self.seen.append(w[UPOS])
                    w[UPOS], w[XPOS] = "NOUN", "NNS"
                yield s

    r = stage_scores(AllNouns(), "pos", gold)
    assert AllNouns.seen == ["_", "_"]                  # the stage never sees the gold tags
    assert (r["upos"], r["xpos"]) == (50.0, 50.0)       # one word of two right
    assert gold[0].words[1][UPOS] == "VERB"             # the gold sentences stay as they were
