"""Training of the character segmenter (torch); inference is :mod:`nlpipe.models.segmenter_numpy`.

The training paragraphs are the raw text ``nlpipe eval tokenize`` builds from the gold file. They
are laid end to end in one stream, separated by padding (so the network sees paragraph ends as at
inference) or, for a share ``join`` of them, by one space (so it also learns sentence ends where
the input has no paragraph breaks). With ``shuffle`` > 0 the sentences are also cut apart at that
share of the boundaries inside paragraphs and the pieces laid out in a new random order every epoch
(pieces of one paragraph still joined by a space), so each sentence end is seen before new
sentence starts, as UDPipe 1 trains its tokenizer. Each epoch cuts the stream into windows at a
random offset; a window's loss counts only its centre, whose characters see their whole receptive
field. The loop is :class:`nlpipe.train.loop.Trainer`; the weights kept are an exponential moving
average of the trained ones. After every epoch the model tokenizes the dev raw text through the real stage code
and is scored by :mod:`nlpipe.runtime.evaluate`; the best epoch is kept and the sentence threshold
is tuned on dev.
"""
from __future__ import annotations

import io
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import nn

from nlpipe.io.conllu import FORM, read_file
from nlpipe.io.raw_text import raw_text
from nlpipe.errors import NlpipeError
from nlpipe.io.model_dir import UNDETERMINED, builds_model, read_json, write_arrays, write_config, write_json
from nlpipe.io.provenance import training_block
from nlpipe.train.loop import Trainer, seed_everything
from nlpipe.train.optim import adam
from nlpipe.models.multiword import MultiwordExpander, learn_multiwords
from nlpipe.models.segmenter import IGNORE, INSIDE, N_LABELS, PAD, SPACE, CharVocab, RuleFeatures, labelled_paragraphs
from nlpipe.models.segmenter_numpy import SegmenterInference
from nlpipe.models.space_joins import N_VALUES as JOIN_VALUES, SpaceJoins, jackknifed


