"""A recipe's reward mix for verl (public file: ``procrl/verl.py``; docs/engines.md):
:func:`compute_score` (verl's ``custom_reward_function``: ``{"score": weighted total, component:
score}``), :func:`compute_score_batch` (its ``batch`` manager) and :class:`ProcrlTokenRewardManager`
(token-level process rewards adding up to each response's total). The recipe: the ``recipe``
keyword (verl's ``reward_kwargs``) or ``$PROCRL_RECIPE``, its mix built once per process; the
question is ``extra_info["question"]``, the gold ``ground_truth``; each response its own group for
``group_mean`` fallbacks unless the manager sees verl's ``uid``.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from procrl.core.config import ConfigError
from procrl.engines.protocol import checked_rows, engine_values, score_rows
from procrl.recipe.sections import ProcessCredit
from procrl.rewards.mix import RewardMix

__all__ = ["ProcrlTokenRewardManager", "compute_score", "compute_score_batch", "recipe_mix"]

RECIPE_ENV = "PROCRL_RECIPE"
_MIXES: dict[tuple, RewardMix] = {}
_LOCK = threading.Lock()


def recipe_mix(recipe: str | os.PathLike | None = None, overrides: list[str] | tuple[str, ...] = ()) -> RewardMix:
    """The reward mix of ``recipe`` (default: ``$PROCRL_RECIPE``), built once per process and
    overrides.

    Args:
        recipe: a recipe file; its ``rewards:`` section is used (validated as ``procrl score`` does).
        overrides: ``KEY=VALUE`` overrides, as ``--set`` takes them.

    Returns:
        The :class:`~procrl.rewards.mix.RewardMix`.

    Raises:
        ConfigError: no recipe named, or the recipe is invalid (one line naming the key).
    """
    recipe = recipe or os.environ.get(RECIPE_ENV)
    if not recipe:
        raise ConfigError(
            f"procrl's verl reward needs a recipe: set {RECIPE_ENV}=PATH or "
            "+custom_reward_function.reward_kwargs.recipe=PATH"
        )
    key = (os.path.abspath(recipe), tuple(overrides))
    with _LOCK:
        if key not in _MIXES:
            from procrl.recipe import load_recipe

            mix = RewardMix(load_recipe(recipe, list(overrides), scoring=True).rewards)
            if "score" in mix.names:
                raise ConfigError(f"{recipe}: rewards.score: verl's own key; rename the component")
            _MIXES[key] = mix
        return _MIXES[key]


def _rows(solutions: list, ground_truths: list, extra_infos: list | None) -> list[dict]:
    """verl's lists as rows: the question is ``extra_info["question"]``, the gold ``ground_truth``
    (a dict: its ``ground_truth`` or ``answer``; a list: its first)."""
    if extra_infos is not None and len(extra_infos) != len(solutions):
        raise ValueError(
            f"solution_strs and extra_infos differ in length: {len(solutions)} solution_strs, "
            f"{len(extra_infos)} extra_infos"
        )
    questions = [e.get("question") if isinstance(e, dict) else None for e in extra_infos or [None] * len(solutions)]
    return checked_rows(solutions, ground_truths, questions, ("solution_strs", "ground_truths", "extra_infos"))


def _verl_result(scored: dict, names: list[str]) -> dict[str, float]:
    """verl's dict: ``score`` and one number per component (verl averages each key over the batch)."""
    total, values = engine_values(scored, names)
    return {"score": total, **values}


