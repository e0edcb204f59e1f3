"""procrl's rewards and process credit in a plain TRL script (public as :mod:`procrl.trl`;
docs/engines.md). :func:`recipe_rewards`: a recipe's ``rewards:`` as TRL reward functions (one per
component, named after it), weights and the diagnostics callback. :class:`GRPOTrainer` and
:class:`ProcessGRPOTrainer` replace ``trl.GRPOTrainer``: the mix found in ``reward_funcs``, its
weights, its fallbacks resolved over the gathered groups, bound to the trainer. Given to
``trl.GRPOTrainer`` itself, the functions resolve ``group_mean`` fallbacks over the completions of
the same prompt in the local batch (TRL would read a None as 0: the best score of a penalty).
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError
from procrl.engines.protocol import gold_answer
from procrl.rewards.fallback import resolve_fallback
from procrl.rewards.mix import RewardMix
from procrl.rewards.protocol import RuntimeContext
from procrl.rewards.spec import ComponentSpec, parse_rewards
from procrl.trainers.grpo import ProcrlGRPOTrainer
from procrl.trainers.process_grpo import ProcessGRPOTrainer as _ProcessGRPOTrainer

# TRL's keyword arguments to a reward function that are not dataset columns
_TRL_KEYWORDS = ("trainer_state", "log_extra", "log_metric", "environments")

__all__ = ["GRPOTrainer", "ProcessGRPOTrainer", "RecipeRewards", "model_path", "recipe_rewards"]


@dataclass
class RecipeRewards:
    """A recipe's reward mix as TRL takes it.

    Pass ``funcs`` as ``reward_funcs`` and ``weights`` as ``GRPOConfig(reward_weights=...)`` (procrl's
    trainers apply them when unset); ``callbacks()`` to ``trl.GRPOTrainer`` for the diagnostics
    (procrl's trainers add them themselves).
    """

    mix: RewardMix = field(metadata={"help": "The components of the recipe, their failure policy and batch cache."})
    funcs: list[Callable] = field(
        metadata={"help": "One TRL reward function per component, in the recipe's order, named after it."}
    )
    diagnostics: bool = field(
        default=True, metadata={"help": "Whether callbacks() holds procrl's diagnostics callback."}
    )
    resolved_by_trainer: bool = field(
        default=False,
        metadata={
            "help": "Set by procrl's trainers: they resolve the fallbacks over the gathered groups, so the "
            "reward functions leave None to them."
        },
    )
    _callback: Any = field(default=None, repr=False, init=False)

    @property
    def names(self) -> list[str]:
        """The components' names, in the order of ``funcs`` and ``weights``."""
        return self.mix.names

    @property
    def weights(self) -> list[float]:
        """The components' weights, for ``GRPOConfig(reward_weights=...)``."""
        return self.mix.weights

    def callbacks(self) -> list:
        """procrl's diagnostics callback (one, however often this is called), or none when
        ``diagnostics`` is off."""
        if not self.diagnostics:
            return []
        if self._callback is None:
            from procrl.observe.callback import DiagnosticsCallback

            self._callback = DiagnosticsCallback.attach(self.mix)
        return [self._callback]


def _rewards_section(source: Any, overrides: list[str] | None) -> list[ComponentSpec]:
    """The component specs of a recipe file, a YAML file of the section, or a dict."""
    if isinstance(source, (str, os.PathLike)):
        from procrl.recipe.load import add_import_paths, read_recipe_file

        raw = read_recipe_file(source)
        if raw.get("recipe") is not None:  # a whole recipe: validated as `procrl score` validates it
            from procrl.recipe import load_recipe

            return load_recipe(source, overrides, scoring=True).rewards
        add_import_paths(source)  # `type: my_module:fn` next to the file, as for a recipe
        where = f"{source}: rewards"
        if overrides:
            raise ConfigError(f"{source}: overrides need a recipe file (with `recipe: procrl/v1`)")
    elif isinstance(source, dict):
        raw, where = source, "rewards"
        if overrides:
            raise ConfigError("overrides: give a recipe file to override; edit the dict instead")
    else:
        raise ConfigError(f"rewards: expected a recipe path or a dict, got {type(source).__name__}")
    section = raw.get("rewards", raw) if isinstance(raw.get("rewards"), dict) else raw
    return parse_rewards(section, where)


def recipe_rewards(
    source: str | os.PathLike | dict, overrides: list[str] | None = None, diagnostics: bool = True
) -> RecipeRewards:
    """A recipe's ``rewards:`` section as TRL reward functions and weights.

    Args:
        source: a recipe file (validated as ``procrl score`` validates it), a YAML file holding the
            section (at its top level or under ``rewards:``), or the section as a dict.
        overrides: ``KEY=VALUE`` overrides of a recipe file (``--set``'s syntax).
        diagnostics: whether ``callbacks()`` holds procrl's diagnostics callback.

    Returns:
        :class:`RecipeRewards`: ``funcs`` for ``reward_funcs``, ``weights`` for ``reward_weights``.

    Raises:
        ConfigError: one line naming the key or file at fault.
    """
    mix = RewardMix(_rewards_section(source, overrides))
    rewards = RecipeRewards(mix=mix, funcs=[], diagnostics=diagnostics)
    rewards.funcs = [_with_local_fallback(rewards, name) for name in mix.names]
    return rewards


def _prompt_key(prompt: Any) -> str:
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)


def _local_groups(prompts: list) -> list[int]:
    """Group ids of consecutive completions of the same prompt (TRL's order)."""
    groups, previous, group = [], object(), -1
    for prompt in prompts:
        key = _prompt_key(prompt)
        if key != previous:
            group += 1
            previous = key
        groups.append(group)
    return groups


