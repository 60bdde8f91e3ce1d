"""``nlpipe train``: one subcommand per stage of :data:`nlpipe.registry.STAGES` that has a trainer,
plus the data preparation that training recipes need (``jackknife``, ``srl-data``).

Each subcommand parses its options and calls a plain training function that writes the model
directory and returns a summary dict; the command prints the summary (``--json``: the dict).
Training modules are imported inside the commands, so listing them stays fast. Options given as
``None`` by default are left out of the call: the training function's own default applies.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import click

from nlpipe.cli import options as O
from nlpipe.cli.output import echo_result
from nlpipe.errors import NlpipeError
from nlpipe.nn.syntax_modes import MODES
from nlpipe.registry import STAGES
from nlpipe.train.pipeline import PARTS as PIPELINE_PARTS   # light: its trainers load when they run

TRAINED_WITH = {"predicates": "srl"}   # stages whose model is another stage's (LISA does both)


class TrainGroup(click.Group):
    """Lists the stages first, in :data:`~nlpipe.registry.STAGES` order, then the data commands; a
    stage without a trainer of its own gets a command that says where its model comes from."""

    def list_commands(self, ctx: click.Context) -> List[str]:
        return list(STAGES) + [c for c in super().list_commands(ctx) if c not in STAGES]

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        command = super().get_command(ctx, name)
        if command is not None or name not in STAGES:
            return command
        owner = TRAINED_WITH.get(name)
        why = (f"the {owner} model predicts {name} too: train it with 'nlpipe train {owner}'" if owner
               else f"training for stage {name} is not available yet")

        @click.command(name=name, context_settings={"ignore_unknown_options": True},
                       help=why[0].upper() + why[1:] + ".")
        @click.argument("args", nargs=-1, type=click.UNPROCESSED)
        def unavailable(args: tuple) -> None:
            raise NlpipeError(why)

        return unavailable


@click.group(cls=TrainGroup)
def train() -> None:
    """Train a stage's model: nlpipe train STAGE --train T --dev D --out M."""


def _log(prefix: str = "") -> Callable[[str], None]:
    return lambda message: click.echo(prefix + message, err=True)


# ---------------------------------------------------------------------------------------------
# tokenize

@train.command(name="tokenize")
@click.option("--method", type=click.Choice(["trained", "rules"]), default=None,
              help="trained (the default): the character segmenter; rules: Punkt parameters and word lists "
                   "for the rule tokenizer (only --train, --out and --scores apply).")
@O.train_file("CoNLL-U with # text (raw text is rebuilt from it)")
@O.dev_file("the same format, for model selection and the sentence threshold (trained)", required=False)
@O.OUT_DIR
@click.option("--epochs", type=int, default=None,
              help="Passes over the training text (default: about 16 million characters in all, 30 to 60 epochs: "
                   "30 for EWT, 60 for a treebank of 50k words).")
@click.option("--channels", type=int, default=32, show_default=True, help="Convolution channels.")
@click.option("--emb", type=int, default=16, show_default=True, help="Character embedding size.")
@click.option("--dilations", default="1,2,4,8,16,32,64", show_default=True,
              help="Dilations of the residual convolutions (receptive field = 1 + their sum, each side).")
@click.option("--length", type=int, default=1024, show_default=True, help="Characters per training window.")
@click.option("--batch-windows", type=int, default=8, show_default=True, help="Windows per update.")
@click.option("--lr", type=float, default=2e-3, show_default=True, help="Adam learning rate.")
@click.option("--dropout", type=float, default=0.1, show_default=True, help="Dropout probability.")
@click.option("--join", type=float, default=0.5, show_default=True,
              help="Share of paragraphs joined to the next one by a space in training (for input without "
                   "paragraph breaks).")
@click.option("--shuffle", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True,
              help="Share of sentence boundaries inside a paragraph where the training text is cut before "
                   "its pieces are put in a new random order every epoch (0: the treebank's order).")
@click.option("--min-char", type=int, default=2, show_default=True, help="Keep characters seen this often.")
@click.option("--rules", default="learn", show_default=True,
              help="Word rules and Punkt sentence ends given as an input feature: 'learn' (from --train), "
                   "'none', or a rule tokenizer model of the --lang language (e.g. tokenize-rules-ewt for en).")
@click.option("--rule-sentences/--no-rule-sentences", default=True, show_default=True,
              help="Also give the rule tokenizer's (Punkt) sentence ends as input.")
@click.option("--space-joins", type=click.Choice(["auto", "yes", "no"]), default="auto", show_default=True,
              help="Give the counts of how often a space between two given units lies inside a training token "
                   "as input (Vietnamese-like words of several syllables); auto: where at least 1% of the "
                   "training tokens contain a space.")
@click.option("--ema", type=click.FloatRange(0.0, 1.0, max_open=True), default=0.998, show_default=True,
              help="Evaluate and keep a moving average of the weights with this decay per update.")
