"""Build everything from a recipe and train, in this process (what accelerate launches).

``python -m procrl.run RECIPE [--set K=V ...] [--output-dir D] [--resume] [--overwrite]`` (and
``accelerate launch -m procrl.run RECIPE``): ``procrl train``'s arguments, run as every procrl
command runs (:func:`procrl.launch.entry.run_command`). ``procrl train`` ends up here too.

:func:`train` reads from the recipe to ``trainer.train()``; the reliability machinery it calls is
below it: resuming, the output dir's lock and what an interrupt keeps, the final save, the run's
artifacts, the failing-component watch, the launch check.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import procrl
from procrl.core import yaml_core
from procrl.core.config import ConfigError
from procrl.core.folders import write_file
from procrl.core.interrupts import interrupted
from procrl.core.redaction import hide_secrets, redact
from procrl.data import build_eval_dataset, build_prompt_dataset, has_no_splits
from procrl.launch.commands._options import add_train_arguments
from procrl.launch.entry import run_command
from procrl.launch.launched import launch_report, note_launch, rank_setup, recipe_launch_flags
from procrl.launch.memory import fit_problem, gpu_memory_bytes
from procrl.launch.output_dir import RunLock, check_output_dir, clear_previous_run, discard_staging
from procrl.launch.prelaunch import report_rank_failure
from procrl.models.generation import vllm_available
from procrl.models.loading import load_tokenizer, model_init_kwargs, names_gguf
from procrl.observe.wandb import set_wandb_run_id, wandb_dir
from procrl.recipe import Recipe, load_recipe
from procrl.recipe.checks import check_training_rows
from procrl.rewards.mix import RewardMix
from procrl.trainers.checkpoints import (
    final_model_problem,
    find_resume_checkpoint,
    interrupted_final_save,
    kept,
    newest_complete_checkpoint,
    save_final_model,
    set_aside,
)

# Imported where they are used: torch, transformers, trl and the procrl modules that import them
# (procrl.observe.console, .failing, .callback, procrl.trainers.build), since `procrl check` imports this
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


def _git_commit() -> str | None:
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "HEAD"],
                capture_output=True,
                text=True,
                timeout=5,
                check=True,
                cwd=Path(__file__).resolve().parent,
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        return None


def run_info(trainer, recipe: Recipe) -> dict[str, Any]:
    import torch
    import transformers
    import trl

    state = trainer.accelerator.state
    plugin = getattr(state, "deepspeed_plugin", None)
    return {
        "procrl_version": procrl.__version__,
        "trl_version": trl.__version__,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "world_size": trainer.accelerator.num_processes,
        "distributed_type": str(state.distributed_type).split(".")[-1],
        "deepspeed_stage": getattr(plugin, "zero_stage", None) if plugin is not None else None,
        "device": str(trainer.accelerator.device),
        "seed": trainer.args.seed,
        "algorithm": recipe.trainer.algorithm,
        "credit": recipe.trainer.credit,
        "git_commit": _git_commit(),
        "recipe_path": recipe.path,
        # what the launcher gave this run, against the recipe's launch section (procrl/launch/launched.py)
        "launch": launch_report(recipe),
    }


RECIPE_FILE = "recipe.yaml"


def _write_artifacts(trainer, recipe: Recipe, resumed_at: int | None = None) -> None:
    """``recipe.yaml`` (redacted) and ``run_info.json``. A resumed run keeps the run's
    ``recipe.yaml``; a recipe that differs from it is saved beside it as
    ``recipe-resumed-at-step-N.yaml`` (:func:`recipe_changes` says how)."""

    if not trainer.accelerator.is_main_process:
        return

    output = Path(recipe.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    text = yaml_core.dump(redact(recipe.resolved()))
    original = output / RECIPE_FILE
    if resumed_at is None or not original.is_file():
        write_file(output, RECIPE_FILE, text)
    elif recipe_changes(recipe):
        write_file(output, f"recipe-resumed-at-step-{resumed_at}.yaml", text)
    write_file(output, "run_info.json", json.dumps(run_info(trainer, recipe), indent=2) + "\n")


_MISSING = object()


def _differences(before: Any, after: Any, key: str = "") -> list[tuple[str, Any, Any]]:
    """``(dotted key, old, new)`` where two recipe trees differ; a section present on one side
    only is one difference."""
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for name in [*before, *(k for k in after if k not in before)]:
            found += _differences(
                before.get(name, _MISSING), after.get(name, _MISSING), f"{key}.{name}" if key else str(name)
            )
        return found
    return [] if before == after else [(key, before, after)]


def recipe_changes(recipe: Recipe) -> list[str]:
    """``KEY: OLD -> NEW`` for every key whose value differs between the run's ``recipe.yaml``
    and ``recipe`` (both redacted; ``output_dir`` left out); empty when there is no recipe.yaml."""

    saved = Path(recipe.output_dir) / RECIPE_FILE
    try:
        before = yaml_core.load(saved.read_text(encoding="utf-8")) or {}
    except Exception:  # noqa: BLE001 - no or an unreadable old recipe: nothing to compare
        return []
    after = yaml_core.load(yaml_core.dump(redact(recipe.resolved()))) or {}  # as written: the same types

    def shown(value: Any) -> str:
        text = "(not set)" if value is _MISSING else json.dumps(value, default=str)
        return text if len(text) <= 160 else text[:157] + "..."

    return [
        f"{key}: {shown(old)} -> {shown(new)}" for key, old, new in _differences(before, after) if key != "output_dir"
    ]


def finished_run(recipe: Recipe) -> tuple[str, int, int] | None:
    """For ``--resume``: ``(what, step, max_steps)`` when the run in the output dir is finished
    (its complete final model, or else its newest complete checkpoint, reached the recipe's
    ``max_steps``: resuming would train past it), or None when there is training left."""

    folder = Path(recipe.output_dir)
    done = []
    if final_model_problem(folder) is None and (folder / "trainer_state.json").is_file():
        done.append(("its final model", folder / "trainer_state.json"))
    newest = newest_complete_checkpoint(folder)
    if newest:
        done.append((Path(newest).name, Path(newest) / "trainer_state.json"))
    for what, state_file in done:
        try:
            state = json.loads(state_file.read_text(encoding="utf-8"))
            step = int(state["global_step"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        target = recipe.trainer_args.get("max_steps", -1)
        if not isinstance(target, int) or target <= 0:
            target = int(state.get("max_steps") or 0)  # trained by epochs: the total the run had planned
        if target > 0 and step >= target:
            return what, step, target
    return None


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


def check_training_data(recipe: Recipe) -> None:
    """Refuse to train on a test split: ``data.split`` or a data file whose name says test
    (``test.jsonl``, ``gsm8k_test.json``), unless ``data.allow_test_data: true``."""
    if recipe.data.allow_test_data:
        return
    if "test" in recipe.data.split.lower():
        raise ConfigError(
            f"data.split: refusing to train on {recipe.data.split!r}; evaluate on test, train on train "
            "(data.allow_test_data: true forces it)"
        )

    if has_no_splits(recipe.data.dataset):
        words = re.split(r"[^a-z0-9]+", Path(recipe.data.dataset).name.lower().split(".")[0])
        if any(word in ("test", "tests", "testing") for word in words):
            raise ConfigError(
                f"data.dataset: refusing to train on {recipe.data.dataset!r}: its name says it is a test split "
                "(data.allow_test_data: true forces it)"
            )


def check_batch_layout(recipe: Recipe, processes: int) -> None:
    """A generation batch must hold whole groups of ``num_generations`` completions of a prompt,
    over ``processes`` processes: TRL GRPOConfig's rule (GRPO; PPO rolls out one generation batch
    per optimizer step), checked on the recipe without importing TRL so that ``procrl check``
    refuses what training would. Defaults are GRPOConfig's."""
    args = recipe.trainer_args
    per_device = int(args.get("per_device_train_batch_size", 8))
    accumulation = int(args.get("gradient_accumulation_steps", 1))
    generations = int(args.get("num_generations") or 8)
    generation_batch, steps = args.get("generation_batch_size"), args.get("steps_per_generation")
    layout = f"per_device_train_batch_size {per_device} x {processes} process(es)"
    if generations < 2:
        raise ConfigError(
            "trainer.num_generations: at least 2 completions per prompt are needed for group advantages,"
            f" got {generations}"
        )
    if generation_batch is not None and steps is not None:
        raise ConfigError("trainer.generation_batch_size: give it or steps_per_generation, not both")
    if generation_batch is not None:
        if generation_batch % (per_device * processes):
            raise ConfigError(
                f"trainer.generation_batch_size: {generation_batch} must be a multiple of {layout}"
                f" = {per_device * processes}"
            )
    else:
        steps = steps if steps is not None else accumulation
        generation_batch = per_device * processes * steps
        per_generation = args.get("steps_per_generation") is not None
        batches = "steps_per_generation" if per_generation else "gradient_accumulation_steps"
        layout += f" x {batches} {steps}"
    if recipe.trainer.algorithm == "ppo":
        generation_batch = per_device * processes * accumulation
        layout = (
            f"per_device_train_batch_size {per_device} x {processes} process(es) "
            f"x gradient_accumulation_steps {accumulation}"
        )
    if generation_batch % generations:
        raise ConfigError(
            f"trainer.num_generations: a batch of {layout} = {generation_batch} completions"
            " does not hold whole groups of "
            f"{generations} (every prompt is generated num_generations times); make it a multiple of {generations}"
        )


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


