"""Training runs started by tests: ``procrl train`` as a process, two processes under accelerate,
ZeRO-2's accelerate config, and the PPO trainer built in this process on the tiny recipe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch

from procrl.recipe import load_recipe
from tests.helpers.launch import REPO, free_port

STEP_REWARD = "tests.helpers.rewards:StepStartsWith"


def run_train(tmp_path, args, launcher=None, timeout=900, env_extra: dict | None = None):
    """``procrl train ARGS`` (or ``launcher`` + ARGS) as a process from the repository; asserts it succeeds."""
    env = {
        **os.environ,
        "WANDB_MODE": "offline",
        "PYTHONPATH": str(REPO),
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
        **(env_extra or {}),
    }
    command = (launcher or [sys.executable, "-m", "procrl.launch.cli", "train"]) + args
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-4000:])
    return result


def launcher(extra: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        *extra,
        "--num_processes",
        "2",
        "--main_process_port",
        str(free_port()),
        "-m",
        "procrl.run",
    ]


def zero2_config(tmp_path) -> Path:
    shipped = REPO / "launch" / "accelerate" / "zero2.yaml"
    if shipped.is_file():
        return shipped
    path = tmp_path / "zero2.yaml"
    path.write_text(
        "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
        "deepspeed_config:\n  zero_stage: 2\n  offload_optimizer_device: none\n  offload_param_device: none\n"
        "  gradient_accumulation_steps: 1\n  zero3_init_flag: false\nmixed_precision: 'no'\nnum_machines: 1\n"
        "num_processes: 2\nmachine_rank: 0\nrdzv_backend: static\nsame_network: true\nuse_cpu: false\n"
    )
    return path


def build_ppo(recipe, callbacks=()):
    """What procrl.launch.run.train builds, with extra callbacks (to observe the resumed model)."""
    from transformers import set_seed

    from procrl.data import build_prompt_dataset
    from procrl.launch.run import build_training_args
    from procrl.models.loading import load_tokenizer
    from procrl.rewards import RewardMix
    from procrl.trainers.ppo import build_ppo_trainer

    mix = RewardMix(recipe.rewards)
    args = build_training_args(recipe, mix.weights)
    set_seed(args.seed)
    tokenizer = load_tokenizer(recipe.model)
    dataset = build_prompt_dataset(recipe.data, tokenizer)
    return build_ppo_trainer(recipe, mix, args, tokenizer, dataset, callbacks=list(callbacks))


def ppo_recipe(output_dir, *extra):
    return load_recipe(
        REPO / "recipes" / "gsm8k_tiny_smoke.yaml",
        [
            "trainer.algorithm=ppo",
            "trainer.credit=process",
            "trainer.max_completion_length=12",
            "trainer.beta=0.05",
            "trainer.num_iterations=2",
            "trainer.save_steps=2",
            f"rewards.steps={{type: {STEP_REWARD}, weight: 1.0}}",
            *extra,
        ],
        output_dir=str(output_dir),
    )


def generate_fixed(trainer, texts):
    """Stands in for the policy's sampling only (what is under test is what the rollout does with
    the completions): the prompts as the trainer tokenizes them, ``texts`` + EOS as completions."""
    tokenizer = trainer.processing_class

    def generate(prompt_texts):
        prompts = tokenizer(
            prompt_texts, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False
        )
        ids = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for t in texts]
        width = max(map(len, ids))
        completion_ids = torch.full((len(ids), width), tokenizer.pad_token_id)
        completion_mask = torch.zeros_like(completion_ids)
        for row, sequence in enumerate(ids):
            completion_ids[row, : len(sequence)] = torch.tensor(sequence)
            completion_mask[row, : len(sequence)] = 1
        return prompts["input_ids"], prompts["attention_mask"], completion_ids, completion_mask, None

    return generate
