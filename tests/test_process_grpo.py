"""Process-supervised GRPO (trainer.credit: process): credit from the mix, process slicing,
training with several TRL loss types, CLI runs (1 process, 2 processes, ZeRO-2, ZeRO-3)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from procrl.models.loading import TOKENIZER_ASSET, model_source
from procrl.recipe import TRL_CHOICES, load_recipe
from procrl.rewards import RewardBatch, RewardMix, parse_rewards
from procrl.trainers.credit import outcome_rewards, process_advantages
from procrl.trainers.process_grpo import ProcessGRPOTrainer, local_process_advantages
from procrl.trainers.step_credit import local_step_credit, step_credited
from tests.helpers.training import STEP_REWARD, launcher, run_train, zero2_config

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(TOKENIZER_ASSET)


def test_local_step_credit_reads_the_mix_and_maps_steps(tokenizer):
    mix = RewardMix(
        parse_rewards(
            {
                "digits": {"type": STEP_REWARD, "weight": 2.0},
                "then": {"type": STEP_REWARD, "weight": 0.5, "prefixes": ["Then"]},
                "accuracy": {"weight": 1.0},
            }
        )
    )
    texts = ["3 apples.\nThen 4 more.\n#### 7", "Then we stop."]
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for t in texts]
    batch = RewardBatch(completions=texts, questions=[None, None], golds=["7", "1"], completion_ids=ids)
    for name in mix.names:
        mix.compute(name, batch, key=texts)
    rewards, last_tokens, stats = local_step_credit(mix, tokenizer, ids, None)
    # accuracy emits no step scores: only digits (w=2) and then (w=0.5) give credit
    assert rewards == [[2.0, 0.5], [0.5]]
    pieces = [tokenizer.decode([i]) for i in ids[0]]
    step1_last = last_tokens[0][0]
    assert "".join(pieces[: step1_last + 1]) == "3 apples."
    assert "".join(pieces[: last_tokens[0][1] + 1]) == "3 apples.\nThen 4 more."
    assert last_tokens[1] == [len(ids[1]) - 2]  # the "." before EOS
    assert stats["process/unaligned_fraction"] == 0.0
    # naming components restricts (and weights) the credit
    rewards, _, _ = local_step_credit(mix, tokenizer, ids, ["then"])
    assert rewards == [[0.0, 0.5], [0.5]]
    # a completion whose scored text is not in the decoded tokens: steps end on the last token
    other = [tokenizer("unrelated text", add_special_tokens=False)["input_ids"], ids[1]]
    _, last_tokens, stats = local_step_credit(mix, tokenizer, other, None)
    assert last_tokens[0] == [len(other[0]) - 1, len(other[0]) - 1]
    assert stats["process/unaligned_fraction"] == 0.5


def test_local_process_advantages_match_the_unsliced_group_on_every_rank():
    # 2 groups of 3 completions spread over 3 "ranks" of 2 completions: group 0 spans ranks 0-1
    rewards = [[1, 0], [1, 1, 0], [0, 1, 1, 1], [0.5], [0.0, 2.0], []]
    tokens = [[1, 4], [1, 3, 5], [0, 1, 2, 3], [2], [0, 1], []]
    lengths = [5, 6, 4, 3, 2, 0]
    full = process_advantages(rewards[:3], tokens[:3], lengths[:3]) + process_advantages(
        rewards[3:], tokens[3:], lengths[3:]
    )
    for rank in range(3):
        part = local_process_advantages(rewards, tokens, lengths, 3, start=2 * rank, local=2, width=6)
        for row in range(2):
            want = full[2 * rank + row]
            assert part[row, : len(want)].tolist() == pytest.approx(want, abs=1e-6)
            assert part[row, len(want) :].abs().sum() == 0
    with pytest.raises(ValueError):
        local_process_advantages(rewards[:5], tokens[:5], lengths[:5], 3, 0, 2, 6)


def _tiny_process_recipe(tmp_path, *extra, step_reward=STEP_REWARD):
    return load_recipe(
        REPO / "recipes" / "gsm8k_tiny_smoke.yaml",
        [
            "trainer.credit=process",
            "trainer.max_steps=2",
            "trainer.save_steps=100",
            "trainer.max_completion_length=16",
            "trainer.num_generations=4",
            "trainer.per_device_train_batch_size=4",
            f"rewards.steps={{type: {step_reward}, weight: 1.0}}",
            *extra,
        ],
        output_dir=str(tmp_path / "run"),
    )


# every loss type a recipe accepts (TRL's); dapo (TRL's default) in the quick suite
LOSS_TYPES = [pytest.param(t, marks=() if t == "dapo" else pytest.mark.slow) for t in TRL_CHOICES["loss_type"]]


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_process_grpo_trains_with_token_advantages(tmp_path, monkeypatch, loss_type):
    from procrl.launch.run import train

    seen = []
    original = ProcessGRPOTrainer._compute_loss

    def recording(self, model, inputs):
        seen.append(
            (
                tuple(inputs["advantages"].shape),
                tuple(inputs["completion_ids"].shape),
                inputs["advantages"].detach().clone(),
                inputs["completion_mask"].clone(),
            )
        )
        return original(self, model, inputs)

    monkeypatch.setattr(ProcessGRPOTrainer, "_compute_loss", recording)
    extra = ["trainer.importance_sampling_level=sequence"] if loss_type == "luspo" else []  # as TRL asks
    # the digit-share steps differ within a group from the first step on: non-zero token advantages
    recipe = _tiny_process_recipe(
        tmp_path,
        f"trainer.loss_type={loss_type}",
        "trainer.outcome_weight=0.0",
        *extra,
        step_reward="tests.helpers.rewards:StepDigitShare",
    )
    trainer = train(recipe)
    assert isinstance(trainer, ProcessGRPOTrainer)
    assert seen and all(adv == ids for adv, ids, _, _ in seen)  # (B, T) advantages reached the loss
    for _, _, advantages, mask in seen:
        assert torch.isfinite(advantages).all()
        assert (advantages * (1 - mask)).abs().sum() == 0
    assert any(advantages.abs().sum() > 0 for _, _, advantages, _ in seen)
    history = json.loads((tmp_path / "run" / "trainer_state.json").read_text())["log_history"]
    steps = [h for h in history if "process/steps_per_completion" in h]
    assert len(steps) == 2
    assert all(h["process/steps_per_completion"] >= 1 for h in steps)
    assert all(math.isfinite(h["loss"]) for h in steps)
    initial = AutoModelForCausalLM.from_pretrained(model_source("procrl:tiny-qwen2").path)
    trained = trainer.accelerator.unwrap_model(trainer.model).state_dict()
    assert any(not torch.equal(p, trained[name]) for name, p in initial.state_dict().items()), "no weight changed"


CLI_OVERRIDES = [
    "--set",
    "trainer.max_steps=2",
    "--set",
    "trainer.save_steps=100",
    "--set",
    "trainer.max_completion_length=16",
    "--set",
    "rewards.first_error={weight: 0.5}",  # built-in per-step reward (arithmetic backend, no model)
]


@pytest.mark.slow
def test_cli_process_credit_one_process(tmp_path):
    """The CPU recipe with process credit, min-form aggregation and a first_error component."""
    out = tmp_path / "run"
    result = run_train(
        tmp_path,
        [
            "recipes/gsm8k_tiny_smoke.yaml",
            "--output-dir",
            str(out),
            "--set",
            "trainer.credit=process",
            "--set",
            "trainer.process_aggregation=min",
            *CLI_OVERRIDES,
        ],
    )
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    logged = [h for h in history if "process/advantage_abs_mean" in h]
    assert len(logged) == 2
    assert all(0.0 <= h["process/single_step_fraction"] <= 1.0 for h in logged)
    assert all(math.isfinite(h["loss"]) and "rewards/first_error/mean" in h for h in logged)
    import yaml

    resolved = yaml.safe_load((out / "recipe.yaml").read_text())["trainer"]
    assert (resolved["process_aggregation"], resolved["process_temperature"]) == ("min", 0.1)
    # the random tiny model writes one line or none: the single-step warning says so, once
    if any(h["process/single_step_fraction"] > 0.5 for h in logged):
        assert (result.stdout + result.stderr).count("have a single step") == 1


def test_single_step_warning_once(caplog):
    from procrl.trainers.step_credit import SingleStepWarning

    warning = SingleStepWarning()
    with caplog.at_level("WARNING"):
        for fraction in (0.25, 0.5, 0.75, 1.0):
            warning.observe(fraction)
    messages = [r.getMessage() for r in caplog.records if "single step" in r.getMessage()]
    assert len(messages) == 1 and "75%" in messages[0]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["ddp", "zero2", "zero3"])
def test_cli_process_credit_two_processes(tmp_path, mode):
    out = tmp_path / "run"
    if mode == "ddp":
        extra = ["--multi_gpu"]
    elif mode == "zero2":
        extra = ["--config_file", str(zero2_config(tmp_path))]
    else:
        extra = ["--config_file", str(REPO / "launch" / "accelerate" / "zero3.yaml")]
    # 2 prompts x 4 generations over 2 ranks of 4: groups are split across ranks
    run_train(
        tmp_path,
        [
            "recipes/gsm8k_tiny_smoke.yaml",
            "--output-dir",
            str(out),
            "--set",
            "trainer.credit=process",
            "--set",
            "trainer.per_device_train_batch_size=2",
            *CLI_OVERRIDES,
        ],
        launcher=launcher(extra),
        timeout=900,
    )
    info = json.loads((out / "run_info.json").read_text())
    assert info["world_size"] == 2
    if mode != "ddp":
        assert info["deepspeed_stage"] == int(mode[-1])
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    assert any("process/advantage_abs_mean" in h for h in history)


HAND_WRITTEN = {
    "W": "She sold 48 / 2 = 24 clips in May.\nAltogether she sold 48 + 24 = 72 clips.\n#### 72",
    "S": "She sold 48 / 2 = 26 clips in May.\nAltogether she sold 48 + 24 = 72 clips.\n#### 72",
    "A": "#### 72",
    "H": "I think the answer is probably this.\nIt seems about right.\nI am fairly sure.\n#### 72",
}
HAND_WRITTEN["P"] = (
    "Let us restate the problem.\nWe know what she sold in April.\nWe need the total.\n" + HAND_WRITTEN["S"]
)


@pytest.mark.parametrize("aggregation", ["min", "sum"])
def test_hand_written_group_under_process_credit(tokenizer, aggregation):
    """One GRPO group of W (worked), S (one slip), P (S padded), A (answer alone), H (hedging),
    accuracy + first_error (weight 0.5) as in recipes/gsm8k_judge.yaml, process credit from
    first_error. First-token advantage = process advantage + TRL's outcome advantage (the group-
    normalised total of the components not step-credited: no component counts twice). Under
    min-form: W first, and neither padding nor skipping pays (P = S,
    A = S: the answer alone gets first_error's no_steps_score as its one step reward). Under
    DeepSeekMath's sum the padded slip beats the plain one: the reason min is the default."""
    kinds = list(HAND_WRITTEN)
    texts = [HAND_WRITTEN[k] for k in kinds]
    mix = RewardMix(parse_rewards({"accuracy": {"weight": 1.0}, "first_error": {"weight": 0.5}}))
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for t in texts]
    batch = RewardBatch(completions=texts, questions=["q"] * 5, golds=["72"] * 5, completion_ids=ids)
    outputs = mix.score_all(batch)
    rewards, tokens, _ = local_step_credit(mix, tokenizer, ids, ["first_error"])
    assert rewards[kinds.index("A")] == [-0.5]  # 0.5 x no_steps_score, on the last token with text
    dense = local_process_advantages(
        rewards, tokens, [len(i) for i in ids], 5, 0, 5, max(map(len, ids)), aggregation=aggregation
    )
    credited = step_credited(mix, outputs, batch, ["first_error"])
    weights = {name: mix.specs[name].weight for name in outputs}
    totals = torch.tensor(outcome_rewards({n: o.scores for n, o in outputs.items()}, weights, credited))
    outcome = (totals - totals.mean()) / (totals.std(unbiased=False) + 1e-4)
    first = {k: (dense[i, 0] + outcome[i]).item() for i, k in enumerate(kinds)}
    assert first["W"] > max(first["S"], first["A"], first["H"], first["P"])
    if aggregation == "min":
        assert first["P"] <= first["S"] + 1e-6 and first["A"] <= first["S"] + 1e-6
    else:
        assert first["P"] > first["S"] + 0.5  # sum pays for the padding steps