class CharCNN(nn.Module):
    """Embedding, width-3 convolution, residual dilated convolutions, linear output (see
    :mod:`nlpipe.models.segmenter_numpy` for the same network in numpy)."""

    def __init__(self, n_chars: int, emb: int, channels: int, dilations: Sequence[int], dropout: float,
                 rule_values: int = 0, lex_values: int = 0):
        super().__init__()
        self.emb = nn.Embedding(n_chars, emb, padding_idx=PAD)
        self.rule = nn.Embedding(rule_values, emb) if rule_values else None
        self.lex = nn.Embedding(lex_values, emb) if lex_values else None
        self.first = nn.Conv1d(emb, channels, 3, padding=1)
        self.block = nn.ModuleList(nn.Conv1d(channels, channels, 3, padding=d, dilation=d) for d in dilations)
        self.out = nn.Linear(channels, N_LABELS)
        self.drop = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor, bits: Optional[torch.Tensor] = None,
                lex: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Scores ``[batch, length, 3]`` of ids (and rule bits, space-join values) ``[batch, length]``."""
        mask = (ids != PAD).unsqueeze(1).float()
        x = self.emb(ids)
        if self.rule is not None:
            x = x + self.rule(bits)
        if self.lex is not None:
            x = x + self.lex(lex)
        if self.rule is not None or self.lex is not None:
            x = x * mask.transpose(1, 2)
        h = torch.relu(self.first(self.drop(x).transpose(1, 2))) * mask
        for conv in self.block:
            h = (h + torch.relu(conv(self.drop(h)))) * mask
        return self.out(h.transpose(1, 2))


def _units(sentences: Sequence[Any], name: str) -> List[Tuple[str, np.ndarray, bool]]:
    """(text, labels, starts a paragraph) of each training sentence (labels as
    :func:`~nlpipe.models.segmenter.labelled_paragraphs` gives them)."""
    units = []
    for k, sent in enumerate(sentences):
        (text, labels), = labelled_paragraphs([sent], name)
        units.append((text, labels, k == 0 or sent.starts_paragraph))
    return units


# (text, labels, space-join values or None) of consecutive sentences, and whether the run ends a paragraph
Run = Tuple[List[Tuple[str, np.ndarray, Optional[np.ndarray]]], bool]


def _runs(units: List[Tuple[str, np.ndarray, bool]], shuffle: float, rng: random.Random,
          lex: Optional[List[np.ndarray]] = None) -> List[Run]:
    """The units cut into runs of consecutive sentences: at every paragraph start, and with
    ``shuffle`` > 0 also at each other sentence boundary with that probability, the runs then put in
    a random order (new sentence neighbours every epoch, as UDPipe 1's tokenizer trainer does).
    ``lex``: each unit's space-join values, carried with it."""
    runs: List[Run] = []
    for k, (text, labels, new_par) in enumerate(units):
        if not runs or new_par or (shuffle > 0 and rng.random() < shuffle):
            runs.append(([], False))
        runs[-1][0].append((text, labels, None if lex is None else lex[k]))
        if k + 1 == len(units) or units[k + 1][2]:
            runs[-1] = (runs[-1][0], True)
    if shuffle > 0:
        rng.shuffle(runs)
    return runs


def _stream(runs: List[Run], vocab: CharVocab, rules: Optional[RuleFeatures],
            gap: int, join: float, rng: random.Random,
            joins: Optional[SpaceJoins] = None) -> Tuple[np.ndarray, ...]:
    """(ids, rule bits, space-join values, labels) of all runs of sentences laid end to end: the
    sentences of a run joined by one space; a run that ends a paragraph joined to the next one by one
    space with probability ``join``, else followed by a padding gap of ``gap`` (a paragraph end); any
    other run joined to the next by one space. The space-join values of a sentence are the ones its
    run carries (counts without its own fold); those of the pair across two joined sentences come
    from ``joins``."""
    ids_parts: List[np.ndarray] = []
    bit_parts: List[np.ndarray] = []
    lex_parts: List[np.ndarray] = []
    label_parts: List[np.ndarray] = []
    pad_ids = np.zeros(gap, dtype=np.int32)
    pad_labels = np.full(gap, IGNORE, dtype=np.int64)
    i = 0
    while i < len(runs):
        # runs joined by single spaces up to a paragraph end not joined to the next
        sents = list(runs[i][0])
        while i + 1 < len(runs) and (not runs[i][1] or rng.random() < join):
            i += 1
            sents += runs[i][0]
        i += 1
        text = " ".join(t for t, _, _ in sents)
        ids = vocab.ids(text)
        lab = np.concatenate([np.concatenate([lb, [INSIDE]]) for _, lb, _ in sents])[:-1].astype(np.int64)
        lab[ids == SPACE] = IGNORE
        ids_parts += [ids, pad_ids]
        bit_parts += [rules(text) if rules is not None else np.zeros(len(text), np.int32), pad_ids]
        lex_parts += [_joined_values(sents, joins), pad_ids]
        label_parts += [lab, pad_labels]
    return (np.concatenate(ids_parts), np.concatenate(bit_parts), np.concatenate(lex_parts),
            np.concatenate(label_parts))


def _joined_values(sents: List[Tuple[str, np.ndarray, Optional[np.ndarray]]],
                   joins: Optional[SpaceJoins]) -> np.ndarray:
    """The space-join values of sentences joined by single spaces (zeros without ``joins``)."""
    n = sum(len(t) + 1 for t, _, _ in sents) - 1
    if joins is None:
        return np.zeros(n, np.int32)
    out = np.concatenate([np.concatenate([v, [0]]) for _, _, v in sents])[:-1].astype(np.int32)
    pos = 0
    for (a, _, _), (b, _, _) in zip(sents, sents[1:]):
        pos += len(a)                                    # the joining space
        left, right = a.rsplit(None, 1)[-1] if a.strip() else "", b.split(None, 1)[0] if b.strip() else ""
        if left and right and not a[-1].isspace() and not b[0].isspace():
            v = joins.values(left + " " + right)
            out[pos - 1], out[pos] = v[len(left) - 1], v[len(left)]
        pos += 1
    return out


def _windows(ids: np.ndarray, bits: np.ndarray, lex: np.ndarray, labels: np.ndarray, length: int, radius: int,
             rng: random.Random) -> Tuple[np.ndarray, ...]:
    """Windows of ``length`` covering the stream from a random offset; labels only in the centre."""
    core = length - 2 * radius
    n = len(ids)
    zeros = np.zeros(radius + core, np.int32)
    padded_ids = np.concatenate([zeros, ids, zeros])
    padded_bits = np.concatenate([zeros, bits, zeros])
    padded_lex = np.concatenate([zeros, lex, zeros])
    padded_lab = np.concatenate([np.full(radius + core, IGNORE), labels, np.full(radius + core, IGNORE)])
    offset = rng.randrange(core)
    starts = np.arange(offset, n + core + radius, core)          # in padded coordinates: centre start
    idx = starts[:, None] - radius + np.arange(length)[None, :]
    w_lab = padded_lab[idx].copy()
    w_lab[:, :radius] = IGNORE
    w_lab[:, radius + core:] = IGNORE
    keep = (w_lab != IGNORE).any(1)
    return padded_ids[idx][keep], padded_bits[idx][keep], padded_lex[idx][keep], w_lab[keep]


def _rule_params(rules: Optional[str], sentences: bool, train_sents: list,
                 lang: str) -> Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]]]:
    """(word rules, Punkt parameters or None) for the rule feature: "learn" learns them from the
    training sentences (:func:`nlpipe.train.punkt.learn`), "none" gives (None, None), anything else
    names a rule tokenizer model of the same language as ``lang``."""
    if rules is None or rules.lower() == "none":
        return None, None
    if rules.lower() == "learn":
        from nlpipe.train.punkt import learn

        words, punkt = learn(train_sents, lang)
        return words, punkt if sentences else None
    from nlpipe.io.model_dir import read_config
    from nlpipe.registry import resolve_model

    model_dir = resolve_model("tokenize", rules)
    config = read_config(model_dir, "tokenize")
    if config["arch"] != "punkt-treebank.v1":
        raise NlpipeError(f"--rules {rules}: not a rule tokenizer model (arch {config['arch']})")
    if config["language"] not in (UNDETERMINED, lang):
        raise NlpipeError(f"--rules {rules}: a model of language '{config['language']}', not '{lang}' "
                          f"(--lang); use --rules learn to learn the rules from --train")
    files = config.get("model", {})
    words = read_json(model_dir / files.get("words", "words.json"))
    punkt = read_json(model_dir / files.get("punkt", "punkt.json")) if sentences else None
    return words, punkt


