"""Options several commands share, spelled once."""

from __future__ import annotations

import argparse

RECIPE_HELP = "Path to a recipe YAML file."


def add_recipe(parser: argparse.ArgumentParser, positional: bool = True, help: str = RECIPE_HELP) -> None:
    """The recipe (a positional argument, or ``--recipe``) and its ``--set`` overrides."""
    if positional:
        parser.add_argument("recipe", help=help)
    else:
        parser.add_argument("--recipe", required=True, help=help)
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Override a recipe key (dotted path; value parsed as YAML). Repeatable.",
    )


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """Training's arguments, the same for ``procrl train`` and ``python -m procrl.run``: the recipe,
    its ``--set`` overrides, ``--output-dir``, ``--resume`` and ``--overwrite``."""
    add_recipe(parser)
    parser.add_argument("--output-dir", default=None, help="Output directory (overrides output_dir).")
    parser.add_argument(
        "--resume", action="store_true", help="Continue from the newest complete checkpoint in the output dir."
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="Start afresh in an output dir that holds a run (deletes its checkpoints).",
    )


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value