@click.option("--scores", default=None, metavar="FILE",
              help="rules: JSON file of scores measured on the trained model ({\"dev_tokens_f1\": 99.5, ...}), "
                   "recorded in config.json.")
@O.LANG
@O.SEED
@O.MAX_MINUTES
@O.THREADS
@O.DEVICE
@O.PRECISION
@O.AS_JSON
def train_tokenize(method: Optional[str], train_file: str, dev_file: Optional[str], out: str, scores: Optional[str],
                   batch_windows: int, ema: float, max_minutes: Optional[float], lang: Optional[str], as_json: bool,
                   **options: Any) -> None:
    """Train the character segmenter (tokens, sentences, multiword tokens), or with --method rules the
    rule tokenizer; write it to --out."""
    if method == "rules":
        if options["precision"] != "fp32":
            raise NlpipeError("--precision applies to the trained segmenter, not to --method rules")
        import json
        from pathlib import Path

        from nlpipe.train.punkt import train as train_rules

        try:
            measured = json.loads(Path(scores).read_text(encoding="utf-8")) if scores else None
        except (OSError, ValueError) as e:
            raise NlpipeError(f"{scores}: cannot read scores ({e})") from None
        result = train_rules(train_file, out, measured, **O.given(lang=lang))
        echo_result(result, f"tokenize (rules): {result['abbreviations']} abbreviations, "
                            f"{result['hyphen_prefixes']} hyphen prefixes, {result['splits']} splits -> {out}",
                    as_json)
        return
    if dev_file is None:
        raise NlpipeError("--dev is needed to train the character segmenter")
    if scores is not None:
        raise NlpipeError("--scores applies to --method rules only")
    from nlpipe.train.tokenize import train as train_trained

    result = train_trained(train_file, dev_file, out=out, batch=batch_windows, ema_decay=ema,
                           time_limit=O.seconds(max_minutes), log=_log(), **O.given(lang=lang), **options)
    dev = result["dev"]
    echo_result(result, f"tokenize: dev tokens F1 {dev['tokens_f1']:.2f}  sentences F1 {dev['sentences_f1']:.2f}  "
                        f"words F1 {dev['words_f1']:.2f} -> {out}", as_json)


# ---------------------------------------------------------------------------------------------
# pos

@train.command(name="pos")
@click.option("--arch", type=click.Choice(["dfs", "bilstm"]), default="dfs", show_default=True,
              help="dfs: the fast linear tagger (dynamic feature selection over feature templates); bilstm: the "
                   "accurate one (a BiLSTM over word, word-vector, shape and affix embeddings, torch to train, "
                   "numpy to run on the CPU). The options marked dfs or bilstm apply to that one only.")
@O.train_file("CoNLL-U with UPOS and XPOS")
@O.dev_file()
@O.OUT_DIR
@click.option("--mode", type=click.Choice(["dynamic", "full", "fixed"]), default="dynamic", show_default=True,
              help="dynamic: prefix hinge loss; full: all templates, standard; fixed: first --n only.")
@click.option("--n", "fixed_n", type=int, default=None, help="Templates of a fixed model (--mode fixed).")
@click.option("--order", type=click.Choice(["wrapper", "baseline", "given"]), default="wrapper",
              show_default=True, help="How to order the templates.")
@click.option("--order-from", default=None, metavar="M2", help="Take the template order of model M2.")
@click.option("--train-margin", type=float, default=1.0, show_default=True, help="Hinge margin in training.")
@click.option("--margin", type=float, default=None, metavar="m",
              help="The model's default tagging margin (default: --train-margin in dynamic mode, which "
                   "trains the model to stop there; else none: every template; a negative m: every template).")
@click.option("--checkpoints", default=None, metavar="S",
              help="The model's default margin-test schedule: all (after every template), pow2 (after 1, 2, "
                   "4, 8, ... templates) or counts like 2,4,8,16 (default: all).")
@click.option("--first-margin", type=float, default=None, metavar="m1",
              help="Two-pass models: the first pass's default margin (default: --margin).")
@click.option("--first-checkpoints", default=None, metavar="S1",
              help="Two-pass models: the first pass's default checkpoints (default: --checkpoints).")
@click.option("--epochs", type=int, default=None, help="Passes over the training data (default: dfs 4, bilstm 80).")
@click.option("--lr", type=float, default=None, help="Learning rate (default: dfs 0.02 (AdaGrad), bilstm 2e-3 (Adam)).")
@click.option("--hidden", type=int, default=None, help="bilstm: BiLSTM units per direction (default 192).")
@click.option("--layers", type=int, default=None, help="bilstm: BiLSTM layers (default 2).")
@click.option("--rank", type=click.IntRange(min=1), default=None,
              help="bilstm: each layer after the first reads the one below through a projection to this many "
                   "dimensions (fewer multiply-adds; default: none).")
@click.option("--char-filters", type=click.IntRange(min=0), default=None,
              help="bilstm: filters of the character CNN over each word (0: none; default 64 without word "
                   "vectors, 0 with).")
