"""Options that several commands share, each declared once: one name, one default, one help text.

A command stacks them as decorators (``@options.DEVICE``). The factories (:func:`train_file`,
:func:`model_dir_out` ...) let a command word the help for its own data while name and default stay
the same. ``tests/test_cli_options.py`` walks every command and checks that these names keep one
default and one spelling everywhere.

Defaults, and why:
- ``--device cpu``: a filter's output and a trained model are then the same on every machine (a
  GPU gives other floating-point sums); a GPU is used when asked for (``cuda``, or ``auto``).
- ``--precision fp32``: bf16 is faster only where the hardware has it, and its dev scores are a
  recipe's choice.
- ``--seed 1``, ``--threads 1``: reproducible runs that stay polite on a shared machine.
- ``--vectors``: GloVe 6B 50d (the ``train`` extra) for English, none for other languages, whose
  models then know only their training words (and nothing English).
- ``--glove-top 40000``: the embedding table is most of a neural model's size; recipes that want
  more words of the vectors (the shipped POS clusters and NER model: 100000) say so.
- ``--max-minutes``: not given, each trainer keeps its own budget (biaffine 85, LISA 40, the whole
  ``train pipeline`` 55, none for the others); the same flag caps every trainer.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import click

from nlpipe.io.render import FORMATS
from nlpipe.nn.precision import PRECISIONS

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

DEVICES = ("cpu", "cuda", "auto")

# --- input and output -----------------------------------------------------------------------

INPUT = click.argument("input", required=False, default="-", metavar="[INPUT]")
OUTPUT = click.option("-o", "--output", default="-", metavar="OUT", help="Output file (default: stdout).")
MODEL = click.option("-m", "--model", default=None, metavar="M",
                     help="Model directory or shipped model name (default: the shipped default; "
                          "see 'nlpipe models').")
DEVICE = click.option("--device", type=click.Choice(DEVICES), default="cpu", show_default=True,
                      help="Where torch models run (auto: cuda when available).")
PRECISION = click.option("--precision", type=click.Choice(PRECISIONS), default="fp32", show_default=True,
                         help="Training arithmetic of the networks: bf16 runs their products in bfloat16 "
                              "(mixed precision; weights and losses stay float32): faster on GPUs and on CPUs "
                              "with AVX512-BF16 or AMX, slower on other CPUs. Saved models are float32.")
AS_JSON = click.option("--json", "as_json", is_flag=True,
                       help="Print the result as one JSON object on stdout (the summary for people then goes to "
                            "stderr).")
INPUT_MODE = click.option(
    "--input", "input_mode", type=click.Choice(["auto", "raw", "sentences", "tokens", "conllu"]), default="auto",
    show_default=True,
    help="How to read the input: auto (CoNLL-U or raw text, told apart by the first lines), raw (text: "
         "sentences and tokens are found), sentences (one sentence a line, tokens are found), tokens (one "
         "sentence a line, tokens split at spaces as they are, no multiword tokens), conllu (already "
         "tokenized). A blank line starts a paragraph.")
OUTPUT_FORMAT = click.option(
    "--to", "output_format", type=click.Choice(list(FORMATS)), default="conllu", show_default=True,
    help="Output format: conllu; json (one object a sentence a line: words with named fields, entities, "
         "predicates and roles); text (one sentence a line); tree (each dependency tree drawn in the terminal).")
ENCODING = click.option("--encoding", default="utf-8", show_default=True, metavar="NAME",
                        help="The input's character encoding, any Python codec name (latin-1, cp1252, utf-16 ...); "
                             "the output is UTF-8. An input file that is not valid in it is refused before the "
                             "models load, naming the line and byte.")
ENCODING_ERRORS = click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict",
                               show_default=True,
                               help="What to do with bytes that are not valid in the input's encoding (--encoding; "
                                    "default UTF-8): strict refuses the input, replace reads each as U+FFFD.")
JOBS = click.option("-j", "--jobs", type=int, default=None,
                    help="Processes working at the same time (annotate and the stage commands: workers that each "
                         "load the models once, output order kept; train jackknife: folds trained at once). "
                         "Default: one per core for a stage command on the CPU reading a file of several chunks "
                         "of sentences, at most one per chunk; else 1.")
BATCH = click.option("--batch", type=int, default=1024, show_default=True, metavar="N",
                     help="Sentences per chunk handed to the stages (and to a worker). With --jobs, a file's "
                          "chunks may be smaller, so that the workers get an even share.")


def probs(what: str) -> Decorator:
    """``--probs``: ``what`` says which confidences the command writes (MISC keys)."""
    return click.option("--probs", is_flag=True, help=f"Also write {what}.")


# Dynamic feature selection at run time (pos, transition parser); in `nlpipe train` the same names
# set the defaults saved in the model.
MARGIN = click.option("--margin", type=float, default=None, metavar="m",
                      help="Dynamic feature selection: a word (or transition) stops adding feature templates "
                           "once its best label leads by m (smaller: faster, less accurate; negative: every "
                           "template; default: the model's).")
CHECKPOINTS = click.option("--checkpoints", default=None, metavar="S",
                           help="Where the margin is tested: 'all' (after every template), 'pow2', or counts "
                                "such as 2,4,8,16,32 (default: the model's).")
FIRST_MARGIN = click.option("--first-margin", type=float, default=None, metavar="m1",
                            help="Two-pass POS models: the first pass's margin (default: --margin if given, "
                                 "else the model's).")
FIRST_CHECKPOINTS = click.option("--first-checkpoints", default=None, metavar="S1",
                                 help="Two-pass POS models: the first pass's checkpoints (default: --checkpoints "
                                      "if given, else the model's).")

# --- training --------------------------------------------------------------------------------


def train_file(what: str) -> Decorator:
    return click.option("--train", "train_file", required=True, metavar="T", help=f"Training file: {what}.")


def dev_file(what: str = "the same format, for model selection", required: bool = True) -> Decorator:
    return click.option("--dev", "dev_file", required=required, default=None, metavar="D",
                        help=f"Development file: {what}.")


OUT_DIR = click.option("--out", "out", required=True, metavar="M", help="Model directory to write.")
TEST_FILE = click.option("--test", "test_file", default=None, metavar="E",
                         help="Also score this file and record the scores in config.json.")
SEED = click.option("--seed", type=int, default=1, show_default=True, help="Random seed.")
THREADS = click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
                       help="torch / numpy CPU threads.")
MAX_MINUTES = click.option("--max-minutes", type=click.FloatRange(min=0, min_open=True), default=None,
                           metavar="MIN", help="Stop training before this many minutes have passed (default: "
                                               "the trainer's own budget: biaffine parser 85, srl 40, train pipeline 55 "
                                               "in all, others none).")
VECTORS = click.option("--vectors", default=None, metavar="FILE",
                       help="Word vectors: a word2vec or GloVe text file (a word and its numbers a line, most "
                            "frequent first; word2vec's 'N DIM' first line optional; .gz read as gzip), or 'none' "
                            "(default: GloVe 6B 50d, the train extra, for --lang en; none for other languages).")
RAW = click.option("--raw", "raw", multiple=True, metavar="FILE",
                   help="Raw text of the language (repeatable): word vectors learned from it (as 'nlpipe train "
                        "vectors' learns them) instead of --vectors, for a language without published ones.")
GLOVE_WORDS = click.option("--glove-words", default=None, metavar="FILE",
                           help="GloVe 6B 50d word list, one a line (default: the package's; needed where no "
                                "parquet reader is installed).")
GLOVE_VECTORS = click.option("--glove-vectors", default=None, metavar="NPY",
                             help="GloVe 6B 50d vectors in the order of --glove-words (default: the package's).")
GLOVE_TOP = click.option("--glove-top", type=click.IntRange(min=0), default=40000, show_default=True,
                         help="Most frequent words of the word vectors kept besides the training words.")
LANG = click.option("--lang", default=None, metavar="CODE",
                    help="Language code of the training data (e.g. en), recorded in the model "
                         "(default: und, undetermined).")
FOLDS = click.option("--folds", type=click.IntRange(min=2), default=2, show_default=True,
                     help="Jack-knife folds: each part is tagged by a model trained on the others.")


def init_model(what: str = "Continue training this model (its vocabularies and hyper-parameters).") -> Decorator:
    return click.option("--init", default=None, metavar="M0", help=what)


def given(**values: Optional[Any]) -> dict:
    """The options the user gave (not None): the others keep the training function's own defaults."""
    return {k: v for k, v in values.items() if v is not None}


def seconds(max_minutes: Optional[float]) -> Optional[float]:
    """``--max-minutes`` for trainers that count seconds."""
    return None if max_minutes is None else 60.0 * max_minutes
