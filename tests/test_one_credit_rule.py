"""One credit rule for GRPO and PPO (docs/spec.md section 5): under ``credit: process`` no
component's score enters twice. A process component whose step scores reach the policy as step
rewards is left out of the outcome; the other components (and a process component that gave a
completion no step scores) make the outcome. The same completions, the same mix: both trainers'
outcomes are the same numbers, and GRPO's advantages are its process advantages plus TRL's
group-normalised outcome of those numbers alone."""

from __future__ import annotations

import pytest
import torch

from procrl.recipe import load_recipe
from procrl.trainers.ppo.rollout import ppo_outcome
from procrl.trainers.process_grpo import ProcessGRPOTrainer, local_process_advantages
from procrl.trainers.step_credit import local_step_credit
from tests.helpers.training import REPO, build_ppo, generate_fixed, ppo_recipe

# steps (1.0 per step starting with "Ava") and first_error (arithmetic) give step rewards;
# accuracy and format are outcome-only
MIX = (
    "rewards={accuracy: {weight: 1.0}, format: {weight: 0.2}, first_error: {weight: 0.5}, "
    "steps: {type: 'tests.helpers.rewards:StepStartsWith', prefixes: [Ava], weight: 1.0}}"
)
COMPLETIONS = [
    "Ava buys 3 x 4 = 12 apples.\nThen she has 12 + 5 = 17 apples.\n#### 17",  # steps, right answer
    "#### 17",  # no steps: the process scalars are its one step reward
    "Ava has 17 apples.\nAva ate none.\n#### 16",  # steps, wrong answer (first_error -1 on the last step)
    "Then 5.\nThen 6.\n#### 11",  # steps, wrong answer
]
# accuracy + 0.2 format only: first_error and steps reach every completion through its step rewards
OUTCOME = [1.2, 1.2, 0.2, 0.2]
ROW = {"question": "How many apples?", "answer": "#### 17"}


def grpo_trainer(tmp_path):
    from procrl.launch.run import build_trainer

    recipe = load_recipe(
        REPO / "recipes" / "gsm8k_tiny_smoke.yaml",
        [
            "trainer.credit=process",
            "trainer.max_steps=1",
            "trainer.max_completion_length=32",
            "trainer.num_generations=4",
            "trainer.per_device_train_batch_size=4",
            "trainer.process_aggregation=sum",
            MIX,
        ],
        output_dir=str(tmp_path / "grpo"),
    )
    trainer, _ = build_trainer(recipe)
    assert isinstance(trainer, ProcessGRPOTrainer)
    tokenizer = trainer.processing_class
    fixed = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for t in COMPLETIONS]

    def generate_single_turn(prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        return [list(fixed[i % len(fixed)]) for i in range(len(prompt_ids))], None

    trainer._generate_single_turn = generate_single_turn
    trainer.model.train()  # as in a training step: TRL logs under "train"
    return trainer, fixed


def score_recording(trainer):
    """One ``_generate_and_score_completions`` on the fixed completions; returns its output and
    the rewards the trainer handed TRL (what TRL's outcome advantage normalises)."""
    rows = [{**trainer.train_dataset[0], **ROW} for _ in COMPLETIONS]
    handed = []
    original = ProcessGRPOTrainer._calculate_rewards

    def recording(self, *args):
        rewards = original(self, *args)
        handed.append(rewards.clone())
        return rewards

    trainer._calculate_rewards = recording.__get__(trainer)
    return trainer._generate_and_score_completions(rows), handed[0]


def test_grpo_outcome_leaves_out_the_step_credited_scores(tmp_path):
    from trl.trainer.utils import nanstd

    trainer, fixed = grpo_trainer(tmp_path)
    output, handed = score_recording(trainer)
    mix = trainer.reward_mix
    names = mix.names
    outcome_rewards = (handed * torch.tensor(mix.weights)).nansum(dim=1)
    assert outcome_rewards.tolist() == pytest.approx(OUTCOME, abs=1e-6)
    for name in ("first_error", "steps"):  # every completion: steps aligned, or no steps and a score
        assert torch.isnan(handed[:, names.index(name)]).all()

    # advantages = process advantages + TRL's group-normalised outcome of the outcome-only components
    expected_outcome = (outcome_rewards - outcome_rewards.mean()) / (nanstd(outcome_rewards) + 1e-4)
    rewards, tokens, _ = local_step_credit(mix, trainer.processing_class, fixed, None)
    width = output["completion_ids"].size(1)
    dense = local_process_advantages(rewards, tokens, [len(i) for i in fixed], 4, 0, 4, width, aggregation="sum")
    mask = output["completion_mask"].float()
    assert output["advantages"] == pytest.approx((dense + expected_outcome.unsqueeze(1)) * mask, abs=1e-5)

    # the logs still report every component's score, as outcome credit logs them
    metrics = trainer._metrics["train"]
    scores = {name: mix.last_outputs[name].scores for name in names}
    for name in names:
        assert metrics[f"rewards/{name}/mean"][-1] == pytest.approx(sum(scores[name]) / 4, abs=1e-6)
        assert list(trainer._logs["rewards"][name]) == pytest.approx(scores[name], abs=1e-6)
    totals = [sum(w * scores[n][i] for n, w in zip(names, mix.weights)) for i in range(4)]
    assert metrics["reward"][-1] == pytest.approx(sum(totals) / 4, abs=1e-6)
    assert metrics["process/outcome_excluded_fraction"][-1] == pytest.approx(0.5)


def test_grpo_and_ppo_outcomes_are_the_same_numbers(tmp_path):
    """The rule, trainer against trainer: GRPO's outcome rewards (what TRL normalises) and PPO's
    last-token outcome on the same completions, and neither holds a step-credited score."""
    grpo, _ = grpo_trainer(tmp_path)
    _, handed = score_recording(grpo)
    grpo_outcome = (handed * torch.tensor(grpo.reward_mix.weights)).nansum(dim=1).tolist()

    ppo = build_ppo(ppo_recipe(tmp_path / "ppo", "trainer.beta=0.0", "trainer.max_completion_length=32", MIX))
    ppo._generate_transformers = generate_fixed(ppo, COMPLETIONS)
    ppo_rows = [{"prompt": "How many apples?", **ROW} for _ in COMPLETIONS]
    ppo._rollout(ppo_rows)
    mix = ppo.reward_mix
    outputs = mix.last_outputs
    ppo_outcomes = ppo_outcome(mix, outputs, mix.last_batch, None)
    assert grpo_outcome == pytest.approx(OUTCOME, abs=1e-6)
    assert ppo_outcomes == pytest.approx(OUTCOME, abs=1e-6)