def _checked(prompts: list, completions: list, completion_ids: list | None, kwargs: dict) -> dict:
    """TRL's arguments checked: every per-completion list (prompts, ids, the dataset's columns) as
    long as ``completions`` and the gold answers of a type procrl reads (a ValueError naming both)."""
    lists = {"prompts": prompts, "completion_ids": completion_ids}
    lists.update((k, v) for k, v in kwargs.items() if isinstance(v, list) and k not in _TRL_KEYWORDS)
    for name, values in lists.items():
        if values is not None and len(values) != len(completions):
            raise ValueError(
                f"completions and {name} differ in length: {len(completions)} completions, {len(values)} {name}"
            )
    if isinstance(kwargs.get("answer"), list):
        kwargs = {**kwargs, "answer": [gold_answer(a, f"answer[{i}]") for i, a in enumerate(kwargs["answer"])]}
    return kwargs


def _with_local_fallback(rewards: RecipeRewards, name: str) -> Callable:
    """The mix's reward function for ``name``; outside procrl's trainers its None scores are
    resolved by the component's fallback over the local batch's groups."""
    inner = rewards.mix.reward_function(name)
    fallback = rewards.mix.specs[name].fallback

    def resolved(scores: list, prompts: list) -> list:
        if rewards.resolved_by_trainer or not any(s is None for s in scores):
            return scores
        return resolve_fallback(scores, fallback, _local_groups(list(prompts))).scores

    if inspect.iscoroutinefunction(inner):

        async def reward(prompts, completions, completion_ids=None, **kwargs):
            kwargs = _checked(prompts, completions, completion_ids, kwargs)
            return resolved(await inner(prompts, completions, completion_ids, **kwargs), prompts)

    else:

        def reward(prompts, completions, completion_ids=None, **kwargs):
            kwargs = _checked(prompts, completions, completion_ids, kwargs)
            return resolved(inner(prompts, completions, completion_ids, **kwargs), prompts)

    reward.__name__ = reward.__qualname__ = name  # TRL logs rewards/<__name__>/mean|std
    reward.procrl_rewards = rewards
    return reward


def _recipe_rewards_of(reward_funcs: Any) -> RecipeRewards:
    funcs = reward_funcs if isinstance(reward_funcs, list) else [reward_funcs]
    found = getattr(funcs[0], "procrl_rewards", None) if funcs else None
    if found is None:
        raise ConfigError(
            "reward_funcs: procrl's trainer needs procrl's reward functions first "
            "(reward_funcs=recipe_rewards(...).funcs, optionally followed by your own)"
        )
    if [getattr(f, "procrl_rewards", None) for f in funcs[: len(found.funcs)]] != [found] * len(found.funcs) or [
        f.__name__ for f in funcs[: len(found.funcs)]
    ] != found.names:
        raise ConfigError(
            "reward_funcs: procrl's reward functions must come first and in the recipe's order "
            f"({', '.join(found.names)})"
        )
    return found


class _FromRewardFunctions:
    """What makes procrl's GRPO trainers a drop-in for ``trl.GRPOTrainer``: the mix read from
    ``reward_funcs``, its weights, its binding to the trainer and its diagnostics callback."""

    def __init__(self, model: Any, reward_funcs: Any = None, args: Any = None, *more: Any, **kwargs: Any):
        rewards = _recipe_rewards_of(reward_funcs)
        # gathered over processes, the trainer resolves every fallback (ProcrlGRPOTrainer._calculate_rewards)
        rewards.resolved_by_trainer = True
        callbacks = list(kwargs.pop("callbacks", None) or [])
        callbacks += [c for c in rewards.callbacks() if c not in callbacks]
        super().__init__(model, reward_funcs, args, *more, reward_mix=rewards.mix, callbacks=callbacks, **kwargs)
        if self.args.reward_weights is None:  # the recipe's weights, then 1.0 for the script's own functions
            import torch

            extra = len(self.reward_funcs) - len(rewards.funcs)
            weights = [*rewards.weights, *([1.0] * extra)]
            self.args.reward_weights = weights
            self.reward_weights = torch.tensor(weights, dtype=torch.float32)
        rewards.mix.bind(RuntimeContext.from_trainer(self, self.processing_class))


class GRPOTrainer(_FromRewardFunctions, ProcrlGRPOTrainer):
    """``trl.GRPOTrainer`` with procrl's reward handling; same arguments.

    ``reward_funcs`` must start with :func:`recipe_rewards`' ``funcs`` (in order; the script's own
    reward functions may follow, weighted 1.0 unless ``reward_weights`` is set). Outcome credit: each
    completion's weighted total, normalised in its group, on every token.
    """


class ProcessGRPOTrainer(_FromRewardFunctions, _ProcessGRPOTrainer):
    """``trl.GRPOTrainer`` with procrl's per-token process credit; same arguments plus
    the process-credit settings of :class:`procrl.recipe.ProcessCredit` as keywords
    (``process_rewards``, ``outcome_weight``, ``process_aggregation``, ``process_temperature``)."""


def model_path(name_or_path: str) -> str:
    """What ``from_pretrained`` loads for a model name: procrl's embedded models
    (``procrl:tiny-qwen2``, ``procrl:tiny-reasoner``, ``procrl:smollm2-135m-instruct``) built or found in the
    cache, anything else as given.

    Args:
        name_or_path: a Hub id, a local directory or an embedded model's name.

    Returns:
        A Hub id or a local directory.
    """
    from procrl.models.loading import model_source

    source = model_source(name_or_path)
    if source.gguf_file:
        raise ConfigError(f"model: {name_or_path} is a GGUF checkpoint; TRL loads it through procrl's recipe only")
    return str(Path(source.path)) if Path(source.path).exists() else source.path