def compute_score_batch(
    data_sources: list,
    solution_strs: list[str],
    ground_truths: list,
    extra_infos: list | None = None,
    recipe: str | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    batch_size: int = 64,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """verl's batch reward function (``reward_model.reward_manager=batch``): one dict per response,
    as :func:`compute_score` gives it, scored ``batch_size`` at a time.

    Args:
        data_sources: verl's data sources (unused: the recipe decides the rewards).
        solution_strs: the decoded responses.
        ground_truths: the gold answers.
        extra_infos: verl's ``extra_info`` per response (``question`` is read).
        recipe, overrides: see :func:`recipe_mix`.
        batch_size: responses per batch of the mix.

    Returns:
        ``[{"score": total, component: score, ...}, ...]``.

    Raises:
        ValueError: lists of different lengths, a ground truth of the wrong type (naming both).
    """
    mix = recipe_mix(recipe, overrides)
    rows = _rows(solution_strs, ground_truths, extra_infos)
    with _LOCK:  # the mix caches one batch at a time
        scored = score_rows(mix, rows, batch_size)
    return [_verl_result(row, mix.names) for row in scored]


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict | None = None,
    recipe: str | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    **kwargs: Any,
) -> dict[str, float]:
    """verl's ``custom_reward_function``: one response scored by the recipe's mix.

    Args:
        data_source: verl's data source (unused: the recipe decides the rewards).
        solution_str: the decoded response.
        ground_truth: the gold answer (``reward_model.ground_truth``).
        extra_info: verl's ``extra_info`` (``question`` is read when present).
        recipe, overrides: see :func:`recipe_mix` (verl passes ``reward_kwargs`` as keywords).

    Returns:
        ``{"score": weighted total, component: score, ...}``; verl rewards ``score`` and logs the rest.
    """
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], recipe, overrides)[0]


