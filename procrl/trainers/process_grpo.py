"""Process-supervised GRPO (``trainer.credit: process``): TRL's GRPOTrainer with per-token
advantages from per-step rewards (DeepSeekMath section 4.1.3 normalisation; PURE's min-form
or DeepSeekMath's sum over later steps, ``trainer.process_aggregation``; docs/spec.md section 5)."""

from __future__ import annotations

import logging
from typing import Any

import torch

from procrl.recipe.sections import ProcessCredit
from procrl.rewards.mix import RewardMix
from procrl.trainers.credit import process_advantages
from procrl.trainers.grpo import ProcrlGRPOTrainer
from procrl.trainers.step_credit import SingleStepWarning, local_step_credit, step_credited

__all__ = ["ProcessGRPOTrainer", "local_process_advantages"]

logger = logging.getLogger(__name__)


def local_process_advantages(
    all_rewards: list[list[float]],
    all_tokens: list[list[int | None]],
    all_lengths: list[int],
    num_generations: int,
    start: int,
    local: int,
    width: int,
    aggregation: str = ProcessCredit.process_aggregation,
    temperature: float = ProcessCredit.process_temperature,
) -> torch.Tensor:
    """(local, width) process advantages of completions ``start .. start+local`` of the
    gathered batch (all processes, TRL's order: groups of ``num_generations`` consecutive
    completions, possibly spanning processes). Only the groups overlapping the slice are
    computed; ``aggregation`` / ``temperature``: see :func:`~procrl.trainers.credit.process_advantages`."""
    if len(all_rewards) % num_generations:
        raise ValueError(f"{len(all_rewards)} completions are not whole groups of {num_generations}")
    dense = torch.zeros(local, width, dtype=torch.float32)
    if local == 0:
        return dense
    first_group, last_group = start // num_generations, (start + local - 1) // num_generations
    for group in range(first_group, last_group + 1):
        members = range(group * num_generations, (group + 1) * num_generations)
        group_advantages = process_advantages(
            [all_rewards[k] for k in members],
            [all_tokens[k] for k in members],
            [all_lengths[k] for k in members],
            aggregation=aggregation,
            temperature=temperature,
        )
        for k, row in zip(members, group_advantages):
            if start <= k < start + local and row:
                row = row[:width]
                dense[k - start, : len(row)] = torch.tensor(row, dtype=torch.float32)
    return dense


