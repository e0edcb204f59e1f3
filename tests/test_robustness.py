"""Every built-in reward returns a finite value or None, and never raises, on hostile input."""

from __future__ import annotations

import asyncio
import math
import random

import pytest

from procrl.rewards import RewardBatch
from procrl.rewards.registry import REWARDS, builtin_class, component_info


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


def _tiny_nli(tmp_path) -> dict:
    from procrl.rewards.scorers.nli import write_tiny_nli_model

    return {"nli_model": str(write_tiny_nli_model(tmp_path / "nli"))}


# settings that swap a component's default (Hub) model for a tiny local one: every built-in whose
# default settings load a model needs one (test_every_model_component_has_a_tiny_stand_in)
TINY_STAND_INS = {
    "receval_correctness": _tiny_nli,
    "receval_informativeness": lambda tmp_path: {"lm": "procrl:tiny-qwen2"},
}


def tiny_model_settings(tmp_path, name: str) -> dict:
    return TINY_STAND_INS[name](tmp_path) if name in TINY_STAND_INS else {}


def build(name: str, settings: dict):
    from procrl.core.config import from_dict

    cls = builtin_class(name)
    return cls(from_dict(cls.Settings, settings, f"rewards.{name}"), name=name)


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_every_model_component_has_a_tiny_stand_in(name, tmp_path):
    """What a component declares about models holds for its defaults, and a built-in whose
    defaults load a model has a tiny stand-in above (else the hostile test would download)."""
    info, default = component_info(name), builtin_class(name)(name=name)
    if not info.uses_model:
        assert default.needs_model() is None and not type(default).models(default.settings), name
    if not info.uses_network:
        assert default.needs_network() is None, name
    if default.needs_model() is not None:
        assert name in TINY_STAND_INS, f"{name} loads {default.needs_model()} by default: add a tiny stand-in"


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_builtin_reward_survives_hostile_input(name, tmp_path):
    component = build(name, tiny_model_settings(tmp_path, name))
    assert (
        component.needs_model() is None or "tiny" in component.needs_model() or str(tmp_path) in component.needs_model()
    )
    completions = hostile_completions()
    batch = RewardBatch.from_texts(
        completions, questions=["How many?"] * len(completions), golds=["#### 12"] * len(completions)
    )
    if component.is_async:
        output = asyncio.run(component.ascore(batch))
    else:
        output = component.score(batch)
    assert len(output.scores) == len(completions)
    low, high = component_info(name).score_range
    for value in output.scores:
        assert value is None or (isinstance(value, float) and math.isfinite(value)), (name, value)
        assert value is None or low <= value <= high, (name, value, "outside the declared score_range")
    if output.step_scores is not None:
        for steps, segmentation in zip(output.step_scores, batch.segmentations):
            assert steps is None or len(steps) == len(segmentation.steps)
            assert steps is None or all(math.isfinite(v) for v in steps)


@pytest.mark.parametrize("name", ["receval_correctness", "receval_informativeness"])
def test_receval_skips_chains_longer_than_max_steps(name, tmp_path):
    """A 500-step chain would cost ~125k NLI pairs: it is not scored, it is counted and gets the
    bottom of the range (no_steps_score: 0 correctness, -1 informativeness), never "no opinion"
    (a policy must not escape the reward by writing more steps than it needs)."""
    settings = {**tiny_model_settings(tmp_path, name), "max_steps": 64}
    component = build(name, settings)
    long_chain = "\n".join(f"Step {i}: {i} * 2 = {2 * i}." for i in range(500)) + "\n#### 998"
    short_chain = "We have 3 apples.\nSo 3 * 2 = 6.\n#### 6"
    output = component.score(RewardBatch.from_texts([long_chain, short_chain], questions=["How many?"] * 2))
    bottom = component_info(name).score_range[0]
    assert output.scores[0] == bottom and output.failures.get("too_many_steps") == 1
    assert output.step_scores[0] is None and output.details[0]["unscored"] == "too_many_steps"
    assert output.scores[1] is not None
