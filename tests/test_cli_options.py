"""Every command's options: help text on each, one default and one spelling per shared option, and
the stage lists of the commands equal to nlpipe.registry.STAGES."""
from __future__ import annotations

from collections import defaultdict
from typing import Dict, Iterator, List, Tuple

import click
import pytest

from nlpipe.cli import cli
from nlpipe.registry import STAGES

# The shared options and their one default, stated here by hand.
SHARED = {
    "--output": (("-o", "--output"), "-"),
    "--model": (("-m", "--model"), None),
    "--device": (("--device",), "cpu"),
    "--seed": (("--seed",), 1),
    "--threads": (("--threads",), 1),
    "--vectors": (("--vectors",), None),
    "--glove-top": (("--glove-top",), 40000),
    "--glove-words": (("--glove-words",), None),
    "--glove-vectors": (("--glove-vectors",), None),
    "--max-minutes": (("--max-minutes",), None),
    "--json": (("--json",), False),
    "--jobs": (("-j", "--jobs"), None),   # None: by command (see auto_jobs)
    "--folds": (("--folds",), 2),
    "--lang": (("--lang",), None),
    "--margin": (("--margin",), None),
    "--checkpoints": (("--checkpoints",), None),
    "--input": (("--input",), "auto"),
    "--encoding": (("--encoding",), "utf-8"),
    "--encoding-errors": (("--encoding-errors",), "strict"),
}
# A model's hyper-parameters: the same name means the same thing in each trainer, but the best value
# depends on the model, so each trainer keeps its own default.
PER_MODEL = {"--arch", "--epochs", "--lr", "--batch-tokens", "--hidden", "--layers", "--dilations", "--ema", "--mode",
             "--min-count", "--l2", "--patience"}
# Spellings that were merged into one: none may come back.
RETIRED = {"--time-limit": "--max-minutes", "--ema-decay": "--ema", "--run-margin": "--margin",
           "--run-checkpoints": "--checkpoints", "--clusters-path": "--cluster-table"}


def commands(group: click.Group = cli, path: Tuple[str, ...] = ()) -> Iterator[Tuple[str, click.Command]]:
    """(``"train pos"``, command) for every command under ``group``, groups' subcommands included."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, f"nlpipe {' '.join(path + (name,))} lists but does not load"
        if isinstance(command, click.Group):
            yield from commands(command, path + (name,))
        else:
            yield " ".join(path + (name,)), command


def options() -> Iterator[Tuple[str, click.Option, object]]:
    """(command name, option, its default) for every option of every command."""
    for name, command in commands():
        ctx = click.Context(command)
        for p in command.params:
            if isinstance(p, click.Option):
                d = p.get_default(ctx)
                # "nothing given": a repeatable option's (), a required option's unset marker (click 8.3)
                yield name, p, None if d in ((), []) or type(d).__name__ == "Sentinel" else d


def long_name(option: click.Option) -> str:
    return next(o for o in option.opts if o.startswith("--"))


def test_the_walk_sees_every_command():
    names = [n for n, _ in commands()]
    for expected in ("tokenize", "annotate", "eval pos", "eval ud", "convert", "models", "train pos", "train parse",
                     "train jackknife", "train srl-data", "train tokenize"):
        assert expected in names
    assert "train" not in names   # a group is walked into, not checked as a command


def test_every_option_has_help_text():
    missing = [f"nlpipe {c} {long_name(o)}" for c, o, _ in options() if not (o.help or "").strip()]
    assert not missing, "options without help:\n  " + "\n  ".join(missing)


def test_shared_options_have_one_spelling_and_one_default():
    seen: Dict[str, List[Tuple[str, tuple, object]]] = defaultdict(list)
    for c, o, d in options():
        seen[long_name(o)].append((c, tuple(o.opts), d))
    bad = []
    for flag, uses in seen.items():
        spellings = {u[1] for u in uses}
        if len(spellings) > 1:
            bad.append(f"{flag} spelled {sorted(spellings)}")
        if flag in SHARED:
            opts, value = SHARED[flag]
            bad += [f"nlpipe {c} {flag}: {o} default {d!r}, not {opts} default {value!r}"
                    for c, o, d in uses if o != opts or d != value]
        elif flag not in PER_MODEL and len({repr(u[2]) for u in uses}) > 1:
            bad.append(f"{flag} has several defaults: " + ", ".join(f"{c}: {d!r}" for c, _, d in uses))
    bad += [f"nlpipe {c} {flag}: write {RETIRED[flag]}" for flag, uses in seen.items() if flag in RETIRED
            for c, _, _ in uses]
    assert not bad, "\n".join(bad)


def test_shared_options_are_where_they_belong():
    where = defaultdict(set)
    for c, o, _ in options():
        where[long_name(o)].add(c)
    assert {"tokenize", "pos", "parse", "ner", "predicates", "srl", "annotate"} <= where["--output"]
    assert {"pos", "parse", "ner", "predicates", "srl", "annotate", "eval pos", "eval srl"} <= where["--model"]
    assert {"train tokenize", "train pos", "train parse", "train ner", "train srl"} <= where["--seed"]
    assert {"train tokenize", "train parse", "train ner", "train srl"} <= where["--max-minutes"]
    assert {"train tokenize", "train parse", "train ner", "train srl"} <= where["--threads"]
    assert {"train pos", "train parse", "train ner", "train srl"} <= where["--glove-top"]
    assert {"train pos", "train parse", "train ner", "train srl"} <= where["--vectors"]
    assert {"pos", "parse", "ner", "annotate", "eval parse", "train parse", "train ner"} <= where["--device"]
    assert {"tokenize", "annotate"} <= where["--input"]
    assert {"tokenize", "annotate"} <= where["--encoding"]
    assert {"tokenize", "annotate"} <= where["--encoding-errors"]


def test_stage_lists_are_the_registry_one():
    assert STAGES == ("tokenize", "pos", "parse", "ner", "predicates", "srl")
    ctx = click.Context(cli)
    assert cli.list_commands(ctx)[:len(STAGES)] == list(STAGES)        # the filters
    train = cli.get_command(ctx, "train")
    assert train.list_commands(click.Context(train))[:len(STAGES)] == list(STAGES)
    evaluate = cli.get_command(ctx, "eval")
    assert tuple(evaluate.list_commands(click.Context(evaluate))) == STAGES + ("ud",)   # ud: every CoNLL 2018 metric


@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"], ["train", "pos", "--help"],
                                  ["train", "tokenize", "--help"], ["eval", "--help"]])
def test_help_runs(argv):
    from click.testing import CliRunner

    r = CliRunner().invoke(cli, argv)
    assert r.exit_code == 0 and "Usage:" in r.output


def test_commands_live_in_the_cli_package_only():
    from pathlib import Path

    import nlpipe

    root = Path(nlpipe.__file__).parent
    with_click = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                        if "import click" in p.read_text(encoding="utf-8") and p.parent.name != "cli")
    assert with_click == []
