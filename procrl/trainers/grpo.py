"""TRL GRPOTrainer wiring: one TRL reward function per component, weights as reward_weights."""

from __future__ import annotations

from typing import Any

from procrl.models import lora_config, resolve_model_path
from procrl.rewards.base import RewardMix, RuntimeContext

__all__ = ["build_grpo_trainer"]


def build_grpo_trainer(recipe, mix: RewardMix, args, tokenizer, train_dataset, callbacks: list | None = None) -> Any:
    from trl import GRPOTrainer

    trainer_class = GRPOTrainer
    if recipe.trainer.credit == "process":
        from procrl.trainers.process_grpo import ProcessGRPOTrainer  # issue: dense process credit

        trainer_class = ProcessGRPOTrainer
    kwargs = {}
    if trainer_class is not GRPOTrainer:
        kwargs["reward_mix"] = mix
        kwargs["process_rewards"] = recipe.trainer.process_rewards
        kwargs["outcome_weight"] = recipe.trainer.outcome_weight
        kwargs["process_aggregation"] = recipe.trainer.process_aggregation
        kwargs["process_temperature"] = recipe.trainer.process_temperature
    trainer = trainer_class(
        model=resolve_model_path(recipe.model.name_or_path),
        reward_funcs=mix.reward_functions(),
        args=args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        peft_config=lora_config(recipe.model),
        callbacks=callbacks,
        **kwargs,
    )
    mix.bind(RuntimeContext.from_trainer(trainer, tokenizer))
    return trainer
