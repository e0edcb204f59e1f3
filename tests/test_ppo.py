"""procrl's PPO trainer (trainer.algorithm: ppo): a run with per-step rewards and TRL-style
logging, the checkpoint layout, resume restoring the value model, CLI runs (1 process,
2 processes, ZeRO-2/3). Generation through vLLM: tests/test_vllm_generation.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForTokenClassification, AutoTokenizer, TrainerCallback

from tests.helpers.training import build_ppo, generate_fixed, launcher, ppo_recipe, run_train, zero2_config

REPO = Path(__file__).resolve().parent.parent


def fixed_batch(tokenizer):
    texts = ["Ava buys 3 x 4 = 12 apples.\nThen she has 12 + 5 = 17.", "Each day Ben earns 8 dollars."]
    return tokenizer(texts, return_tensors="pt", padding=True)


def value_predictions(value_model, batch) -> torch.Tensor:
    value_model.eval()
    with torch.no_grad():
        return value_model(**batch).logits.squeeze(-1) * batch["attention_mask"]


class ValueProbe(TrainerCallback):
    """Records the value model's predictions on a fixed batch when training (re)starts."""

    def __init__(self, batch):
        self.batch = batch
        self.at_start = None

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.at_start = value_predictions(model.value, self.batch)
        model.value.train()
        self.start_step = state.global_step


def test_ppo_trains_logs_and_checkpoints_policy_and_value(tmp_path):
    output = tmp_path / "run"
    trainer = build_ppo(ppo_recipe(output, "trainer.max_steps=4"))
    trainer.train()
    trainer.save_model(str(output))
    history = trainer.state.log_history
    rollout_logs = [h for h in history if "objective/kl" in h]
    update_logs = [h for h in history if "loss/policy" in h]
    # num_iterations=2: a rollout every other optimizer step, a PPO update every step
    assert len(rollout_logs) == 2 and len(update_logs) == 4
    for key in (
        "objective/kl",
        "objective/scores",
        "objective/rlhf_reward",
        "objective/non_score_reward",
        "rewards/steps/mean",
        "rewards/accuracy/mean",
        "rewards/format/mean",
        "reward",
        "val/mean",
        "process/steps_per_completion",
    ):
        assert key in rollout_logs[0], key
    for key in ("loss/value", "policy/approxkl", "policy/clipfrac", "val/clipfrac", "val/ratio"):
        assert all(math.isfinite(h[key]) for h in update_logs), key
    # the second epoch on a rollout moves the policy away from the rollout policy
    assert update_logs[1]["policy/approxkl"] > 0
    # the policy is saved in the usual layout, the value model next to it, in checkpoints too
    for directory in (output, output / "checkpoint-2", output / "checkpoint-4"):
        assert (directory / "model.safetensors").is_file()
        assert (directory / "value_model" / "model.safetensors").is_file()
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(output)  # loadable as a plain policy


@pytest.mark.slow
def test_ppo_resume_restores_the_value_model(tmp_path):
    output = tmp_path / "run"
    first = build_ppo(ppo_recipe(output, "trainer.max_steps=2"))
    first.train()
    checkpoint = output / "checkpoint-2"
    assert checkpoint.is_dir()
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    batch = fixed_batch(tokenizer)
    saved = value_predictions(AutoModelForTokenClassification.from_pretrained(checkpoint / "value_model"), batch)
    trained = value_predictions(first.accelerator.unwrap_model(first.model).value, batch)
    assert torch.allclose(saved, trained, atol=1e-6)
    del first

    probe = ValueProbe(batch)
    resumed = build_ppo(ppo_recipe(output, "trainer.max_steps=4"), callbacks=[probe])
    fresh = value_predictions(resumed.accelerator.unwrap_model(resumed.model).value, batch)
    assert not torch.allclose(fresh, saved, atol=1e-4)  # a new trainer starts from other weights
    resumed.train(resume_from_checkpoint=str(checkpoint))
    assert probe.start_step == 2
    assert torch.allclose(probe.at_start, saved, atol=1e-6)  # restored before training went on
    assert resumed.state.global_step == 4
    assert any(h.get("step") == 4 and "loss/policy" in h for h in resumed.state.log_history)