def _tokenizer(params: Dict[str, np.ndarray], dilations: Sequence[int], vocab: CharVocab,
               multiwords: Dict[str, Any], rules: Optional[RuleFeatures], threshold: float, lang: str,
               spaces: bool, joins: Optional[SpaceJoins] = None) -> Any:
    from nlpipe.stages.tokenize import TrainedTokenizer

    return TrainedTokenizer(SegmenterInference(params, dilations), vocab,
                            MultiwordExpander(multiwords, english=lang == "en"), rules, threshold, spaces,
                            joins=joins)


class _ScoresOnce:
    """A segmenter network whose scores of a batch are computed once and then reused."""

    def __init__(self, net: Any):
        self.net = net
        self.gap = net.gap
        self.cache: Dict[Tuple[bytes, Optional[bytes], Optional[bytes]], np.ndarray] = {}

    def scores(self, ids: np.ndarray, bits: Optional[np.ndarray] = None,
               lex: Optional[np.ndarray] = None) -> np.ndarray:
        key = (ids.tobytes(), None if bits is None else bits.tobytes(), None if lex is None else lex.tobytes())
        if key not in self.cache:
            self.cache[key] = self.net.scores(ids, bits, lex)
        return self.cache[key]


def _dev_scores(tokenizer: Any, dev_sents: list, dev_text: str, dev_path: str) -> Dict[str, float]:
    from nlpipe.runtime.evaluate import score

    pred = list(tokenizer.tokenize(io.StringIO(dev_text), dev_path))
    r = score("tokenize", dev_sents, pred, dev_path, "<dev prediction>")
    return {k: r[k] for k in ("tokens_f1", "sentences_f1", "words_f1")}