def _is_global_main() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def _note(message: str) -> None:
    print(f"procrl: {message}", file=sys.stderr, flush=True)


def _prepare_output_dir(recipe: Recipe, resume: bool, overwrite: bool):
    """Main process: take the output dir's lock, clear what a killed save left (and, with
    ``--overwrite``, the earlier run's checkpoints). Returns the lock."""

    lock = RunLock(recipe.output_dir)
    try:
        note = lock.acquire()
    except OSError as error:
        raise ConfigError(f"output_dir: cannot write to {recipe.output_dir} ({error.strerror or error})") from None
    if note:
        _note(note)
    staged = discard_staging(recipe.output_dir)
    if staged:
        _note(f"discarded the interrupted save of {', '.join(staged)} in {recipe.output_dir}")
    if overwrite:
        removed = clear_previous_run(recipe.output_dir)
        if removed:
            _note(f"--overwrite: removed {', '.join(removed)} from {recipe.output_dir}")
    return lock


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
        recipe, tokenizer, dataset, eval_dataset, mix, note=_note if _is_global_main() else None
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


def build_trainer(recipe: Recipe):
    """(trainer, reward mix) built as :func:`train` builds them (preflight, data, procrl's
    trainer), without an output-dir lock, artifacts or resuming, and not started:
    benchmarks/gpu_step_bench.py times the steps of what this returns."""
    mix, args = preflight(recipe)
    return _make_trainer(recipe, mix, args, *_trainer_inputs(recipe, args, mix)), mix