def test_ppo_refuses_bad_group_sizes(tmp_path):
    from procrl.core.config import ConfigError

    with pytest.raises(ConfigError, match="num_generations"):
        build_ppo(ppo_recipe(tmp_path, "trainer.num_generations=3"))


CLI_OVERRIDES = [
    "--set",
    "trainer.algorithm=ppo",
    "--set",
    "trainer.credit=process",
    "--set",
    "trainer.max_steps=2",
    "--set",
    "trainer.save_steps=100",
    "--set",
    "trainer.max_completion_length=12",
    "--set",
    "trainer.beta=0.05",
    "--set",
    "rewards.first_error={weight: 0.5}",  # built-in per-step reward (arithmetic backend, no model)
]


@pytest.mark.slow
def test_cli_ppo_one_process(tmp_path):
    """The CPU recipe under PPO with process credit, min-form aggregation and a first_error component."""
    out = tmp_path / "run"
    run_train(
        tmp_path,
        [
            "recipes/gsm8k_tiny_smoke.yaml",
            "--output-dir",
            str(out),
            *CLI_OVERRIDES,
            "--set",
            "trainer.process_aggregation=min",
        ],
    )
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    assert any("objective/kl" in h for h in history)
    rollouts = [h for h in history if "objective/scores" in h]
    assert rollouts and all(0.0 <= h["process/single_step_fraction"] <= 1.0 for h in rollouts)
    assert all("rewards/first_error/mean" in h for h in rollouts)
    assert (out / "value_model" / "model.safetensors").is_file()
    # the process diagnostics reach PPO's logs too (the mix's batch observers run on rollouts);
    # error_found_rate needs a judged chain: the random model's 12 tokens hold no checkable
    # calculation (unverified), so the first_error diagnostic always present is the one joining it with accuracy
    assert any(
        "diagnostics/seconds/first_error" in h and "diagnostics/reasoning_aware_accuracy" in h for h in history
    ), [sorted(h) for h in history]
    assert all(h["rewards/first_error/mean"] < 0.0 for h in rollouts)  # unverified / no steps: -1, never the free 0


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["ddp", "zero2", "zero3", "zero3_value_head_on_policy"])
def test_cli_ppo_two_processes(tmp_path, mode):
    out = tmp_path / "run"
    head_on_policy = mode.endswith("value_head_on_policy")
    if mode == "ddp":
        extra = ["--multi_gpu"]
    elif mode == "zero2":
        extra = ["--config_file", str(zero2_config(tmp_path))]
    else:  # policy, value model and reference sharded; generation gathers the weights
        extra = ["--config_file", str(REPO / "launch" / "accelerate" / "zero3.yaml")]
    run_train(
        tmp_path,
        [
            "recipes/gsm8k_tiny_smoke.yaml",
            "--output-dir",
            str(out),
            *CLI_OVERRIDES,
            "--set",
            "trainer.per_device_train_batch_size=2",
            "--set",
            "trainer.num_generations=2",
            "--set",
            f"trainer.value_head_on_policy={str(head_on_policy).lower()}",
        ],
        launcher=launcher(extra),
        timeout=900,
    )
    info = json.loads((out / "run_info.json").read_text())
    assert info["world_size"] == 2 and info["algorithm"] == "ppo"
    if mode != "ddp":
        assert info["deepspeed_stage"] == (2 if mode == "zero2" else 3)
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    assert any("objective/kl" in h and "loss/policy" in h for h in history)
    if head_on_policy:  # the sharded head is saved whole, trained
        from safetensors.torch import load_file

        head = load_file(out / "value_model" / "value_head.safetensors")
        assert head["weight"].shape == (1, 64) and head["weight"].abs().sum() > 0
    else:
        assert (out / "value_model" / "model.safetensors").is_file()