def _total(s: Dict[str, float]) -> float:
    return s["tokens_f1"] + s["sentences_f1"] + s["words_f1"]


class SegmenterTrainer(Trainer):
    """The character CNN's batches (windows of the training stream, cut at a new random offset every
    epoch), loss and dev scores (selected by the sum of the three F1). ``stream``: the training
    stream, or a function of the random generator that lays out a new one for every epoch."""

    name, key = "tokenize", "tokens_f1 + sentences_f1 + words_f1"

    def __init__(self, model: CharCNN, stream: Any, length: int, radius: int, batch: int, dev: Any,
                 device: str = "cpu"):
        self.net, self.stream, self.length, self.radius, self.batch = model, stream, length, radius, batch
        self.device = torch.device(device)
        self.dev = dev   # weights -> dev scores
        self.loss_fn = nn.CrossEntropyLoss(ignore_index=IGNORE)

    def batches(self, rng: random.Random) -> Iterator[Tuple[torch.Tensor, ...]]:
        stream = self.stream(rng) if callable(self.stream) else self.stream
        windows = _windows(*stream, self.length, self.radius, rng)
        order = list(range(len(windows[0])))
        rng.shuffle(order)
        for b in range(0, len(order), self.batch):
            sel = order[b:b + self.batch]
            yield tuple(torch.from_numpy(a[sel].astype(np.int64)).to(self.device) for a in windows)

    def loss(self, batch: Tuple[torch.Tensor, ...]) -> torch.Tensor:
        x, xb, xl, y = batch
        return self.loss_fn(self.net(x, xb, xl).reshape(-1, N_LABELS), y.reshape(-1))

    def params(self) -> Dict[str, np.ndarray]:
        """The weights now in the network, for the numpy inference."""
        return {k: v.cpu().numpy().astype(np.float32) for k, v in self.net.state_dict().items()}

    def dev_scores(self) -> Dict[str, float]:
        return self.dev(self.params())

    def value(self, scores: Dict[str, float]) -> float:
        return _total(scores)


# space_joins="auto" uses the counts where at least this share of the training tokens contain a space
# (Vietnamese: about a quarter; French Sequoia's "500 000" numbers: far under a thousandth).
SPACE_JOINS_SHARE = 0.01
SPACE_JOINS_CHOICES = ("auto", "yes", "no")


def _use_space_joins(choice: str, spaced: int, tokens: int) -> bool:
    """Whether to train with the space joins (``spaced`` of the ``tokens`` training tokens hold a space)."""
    if choice not in SPACE_JOINS_CHOICES:
        raise NlpipeError(f"space_joins must be one of {', '.join(SPACE_JOINS_CHOICES)}, not '{choice}'")
    if choice != "auto":
        return choice == "yes"
    return spaced >= SPACE_JOINS_SHARE * max(1, tokens)


# Default epochs: about EPOCH_CHARS training characters in all, between MIN_EPOCHS and MAX_EPOCHS (EWT,
# ~1M characters: 30; French Sequoia, 266k: 60, which gave dev tokens 99.45 / sentences 88.00 where 30
# gave 99.28 / 82.44).
EPOCH_CHARS, MIN_EPOCHS, MAX_EPOCHS = 16_000_000, 30, 60


def default_epochs(characters: int) -> int:
    """Epochs for a training text of ``characters`` characters (see :data:`EPOCH_CHARS`)."""
    return min(MAX_EPOCHS, max(MIN_EPOCHS, round(EPOCH_CHARS / max(1, characters))))


