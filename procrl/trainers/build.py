"""Which trainer a recipe gets: :func:`build_trainer` builds GRPO (outcome credit,
:mod:`procrl.trainers.grpo`), process-supervised GRPO (``credit: process``,
:mod:`procrl.trainers.process_grpo`) or PPO (``algorithm: ppo``, :mod:`procrl.trainers.ppo`),
loading the policy; the reward mix is bound to the trainer's runtime (device, tokenizer).

It sits above the trainer modules so that none of them imports another's subclass (GRPO's
builder once imported the process-credit subclass, which imports GRPO's trainer: a cycle).
"""

from __future__ import annotations

from typing import Any

from procrl.models.loading import load_policy, lora_config, policy_source
from procrl.rewards.mix import RewardMix
from procrl.rewards.protocol import RuntimeContext
from procrl.trainers.checkpoints import atomic_checkpoints
from procrl.trainers.grpo import ProcrlGRPOTrainer
from procrl.trainers.process_grpo import ProcessGRPOTrainer

__all__ = ["build_grpo_trainer", "build_trainer"]


def build_trainer(
    recipe, mix: RewardMix, args, tokenizer, train_dataset, callbacks: list | None = None, eval_dataset=None
) -> Any:
    """procrl's trainer for the recipe: PPO (``trainer.algorithm: ppo``), else GRPO."""
    if recipe.trainer.algorithm == "ppo":
        from procrl.trainers.ppo import build_ppo_trainer  # imports PPO's stack only when used

        return build_ppo_trainer(
            recipe, mix, args, tokenizer, train_dataset, callbacks=callbacks, eval_dataset=eval_dataset
        )
    return build_grpo_trainer(
        recipe, mix, args, tokenizer, train_dataset, callbacks=callbacks, eval_dataset=eval_dataset
    )


def build_grpo_trainer(
    recipe, mix: RewardMix, args, tokenizer, train_dataset, callbacks: list | None = None, eval_dataset=None
) -> Any:
    """TRL's GRPOTrainer for a recipe: :class:`ProcrlGRPOTrainer`, or with ``credit: process``
    :class:`ProcessGRPOTrainer` (dense process credit); checkpoints saved atomically."""
    trainer_class: type = ProcrlGRPOTrainer
    kwargs: dict[str, Any] = {"reward_mix": mix}
    if recipe.trainer.credit == "process":
        trainer_class = ProcessGRPOTrainer
        kwargs.update(recipe.trainer.kwargs())  # the process-credit settings (ProcessCredit)
    source = policy_source(recipe.model)
    # TRL loads a checkpoint given by path (GRPOConfig.model_init_kwargs); a GGUF is loaded here,
    # dequantized (run.build_training_args then leaves model_init_kwargs unset)
    model = load_policy(recipe.model) if source.gguf_file else source.path
    trainer = atomic_checkpoints(trainer_class)(
        model=model,
        reward_funcs=mix.reward_functions(),
        args=args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        peft_config=lora_config(recipe.model),
        callbacks=callbacks,
        **kwargs,
    )
    mix.bind(RuntimeContext.from_trainer(trainer, tokenizer))
    return trainer
