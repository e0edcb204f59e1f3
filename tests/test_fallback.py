"""What "no opinion" becomes: the fallback policy (group_mean by default, a number, or null)
in the pure functions, in TRL's GRPO after its gather, in PPO's rollouts and in `procrl score`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from procrl.core.config import ConfigError
from procrl.recipe import load_recipe
from procrl.rewards import RewardBatch, RewardComponent, RewardMix, RewardOutput, parse_rewards
from procrl.rewards.fallback import GROUP_MEAN, consecutive_groups, fill_group_mean, resolve_fallback

REPO = Path(__file__).resolve().parent.parent


class PenaltyWithFailures(RewardComponent):
    """A penalty in [-1, 0] whose "judge" fails (None) on every completion at an odd position
    of the batch and gives -1 to completions longer than 12 characters, else 0."""

    def score(self, batch: RewardBatch) -> RewardOutput:
        return RewardOutput(
            scores=[None if i % 2 else (-1.0 if len(c) > 12 else 0.0) for i, c in enumerate(batch.completions)]
        )


def test_fill_group_mean_by_hand():
    result = fill_group_mean([0.0, -1.0, None, None, None, 0.5, math.nan, None], groups=[0, 0, 0, 1, 1, 2, 2, 3])
    # group 0: mean(0, -1) = -0.5; group 1 and 3 have no score: batch mean of (0, -1, 0.5) = -1/6;
    # group 2: NaN is no opinion too, the group mean is 0.5
    assert result.scores == pytest.approx([0.0, -1.0, -0.5, -1 / 6, -1 / 6, 0.5, 0.5, -1 / 6])
    assert (result.from_group, result.from_batch, result.unresolved) == (2, 3, 0)
    alone = fill_group_mean([None, 1.0], groups=[0, 1], batch_level=False)
    assert alone.scores == [None, 1.0] and alone.unresolved == 1
    assert fill_group_mean([None, None], groups=[0, 0]).scores == [None, None]  # nothing to take a mean of
    assert consecutive_groups(6, 3) == [0, 0, 0, 1, 1, 1]
    with pytest.raises(ValueError):
        consecutive_groups(5, 2)
    assert resolve_fallback([None, 0.0], -0.25, [0, 0]).scores == [-0.25, 0.0]
    assert resolve_fallback([None, 0.0], None, [0, 0]).scores == [None, 0.0]


def test_fallback_setting_defaults_to_group_mean_and_is_validated():
    specs = {
        s.name: s
        for s in parse_rewards(
            {
                "accuracy": {},
                "judge": {"type": "first_error", "fallback": -1},
                "kept": {"type": "format", "fallback": None},
            }
        )
    }
    assert specs["accuracy"].fallback == GROUP_MEAN
    assert specs["judge"].fallback == -1.0 and specs["kept"].fallback is None
    with pytest.raises(ConfigError, match=r"rewards\.accuracy\.fallback: expected 'group_mean'.*got 'median'"):
        parse_rewards({"accuracy": {"fallback": "median"}})


def test_a_failure_never_gets_the_best_penalty():
    """What this guards against: TRL's nansum turns a failed judge call into 0, the best penalty."""
    mix = RewardMix(parse_rewards({"judge": {"type": "tests.test_fallback:PenaltyWithFailures"}}))
    texts = ["a long completion here", "x", "short", "y"]
    outputs = mix.score_all(RewardBatch.from_texts(texts))
    assert outputs["judge"].scores == [-1.0, None, 0.0, None]
    resolved, _ = mix.resolve(outputs, groups=[0, 0, 0, 0])
    assert resolved["judge"].scores == [-1.0, -0.5, 0.0, -0.5]  # the failures get the group mean, not 0


def test_grpo_columns_are_resolved_after_the_gather():
    from procrl.trainers.grpo import resolve_reward_columns

    mix = RewardMix(
        parse_rewards({"accuracy": {}, "judge": {"type": "first_error"}, "raw": {"type": "format", "fallback": None}})
    )
    nan = float("nan")
    rewards = torch.tensor(
        [
            [1.0, 0.0, nan],
            [0.0, nan, 1.0],
            [1.0, -1.0, 1.0],
            [1.0, nan, 0.0],
            [nan, nan, nan],
            [nan, nan, nan],
            [0.0, -1.0, 1.0],
            [1.0, 0.0, 1.0],
        ]
    )
    resolved, counts = resolve_reward_columns(rewards, mix, group_size=2)
    # pairs: (0,1) (2,3) (4,5) (6,7); accuracy group 2 has nothing -> batch mean 4/6
    assert resolved[:, 0].tolist() == pytest.approx([1.0, 0.0, 1.0, 1.0, 2 / 3, 2 / 3, 0.0, 1.0])
    assert resolved[:, 1].tolist() == pytest.approx([0.0, 0.0, -1.0, -1.0, -0.5, -0.5, -1.0, 0.0])
    # null: None stays (TRL's nansum), counted as unresolved
    assert torch.isnan(resolved[[0, 4, 5], 2]).all() and resolved[1, 2] == 1.0
    assert counts["rewards/judge/fallback/filled"] == 4.0  # 2 from their group, 2 from the batch
    assert counts["rewards/raw/fallback/unresolved"] == 3.0


