"""PPO's settings: the recipe's procrl keys and the GRPOConfig fields PPO shares with GRPO."""

from __future__ import annotations

from dataclasses import dataclass

from procrl.recipe.sections import ProcessCredit

__all__ = ["PPOSettings"]


@dataclass
class PPOSettings(ProcessCredit):
    """The PPO hyper-parameters, from the recipe (procrl keys; the process-credit ones declared once in
    :class:`~procrl.recipe.ProcessCredit`) and GRPOConfig (shared ones)."""

    num_ppo_epochs: int = 1  # GRPOConfig.num_iterations
    cliprange: float = 0.2  # GRPOConfig.epsilon
    cliprange_value: float = 0.2
    vf_coef: float = 0.1
    gamma: float = 1.0
    lam: float = 0.95
    kl_coef: float = 0.0  # GRPOConfig.beta
    whiten_advantages: bool = True
    value_learning_rate: float | None = None
    num_generations: int = 1
    max_completion_length: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int | None = None
    # vLLM sampler correction (GRPOConfig.vllm_importance_sampling_*, TRL's defaults)
    sampler_correction: bool = True
    sampler_correction_mode: str = "sequence_mask"
    sampler_clip_min: float | None = None
    sampler_clip_max: float | None = 3.0

    @classmethod
    def from_recipe(cls, recipe, args) -> PPOSettings:
        trainer = recipe.trainer
        return cls(
            num_ppo_epochs=int(args.num_iterations),
            cliprange=float(args.epsilon),
            cliprange_value=trainer.cliprange_value,
            vf_coef=trainer.vf_coef,
            gamma=trainer.gamma,
            lam=trainer.lam,
            kl_coef=float(args.beta),
            whiten_advantages=trainer.whiten_advantages,
            value_learning_rate=trainer.value_learning_rate,
            **{
                **trainer.kwargs(),
                # credit: outcome -> no step rewards, only the sequence reward on the last token
                "process_rewards": trainer.process_rewards if trainer.credit == "process" else [],
            },
            num_generations=int(args.num_generations or 1),
            max_completion_length=int(args.max_completion_length),
            temperature=float(args.temperature),
            top_p=float(args.top_p),
            top_k=args.top_k if args.top_k else None,
            sampler_correction=bool(args.vllm_importance_sampling_correction),
            sampler_correction_mode=args.vllm_importance_sampling_mode,
            sampler_clip_min=args.vllm_importance_sampling_clip_min,
            sampler_clip_max=args.vllm_importance_sampling_clip_max,
        )
