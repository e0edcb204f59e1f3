"""``procrl check``: validate a recipe, print it resolved with the plan, score two examples (the
work: :mod:`procrl.launch.check`, :mod:`procrl.recipe.check`)."""

from __future__ import annotations

import argparse
import sys

from procrl.launch.commands._options import add_recipe

NAME = "check"
HELP = "Validate a recipe, print it resolved with the plan, score 2 examples."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recipe(parser)
    parser.add_argument(
        "--load-models",
        action="store_true",
        help="Also load the policy (show its first prompt as the model sees it) and score components "
        "that load a model.",
    )
    parser.add_argument(
        "--gpu-memory",
        type=float,
        default=None,
        metavar="GB",
        help="Plan against a GPU of this many GB too (besides 80 GB and 40 GB cards, and this machine's GPU).",
    )
    parser.add_argument(
        "--probe-judge",
        action="store_true",
        help="Also score components that send requests (the openai judge): check needs no network otherwise.",
    )


def run(args: argparse.Namespace) -> int:
    from procrl.launch.check import check_recipe

    broken = check_recipe(
        args.recipe,
        args.overrides,
        load_models=args.load_models,
        probe_judge=args.probe_judge,
        gpu_memory_gb=args.gpu_memory,
    )
    for line in broken:
        print(f"procrl: error: {line}", file=sys.stderr)
    print(f"\nhow this mix can be gamed: procrl audit --recipe {args.recipe} (docs/audit.md)")
    return 2 if broken else 0