def finished_note(recipe: Recipe) -> str | None:
    """The line ``--resume`` prints instead of training when the run is finished and its final
    model is complete (None otherwise)."""

    finished = finished_run(recipe)
    if finished is None or finished[0] != "its final model" or final_model_problem(recipe.output_dir) is not None:
        return None
    _, step, target = finished
    return (
        f"--resume: the run in {recipe.output_dir} is finished (global step {step} of max_steps {target}, final model "
        "saved); nothing to train. Raise trainer.max_steps to train further"
    )


def check_launch_fits(recipe: Recipe) -> None:
    """Rank 0 says in one line where the launch differs from the recipe's launch section
    (:func:`procrl.launch.accelerate.note_launch`); on a GPU, every rank stops before loading any
    model when the memory plan of the launch it was given does not fit its GPU (one line)."""

    note_launch(recipe)
    card = gpu_memory_bytes()
    if card is None:
        return
    problem = fit_problem(recipe, rank_setup(), *card)
    if problem:
        wanted = " ".join(["accelerate", "launch", *recipe_launch_flags(recipe), recipe.path or "RECIPE"])
        raise ConfigError(f"launch: {problem}; nothing was loaded. The recipe's launch: {wanted}")


def train(recipe: Recipe, resume: bool = False, overwrite: bool = False):
    """Train with a validated recipe; returns the trainer (None when ``--resume`` finds the run
    finished: :func:`finished_note`).

    Before anything loads: the output dir may take this run (:func:`procrl.launch.output_dir.check_output_dir`),
    the launch fits (:func:`check_launch_fits`), ``--resume`` has a complete checkpoint, :func:`preflight`
    passes. The main process holds the output dir's lock from before the model loads until it exits. The
    final model is written as checkpoints are, complete or absent
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
    if resume and _says_finished(recipe):
        return None
    resume_point, finished = _resume_point(recipe) if resume else (None, None)
    mix, args, inputs = _prepared(recipe)
    with _OutputDirHeld(recipe, resume, overwrite) as held:
        trainer = _make_trainer(recipe, mix, args, *inputs)
        _write_artifacts(trainer, recipe, resumed_at=resume_point.step if resume_point is not None else None)
        checkpoint = _continue_from(trainer, resume_point)
        if finished is not None:  # trained to the end, its final model missing
            _save_final_from_checkpoint(trainer, recipe, checkpoint, finished)
            return trainer
        _connect_wandb(trainer, recipe, args, resume)
        with wandb_dir(recipe.output_dir):
            trainer.train(resume_from_checkpoint=checkpoint)
        _failing_watch(trainer).raise_if_stopped(recipe.output_dir)  # a component down: no final model
        held.final_save(trainer)
    return trainer


def _says_finished(recipe: Recipe) -> bool:
    """``--resume`` of a finished run with its final model: rank 0 says so (:func:`finished_note`)."""
    note = finished_note(recipe)
    if note and _is_global_main():
        _note(note)
    return note is not None


def _resume_point(recipe: Recipe):
    """``--resume``: (the checkpoint to continue from, ``(what, step, max_steps)`` when the run trained
    to the end but its final model is missing, else None); rank 0 lists the keys in which the recipe
    differs from the run's ``recipe.yaml``."""
    resume_point = find_resume_checkpoint(recipe.output_dir)
    finished = finished_run(recipe)
    changes = recipe_changes(recipe)
    if changes and _is_global_main():
        _note(
            f"--resume: the recipe differs from the run's {RECIPE_FILE} in {len(changes)} key(s) (kept; this recipe "
            f"is saved as recipe-resumed-at-step-{resume_point.step}.yaml):"
        )
        for change in changes:
            _note(f"  {change}")
    return resume_point, finished