def test_ppo_with_lora_saves_policy_and_value_adapters(tmp_path):
    output = tmp_path / "lora"
    trainer = build_ppo(
        ppo_recipe(output, "trainer.max_steps=2", "model.lora={r: 4, lora_alpha: 8, target_modules: [q_proj, v_proj]}")
    )
    trainer.train()
    trainer.save_model(str(output))
    assert trainer.ref_model is None  # the reference is the policy with its adapters disabled
    assert any("objective/kl" in h for h in trainer.state.log_history)
    from safetensors.torch import load_file

    assert (output / "adapter_model.safetensors").is_file()
    value_adapter = load_file(output / "value_model" / "adapter_model.safetensors")
    head = [k for k in value_adapter if ".score." in k]
    assert head and any(value_adapter[k].abs().sum() > 0 for k in head)  # the fresh head was trained and saved


def test_ppo_credit_key_selects_step_rewards(tmp_path):
    from procrl.core.config import ConfigError
    from procrl.launch.run import build_training_args
    from procrl.trainers.ppo import PPOSettings

    process = ppo_recipe(tmp_path, "trainer.process_rewards=[steps]", "trainer.num_iterations=3", "trainer.epsilon=0.1")
    settings = PPOSettings.from_recipe(process, build_training_args(process, [1.0] * len(process.rewards)))
    assert settings.process_rewards == ["steps"]
    # TRL's fields are reused under their names: epsilon = clip range, num_iterations = PPO epochs, beta = KL
    assert (settings.cliprange, settings.num_ppo_epochs, settings.kl_coef) == (0.1, 3, 0.05)
    assert (settings.gamma, settings.lam) == (1.0, 0.95)
    outcome = ppo_recipe(tmp_path, "trainer.credit=outcome")
    assert PPOSettings.from_recipe(outcome, build_training_args(outcome, [1.0] * 3)).process_rewards == []
    with pytest.raises(ConfigError, match="process_rewards: only used with credit: process"):
        ppo_recipe(tmp_path, "trainer.credit=outcome", "trainer.process_rewards=[steps]")


def test_ppo_rollout_puts_step_rewards_on_step_last_tokens(tmp_path):
    """With V = 0 (fresh head), no KL, no outcome, gamma = lambda = 1 and no whitening, the
    rollout's returns are the rewards-to-go: token t holds the sum of the step rewards of the
    steps ending at or after t, each step ending on the token holding its last character."""
    from procrl.trainers.credit import step_last_tokens, token_char_ends

    recipe = ppo_recipe(
        tmp_path,
        "trainer.beta=0.0",
        "trainer.outcome_weight=0.0",
        "trainer.lam=1.0",
        "trainer.whiten_advantages=false",
        "trainer.max_completion_length=24",
        "trainer.process_aggregation=sum",  # the raw step rewards, to check where they land
        "rewards={steps: {type: 'tests.helpers.rewards:StepDigitShare'}}",
    )
    trainer = build_ppo(recipe)
    rows = [trainer.train_dataset[i] for i in range(4)]
    rollout = trainer._rollout(rows)
    tokenizer = trainer.processing_class
    batch = trainer.reward_mix.last_batch
    step_scores = trainer.reward_mix.last_outputs["steps"].step_scores
    assert any(any(s > 0 for s in steps) for steps in step_scores)  # the check below is not vacuous
    assert torch.count_nonzero(rollout["old_values"]) == 0
    for i, ids in enumerate(batch.completion_ids):
        ends = token_char_ends(tokenizer, ids)
        last = step_last_tokens([span.end for span in batch.segmentations[i].steps], ends)
        expected = [sum(r for r, k in zip(step_scores[i], last) if k is not None and k >= t) for t in range(len(ids))]
        assert rollout["returns"][i, : len(ids)].tolist() == pytest.approx(expected, abs=1e-6)
        assert rollout["returns"][i, len(ids) :].abs().sum() == 0


