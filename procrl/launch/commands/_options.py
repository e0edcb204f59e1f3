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


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value