def _prepared(recipe: Recipe):
    """(reward mix, GRPOConfig, (tokenizer, training prompts, held-out prompts)): :func:`preflight` and
    the data, before the output dir is touched (an interrupt here says so)."""
    try:
        mix, args = preflight(recipe)
        return mix, args, _trainer_inputs(recipe, args, mix)
    except KeyboardInterrupt as error:
        raise interrupted(error, f"{recipe.output_dir} was not touched") from None


class _OutputDirHeld:
    """``with``: the main process holds the output dir's lock (:func:`_prepare_output_dir`) until the
    block ends; Ctrl-C or SIGTERM inside it ends the run with one line saying what is kept (the
    checkpoints, or what an interrupted final save left)."""

    def __init__(self, recipe: Recipe, resume: bool, overwrite: bool) -> None:
        self.recipe, self.resume, self.overwrite = recipe, resume, overwrite
        self.saving = None  # the trainer, once its final save has begun

    def __enter__(self) -> _OutputDirHeld:
        self.lock = _prepare_output_dir(self.recipe, self.resume, self.overwrite) if _is_global_main() else None
        return self

    def final_save(self, trainer) -> None:
        """The final model (complete or absent) and the run's summary on the terminal."""
        from procrl.observe.console import print_run_summary

        self.saving = trainer
        save_final_model(trainer, self.recipe.output_dir)
        print_run_summary(trainer, self.recipe.output_dir)

    def __exit__(self, kind, error, traceback) -> None:
        try:
            if isinstance(error, KeyboardInterrupt):  # Ctrl-C, SIGTERM (procrl/core/interrupts.py)
                output_dir = self.recipe.output_dir
                if self.saving is not None:
                    raise interrupted(
                        error, interrupted_final_save(output_dir, self.saving.state.global_step)
                    ) from None
                raise interrupted(error, kept(output_dir)) from None
        finally:
            if self.lock is not None:
                self.lock.release()


