"""Two first-error components (two judges, or two penalties) are each described: the unsuffixed
``diagnostics/first_error/*`` and top-level process keys keep describing the first one (recipe
order), and every one gets ``diagnostics/first_error/<name>/*``, its own completions column, W&B
histograms and plot: the second is not dropped."""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass

import pytest

from procrl.observe import stats as diag
from procrl.observe.callback import DiagnosticsCallback
from procrl.rewards import RewardBatch, RewardComponent, RewardMix, RewardOutput


class FlagsFirstStep(RewardComponent):
    """A strict hand-made judge: the first step of every chain is wrong (reports first-error
    details, so the diagnostics recognise it as a first-error component whatever its name)."""

    @dataclass
    class Settings:
        pass

    def score(self, batch: RewardBatch) -> RewardOutput:
        details = [{"index": 0, "num_steps": len(s.steps)} for s in batch.segmentations]
        return RewardOutput(scores=[-1.0] * len(batch), details=details)


COMPLETIONS = [
    "Step 1: 3 + 4 = 7.\n\nStep 2: 7 * 2 = 14.\n\nThe answer is 14.",  # right, sound
    "Step 1: 3 + 4 = 8.\n\nStep 2: 8 * 2 = 14.\n\nThe answer is 14.",  # right, first error at 0
    "Step 1: 3 + 4 = 7.\n\nStep 2: 7 * 2 = 15.\n\nThe answer is 15.",  # wrong, error at 1
]


def _mix():
    return RewardMix.from_recipe_rewards(
        {
            "accuracy": {"weight": 1.0},
            "judge_a": {"type": "first_error", "backend": "arithmetic", "weight": 0.5},
            "judge_b": {"type": "tests.test_diagnostics_instances:FlagsFirstStep", "weight": 0.5},
        }
    )


def _trl_call(mix, completions, answers, metrics, extras):
    kwargs = {
        "answer": answers,
        "question": ["q"] * len(completions),
        "trainer_state": None,
        "log_metric": lambda name, value: metrics.setdefault(name, []).append(value),
        "log_extra": lambda column, values: extras.setdefault(column, []).extend(values),
    }
    results = [f(prompts=["p"] * len(completions), completions=completions, **kwargs) for f in mix.reward_functions()]

    async def gather():
        return await asyncio.gather(*[r for r in results if inspect.isawaitable(r)])

    awaited = iter(asyncio.run(gather()))
    return [next(awaited) if inspect.isawaitable(r) else r for r in results]


def test_each_first_error_component_logs_its_own_diagnostics():
    mix = _mix()
    callback = DiagnosticsCallback.attach(mix)
    metrics, extras = {}, {}
    _trl_call(mix, COMPLETIONS, ["14"] * 3, metrics, extras)
    scalars = {key: values[0] for key, values in metrics.items()}
    # judge_a (arithmetic): errors in 2 of 3 chains; judge_b: in every chain, always at step 0
    assert scalars["diagnostics/first_error/judge_a/error_found_rate"] == pytest.approx(2 / 3)
    assert scalars["diagnostics/first_error/judge_b/error_found_rate"] == pytest.approx(1.0)
    assert scalars["diagnostics/first_error/judge_b/mean_index"] == pytest.approx(0.0)
    assert scalars["diagnostics/first_error/judge_a/mean_index"] == pytest.approx(0.5)
    # process keys per judge: right answers are chains 0 and 1
    assert scalars["diagnostics/first_error/judge_a/process_error_rate"] == pytest.approx(1 / 2)
    assert scalars["diagnostics/first_error/judge_b/process_error_rate"] == pytest.approx(1.0)
    assert scalars["diagnostics/first_error/judge_b/reasoning_aware_accuracy"] == pytest.approx(0.0)
    # the unsuffixed and top-level keys stay those of the first judge (as with one judge)
    assert scalars["diagnostics/first_error/error_found_rate"] == pytest.approx(2 / 3)
    assert scalars["diagnostics/process_error_rate"] == pytest.approx(1 / 2)
    assert extras == {"first_error/judge_a": [-1, 0, 1], "first_error/judge_b": [0, 0, 0]}
    assert {name: [r.index for r in records] for name, records in callback._window.first_errors.items()} == {
        "judge_a": [-1, 0, 1],
        "judge_b": [0, 0, 0],
    }


def test_completions_table_and_wandb_payload_per_judge():
    import wandb

    mix = _mix()
    callback = DiagnosticsCallback.attach(mix)
    callback._keep_rows = True
    _trl_call(mix, COMPLETIONS, ["14"] * 3, {}, {})
    row = callback._window.rows[1]
    assert (row["first_error/judge_a"], row["first_error/judge_b"]) == (0, 0)
    assert "<- FIRST ERROR (judge_a) <- FIRST ERROR (judge_b)" in row["steps"].splitlines()[0]
    payload = callback._wandb_payload(wandb, {}, plots=True, step=3)
    for judge in ("judge_a", "judge_b"):
        for key in ("index_hist", "relative_hist", "histogram"):
            assert f"train/diagnostics/first_error/{judge}/{key}" in payload, sorted(payload)


def test_one_judge_keeps_the_documented_keys():
    outputs = {
        "accuracy": RewardOutput(scores=[1.0, 0.0]),
        "judge": RewardOutput(
            scores=[0.0, -1.0], details=[{"index": -1, "num_steps": 2}, {"index": 0, "num_steps": 2}]
        ),
    }
    scalars = diag.batch_scalars({"accuracy": "accuracy", "judge": "first_error"}, outputs)
    assert scalars["diagnostics/first_error/error_found_rate"] == pytest.approx(0.5)
    assert not any(key.startswith("diagnostics/first_error/judge/") for key in scalars)
