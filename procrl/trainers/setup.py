"""What a run builds from a recipe, before and for ``trainer.train()``: the checks before any load
(:func:`preflight`), TRL's GRPOConfig, the data (seeded, its rows checked) and procrl's trainer with
its callbacks. Called by :func:`procrl.launch.run.train`, which holds the output dir around it, and
by the benchmarks that time a trainer's steps.

Imported where used: torch, transformers, trl and the procrl modules that import them
(procrl.observe.console, .failing, .callback, procrl.trainers.build).
"""

from __future__ import annotations

import os

from procrl.core.config import ConfigError
from procrl.core.redaction import hide_secrets, redact
from procrl.data import build_eval_dataset, build_prompt_dataset
from procrl.models.generation import vllm_available
from procrl.models.loading import load_tokenizer, model_init_kwargs, names_gguf
from procrl.recipe import Recipe
from procrl.recipe.checks import check_batch_layout, check_training_data, check_training_rows
from procrl.rewards.mix import RewardMix

__all__ = ["build_training_args", "preflight", "require_vllm_if_used"]


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


def _trainer_inputs(recipe: Recipe, args, mix=None, note=None):
    """(tokenizer, training prompts, held-out prompts or None), after seeding; the gold answers
    and prompt lengths checked before any model loads (procrl/recipe/checks.py), their numbers
    logged through ``mix`` and told through ``note`` (rank 0's one-line printer, or None)."""
    from transformers import set_seed

    set_seed(args.seed)
    tokenizer = load_tokenizer(recipe.model)
    dataset = build_prompt_dataset(recipe.data, tokenizer)
    eval_dataset = None
    if args.eval_strategy != "no":  # trainer.eval_steps: the held-out split (procrl/trainers/held_out.py)
        eval_dataset = build_eval_dataset(recipe.data, tokenizer)
    dataset, eval_dataset = check_training_rows(recipe, tokenizer, dataset, eval_dataset, mix, note=note)
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