def _continue_from(trainer, resume_point) -> str | None:
    """The checkpoint ``trainer.train`` resumes from (None: a fresh run); the main process says what
    it continues from and sets aside the incomplete checkpoints it skipped."""
    if resume_point is None:
        return None
    if trainer.accelerator.is_main_process:
        for line in resume_point.describe():
            _note(line)
        moved = set_aside([path for path, _ in resume_point.skipped])
        if moved:
            _note(f"renamed the skipped checkpoint(s) to {', '.join(Path(m).name for m in moved)}")
    return resume_point.checkpoint


def _connect_wandb(trainer, recipe: Recipe, args, resume: bool) -> None:
    """With ``report_to: wandb``: the run's W&B id (the same run when resuming) and a redacted config."""
    if "wandb" not in (args.report_to or []):
        return
    from procrl.observe.console import redact_wandb_config

    set_wandb_run_id(recipe.output_dir, resume=resume, is_main=trainer.accelerator.is_main_process)
    redact_wandb_config(trainer)


def _failing_watch(trainer):
    from procrl.observe.failing import FailingComponentWatch

    for callback in trainer.callback_handler.callbacks:
        if isinstance(callback, FailingComponentWatch):
            return callback
    return FailingComponentWatch(0)


def _save_final_from_checkpoint(trainer, recipe: Recipe, checkpoint: str, finished: tuple[str, int, int]) -> None:
    """``--resume`` of a run that trained to ``max_steps`` but whose final save did not complete:
    the final model is saved from the last checkpoint (training it again would go one step past
    ``max_steps``: transformers steps once before it checks)."""
    from transformers.trainer_callback import TrainerState

    _, step, target = finished
    if getattr(trainer, "is_deepspeed_enabled", False) or getattr(trainer, "is_fsdp_enabled", False):
        raise ConfigError(
            f"--resume: the run in {recipe.output_dir} trained to step {step} of max_steps {target}"
            " but its final save did "
            f"not complete; {checkpoint} holds the finished model (its weights are what the final save writes): use it"
        )
    trainer._load_from_checkpoint(checkpoint)
    trainer.state = TrainerState.load_from_json(str(Path(checkpoint) / "trainer_state.json"))
    save_final_model(trainer, recipe.output_dir)
    if trainer.accelerator.is_main_process:
        _note(
            f"--resume: the run had trained to step {step} of max_steps {target},"
            " but its final save had not completed: "
            f"saved the final model from {checkpoint}; nothing to train"
        )


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
    return run_command(parser, argv, show_interrupt=_is_global_main())


if __name__ == "__main__":
    sys.exit(main())