@click.option("--lemma-head/--no-lemma-head", default=None,
              help="bilstm: also train a head for the lemma's rewrite rule; where lemmas come from (the "
                   "lemmatizer, the head or both) is then chosen on dev (default: no head, the lemmatizer).")
@click.option("--batch-tokens", type=int, default=None, help="bilstm: batch size in tokens (default 1000).")
@click.option("--patience", type=click.IntRange(min=1), default=None,
              help="bilstm: stop after this many epochs without a better dev score (default 10).")
@click.option("--linear", "linear_tagger", default=None, metavar="M",
              help="bilstm: a linear tagger of the same treebank (a folder, or a shipped name such as pos-ewt) "
                   "whose label probabilities join the BiLSTM's (a product, with a weight chosen on dev; the "
                   "model keeps a copy, or none when the weight is 0).")
@O.MAX_MINUTES
@O.THREADS
@O.DEVICE
@O.PRECISION
@click.option("--l2", type=float, default=0.3, show_default=True, help="l2 regularisation.")
@click.option("--min-count", type=int, default=2, show_default=True, help="Keep features seen this often.")
@click.option("--wrapper-steps", type=int, default=10, show_default=True,
              help="Greedy selection steps; later templates follow the first step's ranking.")
@click.option("--wrapper-sample", type=int, default=30000, show_default=True,
              help="Training tokens used by ordering runs.")
@click.option("--wrapper-epochs", type=int, default=2, show_default=True, help="Epochs of each ordering run.")
@click.option("--templates", default=None, metavar="FILE",
              help="Candidate templates, one per line (default: the built-in set).")
@click.option("--clusters/--no-clusters", default=True, show_default=True,
              help="Word-cluster features: k-means over the word vectors (--vectors; none without vectors).")
@O.VECTORS
@O.RAW
@O.GLOVE_WORDS
@O.GLOVE_VECTORS
@O.GLOVE_TOP
@click.option("--two-pass", is_flag=True, help="Add a second pass whose templates also read the first pass's "
              "tags (right context included), trained on first-pass tags jack-knifed over --folds folds.")
@O.FOLDS
@click.option("--prune", type=float, default=1e-3, show_default=True,
              help="Leave weights smaller than this out of the saved model (smaller files).")
@click.option("--morph/--no-morph", default=None,
              help="Also train FEATS and LEMMA (a FEATS pass and a lemmatizer reading the tags; default: "
                   "for the columns the training file fills).")