def test_grpo_training_resolves_failures_and_logs_the_counts(tmp_path):
    from procrl.launch.run import train

    recipe = load_recipe(
        REPO / "recipes" / "gsm8k_tiny_smoke.yaml",
        [
            "trainer.max_steps=1",
            "trainer.save_steps=100",
            "trainer.max_completion_length=16",
            "rewards.judge={type: 'tests.test_fallback:PenaltyWithFailures', weight: 0.5}",
        ],
        output_dir=str(tmp_path / "run"),
    )
    trainer = train(recipe)
    logged = next(h for h in trainer.state.log_history if "rewards/judge/mean" in h)
    assert logged["rewards/judge/fallback/filled"] == 2.0  # 4 completions, 2 failed, one group
    assert logged["rewards/judge/fallback/unresolved"] == 0.0
    assert -1.0 <= logged["rewards/judge/mean"] <= 0.0


def test_ppo_rollout_resolves_failures_per_prompt_group(tmp_path):
    from tests.helpers.training import build_ppo, generate_fixed, ppo_recipe

    recipe = ppo_recipe(
        tmp_path,
        "trainer.beta=0.0",
        "trainer.lam=1.0",
        "trainer.whiten_advantages=false",
        "trainer.credit=outcome",
        "trainer.max_completion_length=32",
        "rewards={judge: {type: 'tests.test_fallback:PenaltyWithFailures'}}",
    )
    trainer = build_ppo(recipe)
    completions = ["a long completion here", "x", "short", "y"]
    trainer._generate_transformers = generate_fixed(trainer, completions)
    rows = [{"prompt": "P1", "question": "Q1", "answer": "#### 1"}] * 2 + [
        {"prompt": "P2", "question": "Q2", "answer": "#### 1"}
    ] * 2
    rollout = trainer._rollout(rows)
    lengths = rollout["completion_mask"].sum(dim=1).tolist()
    last = [rollout["returns"][i, n - 1].item() for i, n in enumerate(lengths)]
    # prompt P1: -1 and a failure -> -1; prompt P2: 0 and a failure -> 0 (never the free 0 for P1's)
    assert last == pytest.approx([-1.0, -1.0, 0.0, 0.0])
    assert trainer._metrics["rewards/judge/fallback/filled"] == [2.0]


def test_procrl_score_total_uses_the_same_policy(tmp_path, capsys):
    from procrl.launch.cli import main

    rows = [{"question": "q", "completion": c, "answer": "#### 1"} for c in ("a long completion here", "x")]
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        "recipe: procrl/v1\nmodel: {name_or_path: procrl:tiny-qwen2}\nrewards:\n"
        "  accuracy: {weight: 1.0}\n  judge: {type: 'tests.test_fallback:PenaltyWithFailures', weight: 0.5}\n"
        "  strict: {type: 'tests.test_fallback:PenaltyWithFailures', weight: 0.5, fallback: -1.0}\n"
    )
    out = tmp_path / "out.jsonl"
    assert main(["score", "--recipe", str(recipe), "--input", str(data), "--output", str(out), "--quiet"]) == 0
    first, second = [json.loads(line) for line in out.read_text().splitlines()]
    assert first["reward"] == pytest.approx(0.0 - 0.5 - 0.5) and "fallbacks" not in first
    # row 2: the judge failed; alone in its group, group_mean finds nothing and leaves the
    # component out (as TRL does for a group without a score); the numeric fallback counts
    assert second["rewards"]["judge"] is None and second["rewards"]["strict"] == -1.0
    assert second["reward"] == pytest.approx(0.0 + 0.5 * -1.0)
    assert second["fallbacks"] == {"judge": {"fallback": "group_mean", "score": None}}


class NaNSteps(RewardComponent):
    """A penalty with per-step scores; its second completion has a NaN step score."""

    def score(self, batch: RewardBatch) -> RewardOutput:
        steps = [[0.0, -1.0], [math.nan, 0.0], [None, 0.0]][: len(batch)]
        return RewardOutput(scores=[-1.0, -1.0, -1.0][: len(batch)], step_scores=steps)


def test_a_non_finite_step_score_is_no_step_credit_not_the_best_step():
    mix = RewardMix(parse_rewards({"steps": {"type": "tests.test_fallback:NaNSteps"}}))
    output = mix.score_all(RewardBatch.from_texts(["a\nb", "c\nd", "e\nf"]))["steps"]
    assert output.step_scores == [[0.0, -1.0], None, None]  # not [0.0, 0.0]: 0 is the best step of a penalty
    assert output.failures["non_finite_step"] == 2 and output.scores == [-1.0, -1.0, -1.0]