FIXED_COMPLETIONS = [
    "Ava buys 3 x 4 = 12 apples.\nThen she has 12 + 5 = 17 apples.\n#### 17",  # steps [1, 0], right answer
    "#### 17",  # no steps, right answer
    "Ava has 17 apples.\nAva ate none.\n#### 16",  # steps [1, 1], wrong answer
    "Then 5.\nThen 6.\n#### 11",  # steps [0, 0], wrong answer
]


@pytest.mark.parametrize("aggregation", ["min", "sum"])
def test_ppo_last_token_carries_only_components_without_step_credit(tmp_path, aggregation):
    """No component counts twice, none is lost. `steps` (1.0 per step starting with "Ava") and
    first_error (weight 0.5, arithmetic) give step rewards; accuracy and format are
    outcome-only. With V = 0, no KL, gamma = lambda = 1 and no whitening, the first token's
    return is the sum of all token rewards, the last token's the outcome.

    Hand-computed: outcome = accuracy + 0.2 format. Step rewards (steps + 0.5 first_error):
    0: verified [1, 0]; 1: no steps: one reward on the last token, 0 (steps) + 0.5 x -1
    (no_steps_score) = -0.5; 2: unverified (first_error -1 on the last step) [1, 1 - 0.5];
    3: unverified [0, -0.5]. Min-form weights softmax(-r / 0.1)."""
    recipe = ppo_recipe(
        tmp_path,
        "trainer.beta=0.0",
        "trainer.lam=1.0",
        "trainer.whiten_advantages=false",
        "trainer.max_completion_length=32",
        f"trainer.process_aggregation={aggregation}",
        "rewards={accuracy: {weight: 1.0}, format: {weight: 0.2}, first_error: {weight: 0.5}, "
        "steps: {type: 'tests.helpers.rewards:StepStartsWith', prefixes: [Ava], weight: 1.0}}",
    )
    trainer = build_ppo(recipe)
    trainer._generate_transformers = generate_fixed(trainer, FIXED_COMPLETIONS)
    rows = [{"prompt": "How many apples?", "question": "How many apples?", "answer": "#### 17"} for _ in range(4)]
    rollout = trainer._rollout(rows)
    lengths = rollout["completion_mask"].sum(dim=1).tolist()
    last = [rollout["returns"][i, n - 1].item() for i, n in enumerate(lengths)]
    first = rollout["returns"][:, 0].tolist()
    outcome = [1.2, 1.2, 0.2, 0.2]  # never + the steps or first_error scalars a second time
    step_rewards = [[1.0, 0.0], [-0.5], [1.0, 0.5], [0.0, -0.5]]
    if aggregation == "min":

        def weighted(rewards):
            exps = [math.exp(-r / 0.1) for r in rewards]
            return [e / sum(exps) * r for e, r in zip(exps, rewards)]

        step_rewards = [weighted(r) for r in step_rewards]
    # the last token (EOS) holds the outcome only: the last step ends before the answer line, and
    # completion 1's one reward sits on the last token with text ("17")
    assert last == pytest.approx(outcome, abs=1e-6)
    assert first == pytest.approx([o + sum(r) for o, r in zip(outcome, step_rewards)], abs=1e-6)
    if aggregation == "min":  # the answer alone is not exempt: -0.5 like the hedging chain's worst step
        assert first[1] == pytest.approx(1.2 - 0.5) and first[3] == pytest.approx(0.2 - 0.5, abs=1e-2)


class HeadProbe(TrainerCallback):
    """Records the value head (value_head_on_policy) when training (re)starts."""

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.at_start = model.value.weight.detach().clone()
        self.start_step = state.global_step