@O.LANG
@O.SEED
@O.AS_JSON
def train_pos(arch: str, train_file: str, dev_file: str, out: str, mode: str, fixed_n: Optional[int], order: str,
              order_from: Optional[str], train_margin: float, margin: Optional[float],
              checkpoints: Optional[str], first_margin: Optional[float], first_checkpoints: Optional[str],
              epochs: Optional[int], lr: Optional[float], hidden: Optional[int], layers: Optional[int],
              rank: Optional[int], char_filters: Optional[int], lemma_head: Optional[bool],
              batch_tokens: Optional[int], patience: Optional[int], linear_tagger: Optional[str],
              max_minutes: Optional[float], threads: int, device: str, precision: str, l2: float, min_count: int,
              wrapper_steps: int, wrapper_sample: int,
              wrapper_epochs: int, templates: Optional[str], clusters: bool, vectors: Any, raw: Tuple[str, ...],
              glove_words: Optional[str],
              glove_vectors: Optional[str], glove_top: int, two_pass: bool, folds: int, prune: float,
              morph: Optional[bool], lang: Optional[str], seed: int, as_json: bool) -> None:
    """Train a POS tagger: the linear one (dynamic feature selection over feature templates) or with
    --arch bilstm the accurate one."""
    from nlpipe.train.raw_vectors import vectors_or_raw

    vectors = vectors_or_raw(vectors, raw, seed, glove_words is not None or glove_vectors is not None,
                             log=lambda m: click.echo(m, err=True))
    if arch == "bilstm":
        _train_pos_bilstm(train_file, dev_file, out, vectors=vectors, glove_words_file=glove_words,
                          glove_vectors_file=glove_vectors, glove_top=glove_top, seed=seed, threads=threads,
                          device=device, precision=precision, morph=morph, as_json=as_json, linear=linear_tagger,
                          **O.given(epochs=epochs, lr=lr, max_minutes=max_minutes, batch_tokens=batch_tokens,
                                    patience=patience, lang=lang),
                          hyper=O.given(hidden=hidden, layers=layers, rank=rank, char_filters=char_filters,
                                        lemma_head=lemma_head))
        return
    if precision != "fp32":
        raise NlpipeError("--precision applies to --arch bilstm (the linear tagger trains in numpy)")
    from nlpipe.linear.dfs import checkpoint_schedule
    from nlpipe.train.pos import TrainOptions, read_templates, train_model

    options = TrainOptions(mode=mode, margin=train_margin, lr=0.02 if lr is None else lr, l2=l2,
                           epochs=4 if epochs is None else epochs, min_count=min_count,
                           seed=seed, fixed_n=fixed_n, order=order, wrapper_steps=wrapper_steps,
                           wrapper_sample=wrapper_sample, wrapper_epochs=wrapper_epochs)
    if mode == "fixed" and not fixed_n:
        raise NlpipeError("--mode fixed needs --n")
    if two_pass and mode == "fixed":
        raise NlpipeError("--two-pass does not combine with --mode fixed (fixed rows compare first-pass prefixes)")
    if templates is not None:
        options.templates = read_templates(templates)
    if (first_margin is not None or first_checkpoints is not None) and not two_pass:
        raise NlpipeError("--first-margin and --first-checkpoints need --two-pass")
    try:
        checkpoint_schedule(checkpoints)
        checkpoint_schedule(first_checkpoints)
    except ValueError as e:
        raise NlpipeError(str(e)) from None
    start = time.time()

    def log(msg: str) -> None:
        click.echo(f"[{time.time() - start:6.0f}s] {msg}", err=True)

    try:
        config = train_model(train_file, dev_file, out, options, order_from, margin, log, clusters=clusters,
                             vectors=vectors, glove_words=glove_words, glove_top=glove_top, glove_vectors=glove_vectors,
                             checkpoints=checkpoints, two_pass=two_pass, folds=folds, prune=prune,
                             first_margin=first_margin, first_checkpoints=first_checkpoints, morph=morph,
                             **O.given(lang=lang))
    except ValueError as e:
        raise NlpipeError(f"training failed: {e}") from None
    sc = config["training"]["scores"]
    margin = config["model"].get("margin")      # as saved: the training margin unless given
    first = "" if first_margin is None and first_checkpoints is None else (
        f"; first pass: margin {margin if first_margin is None else first_margin}, "
        f"checkpoints {(checkpoints if first_checkpoints is None else first_checkpoints) or 'all'}")
    morph_scores = "".join(f", {name} {sc['dev_' + key]:.2f}" for key, name in
                           (("ufeats", "UFeats"), ("alltags", "AllTags"), ("lemmas", "Lemmas")) if "dev_" + key in sc)
    echo_result(config, f"pos: dev UPOS {sc['dev_upos']:.2f}, XPOS {sc['dev_xpos']:.2f}{morph_scores} (margin {margin}, "
                        f"checkpoints {checkpoints or 'all'}{first}) -> {out}", as_json)


def _train_pos_bilstm(train_file: str, dev_file: str, out: str, as_json: bool, **options: Any) -> None:
    from nlpipe.train.bilstm_tagger import train as train_bilstm

    result = train_bilstm(train_file, dev_file, out, **options)
    best = result["best"]
    shown = ", ".join(f"{name} {best[key]:.2f}" for key, name in (("upos", "UPOS"), ("xpos", "XPOS"), ("ufeats", "UFeats"),
                                                                  ("alltags", "AllTags"), ("lemmas", "Lemmas"))
                      if key in best)
    echo_result(result, f"pos: dev {shown} (epoch {best['epoch']}), {result['minutes']} min -> {out}", as_json)


# ---------------------------------------------------------------------------------------------
# parse

@train.command(name="parse")
@click.option("--parser", type=click.Choice(["biaffine", "transition"]), default="biaffine", show_default=True,
              help="The parser to train: biaffine (BiLSTM, torch) or transition (arc-standard + SWAP, linear).")
@O.train_file("CoNLL-U with gold trees; POS as the parser will see them (jack-knifed predicted tags)")
@O.dev_file("CoNLL-U, for model selection")
@O.OUT_DIR
@click.option("--epochs", type=int, default=None, help="Passes over the training data (default: biaffine 100, "
                                                         "transition 8).")
@click.option("--lr", type=float, default=None, help="Learning rate (default: biaffine 2e-3 (Adam), "
                                                       "transition 0.02 (AdaGrad)).")
@O.MAX_MINUTES
@click.option("--batch-tokens", type=int, default=None, help="Biaffine: batch size in tokens (default 1000).")
@click.option("--decay", type=float, default=None, help="Biaffine: learning-rate factor per epoch (default 0.93).")
@click.option("--ema", type=click.FloatRange(0.0, 1.0, max_open=True), default=None,
              help="Biaffine: evaluate and keep an exponential moving average of the weights with this decay "
                   "per batch, from scratch at most (1 + t) / (10 + t) at batch t (0: the trained weights; "
                   "default 0.999).")
@click.option("--patience", type=click.IntRange(min=1), default=None,
              help="Biaffine: stop after this many epochs without a better dev LAS (default 10).")
