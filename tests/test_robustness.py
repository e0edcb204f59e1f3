"""Every built-in reward returns a finite value or None, and never raises, on hostile input."""

from __future__ import annotations

import asyncio
import importlib
import math
import random

import pytest

from procrl.rewards.base import RewardBatch
from procrl.rewards.registry import REWARDS


def hostile_completions() -> list[str]:
    rng = random.Random(0)
    random_bytes = bytes(rng.randrange(256) for _ in range(4000)).decode("utf-8", errors="replace")
    five_hundred_steps = "\n".join(f"Step {i}: {i} * 2 = {2 * i}." for i in range(500)) + "\n#### 998"
    return [
        "",
        "   \n\t  \n",
        "x" * 200_000,
        ("The total is 12 apples. " * 9000)[:200_000],
        random_bytes,
        five_hundred_steps,
        "\\boxed{",
        "The answer is \\boxed{\\frac{3}{",
        "#### ",
        "<think>",
        "\x00\x01\x02 12 = 3 * 4 \ufffd",
        "1/0 = <<1/0=inf>>inf\n#### nan",
    ]


def tiny_model_settings(tmp_path) -> dict[str, dict]:
    """Settings that swap a component's default (Hub) model for a tiny local one."""
    from procrl.rewards.scorers.nli import write_tiny_nli_model

    return {
        "receval_correctness": {"nli_model": str(write_tiny_nli_model(tmp_path / "nli"))},
        "receval_informativeness": {"lm": "procrl:tiny-qwen2"},
    }


def build(name: str, settings: dict):
    from procrl.core.config import from_dict

    module, _, attribute = REWARDS[name].partition(":")
    cls = getattr(importlib.import_module(module), attribute)
    return cls(from_dict(cls.Settings, settings, f"rewards.{name}"), name=name)


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_builtin_reward_survives_hostile_input(name, tmp_path):
    component = build(name, tiny_model_settings(tmp_path).get(name, {}))
    assert component.needs_model() is None or "tiny" in component.needs_model() or str(tmp_path) in component.needs_model()
    completions = hostile_completions()
    batch = RewardBatch.from_texts(completions, questions=["How many?"] * len(completions),
                                   golds=["#### 12"] * len(completions))
    if component.is_async:
        output = asyncio.run(component.ascore(batch))
    else:
        output = component.score(batch)
    assert len(output.scores) == len(completions)
    for value in output.scores:
        assert value is None or (isinstance(value, float) and math.isfinite(value)), (name, value)
    if output.step_scores is not None:
        for steps, segmentation in zip(output.step_scores, batch.segmentations):
            assert steps is None or len(steps) == len(segmentation.steps)
            assert steps is None or all(math.isfinite(v) for v in steps)


@pytest.mark.parametrize("name", ["receval_correctness", "receval_informativeness"])
def test_receval_skips_chains_longer_than_max_steps(name, tmp_path):
    """A 500-step chain would cost ~125k NLI pairs: it is not scored, it is counted and gets the
    bottom of the range (no_steps_score: 0 correctness, -1 informativeness), never "no opinion"
    (a policy must not escape the reward by writing more steps than it needs)."""
    settings = {**tiny_model_settings(tmp_path)[name], "max_steps": 64}
    component = build(name, settings)
    long_chain = "\n".join(f"Step {i}: {i} * 2 = {2 * i}." for i in range(500)) + "\n#### 998"
    short_chain = "We have 3 apples.\nSo 3 * 2 = 6.\n#### 6"
    output = component.score(RewardBatch.from_texts([long_chain, short_chain], questions=["How many?"] * 2))
    bottom = 0.0 if name == "receval_correctness" else -1.0
    assert output.scores[0] == bottom and output.failures.get("too_many_steps") == 1
    assert output.step_scores[0] is None and output.details[0]["unscored"] == "too_many_steps"
    assert output.scores[1] is not None