@builds_model("out")
def train(train_path: str, dev_path: str, out: str, epochs: Optional[int] = None, channels: int = 32, emb: int = 16,
          dilations: str = "1,2,4,8,16,32,64", length: int = 1024, batch: int = 8, lr: float = 2e-3,
          dropout: float = 0.1, join: float = 0.5, shuffle: float = 0.0, min_char: int = 2, rules: Optional[str] = "learn",
          rule_sentences: bool = True, space_joins: str = "auto", seed: int = 1,
          ema_decay: float = 0.998, time_limit: Optional[float] = None, threads: int = 1,
          log: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
          lang: str = UNDETERMINED, device: str = "cpu", precision: str = "fp32") -> Dict[str, Any]:
    """Train a ``char-segmenter.v1`` model on ``train_path``, select on ``dev_path``, write ``out``;
    ``lang`` is the training data's language code, recorded in the model; ``epochs`` None: by the size
    of the training text (:func:`default_epochs`); ``device``: where the network trains (cpu, cuda,
    auto; dev scoring runs the numpy inference); ``precision``: fp32 or bf16 (:mod:`nlpipe.nn.precision`);
    ``space_joins``: the counts of spaces inside tokens as an input (:mod:`nlpipe.models.space_joins`):
    "auto" where at least :data:`SPACE_JOINS_SHARE` of the training tokens contain a space, "yes", "no"."""
    from nlpipe.nn.device import resolve_device
    from nlpipe.nn.precision import check_precision
    from nlpipe.stages.tokenize import rule_features

    t_start = time.time()
    device = resolve_device(device)
    check_precision(precision, device, log)
    rng = seed_everything(seed, threads)
    dil = [int(d) for d in dilations.split(",") if d.strip()]
    if not dil or min(dil) < 1:
        raise NlpipeError(f"--dilations must be positive integers, got '{dilations}'")
    radius = 1 + sum(dil)
    if length <= 2 * radius:
        raise NlpipeError(f"--length {length} must exceed twice the receptive field ({radius})")

    train_sents = list(read_file(train_path))
    dev_sents = list(read_file(dev_path))
    for path, sents in ((train_path, train_sents), (dev_path, dev_sents)):
        if not sents:  # an empty document is valid input, but nothing to learn or select from
            raise NlpipeError(f"{path}: no sentences")
    try:
        units = _units(train_sents, train_path)
    except ValueError as e:
        raise NlpipeError(str(e)) from None
    dev_text = raw_text(dev_sents)
    vocab = CharVocab.build((t for t, _, _ in units), min_char)
    if epochs is None:
        epochs = default_epochs(sum(len(t) + (not new_par) for t, _, new_par in units))
    multiwords = learn_multiwords(train_sents, dev_sents, english=lang == "en")
    # tokens with a space inside (French "500 000"): a space may then lie inside a token
    forms = [tok[FORM] for sent in train_sents for tok in sent.tokens]
    spaced = sum(" " in form for form in forms)
    spaces = spaced > 0
    rule_params, punkt_params = _rule_params(rules, rule_sentences, train_sents, lang)
    word_rules = rule_features(rule_params, punkt_params) if rule_params is not None else None
    joins, unit_joins = None, None
    if _use_space_joins(space_joins, spaced, len(forms)):
        joins, unit_joins = jackknifed([(t, lb) for t, lb, _ in units], INSIDE)

    def lay_out(rng: random.Random) -> Tuple[np.ndarray, ...]:
        return _stream(_runs(units, shuffle, rng, unit_joins), vocab, word_rules, max(dil), join, rng, joins)

    ids, bits, lex, labels = lay_out(rng)
    log(f"train tokenize: {sum(1 for u in units if u[2])} paragraphs, {len(ids)} characters, {len(vocab)} character ids, "
        f"{sum(1 for w in multiwords['table'].values() if w)} multiword forms; receptive field {radius} each side")

    model = CharCNN(len(vocab), emb, channels, dil, dropout, rule_values=word_rules.n_values if word_rules else 0,
                    lex_values=JOIN_VALUES if joins is not None else 0)
    model.to(device)
    opt = adam(model.parameters(), lr=lr)

    def scores_of(params: Dict[str, np.ndarray]) -> Dict[str, float]:
        return _dev_scores(_tokenizer(params, dil, vocab, multiwords, word_rules, 0.0, lang, spaces, joins),
                           dev_sents, dev_text, dev_path)

    trainer = SegmenterTrainer(model, lay_out if shuffle > 0 else (ids, bits, lex, labels), length, radius, batch,
                               scores_of, device)
    run = trainer.fit(opt, epochs, rng, log, ema=ema_decay, start=t_start, precision=precision,
                      scheduler=torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, epochs)),
                      max_minutes=None if time_limit is None else time_limit / 60)
    best_epoch, params = run.best_epoch, trainer.params()
    dev = {k: run.best[k] for k in ("tokens_f1", "sentences_f1", "words_f1")}
    history = run.history

    # sentence threshold: sentence-end score minus token-end score; the network scores dev once (it
    # does not depend on the threshold), so that the search costs little more than one dev scoring and
    # a time budget (--max-minutes, train pipeline's share) is not overrun by it
    threshold = 0.0
    searched = _tokenizer(params, dil, vocab, multiwords, word_rules, 0.0, lang, spaces, joins)
    searched.net = _ScoresOnce(searched.net)
    for t in [x / 4 for x in range(-8, 13) if x]:
        searched.threshold = t
        s = _dev_scores(searched, dev_sents, dev_text, dev_path)
        if _total(s) > _total(dev):
            threshold, dev = t, s
    log(f"best epoch {best_epoch}; sentence threshold {threshold:+.2f}: dev tokens {dev['tokens_f1']:.2f}  "
        f"sentences {dev['sentences_f1']:.2f}  words {dev['words_f1']:.2f}")

    from nlpipe.stages.tokenize import CHARS, MULTIWORDS, PUNKT, RULES, SPACE_JOINS, WEIGHTS

    write_arrays(Path(out) / WEIGHTS, params, compress=True)
    write_json(Path(out) / CHARS, vocab.chars)
    write_json(Path(out) / MULTIWORDS, multiwords, indent=0)
    if rule_params is not None:
        write_json(Path(out) / RULES, rule_params, indent=0)
    if punkt_params is not None:
        write_json(Path(out) / PUNKT, punkt_params)
    if joins is not None:
        write_json(Path(out) / SPACE_JOINS, joins.to_json(), indent=0)
    result = {"dev": dev, "best_epoch": best_epoch, "threshold": threshold, "history": history,
              "minutes": (time.time() - t_start) / 60}
    write_config(out, {
        "stage": "tokenize",
        "arch": "char-segmenter.v1",
        "language": lang,
        "model": {"emb": emb, "channels": channels, "dilations": dil, "threshold": threshold,
                  "spaces_in_tokens": spaces,
                  "weights": WEIGHTS, "chars": CHARS, "multiwords": MULTIWORDS,
                  "rules": RULES if rule_params is not None else None,
                  "punkt": PUNKT if punkt_params is not None else None,
                  **({"space_joins": SPACE_JOINS} if joins is not None else {})},
        "training": training_block(
            {"train": train_path, "dev": dev_path},
            {"tokens_f1": round(dev["tokens_f1"], 2), "sentences_f1": round(dev["sentences_f1"], 2),
             "words_f1": round(dev["words_f1"], 2)},
            hyper={"epochs": epochs, "length": length, "batch": batch, "lr": lr, "dropout": dropout,
                   "join": join, "shuffle": shuffle, "min_char": min_char, "seed": seed, "rules": rules,
                   "rule_sentences": rule_sentences, "space_joins": space_joins, "ema_decay": ema_decay},
            best_epoch=best_epoch, minutes=round(result["minutes"], 1), precision=precision),
    })
    return result
