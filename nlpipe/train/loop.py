"""The one training loop of the torch models, and the best-on-dev selection every trainer shares.

SuPar's shape: :meth:`Trainer.fit` runs epochs of batches (optimizer step, gradient clipping, an
optional moving average of the weights, learning-rate schedules), scores dev after every epoch by
running the stage itself on the dev sentences (the code path of ``nlpipe STAGE``), and keeps the
best epoch's weights (:func:`stage_scores` runs a stage on dev and scores it). A model family subclasses :class:`Trainer` with only ``batches`` (one epoch's
batches), ``loss`` (one batch) and ``dev_scores``. The linear trainers (POS tagger, transition
parser) run their own AdaGrad epochs (:func:`nlpipe.train.linear_fit.fit`) and share
:class:`Selection`: the best epoch, the history, the progress lines on stderr and when to stop.
"""
from __future__ import annotations

import contextlib
import random
import time
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from nlpipe.nn.precision import autocast
from nlpipe.nn.weights import WeightAverage

Log = Callable[[str], None]


def stage_scores(stage: Any, name: str, gold: List[Any], gold_predicates: bool = False,
                 gold_path: str = "<dev>") -> Dict[str, Any]:
    """Scores of ``stage`` annotating copies of the gold sentences with the columns of stage ``name``
    blanked (:func:`nlpipe.runtime.evaluate.strip_stage`), as ``nlpipe eval NAME`` measures them."""
    from nlpipe.runtime.evaluate import score, strip_stage

    pred = list(stage.annotate(strip_stage(name, gold, gold_predicates)))
    return score(name, gold, pred, gold_path, "<dev predictions>")