class ProcrlTokenRewardManager:
    """A verl reward manager with procrl's per-step process rewards in the token-level reward tensor.

    Both of verl's manager protocols:

    * the reward loop (verl 0.9 and later): verl builds it with ``config, tokenizer, compute_score``
      (and its router's keywords), awaits :meth:`run_single` on each response and builds the reward
      tensor with the class method :meth:`assemble_rm_scores`, which places each response's step
      rewards on their tokens (the base class puts one score on the last token);
    * the batch call of earlier versions (``tokenizer, num_examine, compute_score, reward_fn_key,
      **reward_kwargs``; :meth:`__call__` on the whole batch, its generation groups from ``uid``).

    ``compute_score`` is ignored: the recipe's mix scores. The recipe: the ``recipe`` keyword, else
    ``reward.reward_kwargs.recipe`` or ``custom_reward_function.reward_kwargs.recipe`` of verl's
    config, else ``$PROCRL_RECIPE``. ``process_rewards``, ``process_aggregation`` and
    ``process_temperature`` are the recipe's process-credit keys (:class:`procrl.recipe.ProcessCredit`,
    its defaults); the outcome is no separate weight here: each response's token rewards add up to
    its total.
    """

    def __init__(
        self,
        tokenizer: Any = None,
        num_examine: int = 0,
        compute_score: Any = None,
        reward_fn_key: str = "data_source",
        config: Any = None,
        recipe: str | None = None,
        overrides: list[str] | tuple[str, ...] = (),
        process_rewards: list[str] | None = ProcessCredit.process_rewards,
        process_aggregation: str = ProcessCredit.process_aggregation,
        process_temperature: float = ProcessCredit.process_temperature,
        **kwargs: Any,
    ):
        self.tokenizer = tokenizer
        self.num_examine = num_examine
        self.reward_fn_key = reward_fn_key
        self.config = config
        self.mix = recipe_mix(recipe or _recipe_in_config(config), tuple(overrides))
        self.credit = ProcessCredit(
            process_rewards=list(process_rewards) if process_rewards is not None else None,
            process_aggregation=process_aggregation,
            process_temperature=float(process_temperature),
        )
        self.credit.check("reward_kwargs")

    # -- verl's reward loop --

    async def run_single(self, data: Any) -> dict:
        """One response (the last sequence of ``data``): ``reward_score`` holds the weighted
        total and the token rewards (:meth:`assemble_rm_scores` places them), ``reward_extra_info``
        each component's score."""
        import asyncio

        item = data[-1:]
        result = await asyncio.get_running_loop().run_in_executor(None, self._token_rewards, item, None)
        rewards, totals, extra = result
        nonzero = rewards[0].nonzero().flatten().tolist()
        score = {"score": totals[0], "tokens": [[k, float(rewards[0, k])] for k in nonzero]}
        return {"reward_score": score, "reward_extra_info": {key: values[0] for key, values in extra.items()}}

    @classmethod
    def assemble_rm_scores(cls, data: Any, scores: list) -> Any:
        """verl's ``rm_scores`` tensor: each response's token rewards where :meth:`run_single`
        placed them (a plain number, from another manager, on the last token)."""
        import torch

        prompt_length = data.batch["prompts"].size(1)
        lengths = data.batch["attention_mask"][:, prompt_length:].sum(dim=1).tolist()
        out = torch.zeros_like(data.batch["responses"], dtype=torch.float32)
        for i, score in enumerate(scores):
            if isinstance(score, dict):
                for token, value in score["tokens"]:
                    out[i, int(token)] += float(value)
            elif int(lengths[i]) > 0:
                out[i, int(lengths[i]) - 1] = float(score)
        return out

    # -- verl's earlier batch call --

    def __call__(self, data: Any, return_dict: bool = False) -> Any:
        uids = data.non_tensor_batch.get("uid")
        groups = [str(u) for u in uids] if uids is not None else None
        rewards, _, extra = self._token_rewards(data, groups)
        if not return_dict:
            return rewards
        return {"reward_tensor": rewards, "reward_extra_info": extra}

    # -- the work --

    def _token_rewards(self, data: Any, groups: list | None) -> tuple[Any, list[float], dict[str, list]]:
        """(token rewards (batch, response length), weighted totals, extra info per key) of ``data``;
        ``groups``: the generation group of each response (None: each its own). The rule:
        :func:`procrl.trainers.credit.balanced_step_rewards` (each response's rewards add up to its
        total; the steps min-form as procrl's PPO aggregates them)."""
        import torch

        from procrl.rewards.protocol import RewardBatch
        from procrl.trainers.credit import balanced_step_rewards, scatter_step_rewards, token_rewards
        from procrl.trainers.step_credit import local_step_credit

        prompt_length = data.batch["prompts"].shape[-1]
        responses = data.batch["responses"]
        mask = data.batch["attention_mask"][:, prompt_length:]
        ids = [responses[i][: int(n)].tolist() for i, n in enumerate(mask.sum(dim=-1).tolist())]
        texts = [self.tokenizer.decode(row, skip_special_tokens=True) for row in ids]
        golds = [g.get("ground_truth") if isinstance(g, dict) else g for g in data.non_tensor_batch["reward_model"]]
        infos = data.non_tensor_batch.get("extra_info")
        rows = _rows(texts, golds, list(infos) if infos is not None else None)
        batch = RewardBatch.from_texts(
            [r["completion"] for r in rows], questions=[r["question"] for r in rows], golds=[r["answer"] for r in rows]
        )
        credit = self.credit
        with _LOCK:  # the mix caches one batch at a time; step credit reads that cache
            raw = self.mix.score_all(batch)
            resolved, _ = self.mix.resolve(raw, groups if groups is not None else list(range(len(rows))))
            step_rewards, step_tokens, stats = local_step_credit(self.mix, self.tokenizer, ids, credit.process_rewards)
            totals = [0.0 if t is None else float(t) for t in self.mix.total(resolved)]
        aggregation, temperature = credit.process_aggregation, credit.process_temperature
        steps, last = balanced_step_rewards(step_rewards, totals, aggregation, temperature)
        placed = scatter_step_rewards(steps, step_tokens, responses.shape[-1])
        rewards = token_rewards(placed, torch.tensor(last, dtype=torch.float32), mask.to(torch.float32))
        extra: dict[str, list] = {"score": list(totals)}
        for name in self.mix.names:
            extra[name] = [0.0 if v is None else float(v) for v in resolved[name].scores]
        for key, value in stats.items():
            extra[key] = [value] * len(rows)
        return rewards, totals, extra


def _recipe_in_config(config: Any) -> str | None:
    """The recipe named in verl's config (``reward.reward_kwargs.recipe``, then
    ``reward.custom_reward_function.reward_kwargs.recipe``, also under ``reward_model``)."""
    if config is None:
        return None
    for section in ("reward", "reward_model"):
        part = config.get(section) if hasattr(config, "get") else None
        if not part:
            continue
        for path in (("reward_kwargs",), ("custom_reward_function", "reward_kwargs")):
            node = part
            for key in path:
                node = node.get(key) if node is not None and hasattr(node, "get") else None
            if node is not None and hasattr(node, "get") and node.get("recipe"):
                return str(node.get("recipe"))
    return None