@click.option("--hidden", type=int, default=None, help="Biaffine: BiLSTM units per direction (default 200).")
@click.option("--layers", type=int, default=None, help="Biaffine: BiLSTM layers (default 3).")
@O.init_model("Biaffine: continue training model M0 (e.g. on jack-knifed tags; its word vectors).")
@click.option("--run-on", "run_on", type=click.FloatRange(0, 1), default=None, metavar="P",
              help="Biaffine: join each training sentence with probability P to the next one of its paragraph "
                   "(the second's root a parataxis of the first's), as a tokenizer that misses a sentence end "
                   "hands them to the parser (default 0).")
@O.VECTORS
@O.GLOVE_WORDS
@O.GLOVE_VECTORS
@O.GLOVE_TOP
@click.option("--mode", type=click.Choice(["dynamic", "full", "dynamic+full"]), default="dynamic+full",
              show_default=True, help="Transition: hinge on every prefix up to the one where the margin holds "
              "(dynamic), on the full score only (full), or both (dynamic+full).")
@click.option("--train-margin", type=float, default=1.0, show_default=True,
              help="Transition: hinge margin in training.")
@click.option("--l2", type=float, default=0.0, show_default=True, help="Transition: l2 penalty of AdaGrad.")
@click.option("--average-every", type=int, default=20, show_default=True,
              help="Transition: average weight snapshots taken every N mini-batches (0: no averaging).")
@click.option("--min-count", type=int, default=6, show_default=True, help="Transition: feature keys seen fewer "
              "times in training share the unknown row (the shipped model: 12, its file holding each sentence "
              "twice).")
@click.option("--explore", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True,
              help="Transition: also train on the configurations the parser's own mistakes lead to, taking its "
              "own action with this probability and the oracle's otherwise (0: the gold path only).")
@click.option("--explore-from", type=click.IntRange(min=2), default=2, show_default=True,
              help="Transition: the first epoch that trains with exploration.")
@click.option("--margin", type=float, default=None, metavar="m",
              help="Transition: the model's default margin for dynamic feature selection at parse time "
                   "(default: none, every template).")
@click.option("--checkpoints", default=None, metavar="S",
              help="Transition: the model's default margin-test schedule, e.g. 8,24 (default: after every "
                   "template).")
@click.option("--cluster-table", "clusters_path", default=None, metavar="C",
              help="Transition: word-cluster table (e.g. nlpipe/shipped/pos-ewt/clusters.npz); the model keeps "
                   "a copy.")
@click.option("--pos-source", default="as in the training file", show_default=True,
              help="Note for config.json: where the training file's POS tags come from.")
@O.LANG
@O.SEED
@O.THREADS
@O.DEVICE
@O.PRECISION
@O.AS_JSON
def train_parse(parser: str, train_file: str, dev_file: str, out: str, epochs: Optional[int], lr: Optional[float],
                max_minutes: Optional[float], batch_tokens: Optional[int], decay: Optional[float],
                ema: Optional[float], patience: Optional[int], hidden: Optional[int], layers: Optional[int], init: Optional[str],
                run_on: Optional[float],
                vectors: Optional[str], glove_words: Optional[str], glove_vectors: Optional[str], glove_top: int, mode: str,
                train_margin: float, l2: float, average_every: int, min_count: int, explore: float,
                explore_from: int, margin: Optional[float], checkpoints: Optional[str],
                clusters_path: Optional[str], pos_source: str, lang: Optional[str], seed: int, threads: int,
                device: str, precision: str, as_json: bool) -> None:
    """Train a dependency parser: nlpipe train parse [--parser transition] --train T --dev D --out M."""
    from nlpipe.train import biaffine, transition

    given = O.given(epochs=epochs, lr=lr)   # else each parser's own default
    if parser == "transition":
        if run_on:
            raise click.BadParameter("the transition parser trains on single sentences", param_hint="--run-on")
        if precision != "fp32":
            raise click.BadParameter("applies to the biaffine parser (the transition parser is linear)",
                                     param_hint="--precision")
        options = transition.TrainOptions(mode=mode, margin=train_margin, l2=l2, average_every=average_every,
                                          min_count=min_count, explore=explore, explore_from=explore_from,
                                          seed=seed, **given)
        result = transition.train_transition(train_file, dev_file, out, options, pos_source, clusters_path,
                                             margin, checkpoints, **O.given(lang=lang))
    else:
        hyper = O.given(hidden=hidden, layers=layers)
        result = biaffine.train(train_file, dev_file, out, seed=seed, threads=threads, device=device,
                                precision=precision,
                                vectors=vectors, glove_words_file=glove_words, glove_vectors_file=glove_vectors,
                                glove_top=glove_top, pos_source=pos_source, init=init,
                                **({"hyper": hyper} if hyper else {}),
                                **O.given(max_minutes=max_minutes, batch_tokens=batch_tokens, decay=decay,
                                          ema=ema, patience=patience, lang=lang, run_on_rate=run_on),
                                **given)
    best = result["best"]
    echo_result(result, f"parse: best dev UAS {best['uas']:.2f} LAS {best['las']:.2f} (epoch {best['epoch']}), "
                        f"{result['minutes']} min -> {out}", as_json)


