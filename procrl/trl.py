"""procrl's rewards and process credit in a plain TRL script (docs/engines.md): ``rewards =
recipe_rewards("recipes/gsm8k_tiny_smoke.yaml")``, then ``GRPOTrainer(model=..., reward_funcs=
rewards.funcs, args=GRPOConfig(reward_weights=rewards.weights, ...), ...)``; ``ProcessGRPOTrainer``
adds per-token process credit. The work lives in :mod:`procrl.engines.trl`."""

from procrl.engines.trl import GRPOTrainer, ProcessGRPOTrainer, RecipeRewards, model_path, recipe_rewards

__all__ = ["GRPOTrainer", "ProcessGRPOTrainer", "RecipeRewards", "model_path", "recipe_rewards"]
