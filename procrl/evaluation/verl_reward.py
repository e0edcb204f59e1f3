"""A recipe's reward mix as verl's reward function and reward manager (the public file verl's
settings name is ``procrl/verl.py``; docs/engines.md).

* :func:`compute_score` is verl's ``custom_reward_function`` contract,
  ``compute_score(data_source, solution_str, ground_truth, extra_info)``: a dict with ``score`` (the
  mix's weighted total, what verl puts on the response's last token) and each component's score
  (verl logs them as ``reward_extra_info``). :func:`compute_score_batch` is the same for verl's
  ``batch`` reward manager, one batch of the mix per call.
* :class:`ProcrlTokenRewardManager` is a verl reward manager (its ``__call__(data, return_dict)``
  protocol) whose token-level reward tensor holds procrl's process credit as procrl's own PPO
  builds it: each step's weighted step score on the step's last token, the outcome (the weighted
  scores of the components that gave no step rewards) on the response's last token. For verl's
  advantage estimators that read the token rewards densely (GAE, REINFORCE++); GRPO and RLOO sum
  them per response, which gives the outcome-plus-sum of the steps, not procrl's min-form credit.

The recipe comes from the ``recipe`` keyword (verl: ``custom_reward_function.reward_kwargs.recipe``
or ``reward_model.reward_kwargs.recipe``) or the ``PROCRL_RECIPE`` environment variable; its mix is
built once per process. The question is ``extra_info["question"]`` (verl's GSM8K preprocessing
writes it), the gold answer ``ground_truth``. Every response is its own group for the components'
``group_mean`` fallbacks, unless the manager sees verl's group ids (``uid``).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from procrl.core.config import ConfigError
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


def _row(solution_str: str, ground_truth: Any, extra_info: Any) -> dict:
    question = extra_info.get("question") if isinstance(extra_info, dict) else None
    if isinstance(ground_truth, (list, tuple)):  # some verl datasets give several acceptable answers
        ground_truth = ground_truth[0] if ground_truth else None
    if ground_truth is not None and not isinstance(ground_truth, (str, int, float)):
        ground_truth = str(ground_truth)
    return {
        "question": question if isinstance(question, str) else None,
        "completion": solution_str,
        "answer": ground_truth,
    }


def _verl_result(scored: dict, names: list[str]) -> dict[str, float]:
    """verl's dict: ``score`` and one number per component (verl averages each key over the batch,
    so every value is a number: a component without an opinion gives its fallback's value, else 0.0)."""
    fallbacks = scored.get("fallbacks") or {}
    result = {"score": float(scored["reward"]) if scored.get("reward") is not None else 0.0}
    for name in names:
        value = scored["rewards"].get(name)
        if value is None:
            value = (fallbacks.get(name) or {}).get("score")
        result[name] = float(value) if value is not None else 0.0
    return result


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
    """
    from procrl.evaluation.score import score_batch

    mix = recipe_mix(recipe, overrides)
    infos = extra_infos if extra_infos is not None else [None] * len(solution_strs)
    rows = [_row(s, g, e) for s, g, e in zip(solution_strs, ground_truths, infos)]
    results: list[dict[str, float]] = []
    with _LOCK:  # the mix caches one batch at a time
        for start in range(0, len(rows), batch_size):
            chunk = rows[start : start + batch_size]
            scored, _, _ = score_batch(mix, list(range(start + 1, start + len(chunk) + 1)), chunk)
            results += [_verl_result(row, mix.names) for row in scored]
    return results


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
    config, else ``$PROCRL_RECIPE``. ``process_rewards`` names the components whose step scores
    become token rewards (default: every one that emits them).
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
        process_rewards: list[str] | None = None,
        **kwargs: Any,
    ):
        self.tokenizer = tokenizer
        self.num_examine = num_examine
        self.reward_fn_key = reward_fn_key
        self.config = config
        self.mix = recipe_mix(recipe or _recipe_in_config(config), tuple(overrides))
        self.process_rewards = list(process_rewards) if process_rewards is not None else None

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
        ``groups``: the generation group of each response (None: each its own)."""
        import torch

        from procrl.rewards.protocol import RewardBatch
        from procrl.trainers.credit import scatter_step_rewards, token_rewards
        from procrl.trainers.step_credit import local_step_credit

        prompt_length = data.batch["prompts"].shape[-1]
        responses = data.batch["responses"]
        mask = data.batch["attention_mask"][:, prompt_length:]
        lengths = mask.sum(dim=-1).tolist()
        ids = [responses[i][: int(n)].tolist() for i, n in enumerate(lengths)]
        texts = [self.tokenizer.decode(row, skip_special_tokens=True) for row in ids]
        golds = data.non_tensor_batch["reward_model"]
        infos = data.non_tensor_batch.get("extra_info")
        rows = [
            _row(texts[i], golds[i].get("ground_truth"), infos[i] if infos is not None else None)
            for i in range(len(texts))
        ]
        batch = RewardBatch.from_texts(
            [r["completion"] for r in rows], questions=[r["question"] for r in rows], golds=[r["answer"] for r in rows]
        )
        with _LOCK:  # the mix caches one batch at a time; step credit reads that cache
            raw = self.mix.score_all(batch)
            resolved, _ = self.mix.resolve(raw, groups if groups is not None else list(range(len(rows))))
            step_rewards, step_tokens, stats = local_step_credit(self.mix, self.tokenizer, ids, self.process_rewards)
            outcome = self._outcome(raw, resolved, batch)
            totals = [0.0 if t is None else float(t) for t in self.mix.total(resolved)]
        steps = scatter_step_rewards(step_rewards, step_tokens, responses.shape[-1])
        outcome_tensor = torch.tensor([0.0 if v is None else v for v in outcome], dtype=torch.float32)
        rewards = token_rewards(steps, outcome_tensor, mask.to(torch.float32))
        extra: dict[str, list] = {"score": list(totals)}
        for name in self.mix.names:
            extra[name] = [0.0 if v is None else float(v) for v in resolved[name].scores]
        for key, value in stats.items():
            extra[key] = [value] * len(rows)
        return rewards, totals, extra

    def _outcome(self, raw: dict, resolved: dict, batch: Any) -> list[float | None]:
        """The last-token reward: the weighted scores of the components whose step scores did not
        reach the tokens, so that no component counts twice (procrl's PPO rule,
        :func:`procrl.trainers.credit.outcome_rewards`; written here so that verl's workers do not
        import procrl's PPO trainer and TRL with it)."""
        from procrl.trainers.credit import gives_step_credit, outcome_rewards
        from procrl.trainers.step_credit import process_component_names

        credited: dict[str, list[bool]] = {}
        for name in process_component_names(self.mix, resolved, self.process_rewards):
            step_scores = resolved[name].step_scores if name in resolved else None
            scored = raw[name].scores if name in raw else [None] * len(batch)
            credited[name] = [
                (step_scores is not None and gives_step_credit(step_scores[i], len(segmentation.steps)))
                or (not segmentation.steps and scored[i] is not None)
                for i, segmentation in enumerate(batch.segmentations)
            ]
        scores = {name: output.scores for name, output in resolved.items()}
        return outcome_rewards(scores, {name: self.mix.specs[name].weight for name in resolved}, credited)


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
