"""``procrl train``: train with a recipe, through ``accelerate launch`` when its ``launch:``
section asks for it (the work: :mod:`procrl.launch.accelerate`)."""

from __future__ import annotations

import argparse

from procrl.launch.commands._options import add_train_arguments

NAME = "train"
HELP = "Train with a recipe."
EPILOG = (
    "Starts `accelerate launch` when the recipe's launch: section asks for a config file or more than one "
    "process. Any other flag (--num_processes N, --config_file F, --machine_rank R, --main_process_ip H, ...) "
    "goes to accelerate launch and wins over the recipe's launch section."
)
PASSES_UNKNOWN_FLAGS = True  # to accelerate launch: procrl.launch.cli hands them over as args.launch_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``procrl train``'s arguments: training's own (``python -m procrl.run`` takes the same), and
    any other flag passed on to accelerate launch (:data:`EPILOG`)."""
    parser.epilog = EPILOG
    add_train_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Train with the recipe, launched through accelerate or in this process; returns the exit status."""
    # lazy: procrl.launch.accelerate and what it imports would add 40% to every `procrl ... --help`
    from procrl.launch.accelerate import run_train, split_launch_args

    launch_args = split_launch_args(getattr(args, "launch_args", []))
    return run_train(args.recipe, args.overrides, args.output_dir, args.resume, launch_args, overwrite=args.overwrite)
