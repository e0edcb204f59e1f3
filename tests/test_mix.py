"""The reward mix: TRL adapter, weights, gating, custom types, async, failure policy."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass

import pytest

from procrl.core.config import field
from procrl.rewards import RewardBatch, RewardComponent, RewardMix, RewardOutput, parse_rewards
from procrl.rewards.registry import REWARDS

# --- components used as recipe types in these tests (importable as tests.test_mix:...) ---


class Exploding(RewardComponent):
    def score(self, batch):
        raise RuntimeError("judge fell over")


class HalfNaN(RewardComponent):
    def score(self, batch):
        return RewardOutput(scores=[math.nan if i % 2 else 1.0 for i in range(len(batch))])


class WrongLength(RewardComponent):
    def score(self, batch):
        return RewardOutput(scores=[1.0])


class Rendezvous(RewardComponent):
    """Returns once ``peers`` calls have started, and raises TimeoutError after ``wait_s`` seconds
    without them: calls run one after another never meet, so the mix gives them no 0.5."""

    is_async = True
    started = 0

    @dataclass
    class Settings:
        peers: int = field(2, help="Calls that must have started before any returns.")
        wait_s: float = field(30.0, help="Seconds a call waits for the others.")

    async def ascore(self, batch):
        Rendezvous.started += 1
        await asyncio.wait_for(self._peers_started(), self.settings.wait_s)
        return RewardOutput(scores=[0.5] * len(batch))

    async def _peers_started(self):
        while Rendezvous.started < self.settings.peers:
            await asyncio.sleep(0.005)


class Counting(RewardComponent):
    calls = 0

    def score(self, batch):
        Counting.calls += 1
        return RewardOutput(scores=[1.0] * len(batch), step_scores=[[1.0] * len(s.steps) for s in batch.segmentations])


def mix_of(rewards):
    return RewardMix(parse_rewards(rewards))


def trl_call(mix, completions, answers):
    """Call every adapter the way TRL's _calculate_rewards does (same list object for all)."""
    metrics = {}
    kwargs = dict(
        answer=answers,
        question=["q"] * len(completions),
        trainer_state=None,
        log_extra=lambda column, values: None,
        log_metric=lambda name, value: metrics.__setitem__(name, value),
    )
    prompts = ["p"] * len(completions)
    results = {}
    for function in mix.reward_functions():
        if asyncio.iscoroutinefunction(function):
            results[function.__name__] = asyncio.run(function(prompts, completions, None, **kwargs))
        else:
            results[function.__name__] = function(prompts, completions, None, **kwargs)
    return results, metrics


def test_adapters_are_named_after_components_and_weights_follow():
    mix = mix_of({"accuracy": {"weight": 1.0}, "fmt": {"type": "format", "weight": 0.25}})
    assert [f.__name__ for f in mix.reward_functions()] == ["accuracy", "fmt"]
    assert mix.weights == [1.0, 0.25]
    results, metrics = trl_call(mix, ["2+2=4\n#### 4", "#### 5"], ["4", "4"])
    assert results == {"accuracy": [1.0, 0.0], "fmt": [1.0, 1.0]}
    assert metrics["rewards/accuracy/no_answer_fraction"] == 0.0


def test_conversational_completions_are_text():
    mix = mix_of({"accuracy": {}})
    results, _ = trl_call(mix, [[{"role": "assistant", "content": "#### 4"}]], ["4"])
    assert results["accuracy"] == [1.0]


def test_gate_closes_on_wrong_answers():
    mix = mix_of({"accuracy": {}, "fmt": {"type": "format", "gate": {"on": "accuracy", "min": 1.0, "value": 0.0}}})
    results, metrics = trl_call(mix, ["#### 4", "#### 5", "#### 4"], ["4", "4", None])
    assert results["fmt"] == [1.0, 0.0, 0.0]  # wrong answer, and no gold (None) both close the gate
    assert metrics["rewards/fmt/gate_closed_fraction"] == pytest.approx(2 / 3)


def test_custom_function_type_with_settings():
    mix = mix_of({"words": {"type": "tests.helpers.rewards:count_words", "bonus": 0.5, "weight": 2.0}})
    results, _ = trl_call(mix, ["one two three", ""], ["1", "1"])
    assert results["words"] == [3.5, 0.5]


def test_custom_component_class_type_validates_settings():
    from procrl.core.config import ConfigError

    with pytest.raises(ConfigError, match=r"rewards.meet.peer: unknown key \(did you mean 'peers'\?\)"):
        parse_rewards({"meet": {"type": "tests.test_mix:Rendezvous", "peer": 2}})


def test_failures_get_fallback_and_are_counted():
    mix = mix_of(
        {
            "boom": {"type": "tests.test_mix:Exploding", "fallback": -1.0},
            "nan": {"type": "tests.test_mix:HalfNaN"},
            "short": {"type": "tests.test_mix:WrongLength"},
        }
    )
    results, metrics = trl_call(mix, ["a", "b", "c", "d"], ["1"] * 4)
    assert results["boom"] == [-1.0] * 4
    assert results["nan"] == [1.0, None, 1.0, None]
    assert results["short"] == [None] * 4
    assert metrics["rewards/boom/failures/exception"] == 4
    assert metrics["rewards/nan/failures/non_finite"] == 2
    assert metrics["rewards/short/failures/wrong_length"] == 4


def test_async_components_run_concurrently(monkeypatch):
    monkeypatch.setattr(Rendezvous, "started", 0)
    mix = mix_of({"a": {"type": "tests.test_mix:Rendezvous"}, "b": {"type": "tests.test_mix:Rendezvous"}})
    functions = mix.reward_functions()
    assert all(asyncio.iscoroutinefunction(f) for f in functions)
    completions = ["x", "y"]

    async def both():
        kwargs = dict(answer=["1", "1"], log_metric=None)
        return await asyncio.gather(*(f(["p", "p"], completions, None, **kwargs) for f in functions))

    # each call returns only once both have started: run one after another, the first would time out
    assert asyncio.run(both()) == [[0.5, 0.5], [0.5, 0.5]]
    assert Rendezvous.started == 2


def test_outputs_are_cached_per_batch_and_step_scores_kept():
    Counting.calls = 0
    mix = mix_of(
        {"counting": {"type": "tests.test_mix:Counting"}, "gated": {"type": "format", "gate": {"on": "counting"}}}
    )
    completions = ["a = 1.\nb = 2.", "c"]
    trl_call(mix, completions, ["1", "1"])
    assert Counting.calls == 1  # the gate reused the cached output
    assert mix.last_outputs["counting"].step_scores == [[1.0, 1.0], [1.0]]
    trl_call(mix, list(completions), ["1", "1"])  # a new batch (new list object) is scored again
    assert Counting.calls == 2


def test_total_skips_none():
    mix = mix_of({"accuracy": {"weight": 1.0}, "format": {"weight": 0.5}})
    outputs = mix.score_all(RewardBatch.from_texts(["#### 4", "hello"], golds=["4", None]))
    assert mix.total(outputs) == [1.5, 0.0]


def test_registry_entries_import():
    import importlib

    for name, reference in REWARDS.items():
        module, _, attribute = reference.partition(":")
        cls = getattr(importlib.import_module(module), attribute)
        assert issubclass(cls, RewardComponent), name
