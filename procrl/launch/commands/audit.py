"""``procrl audit``: search how a recipe's reward mix can be gamed: named exploits and their
compositions applied to real problems' worked solutions, scored as ``procrl score`` scores (the
work: :mod:`procrl.evaluation.audit`). Exit status 1 when a gamed text beats the honest worked
solution by more than ``--tolerance`` on average, so it can gate a training launch."""

from __future__ import annotations

import argparse
import math

from procrl.launch.commands._options import add_recipe, positive_int

NAME = "audit"
HELP = "Search how the recipe's reward mix can be gamed (exit status 1 beyond --tolerance)."


def _number(text: str, positive: bool = False) -> float:
    """An argparse type: a finite number >= 0 (> 0 with ``positive``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise argparse.ArgumentTypeError(f"must be a finite number {'>' if positive else '>='} 0, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recipe(parser, positional=False)
    parser.add_argument(
        "--tolerance",
        type=_number,
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
    parser.add_argument(
        "--minutes",
        type=lambda text: _number(text, positive=True),
        default=None,
        help="Stop the search after this many minutes.",
    )
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
    from procrl.evaluation.audit.run import run_audit

    search = "tolerance budget minutes problems num_problems beam max_depth exploits batch_size".split()
    settings = {name: getattr(args, name) for name in search}
    return run_audit(args.recipe, args.overrides, args.output_dir, args.overwrite, not args.quiet, **settings)
