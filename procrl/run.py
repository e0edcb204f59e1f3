"""Build everything from a recipe and train, in this process (what accelerate launches).

``python -m procrl.run RECIPE [--set K=V ...] [--output-dir D] [--resume]`` (and
``accelerate launch -m procrl.run RECIPE``). ``procrl train`` ends up here too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from procrl.config import ConfigError
from procrl.recipe import Recipe, load_recipe
from procrl.redaction import redact

__all__ = [
    "build_trainer", "build_training_args", "check_batch_layout", "check_training_data", "main", "preflight", "redact",
    "train",
]

def build_training_args(recipe: Recipe, mix_weights: list[float]):
    """TRL GRPOConfig from the recipe; TRL's own checks surface as ConfigError before any load."""
    import torch
    from trl import GRPOConfig

    from procrl.models import model_init_kwargs

    kwargs = dict(recipe.trainer_args)
    if "bf16" not in kwargs and not torch.cuda.is_available():
        kwargs["bf16"] = False  # GRPOConfig defaults to bf16, which a CPU run cannot use
    if "use_cpu" not in kwargs and not torch.cuda.is_available():
        kwargs["use_cpu"] = True  # else accelerate finds no GPU backend and every launched rank trains alone
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
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def run_info(trainer, recipe: Recipe) -> dict[str, Any]:
    import torch
    import transformers
    import trl

    import procrl

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
    }


