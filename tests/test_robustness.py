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


def build(name: str):
    module, _, attribute = REWARDS[name].partition(":")
    cls = getattr(importlib.import_module(module), attribute)
    component = cls(name=name)
    return component


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_builtin_reward_survives_hostile_input(name):
    component = build(name)
    if component.needs_model() is not None:
        pytest.skip(f"{name} loads {component.needs_model()} by default; its own tests cover tiny local models")
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