def seed_everything(seed: int, threads: Optional[int] = None) -> random.Random:
    """Seed Python's, numpy's and torch's generators and set torch's CPU threads (when given);
    returns the generator of the batch order."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return random.Random(seed)


class Selection:
    """Best-on-dev bookkeeping of one training run.

    ``name`` starts the progress lines (none when empty). After every epoch :meth:`record` takes its dev scores, writes one progress line and says whether
    the epoch is the best so far (by the score ``key``, or ``value(scores)`` when given); :meth:`stop`
    says whether to end training: ``patience`` epochs without a better one, or a next epoch that
    would pass ``max_minutes`` since ``start`` (default: now) at the mean epoch time so far.
    """

    def __init__(self, name: str, key: str, epochs: int, log: Log, shown: Optional[Sequence[str]] = None,
                 patience: Optional[int] = None, max_minutes: Optional[float] = None,
                 start: Optional[float] = None, value: Optional[Callable[[Dict[str, float]], float]] = None):
        self.name, self.key, self.epochs, self.log, self.shown = name, key, epochs, log, shown
        self.patience, self.max_minutes = patience, max_minutes
        self.value = value if value is not None else (lambda scores: scores[key])
        self.start = time.time() if start is None else start
        self._epoch_start = time.time()
        self.best: Dict[str, Any] = {}            # the best epoch's dev scores and "epoch"
        self.history: List[Dict[str, Any]] = []   # per epoch: dev scores, epoch, loss, minutes, ...

    @property
    def best_epoch(self) -> int:
        return int(self.best.get("epoch", 0))

    @property
    def minutes(self) -> float:
        """Minutes since the start of training."""
        return (time.time() - self.start) / 60

    def record(self, epoch: int, scores: Dict[str, float], loss: Optional[float] = None,
               parts: Optional[Dict[str, float]] = None, **extra: Any) -> bool:
        """Note epoch ``epoch``'s dev ``scores`` (and mean ``loss``, its ``parts``, ``extra`` for the
        history); log the progress line; True when it is the best epoch so far."""
        better = not self.best or self.value(scores) > self.value(self.best)
        if better:
            self.best = dict(scores, epoch=epoch)
        entry: Dict[str, Any] = dict(scores, epoch=epoch, minutes=round(self.minutes, 2), **extra)
        if loss is not None:
            entry["loss"] = loss
        self.history.append(entry)
        shown = self.shown if self.shown is not None else list(scores)
        text = [f"{self.name}: " * bool(self.name) + f"epoch {epoch:3d}/{self.epochs}"]
        if loss is not None:
            text.append(f"loss {loss:.4f}" + "".join(f" {k} {v:.3f}" for k, v in sorted((parts or {}).items())))
        text.append("dev " + " ".join(f"{k} {scores[k]:.2f}" for k in shown))
        text.append(f"({time.time() - self._epoch_start:.0f}s, {self.minutes:.1f} min){' *' if better else ''}")
        self.log("  ".join(text))
        self._epoch_start = time.time()
        return better

    def stop(self, epoch: int) -> bool:
        """Should training end after epoch ``epoch`` (says why when it should)?"""
        if epoch >= self.epochs:
            return True
        if self.patience is not None and epoch - self.best_epoch >= self.patience:
            self.log(f"{self.name}: " * bool(self.name) + f"stopping after epoch {epoch}: no better dev {self.key} "
                     f"in {self.patience} epochs")
            return True
        if self.max_minutes is not None and self.minutes * (epoch + 1) / epoch > self.max_minutes:
            self.log(f"{self.name}: " * bool(self.name) + f"stopping after epoch {epoch}: the next one would pass "
                     f"{self.max_minutes:g} minutes")
            return True
        return False


class Trainer:
    """One torch model family's training. A subclass sets :attr:`net` (the ``nn.Module`` trained)
    and gives :meth:`batches`, :meth:`loss` and :meth:`dev_scores`; :meth:`fit` is the loop."""

    name = "train"                           # progress lines start with it (the stage)
    key = "f1"                               # the dev score that selects the epoch
    shown: Optional[Sequence[str]] = None    # dev scores in the progress lines (None: all)
    net: Any

    def batches(self, rng: random.Random) -> Sequence[Any]:
        """One epoch's training batches, in order (``rng``: the batch-order generator)."""
        raise NotImplementedError

    def loss(self, batch: Any) -> Any:
        """The loss of one batch: a scalar tensor, or ``(tensor, {part: float})`` for the log."""
        raise NotImplementedError

    def dev_scores(self) -> Dict[str, float]:
        """Dev scores of the weights now in :attr:`net`, from running the stage on dev."""
        raise NotImplementedError

    def value(self, scores: Dict[str, float]) -> float:
        """The number that selects the best epoch (default: the score :attr:`key`)."""
        return scores[self.key]

    def on_best(self, epoch: int, scores: Dict[str, float], steps: int) -> None:
        """Called with the kept weights in :attr:`net` when ``epoch`` is the best so far (e.g. to
        save the model at once); ``steps``: optimizer steps so far."""

    def fit(self, opt: Any, epochs: int, rng: random.Random, log: Log, *, clip: Optional[float] = None,
            ema: float = 0.0, ema_warmup: bool = False, scheduler: Any = None,
            step_lr: Optional[Callable[[int], float]] = None,
            patience: Optional[int] = None, max_minutes: Optional[float] = None,
            start: Optional[float] = None, precision: str = "fp32") -> Selection:
        """Train :attr:`net` with ``opt`` for at most ``epochs`` epochs; leave in it the weights of the
        best dev epoch and return the run's :class:`Selection` (best scores, history).

        ``clip``: gradient-norm clipping; ``ema`` in (0, 1): the weights scored on dev and kept are a
        moving average of the trained ones (decay ``ema`` per step; ``ema_warmup``: a smaller decay over
        the first steps, see :class:`~nlpipe.nn.weights.WeightAverage`); ``scheduler``: a torch
        learning-rate scheduler stepped after every epoch; ``step_lr(step)``: the learning rate of
        optimizer step ``step`` (1-based) instead; ``patience``, ``max_minutes``, ``start``: see
        :class:`Selection`. Dev scoring never draws from torch's generator, so it leaves the
        training's random stream as it is.
        """
        import torch

        net = self.net
        device_type = next(net.parameters()).device.type
        average = WeightAverage(net, ema, ema_warmup) if ema else None
        run = Selection(self.name, self.key, epochs, log, self.shown, patience, max_minutes, start, self.value)
        best_state: Optional[Dict[str, Any]] = None
        step = 0
        for epoch in range(1, epochs + 1):
            net.train()
            total, n, parts = 0.0, 0, Counter()
            for batch in self.batches(rng):
                step += 1
                if step_lr is not None:
                    for group in opt.param_groups:
                        group["lr"] = step_lr(step)
                with autocast(precision, device_type):
                    out = self.loss(batch)
                loss, part = out if isinstance(out, tuple) else (out, None)
                opt.zero_grad()
                loss.backward()
                if clip:
                    torch.nn.utils.clip_grad_norm_(net.parameters(), clip)
                opt.step()
                if average is not None:
                    average.update(net)
                total += loss.item()
                n += 1
                if part:
                    parts.update(part)
            if scheduler is not None:
                scheduler.step()
            swapped = average.swapped_in(net) if average is not None else contextlib.nullcontext()
            with swapped, torch.random.fork_rng(devices=[]):
                scores = self.dev_scores()
                if run.record(epoch, scores, total / max(n, 1), {k: v / max(n, 1) for k, v in parts.items()},
                              steps=step):
                    best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
                    self.on_best(epoch, scores, step)
            if run.stop(epoch):
                break
        if best_state is not None:
            net.load_state_dict(best_state)
        return run