@pytest.mark.slow
def test_ppo_value_head_on_policy_under_lora_shares_the_trunk_and_resumes(tmp_path):
    from safetensors.torch import load_file

    lora = "model.lora={r: 4, lora_alpha: 8, target_modules: [q_proj, v_proj]}"
    output = tmp_path / "run"
    first = build_ppo(ppo_recipe(output, "trainer.max_steps=2", "trainer.value_head_on_policy=true", lora))
    unwrapped = first.accelerator.unwrap_model(first.model)
    assert isinstance(unwrapped.value, torch.nn.Linear) and first.ref_model is None  # one model in memory
    first.train()
    saved = load_file(output / "checkpoint-2" / "value_model" / "value_head.safetensors")
    assert torch.equal(saved["weight"], unwrapped.value.weight.detach()) and saved["weight"].abs().sum() > 0
    # the value loss reaches the policy's LoRA adapters through the shared trunk
    batch = fixed_batch(first.processing_class)
    unwrapped.zero_grad()
    _, values = unwrapped(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    values.sum().backward()
    lora_grads = [p.grad for n, p in unwrapped.policy.named_parameters() if "lora_" in n and p.grad is not None]
    assert lora_grads and any(g.abs().sum() > 0 for g in lora_grads)
    del first

    probe = HeadProbe()
    resumed = build_ppo(
        ppo_recipe(output, "trainer.max_steps=4", "trainer.value_head_on_policy=true", lora), callbacks=[probe]
    )
    assert resumed.accelerator.unwrap_model(resumed.model).value.weight.abs().sum() == 0  # fresh head: V = 0
    resumed.train(resume_from_checkpoint=str(output / "checkpoint-2"))
    assert probe.start_step == 2 and torch.equal(probe.at_start, saved["weight"])
    assert resumed.state.global_step == 4


def test_value_head_on_policy_excludes_a_value_model(tmp_path):
    from procrl.core.config import ConfigError

    with pytest.raises(ConfigError, match=r"trainer\.value_head_on_policy: .*drop value_model"):
        ppo_recipe(tmp_path, "trainer.value_head_on_policy=true", "trainer.value_model=some/critic")


def test_sampler_importance_weights_hand_computed():
    """TRL's vLLM correction modes on one sequence: log-ratios old - sampler = [0.5, -1.0] (third
    token padding), so token ratios e^0.5 = 1.6487, e^-1 = 0.3679 and sequence ratio e^-0.5 = 0.6065."""
    from procrl.trainers.ppo import sampler_importance_weights

    old = torch.tensor([[-1.0, -2.0, -7.0]])
    sampler = torch.tensor([[-1.5, -1.0, float("nan")]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])

    def weights(mode, low, high):
        return sampler_importance_weights(old, sampler, mask, mode, low, high)

    e = math.exp
    assert weights("token_truncate", None, 1.5)[0, :2].tolist() == pytest.approx([1.5, e(-1.0)], abs=1e-6)
    assert weights("token_truncate", 0.5, None)[0, :2].tolist() == pytest.approx([e(0.5), 0.5], abs=1e-6)
    assert weights("token_mask", None, 1.5)[0, :2].tolist() == pytest.approx([0.0, e(-1.0)], abs=1e-6)
    assert weights("token_mask", 0.5, 3.0)[0, :2].tolist() == pytest.approx([e(0.5), 0.0], abs=1e-6)
    sequence = weights("sequence_truncate", None, 3.0)
    assert sequence.shape == (1, 1) and sequence.item() == pytest.approx(e(-0.5), abs=1e-6)
    assert weights("sequence_mask", None, 0.5).item() == 0.0
    assert weights("sequence_mask", None, 3.0).item() == pytest.approx(e(-0.5), abs=1e-6)
    with pytest.raises(ValueError, match="vllm_importance_sampling_mode"):
        weights("per_step", None, 3.0)


def test_sampler_weights_scale_the_policy_loss(tmp_path):
    """The rollout's vLLM correction multiplies the per-token policy loss: zero weights give a
    zero policy loss, unit weights the uncorrected one (the second PPO epoch reuses the rollout)."""
    trainer = build_ppo(ppo_recipe(tmp_path, "trainer.num_iterations=2", "trainer.max_completion_length=8"))
    trainer.current_gradient_accumulation_steps = 1  # set by the training loop, which is not run here
    rows = [trainer.train_dataset[i] for i in range(4)]
    rollout = trainer._rollout(rows)
    assert rollout["sampler_weights"] is None  # transformers generation: no sampler to correct

    def policy_loss(weights):
        trainer._rollouts[0] = {**rollout, "sampler_weights": weights}
        trainer._micro_step = 1  # the second epoch on the cycle's rollout
        trainer.model.zero_grad()
        trainer.training_step(trainer.model, rows)
        return trainer._metrics["loss/policy"][-1]

    plain = policy_loss(None)
    assert plain != 0.0
    assert policy_loss(torch.ones(len(rows), 1)) == pytest.approx(plain, abs=1e-7)
    assert policy_loss(torch.zeros(len(rows), 1)) == 0.0


def test_pad_completions_from_vllm_outputs():
    from procrl.trainers.ppo import pad_completions

    ids, mask, logprobs = pad_completions(
        [[5, 6, 2], [7], []], [[[-0.1], [-0.2], [None]], [[-0.3]], []], pad_token_id=0
    )
    assert ids.tolist() == [[5, 6, 2], [7, 0, 0], [0, 0, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0], [0, 0, 0]]
    assert logprobs[0, :2].tolist() == pytest.approx([-0.1, -0.2]) and math.isnan(logprobs[0, 2].item())
    assert logprobs[1].tolist() == pytest.approx([-0.3, 0.0, 0.0])
    ids, mask, none = pad_completions([[], []], None, pad_token_id=9)  # nothing generated: one padding column
    assert ids.tolist() == [[9], [9]] and mask.sum() == 0 and none is None


@pytest.mark.slow
@pytest.mark.parametrize("value_head_on_policy", [False, True])
def test_cli_ppo_resume_under_zero3_restores_the_value_model(tmp_path, value_head_on_policy):
    """2 ranks, ZeRO-3: stop at checkpoint-2, `--resume` to step 4. DeepSpeed restores the whole
    PolicyAndValue module; a fresh value model would predict exactly V = 0 at the first rollout
    after the restart, the restored one does not."""
    out = tmp_path / "run"
    args = [
        "recipes/gsm8k_tiny_smoke.yaml",
        "--output-dir",
        str(out),
        *CLI_OVERRIDES,
        "--set",
        "trainer.per_device_train_batch_size=2",
        "--set",
        "trainer.num_generations=2",
        "--set",
        "trainer.save_steps=2",
        "--set",
        f"trainer.value_head_on_policy={str(value_head_on_policy).lower()}",
    ]
    zero3 = launcher(["--config_file", str(REPO / "launch" / "accelerate" / "zero3.yaml")])
    run_train(tmp_path, args, launcher=zero3)
    first = json.loads((out / "trainer_state.json").read_text())["log_history"]
    assert [h["val/mean"] for h in first if "val/mean" in h][0] == 0.0  # a fresh value model: V = 0
    run_train(tmp_path, [*args, "--set", "trainer.max_steps=4", "--resume"], launcher=zero3)
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    updates = [h for h in history if "loss/policy" in h]
    assert [h["step"] for h in updates] == [1, 2, 3, 4]
    assert updates[2]["val/mean"] != 0.0  # the first rollout after the restart: the restored value model


def test_ppo_with_lora_all_linear_keeps_the_value_head_whole(tmp_path):
    """LoRA's default target_modules, 'all-linear', must not adapt the value model's 1-output
    head: PEFT trains it whole (modules_to_save) and refused the LoRA-wrapped one."""
    output = tmp_path / "lora"
    trainer = build_ppo(ppo_recipe(output, "trainer.max_steps=1", "model.lora={r: 4, lora_alpha: 8}"))
    trainer.train()
    trainer.save_model(str(output))
    from safetensors.torch import load_file

    value_adapter = load_file(output / "value_model" / "adapter_model.safetensors")
    assert any(".score." in k and "lora" not in k for k in value_adapter)  # the head, whole
    assert any("q_proj.lora_A" in k for k in value_adapter)  # the trunk's linears, adapted