def _write_artifacts(trainer, recipe: Recipe) -> None:
    from procrl import yaml_core

    if not trainer.accelerator.is_main_process:
        return
    output = Path(recipe.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    (output / "recipe.yaml").write_text(yaml_core.dump(redact(recipe.resolved())))
    (output / "run_info.json").write_text(json.dumps(run_info(trainer, recipe), indent=2) + "\n")


def _callbacks(recipe: Recipe, mix=None) -> list:
    from procrl.logging_utils import RecipeConfigCallback

    callbacks = [RecipeConfigCallback(redact(recipe.resolved()))]
    if recipe.logging.diagnostics and mix is not None:
        from procrl.diagnostics import DiagnosticsCallback

        callbacks.append(DiagnosticsCallback.attach(mix))
    return callbacks


def require_vllm_if_used(args) -> None:
    """``use_vllm: true`` without vLLM installed fails here, before any model loads (TRL would
    raise only after loading the policy)."""
    if not args.use_vllm:
        return
    from trl.import_utils import is_vllm_available

    if not is_vllm_available():
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
    from procrl.data import SYNTHETIC, _is_local_file

    if recipe.data.dataset != SYNTHETIC and _is_local_file(recipe.data.dataset):
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
        raise ConfigError(f"trainer.num_generations: at least 2 completions per prompt are needed for group advantages, got {generations}")
    if generation_batch is not None and steps is not None:
        raise ConfigError("trainer.generation_batch_size: give it or steps_per_generation, not both")
    if generation_batch is not None:
        if generation_batch % (per_device * processes):
            raise ConfigError(f"trainer.generation_batch_size: {generation_batch} must be a multiple of {layout} = {per_device * processes}")
    else:
        steps = steps if steps is not None else accumulation
        generation_batch = per_device * processes * steps
        layout += f" x {'steps_per_generation' if args.get('steps_per_generation') is not None else 'gradient_accumulation_steps'} {steps}"
    if recipe.trainer.algorithm == "ppo":
        generation_batch = per_device * processes * accumulation
        layout = f"per_device_train_batch_size {per_device} x {processes} process(es) x gradient_accumulation_steps {accumulation}"
    if generation_batch % generations:
        raise ConfigError(
            f"trainer.num_generations: a batch of {layout} = {generation_batch} completions does not hold whole groups of "
            f"{generations} (every prompt is generated num_generations times); make it a multiple of {generations}"
        )


def preflight(recipe: Recipe, processes: int | None = None):
    """Everything :func:`train` checks before it loads a model or writes a file, as one-line
    ConfigErrors (``procrl check`` runs the checks that need no TRL: :func:`check_training_data`,
    :func:`check_batch_layout`). Returns the reward mix and TRL's GRPOConfig."""
    check_training_data(recipe)
    from procrl.rewards.base import RewardMix

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
    from procrl.output_dir import RunLock, clear_previous_run, discard_staging

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


@contextlib.contextmanager
def wandb_dir(output_dir: str):
    """W&B writes its files (``wandb/run-*`` or ``wandb/offline-run-*``) under the run's
    ``output_dir`` (W&B's ``dir``, through ``WANDB_DIR``, which transformers' WandbCallback leaves
    to W&B), not the working directory, so that runs started from one place do not pile up. A
    ``WANDB_DIR`` set by the user wins. The variable is restored afterwards (in-process runs)."""
    if "WANDB_DIR" in os.environ:
        yield
        return
    directory = Path(output_dir).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    os.environ["WANDB_DIR"] = str(directory)
    try:
        yield
    finally:
        os.environ.pop("WANDB_DIR", None)


def _trainer_inputs(recipe: Recipe, args):
    """(tokenizer, training prompts, held-out prompts or None), after seeding."""
    from transformers import set_seed

    from procrl.data import build_prompt_dataset
    from procrl.models import load_tokenizer

    set_seed(args.seed)
    tokenizer = load_tokenizer(recipe.model)
    dataset = build_prompt_dataset(recipe.data, tokenizer)
    eval_dataset = None
    if args.eval_strategy != "no":  # trainer.eval_steps: the held-out split (procrl/trainers/held_out.py)
        from procrl.data import build_eval_dataset

        eval_dataset = build_eval_dataset(recipe.data, tokenizer)
    return tokenizer, dataset, eval_dataset


def _make_trainer(recipe: Recipe, mix, args, tokenizer, dataset, eval_dataset):
    """procrl's trainer for the recipe: GRPO (outcome or process credit) or PPO (loads the model),
    printing one short line per logging step on the terminal."""
    from procrl.logging_utils import use_compact_console

    if recipe.trainer.algorithm == "ppo":
        from procrl.trainers.ppo import build_ppo_trainer  # issue: PPO with per-step rewards

        trainer = build_ppo_trainer(recipe, mix, args, tokenizer, dataset, callbacks=_callbacks(recipe, mix),
                                    eval_dataset=eval_dataset)
    else:
        from procrl.trainers.grpo import build_grpo_trainer

        trainer = build_grpo_trainer(recipe, mix, args, tokenizer, dataset, callbacks=_callbacks(recipe, mix),
                                     eval_dataset=eval_dataset)
    use_compact_console(trainer)
    return trainer


def build_trainer(recipe: Recipe):
    """(trainer, reward mix) built as :func:`train` builds them (preflight, data, procrl's
    trainer), without an output-dir lock, artifacts or resuming, and not started:
    benchmarks/gpu_step_bench.py times the steps of what this returns."""
    mix, args = preflight(recipe)
    return _make_trainer(recipe, mix, args, *_trainer_inputs(recipe, args)), mix


def train(recipe: Recipe, resume: bool = False, overwrite: bool = False):
    """Train with a validated recipe; returns the trainer.

    Before anything loads: the output dir may take this run (:func:`procrl.output_dir.check_output_dir`),
    ``--resume`` has a complete checkpoint, :func:`preflight` passes. The main process holds the
    output dir's lock from before the model loads until it exits."""
    from procrl.checkpoints import find_resume_checkpoint, set_aside
    from procrl.output_dir import check_output_dir

    check_output_dir(recipe.output_dir, resume=resume, overwrite=overwrite)
    resume_point = find_resume_checkpoint(recipe.output_dir) if resume else None
    mix, args = preflight(recipe)
    inputs = _trainer_inputs(recipe, args)
    lock = _prepare_output_dir(recipe, resume, overwrite) if _is_global_main() else None
    try:
        trainer = _make_trainer(recipe, mix, args, *inputs)
        _write_artifacts(trainer, recipe)
        checkpoint = None
        if resume_point is not None:
            checkpoint = resume_point.checkpoint
            if trainer.accelerator.is_main_process:
                for line in resume_point.describe():
                    _note(line)
                moved = set_aside([path for path, _ in resume_point.skipped])
                if moved:
                    _note(f"renamed the skipped checkpoint(s) to {', '.join(Path(m).name for m in moved)}")
        if "wandb" in (args.report_to or []):
            from procrl.launch import set_wandb_run_id

            set_wandb_run_id(recipe.output_dir, resume=resume, is_main=trainer.accelerator.is_main_process)
        with wandb_dir(recipe.output_dir):
            trainer.train(resume_from_checkpoint=checkpoint)
        trainer.save_model(recipe.output_dir)
        trainer.save_state()
    finally:
        if lock is not None:
            lock.release()
    return trainer


def parser(prog: str = "python -m procrl.run") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Train with a procrl recipe in this process.")
    p.add_argument("recipe", help="Path to a recipe YAML file.")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="Override a recipe key (dotted path; value parsed as YAML). Repeatable.")
    p.add_argument("--output-dir", default=None, help="Output directory (overrides the recipe's output_dir).")
    p.add_argument("--resume", action="store_true", help="Continue from the newest complete checkpoint in the output dir.")
    p.add_argument("--overwrite", action="store_true",
                   help="Start afresh in an output dir that holds a run (deletes its checkpoints).")
    return p


def main(argv: list[str] | None = None) -> int:
    from procrl.known_warnings import filter_known_warnings

    filter_known_warnings()
    args = parser().parse_args(argv)
    try:
        recipe = load_recipe(args.recipe, args.overrides, args.output_dir)
        from procrl.launch import train_reporting_failure

        train_reporting_failure(recipe, resume=args.resume, overwrite=args.overwrite)
    except ConfigError as error:
        print(f"procrl: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
