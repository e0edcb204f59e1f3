"""TRL GRPOTrainer wiring: one TRL reward function per component, weights as reward_weights,
and the components' ``fallback`` applied to the gathered rewards (:class:`ProcrlGRPOTrainer`);
the process-credit subclass is :mod:`procrl.trainers.process_grpo`; which of them a recipe
gets, :mod:`procrl.trainers.build`."""

from __future__ import annotations

import logging
from typing import Any

import torch
from trl import GRPOTrainer

from procrl.rewards.fallback import consecutive_groups, resolve_fallback
from procrl.rewards.mix import RewardMix
from procrl.trainers.held_out import HeldOutEvaluation

__all__ = ["ProcrlGRPOTrainer", "resolve_reward_columns"]

logger = logging.getLogger(__name__)


def resolve_reward_columns(
    rewards_per_func: torch.Tensor, mix: RewardMix, group_size: int
) -> tuple[torch.Tensor, dict[str, float]]:
    """TRL's gathered (completions, components) rewards, NaN = no opinion, with every NaN
    resolved by its component's ``fallback`` over groups of ``group_size`` (TRL's order), and
    the counts to log (``rewards/<name>/fallback/filled|unresolved``)."""
    resolved = rewards_per_func.clone()
    counts: dict[str, float] = {}
    groups = consecutive_groups(rewards_per_func.size(0), group_size)
    for column, name in enumerate(mix.names):
        values = rewards_per_func[:, column].tolist()
        result = resolve_fallback(values, mix.specs[name].fallback, groups)
        resolved[:, column] = torch.tensor(
            [float("nan") if v is None else v for v in result.scores], dtype=resolved.dtype, device=resolved.device
        )
        counts.update(result.metrics(name))
    return resolved, counts


class ProcrlGRPOTrainer(HeldOutEvaluation, GRPOTrainer):
    """TRL's GRPOTrainer whose rewards resolve "no opinion" before the advantages.

    TRL turns a reward function's None into NaN and ``nansum``s it to 0: the best score of a
    penalty. Overrides ``_calculate_rewards`` only: after TRL has scored and gathered the
    rewards of every process (groups may span processes), each NaN gets its component's
    ``fallback`` (default ``group_mean``: the mean of that component in the completion's
    group; :mod:`procrl.rewards.fallback`). TRL then computes advantages and logs
    ``rewards/<name>/mean|std`` from the resolved rewards. Its evaluation loop adds the held-out
    accuracies of :mod:`procrl.trainers.held_out` (``trainer.eval_steps``).
    """

    def __init__(self, *args: Any, reward_mix: RewardMix, **kwargs: Any):
        """TRL's GRPOTrainer with ``reward_mix``'s fallbacks.

        Args:
            *args, **kwargs: TRL's ``GRPOTrainer`` arguments (``model``, ``reward_funcs`` made from
                ``reward_mix``, ``args`` a ``GRPOConfig``, ``train_dataset``, ...), passed on as they are.
            reward_mix: the recipe's reward mix, whose components' fallbacks resolve "no opinion".
        """
        super().__init__(*args, **kwargs)
        self.reward_mix = reward_mix

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        mode = "train" if self.model.training else "eval"
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        resolved, counts = resolve_reward_columns(rewards_per_func, self.reward_mix, group_size)
        for key, value in counts.items():  # already over all processes: the tensor was gathered
            self._metrics[mode][key].append(value)
        return resolved
