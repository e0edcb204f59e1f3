"""procrl's rewards and process credit in a plain TRL script (docs/engines.md).

    from procrl.trl import GRPOTrainer, recipe_rewards

    rewards = recipe_rewards("recipes/gsm8k_tiny_smoke.yaml")
    config = GRPOConfig(output_dir="out", reward_weights=rewards.weights)
    trainer = GRPOTrainer(model=..., reward_funcs=rewards.funcs, args=config, train_dataset=...)

``ProcessGRPOTrainer`` is the same with per-token process credit. The work lives in
:mod:`procrl.engines.trl`.
"""

from procrl.engines.trl import GRPOTrainer, ProcessGRPOTrainer, RecipeRewards, model_path, recipe_rewards

__all__ = ["GRPOTrainer", "ProcessGRPOTrainer", "RecipeRewards", "model_path", "recipe_rewards"]
