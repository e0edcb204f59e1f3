"""procrl's rewards for verl (docs/engines.md): the file verl's settings point at.

Outcome (any estimator)::

    custom_reward_function.path=$(python -c 'import procrl.verl as m; print(m.__file__)')
    custom_reward_function.name=compute_score          # or compute_score_batch with reward_manager=batch
    +custom_reward_function.reward_kwargs.recipe=recipes/gsm8k_reference.yaml

Per-token process rewards (GAE, REINFORCE++)::

    reward_model.reward_manager.source=importlib
    reward_model.reward_manager.name=ProcrlTokenRewardManager
    reward_model.reward_manager.module.path=<this file>
    +reward_model.reward_kwargs.recipe=recipes/gsm8k_reference.yaml

The work lives in :mod:`procrl.engines.verl`.
"""

from procrl.engines.verl import ProcrlTokenRewardManager, compute_score, compute_score_batch, recipe_mix

__all__ = ["ProcrlTokenRewardManager", "compute_score", "compute_score_batch", "recipe_mix"]
