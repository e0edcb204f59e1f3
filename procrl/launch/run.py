"""Build everything from a recipe and train, in this process (what accelerate launches).

``python -m procrl.run RECIPE [--set K=V ...] [--output-dir D] [--resume] [--overwrite]`` (and
``accelerate launch -m procrl.run RECIPE``): ``procrl train``'s arguments, run as every procrl
command runs (:func:`procrl.launch.entry.run_command`). ``procrl train`` ends up here too.

:func:`train` reads from the recipe to ``trainer.train()``; below it, what it builds (the checks before
any load, TRL's GRPOConfig, the data, procrl's trainer) and the command line. The reliability machinery
it calls (resuming, the output dir's lock and what an interrupt keeps, the final save, the run's
artifacts, the failing-component watch, the launch check) is :mod:`procrl.launch.reliability`.
"""

from __future__ import annotations

import argparse
import sys

from procrl.core.config import ConfigError
from procrl.core.interrupts import interrupted
from procrl.core.redaction import redact
from procrl.launch.commands._options import add_train_arguments
from procrl.launch.entry import run_command
from procrl.launch.launched import launch_report
from procrl.launch.prelaunch import report_rank_failure
from procrl.launch.reliability import (
    OutputDirHeld,
    check_launch_fits,
    connect_wandb,
    continue_from,
    failing_watch,
    find_resume,
    is_global_main,
    report_finished,
    save_final_from_checkpoint,
    tell,
)
from procrl.observe.wandb import wandb_dir
from procrl.recipe import Recipe, load_recipe
from procrl.recipe.checks import check_batch_layout, check_training_data
from procrl.trainers.output_dir import check_output_dir, write_artifacts
from procrl.trainers.setup import _make_trainer, _trainer_inputs, build_training_args, preflight, require_vllm_if_used

# What train() builds from the recipe (GRPOConfig, the data, the trainer) is procrl/trainers/setup.py;
# here: the run around it (the output dir's lock, resuming, the final save) and the command line.

__all__ = [
    "build_trainer",
    "build_training_args",
    "check_batch_layout",
    "check_training_data",
    "main",
    "preflight",
    "redact",
    "require_vllm_if_used",
    "train",
]


def train(recipe: Recipe, resume: bool = False, overwrite: bool = False):
    """Train with a validated recipe; returns the trainer (None when ``--resume`` finds the run
    finished: :func:`~procrl.launch.reliability.finished_note`).

    Before anything loads: the output dir may take this run
    (:func:`procrl.trainers.output_dir.check_output_dir`), the launch fits
    (:func:`~procrl.launch.reliability.check_launch_fits`), ``--resume`` has a complete checkpoint,
    :func:`preflight` passes. The main process holds the output dir's lock from before the model loads
    until it exits. The final model is written as checkpoints are, complete or absent
    (:func:`procrl.trainers.checkpoints.save_final_model`). Ctrl-C and SIGTERM end it with one line naming
    the checkpoint to continue from.

    Args:
        recipe: the validated recipe (:func:`procrl.recipe.load_recipe`).
        resume: continue from the newest complete checkpoint in the output dir.
        overwrite: start afresh in an output dir that holds a run (its checkpoints are deleted).

    Returns:
        The trainer after its final save, or None.
    """
    check_output_dir(recipe.output_dir, resume=resume, overwrite=overwrite)
    check_launch_fits(recipe)
    if resume and report_finished(recipe):
        return None
    resume_point, finished = find_resume(recipe) if resume else (None, None)
    mix, args, inputs = _prepared(recipe)
    with OutputDirHeld(recipe, resume, overwrite) as held:
        trainer = _make_trainer(recipe, mix, args, *inputs)
        resumed_at = resume_point.step if resume_point is not None else None
        write_artifacts(trainer, recipe, resumed_at, launch=launch_report(recipe))
        checkpoint = continue_from(trainer, resume_point)
        if finished is not None:  # trained to the end, its final model missing
            save_final_from_checkpoint(trainer, recipe, checkpoint, finished)
            return trainer
        connect_wandb(trainer, recipe, args, resume)
        with wandb_dir(recipe.output_dir):
            trainer.train(resume_from_checkpoint=checkpoint)
        failing_watch(trainer).raise_if_stopped(recipe.output_dir)  # a component down: no final model
        held.final_save(trainer)
    return trainer


def _prepared(recipe: Recipe):
    """(reward mix, GRPOConfig, (tokenizer, training prompts, held-out prompts)): :func:`preflight` and
    the data, before the output dir is touched (an interrupt here says so)."""
    try:
        mix, args = preflight(recipe)
        return mix, args, _trainer_inputs(recipe, args, mix, note=_note())
    except KeyboardInterrupt as error:
        raise interrupted(error, f"{recipe.output_dir} was not touched") from None


def _note():
    """How the data checks' numbers are told: one line on rank 0, nothing on the other ranks."""
    return tell if is_global_main() else None


def build_trainer(recipe: Recipe):
    """(trainer, reward mix) built as :func:`train` builds them (preflight, data, procrl's
    trainer), without an output-dir lock, artifacts or resuming, and not started:
    benchmarks/gpu_step_bench.py times the steps of what this returns."""
    mix, args = preflight(recipe)
    return _make_trainer(recipe, mix, args, *_trainer_inputs(recipe, args, mix, note=_note())), mix


def train_reporting_failure(recipe, **kwargs) -> None:
    """:func:`procrl.launch.run.train`; a failure other than a ConfigError prints one procrl line (which
    rank, what) before the traceback, so that a failed rank is not only a traceback."""

    try:
        train(recipe, **kwargs)
    except ConfigError:
        raise
    except Exception as error:
        report_rank_failure(error)
        raise


def parser(prog: str = "python -m procrl.run") -> argparse.ArgumentParser:
    """``python -m procrl.run``'s parser: ``procrl train``'s arguments (:func:`add_train_arguments`), the
    handler training in this process.

    Args:
        prog: the program's name in usage lines (the start-up hook's ``python RECIPE.yaml``).

    Returns:
        The parser; ``parse_args`` gives ``recipe``, ``overrides``, ``output_dir``, ``resume``, ``overwrite``.
    """
    p = argparse.ArgumentParser(prog=prog, description="Train with a procrl recipe in this process.")
    add_train_arguments(p)
    p.set_defaults(handler=_train_here)
    return p


def _train_here(args: argparse.Namespace) -> int:
    recipe = load_recipe(args.recipe, args.overrides, args.output_dir)
    train_reporting_failure(recipe, resume=args.resume, overwrite=args.overwrite)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m procrl.run ARGV``: train in this process as ``procrl train`` would (exit status 0, 2
    for a ConfigError, 130/143 for an interrupt, whose line only rank 0 prints)."""
    return run_command(parser, argv, show_interrupt=is_global_main())


if __name__ == "__main__":
    sys.exit(main())