class ProcessGRPOTrainer(ProcrlGRPOTrainer):
    """GRPO whose advantages are per token: process supervision plus the outcome.

    Overrides ``_generate_and_score_completions``: it calls TRL's (which generates, scores every
    reward function, gathers rewards over processes and returns the local slice of the outcome
    advantages, shape (B,)), then replaces ``advantages`` by a (B, T) tensor

        A[i, t] = process advantage of token t (docs/spec.md section 5) + outcome_weight * A_outcome[i]

    where the process advantage is the suffix sum of the group-normalised step rewards,
    min-form weighted (``process_aggregation: min``, PURE) or not (``sum``, DeepSeekMath).

    No component counts twice, as in PPO: ``_calculate_rewards`` hands TRL's advantage code the
    rewards with a process component's score left out (NaN, TRL's "not applied") for every
    completion whose step rewards already carry it (:func:`~procrl.trainers.step_credit.step_credited`),
    so A_outcome is the group-normalised sum of the other components. TRL's logged
    ``rewards/<name>/*`` and ``reward`` are then put back to every component's score.

    The step rewards of the local completions are gathered over processes (groups may span
    ranks), normalised per group over all steps of the group, and the local rows are kept with
    the same process slice TRL uses. TRL's ``_compute_loss`` broadcasts a (B, T) advantage
    tensor for every loss type (it unsqueezes only 1-D advantages); its buffering, shuffling and
    splitting act on dim 0 only. TRL's logged ``advantages`` column stays the outcome advantage;
    process statistics are logged as ``process/*``. Generation (transformers or vLLM) and
    DeepSpeed are untouched: the override only reads token ids and the reward mix's cache.
    Evaluation on a held-out split adds the accuracies of procrl/trainers/held_out.py.

    The process advantage of one group (:func:`~procrl.trainers.credit.process_advantages`): two
    completions of two steps (last tokens 1 and 3), the first wrong at its second step (-1): its
    tokens get a negative advantage and the sound one's a positive one; a step's normalised reward
    reaches every token up to its last (``sum``; ``min`` weights a completion's steps towards its worst):

    >>> rows = process_advantages([[0.0, -1.0], [0.0, 0.0]], [[1, 3], [1, 3]], [4, 4], aggregation="sum")
    >>> [[round(a, 2) for a in row] for row in rows]
    [[-1.15, -1.15, -1.73, -1.73], [1.15, 1.15, 0.58, 0.58]]
    """

    def __init__(
        self,
        *args: Any,
        reward_mix: RewardMix,
        process_rewards: list[str] | None = ProcessCredit.process_rewards,
        outcome_weight: float = ProcessCredit.outcome_weight,
        process_aggregation: str = ProcessCredit.process_aggregation,
        process_temperature: float = ProcessCredit.process_temperature,
        **kwargs: Any,
    ):
        """GRPO with per-token process advantages.

        Args:
            *args, **kwargs: TRL's ``GRPOTrainer`` arguments, passed on as they are.
            reward_mix: the recipe's reward mix (its step scores are the process rewards).
            process_rewards: the components whose step scores make the process advantage (None: every
                component that gives step scores).
            outcome_weight: the weight of the outcome advantage added to every token's.
            process_aggregation: ``min`` (min-form credit, PURE) or ``sum`` (DeepSeekMath's suffix sum).
            process_temperature: the softmax temperature of the min-form weights.
        """
        super().__init__(*args, reward_mix=reward_mix, **kwargs)
        self.process_rewards = process_rewards
        self.outcome_weight = float(outcome_weight)
        self.process_aggregation = process_aggregation
        self.process_temperature = float(process_temperature)
        self._warned_no_steps = False
        self._single_step_warning = SingleStepWarning()
        self._scored_rewards: torch.Tensor | None = None  # the gathered rewards before the exclusion, for the logs

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        """The gathered rewards (fallbacks resolved) with each step-credited process score set to
        NaN: TRL's outcome advantage then sums the other components only (nansum; a completion
        left with no component at all is TRL's "unscorable", outcome advantage 0)."""
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._scored_rewards = rewards_per_func
        batch = self.reward_mix.last_batch
        if batch is None or len(batch) != len(prompts):
            return rewards_per_func  # local_step_credit refuses this batch with the reason
        credited = step_credited(self.reward_mix, self.reward_mix.last_outputs, batch, self.process_rewards)
        local = torch.zeros(len(prompts), len(self.reward_mix.names), device=rewards_per_func.device)
        for column, name in enumerate(self.reward_mix.names):
            if name in credited:
                local[:, column] = torch.tensor(credited[name], dtype=local.dtype, device=local.device)
        from accelerate.utils import gather

        excluded = gather(local).bool()  # groups may span processes: the rule applies to the gathered rows
        outcome = rewards_per_func.masked_fill(excluded, float("nan"))
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["process/outcome_excluded_fraction"].append(excluded.float().mean().item())
        return outcome

    def _restore_reward_logs(self, mode: str) -> None:
        """TRL logged ``rewards/<name>/mean|std``, ``reward`` and ``reward_std`` from the rewards
        it was handed (the outcome's); put back every component's score, as outcome credit logs it."""
        from trl.trainer.utils import nanstd

        full = self._scored_rewards
        if full is None:
            return
        weights = self.reward_weights.to(full.device).unsqueeze(0)
        for column, name in enumerate(self.reward_func_names):
            values = full[:, column]
            self._metrics[mode][f"rewards/{name}/mean"][-1] = torch.nanmean(values).item()
            self._metrics[mode][f"rewards/{name}/std"][-1] = nanstd(values).item()
            logged = self._logs["rewards"][name]  # a bounded deque: its last entries are this batch's
            tail = values.tolist()[-len(logged) :] if len(logged) else []
            for offset, value in enumerate(tail):
                logged[len(logged) - len(tail) + offset] = value
        totals = (full * weights).nansum(dim=1)
        totals[torch.isnan(full).all(dim=1)] = torch.nan
        self._metrics[mode]["reward"][-1] = torch.nanmean(totals).item()
        self._metrics[mode]["reward_std"][-1] = nanstd(totals).item()
        self._scored_rewards = None

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        self._restore_reward_logs(mode)
        outcome = output["advantages"]
        completion_ids, completion_mask = output["completion_ids"], output["completion_mask"]
        scored = self.reward_mix.last_batch
        if (
            scored is not None
            and scored.completion_ids is not None
            and len(scored.completion_ids) == len(completion_ids)
        ):
            # TRL's unpadded ids, as the rewards saw them (completion_mask may hide truncated ones)
            ids = [list(map(int, row)) for row in scored.completion_ids]
        else:
            ids = [row[: int(n)].tolist() for row, n in zip(completion_ids, completion_mask.sum(dim=1).tolist())]
        lengths = [len(row) for row in ids]
        rewards, last_tokens, stats = local_step_credit(
            self.reward_mix, self.processing_class, ids, self.process_rewards
        )

        from accelerate.utils import gather_object

        all_rewards = gather_object(rewards)
        all_tokens = gather_object(last_tokens)
        all_lengths = gather_object([int(n) for n in lengths])
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        start = self.accelerator.process_index * len(ids)
        dense = local_process_advantages(
            all_rewards,
            all_tokens,
            all_lengths,
            num_generations,
            start,
            len(ids),
            completion_ids.size(1),
            aggregation=self.process_aggregation,
            temperature=self.process_temperature,
        )
        if all(not r for r in all_rewards) and not self._warned_no_steps:
            logger.warning(
                "credit: process but no reward component emitted step scores (process_rewards=%s); "
                "the advantages are the outcome advantages only",
                self.process_rewards,
            )
            self._warned_no_steps = True
        dense = dense.to(outcome.device)
        advantages = dense + self.outcome_weight * outcome.unsqueeze(1).to(dense.dtype)
        output["advantages"] = advantages * completion_mask.to(dense.dtype)
        stats["process/advantage_abs_mean"] = float(
            (dense.abs() * completion_mask).sum() / completion_mask.sum().clamp(min=1)
        )
        local_stats = torch.tensor(list(stats.values()), dtype=torch.float32, device=self.accelerator.device)
        averaged = self.accelerator.gather(local_stats).view(-1, len(stats)).mean(dim=0).tolist()
        for name, value in zip(stats, averaged):
            self._metrics[mode][name].append(value)
        self._single_step_warning.observe(averaged[list(stats).index("process/single_step_fraction")])
        return output
