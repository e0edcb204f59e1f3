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
import os
import sys

from procrl.core.config import ConfigError
from procrl.core.interrupts import interrupted
from procrl.core.redaction import hide_secrets, redact
from procrl.data import build_eval_dataset, build_prompt_dataset
from procrl.launch.commands._options import add_train_arguments
from procrl.launch.entry import run_command
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
    write_artifacts,
)
from procrl.models.generation import vllm_available
from procrl.models.loading import load_tokenizer, model_init_kwargs, names_gguf
from procrl.observe.wandb import wandb_dir
from procrl.recipe import Recipe, load_recipe
from procrl.recipe.checks import check_batch_layout, check_training_data, check_training_rows
from procrl.rewards.mix import RewardMix
from procrl.trainers.output_dir import check_output_dir

# Imported where used: torch, transformers, trl and the procrl modules that import them
# (procrl.observe.console, .failing, .callback, procrl.trainers.build): `procrl check` imports this
# module and must not load the trainer stack (tests/test_startup.py).

__all__ = [
    "build_trainer",
    "build_training_args",
    "check_batch_layout",
    "check_training_data",
    "main",
    "preflight",
    "redact",
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
        write_artifacts(trainer, recipe, resumed_at=resume_point.step if resume_point is not None else None)
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
        return mix, args, _trainer_inputs(recipe, args, mix)
    except KeyboardInterrupt as error:
        raise interrupted(error, f"{recipe.output_dir} was not touched") from None


def build_trainer(recipe: Recipe):
    """(trainer, reward mix) built as :func:`train` builds them (preflight, data, procrl's
    trainer), without an output-dir lock, artifacts or resuming, and not started:
    benchmarks/gpu_step_bench.py times the steps of what this returns."""
    mix, args = preflight(recipe)
    return _make_trainer(recipe, mix, args, *_trainer_inputs(recipe, args, mix)), mix


def preflight(recipe: Recipe, processes: int | None = None):
    """Everything :func:`train` checks before it loads a model or writes a file, as one-line
    ConfigErrors (``procrl check`` runs the checks that need no TRL: :func:`check_training_data`,
    :func:`check_batch_layout`). Returns the reward mix and TRL's GRPOConfig."""
    check_training_data(recipe)
    # the launched world size (torchrun / accelerate set WORLD_SIZE), before TRL's own checks
    check_batch_layout(recipe, processes if processes is not None else int(os.environ.get("WORLD_SIZE", "1")))
    mix = RewardMix(recipe.rewards)
    mix.evaluation_judge = recipe.data.eval_judge  # held-out evaluation's judge (procrl/trainers/held_out.py)
    args = build_training_args(recipe, mix.weights)
    require_vllm_if_used(args)
    return mix, args


def build_training_args(recipe: Recipe, mix_weights: list[float]):
    """TRL GRPOConfig from the recipe; TRL's own checks surface as ConfigError before any load."""
    import torch
    from trl import GRPOConfig

    kwargs = hide_secrets(dict(recipe.trainer_args))  # hub_token: usable here, never pickled (training_args.bin)
    if "bf16" not in kwargs and not torch.cuda.is_available():
        kwargs["bf16"] = False  # GRPOConfig defaults to bf16, which a CPU run cannot use
    if "use_cpu" not in kwargs and not torch.cuda.is_available():
        kwargs["use_cpu"] = True  # else accelerate finds no GPU backend and every launched rank trains alone
    if not names_gguf(
        recipe.model.name_or_path, recipe.model.gguf_file
    ):  # a GGUF policy is loaded by procrl (procrl/trainers/grpo.py), not by TRL
        kwargs.setdefault("model_init_kwargs", model_init_kwargs(recipe.model))
    if kwargs.get("eval_steps") and "eval_strategy" not in kwargs:
        kwargs["eval_strategy"] = "steps"  # trainer.eval_steps alone means: evaluate every eval_steps steps
    if recipe.logging.wandb_project:
        os.environ["WANDB_PROJECT"] = recipe.logging.wandb_project
    if recipe.logging.wandb_entity:
        os.environ["WANDB_ENTITY"] = recipe.logging.wandb_entity
    try:
        return GRPOConfig(output_dir=recipe.output_dir, reward_weights=mix_weights, **kwargs)
    except (ValueError, TypeError) as error:
        raise ConfigError(f"trainer: {error}".splitlines()[0]) from None


def require_vllm_if_used(args) -> None:
    """``use_vllm: true`` without vLLM installed fails here, before any model loads (TRL would
    raise only after loading the policy)."""
    if not args.use_vllm:
        return

    if not vllm_available():
        raise ConfigError(
            "trainer.use_vllm: true, but vLLM is not installed in this environment (pip install 'procrl[vllm]' on a "
            "CUDA machine); set trainer.use_vllm=false to generate with transformers"
        )


def _trainer_inputs(recipe: Recipe, args, mix=None):
    """(tokenizer, training prompts, held-out prompts or None), after seeding; the gold answers
    and prompt lengths checked before any model loads (procrl/recipe/checks.py), their numbers
    logged through ``mix``."""
    from transformers import set_seed

    set_seed(args.seed)
    tokenizer = load_tokenizer(recipe.model)
    dataset = build_prompt_dataset(recipe.data, tokenizer)
    eval_dataset = None
    if args.eval_strategy != "no":  # trainer.eval_steps: the held-out split (procrl/trainers/held_out.py)
        eval_dataset = build_eval_dataset(recipe.data, tokenizer)
    dataset, eval_dataset = check_training_rows(
        recipe, tokenizer, dataset, eval_dataset, mix, note=tell if is_global_main() else None
    )
    return tokenizer, dataset, eval_dataset


def _make_trainer(recipe: Recipe, mix, args, tokenizer, dataset, eval_dataset):
    """procrl's trainer for the recipe: GRPO (outcome or process credit) or PPO (loads the model),
    printing one short line per logging step on the terminal."""
    from procrl.observe.console import use_compact_console
    from procrl.trainers.build import build_trainer

    trainer = build_trainer(
        recipe, mix, args, tokenizer, dataset, callbacks=_callbacks(recipe, mix), eval_dataset=eval_dataset
    )
    use_compact_console(trainer)
    return trainer


def _callbacks(recipe: Recipe, mix=None) -> list:
    from procrl.observe.console import RecipeConfigCallback

    callbacks = [RecipeConfigCallback(redact(recipe.resolved()))]
    if mix is not None:
        from procrl.observe.failing import FailingComponentWatch

        callbacks.append(FailingComponentWatch.attach(mix, recipe.trainer.stop_after_failed_steps))
    if recipe.logging.diagnostics and mix is not None:
        from procrl.observe.callback import DiagnosticsCallback

        callbacks.append(DiagnosticsCallback.attach(mix))
    return callbacks


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