@train.command(name="parse-feats")
@O.train_file("CoNLL-U with gold trees, tags and FEATS")
@O.dev_file("the same format: a tag group is kept where the classifier beats the tagger here")
@click.option("-m", "--model", "parser_model", required=True, metavar="P",
              help="The parser model folder to add the classifier to (P/feats).")
@click.option("--pos", "pos_model", required=True, metavar="POS",
              help="The tagger whose FEATS it re-decides (its output on dev chooses the groups).")
@click.option("--epochs", type=int, default=5, show_default=True, help="Passes over the training words.")
@click.option("--lr", type=float, default=0.1, show_default=True, help="AdaGrad learning rate.")
@O.DEVICE
@O.SEED
@O.AS_JSON
def train_parse_feats(train_file: str, dev_file: str, parser_model: str, pos_model: str, epochs: int, lr: float,
                      device: str, seed: int, as_json: bool) -> None:
    """Add FEATS after the parse to a parser: nlpipe train parse-feats --train T --dev D --model P --pos POS.

    A linear classifier over the predicted tree re-decides the FEATS that the syntax decides (an
    English base-form verb: imperative or infinitive), in the tag groups where it beats the tagger
    on dev. 'nlpipe parse' with that parser then writes them (--keep-feats: it does not)."""
    from nlpipe.registry import resolve_model
    from nlpipe.train.tree_feats import TreeFeatsOptions, add_to_parsers

    folder = resolve_model("parse", parser_model)
    result, = add_to_parsers(train_file, dev_file, [str(folder)], pos_model,
                             TreeFeatsOptions(epochs=epochs, lr=lr, seed=seed), device, log=_log("parse-feats: "))
    summary = f"parse-feats: {len(result['groups'])} tag groups"
    if result["groups"]:
        summary += f", dev UFeats {result['dev_ufeats_tagger']:.2f} -> {result['dev_ufeats_after_parse']:.2f} -> {folder}"
    echo_result(result, summary, as_json)


# ---------------------------------------------------------------------------------------------
# ner

@train.command(name="ner")
@click.option("--arch", type=click.Choice(["idcnn", "bilstm"]), default="idcnn", show_default=True,
              help="Encoder: iterated dilated CNN or Bi-LSTM.")
@click.option("--crf", is_flag=True, help="Linear-chain CRF output layer (Viterbi decoding).")
@click.option("--context", type=click.Choice(["sentence", "document"]), default="sentence", show_default=True,
              help="document: run over whole documents (-DOCSTART- / # newdoc), output per sentence.")
@O.train_file("CoNLL-2003, UNER .iob2 or CoNLL-U with MISC NE=")
@O.dev_file("the same formats, for model selection")
@O.TEST_FILE
@O.OUT_DIR
@click.option("--format", "fmt", type=click.Choice(["auto", "conll2003", "uner", "conllu"]), default="auto",
              show_default=True, help="Format of the data files.")
@click.option("--width", type=int, default=None, help="ID-CNN filters (default 200).")
@click.option("--blocks", type=int, default=None, help="ID-CNN block applications (default 2).")
@click.option("--dilations", default=None, metavar="1,2,4,1", help="ID-CNN block dilations (default 1,2,4,1).")
@click.option("--hidden", type=int, default=None, help="Bi-LSTM hidden size per direction (default 200).")
@click.option("--epochs", type=int, default=40, show_default=True, help="Passes over the training data.")
@click.option("--lr", type=float, default=None, help="Adam learning rate (default 5e-4 ID-CNN, 1e-3 Bi-LSTM).")
@click.option("--batch-tokens", type=int, default=2000, show_default=True, help="Batch size in tokens.")
@O.VECTORS
@O.GLOVE_WORDS
@O.GLOVE_VECTORS
@O.GLOVE_TOP
@click.option("--word-dropout", type=float, default=None, help="Word dropout probability (default 0.05).")
@click.option("--freeze-words", is_flag=True, help="Keep the word vectors fixed during training.")
@click.option("--affix-dim", type=int, default=0, show_default=True,
              help="Prefix/suffix (1-3 / 1-4 characters) embedding size; 0: no affix features.")
@click.option("--min-affix", type=int, default=2, show_default=True, help="Keep affixes seen this often in training.")
@O.LANG
@O.SEED
@O.MAX_MINUTES
@O.THREADS
@O.DEVICE
@O.PRECISION
@O.AS_JSON
def train_ner(as_json: bool, max_minutes: Optional[float], lang: Optional[str], **options: Any) -> None:
    """Train an NER model (ID-CNN or Bi-LSTM, greedy or CRF) and write it to --out."""
    from nlpipe.train.ner import train as train_ner_model

    result = train_ner_model(log=_log(), time_limit=O.seconds(max_minutes), **O.given(lang=lang), **options)
    echo_result(result, f"ner: dev F1 {result['dev']['f1']:.2f}"
                        + (f", test F1 {result['test']['f1']:.2f}" if "test" in result else "")
                        + f" -> {options['out']}", as_json)


