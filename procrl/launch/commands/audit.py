"""``procrl audit``: search how a recipe's reward mix can be gamed: named exploits and their
compositions applied to real problems' worked solutions, scored as ``procrl score`` scores (the
work: :mod:`procrl.evaluation.audit`). Exit status 1 when a gamed text beats the honest worked
solution by more than ``--tolerance`` on average, so it can gate a training launch."""

from __future__ import annotations

import argparse
import math
import sys

from procrl.launch.commands._options import add_recipe, positive_int

NAME = "audit"
HELP = "Search how the recipe's reward mix can be gamed (exit status 1 beyond --tolerance)."


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def _positive(text: str) -> float:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recipe(parser, positional=False)
    parser.add_argument(
        "--tolerance",
        type=_non_negative,
        default=0.0,
        help="Reward a gamed text may gain over the honest worked solution, on average, before the audit fails "
        "(exit status 1). Default 0: any gain fails.",
    )
    parser.add_argument(
        "--budget",
        type=positive_int,
        default=None,
        help="Texts to score at most (default 8000; the honest ones count).",
    )
    parser.add_argument("--minutes", type=_positive, default=None, help="Stop the search after this many minutes.")
    parser.add_argument(
        "--problems",
        default=None,
        help="GSM8K-format JSONL (question, answer with steps and '#### N'), train split; default: 64 GSM8K train "
        "problems shipped with procrl.",
    )
    parser.add_argument("--num-problems", type=positive_int, default=32, help="Problems used (the first N).")
    parser.add_argument("--beam", type=positive_int, default=8, help="Compositions extended at each depth.")
    parser.add_argument("--max-depth", type=positive_int, default=3, help="Exploits in a composition at most.")
    parser.add_argument(
        "--exploit",
        dest="exploits",
        action="append",
        default=None,
        metavar="NAME",
        help="Search only these exploits (repeatable; default all).",
    )
    parser.add_argument("--batch-size", type=positive_int, default=64, help="Completions scored together.")
    parser.add_argument(
        "--output-dir", default=None, help="Where report.md, report.json, audit.png go (default audit/<recipe>)."
    )
    parser.add_argument("--overwrite", action="store_true", help="Write into an output dir procrl audit did not write.")
    parser.add_argument("--quiet", action="store_true", help="No progress bar.")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from procrl.evaluation.audit.report import summary_lines
    from procrl.evaluation.audit.run import (
        DEFAULT_BUDGET,
        audit_recipe,
        check_output_dir,
        default_output_dir,
        write_outputs,
    )

    directory = Path(args.output_dir) if args.output_dir else default_output_dir(args.recipe)
    check_output_dir(directory, args.overwrite)  # before any work
    audit = audit_recipe(
        args.recipe,
        args.overrides,
        tolerance=args.tolerance,
        budget=args.budget or DEFAULT_BUDGET,
        minutes=args.minutes,
        problems=args.problems,
        num_problems=args.num_problems,
        beam=args.beam,
        max_depth=args.max_depth,
        exploits=args.exploits,
        batch_size=args.batch_size,
        progress=not args.quiet,
    )
    files = write_outputs(directory, audit)
    for line in summary_lines(audit.report):
        print(line)
    print(f"wrote {', '.join(files)} to {directory}")
    sys.stdout.flush()
    return audit.exit_status


def audit_before_training(recipe_path: str, overrides: list[str]) -> int:
    """``procrl train``'s gate: when the recipe's ``audit.before_training`` is on, audit its mix
    (``audit.tolerance``, ``audit.budget``; report in ``audit/<recipe name>``) and return 1 when
    something gamed is beyond the tolerance (training is not started); 0 otherwise, at once when
    the recipe does not ask."""
    from procrl.core.config import ConfigError
    from procrl.evaluation.audit.report import summary_lines
    from procrl.evaluation.audit.run import audit_recipe, check_output_dir, default_output_dir, write_outputs
    from procrl.recipe import load_recipe

    try:
        settings = load_recipe(recipe_path, overrides).audit
    except ConfigError:
        return 0  # a bad recipe is training's to refuse, in its own order of checks and words
    if not settings.before_training:
        return 0
    directory = default_output_dir(recipe_path)
    check_output_dir(directory, overwrite=False)
    print(f"procrl: auditing the reward mix before training (audit.before_training; report in {directory})", flush=True)
    audit = audit_recipe(recipe_path, overrides, tolerance=settings.tolerance, budget=settings.budget)
    write_outputs(directory, audit)
    for line in summary_lines(audit.report):
        print(f"  {line}")
    if audit.exit_status:
        print(
            f"procrl: error: training not started: the reward mix can be gamed beyond audit.tolerance "
            f"({settings.tolerance:g}); see {directory / 'report.md'}, or set audit.before_training=false",
            file=sys.stderr,
            flush=True,
        )
    return audit.exit_status