# ---------------------------------------------------------------------------------------------
# srl (and predicates: one LISA model does both)

@train.command(name="srl")
@O.train_file("CoNLL-U with gold XPOS, HEAD, DEPREL and MISC Pred=/SRL= (see 'nlpipe train srl-data')")
@O.dev_file("the same format, for early stopping")
@O.OUT_DIR
@click.option("--no-syntax", is_flag=True, help="The SA baseline: no syntactically supervised head.")
@click.option("--syntax", type=click.Choice(MODES), default=None,
              help="How the syntactic head learns: lisa (attends to the gold tree), marginals (structured "
                   "attention over the tree CRF's marginals), ste or spigot (attends to its own best tree; "
                   "straight-through or SPIGOT gradient). Default lisa (with --init: the model's).")
@click.option("--eta", type=float, default=None, help="--syntax spigot: the step size of the projected "
                                                      "gradient step (default 1).")
@click.option("--layers", type=int, default=None, help="Self-attention layers (default 4).")
@click.option("--d-model", type=int, default=None, help="Model width (default 192).")
@click.option("--heads", type=int, default=None, help="Attention heads (default 6).")
@click.option("--epochs", type=int, default=60, show_default=True, help="Passes over the training data.")
@O.MAX_MINUTES
@click.option("--patience", type=int, default=8, show_default=True,
              help="Stop after this many epochs without a better dev F1.")
@click.option("--lr", type=float, default=1e-3, show_default=True, help="Peak learning rate (after warm-up).")
@click.option("--warmup", type=int, default=800, show_default=True, help="Warm-up steps.")
@click.option("--batch-tokens", type=int, default=1500, show_default=True, help="Batch size in tokens.")
@click.option("--ema", type=click.FloatRange(0.0, 1.0, max_open=True), default=0.0, show_default=True,
              help="Score and keep a moving average of the weights with this decay per step (0: the weights "
                   "as trained).")
@O.VECTORS
@O.GLOVE_WORDS
@O.GLOVE_VECTORS
@O.GLOVE_TOP
@O.init_model("Continue training this model (its vocabularies and hyper-parameters; a fresh optimizer).")
@click.option("--init-steps", type=int, default=0, show_default=True,
              help="With --init: the steps M0 was trained for (where the learning-rate schedule resumes).")
@O.LANG
@O.SEED
@O.THREADS
@O.DEVICE
@O.PRECISION
@O.AS_JSON
def train_srl(as_json: bool, train_file: str, dev_file: str, max_minutes: Optional[float], lang: Optional[str],
              **options: Any) -> None:
    """Train a LISA (or, with --no-syntax, SA) model for predicates and SRL; write it to --out."""
    from nlpipe.train.srl import train as train_lisa

    result = train_lisa(log=_log(), train_path=train_file, dev_path=dev_file,
                        **O.given(max_minutes=max_minutes, lang=lang), **options)
    echo_result(result, f"srl: dev F1 {result['dev']['f1']:.2f} (gold predicates), predicates F1 "
                        f"{result['dev']['predicates_f1']:.2f} -> {options['out']}", as_json)


# ---------------------------------------------------------------------------------------------
# pipeline: every stage from one treebank

@train.command(name="pipeline")
@O.train_file("a UD treebank's training CoNLL-U (with # text; XPOS, FEATS, LEMMA may be '_')")
@O.dev_file("the treebank's development CoNLL-U, for model selection")
@click.option("--out", "out", required=True, metavar="DIR",
              help="Folder to write, one model folder per part: tokenize, pos, pos-bilstm, parse (biaffine), "
                   "parse-transition; where the BiLSTM tagger wins on dev it becomes pos, and the fast "
                   "tagger pos-fast.")
@click.option("--parts", default=",".join(PIPELINE_PARTS), show_default=True, metavar="P1,P2",
              help="The parts to train (comma-separated).")
@click.option("--set", "part_options", multiple=True, metavar="PART.OPTION=VALUE",
              help="An option of one part's trainer, as its training function or its hyper-parameters name it "
                   "(e.g. parse.epochs=2, pos.wrapper_steps=3, pos-bilstm.hidden=256); repeatable.")
@O.VECTORS
@O.RAW
@O.LANG
@O.SEED
@O.MAX_MINUTES
@O.THREADS
@O.DEVICE
@O.PRECISION
@O.AS_JSON
def train_pipeline(train_file: str, dev_file: str, out: str, parts: str, part_options: tuple,
                   vectors: Optional[str], raw: Tuple[str, ...], lang: Optional[str], seed: int,
                   max_minutes: Optional[float], threads: int, device: str, precision: str,
                   as_json: bool) -> None:
    """Train a whole pipeline (tokenizer, both taggers, both parsers) from a treebank's train and dev
    files into DIR; print each part's dev scores. Run it with 'nlpipe annotate --models DIR'. Within
    --max-minutes (default 55): the tokenizer and the BiLSTM tagger take at most a quarter each, the
    biaffine parser what is left."""
    from nlpipe.io.model_dir import UNDETERMINED
    from nlpipe.train.pipeline import PipelineOptions, parse_part_option, score_table
    from nlpipe.train.pipeline import train_pipeline as run
    from nlpipe.train.raw_vectors import vectors_or_raw

    per_part: Dict[str, Dict[str, Any]] = {}
    for text in part_options:
        part, name, value = parse_part_option(text)
        per_part.setdefault(part, {})[name] = value
    options = PipelineOptions(lang=lang or UNDETERMINED, seed=seed, threads=threads, device=device,
                              precision=precision,
                              vectors=vectors_or_raw(vectors, raw, seed, log=_log()),
                              max_minutes=max_minutes, part_options=per_part,
                              parts=[p.strip() for p in parts.split(",") if p.strip()])
    result = run(train_file, dev_file, out, options, log=_log())
    echo_result(result, "\n".join(score_table(result) + [f"pipeline ({result['language']}): "
                                                         f"{result['minutes']} min -> {out}"]), as_json)


# ---------------------------------------------------------------------------------------------
# Training data

@train.command(name="jackknife", context_settings={"ignore_unknown_options": True})
@O.train_file("gold CoNLL-U")
@O.dev_file("CoNLL-U, for 'nlpipe train pos --dev'")
@O.OUTPUT
@O.FOLDS
@O.JOBS
@click.option("--work", default=None, metavar="DIR",
              help="Folder for the fold files and models (default: a temporary one, removed after a success).")
@click.option("--interleave", is_flag=True,
              help="Deal the documents out to the folds in turn instead of cutting the file into contiguous "
                   "parts (each fold then mixes the file's genres).")
@click.argument("pos_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- POS_OPTIONS]")
def train_jackknife(train_file: str, dev_file: str, output: str, folds: int, jobs: Optional[int],
                    work: Optional[str], interleave: bool, pos_args: tuple) -> None:
    """Jack-knifed POS tags for parser training: the training file with each document-aligned fold
    tagged by 'nlpipe train pos' (with the options after --) trained on the other folds."""
    from nlpipe.train.jackknife import jackknife

    from nlpipe.cli.output import warn

    parts = jackknife(train_file, dev_file, output, folds, list(pos_args), work, 1 if jobs is None else jobs,
                      interleave=interleave, warn=warn)
    click.echo(f"{output}: {sum(map(len, parts))} sentences, folds of {', '.join(str(len(p)) for p in parts)}",
               err=True)


@train.command(name="vectors")
@click.option("--raw", "raw", multiple=True, required=True, metavar="FILE",
              help="Raw UTF-8 text of the language (repeatable).")
@O.OUTPUT
@click.option("--dim", type=click.IntRange(min=1), default=50, show_default=True, help="Dimensions.")
@click.option("--window", type=click.IntRange(min=1), default=2, show_default=True,
              help="Neighbours counted on each side (the d-th weighted 1/d).")
@click.option("--min-count", type=click.IntRange(min=1), default=2, show_default=True,
              help="Words seen fewer times get no vector.")
@click.option("--top", type=click.IntRange(min=1), default=100_000, show_default=True,
              help="Most frequent words that get a vector.")
@O.SEED
def train_vectors(raw: Tuple[str, ...], output: str, dim: int, window: int, min_count: int, top: int,
                  seed: int) -> None:
    """Word vectors learned from raw text (PPMI and truncated SVD) as a word2vec text file, for --vectors
    of every trainer."""
    from nlpipe.io.outputs import check_output
    from nlpipe.train.raw_vectors import vectors_from_text, write_vectors

    check_output(output)        # before the work
    vectors = vectors_from_text(list(raw), dim=dim, window=window, min_count=min_count, top=top, seed=seed,
                                log=lambda m: click.echo(m, err=True))
    write_vectors(vectors, output)
    click.echo(f"{output}: {len(vectors.words)} words x {vectors.dim}", err=True)


@train.command(name="srl-data")
@click.argument("ud", metavar="UD.conllu")
@click.argument("props", metavar="PROPS.gold_conll")
@O.OUTPUT
def train_srl_data(ud: str, props: str, output: str) -> None:
    """SRL training data: the UD sentences of documents with PropBank annotation, their frames (CoNLL-2012
    span props) as MISC Pred=/SRL=."""
    from nlpipe.train.srl_data import write_srl_data

    r: Dict[str, Any] = write_srl_data(ud, props, output)
    click.echo(f"{output}: {r['sentences']} sentences; predicates {r['predicates']} ({r['predicates_dropped']} "
               f"dropped), spans {r['spans']} ({r['spans_dropped']} dropped, {r['spans_trimmed']} trimmed), "
               f"documents without props {r['documents_without_props']}, unmatched {r['documents_unmatched']}",
               err=True)   # stdout may be the data itself (-o -)
