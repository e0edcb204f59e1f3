"""pad == eos (SmolLM2's and Qwen2.5's ``<|im_end|>``): a completion's EOS is a trained token,
never masked away as padding, in GRPO (TRL's masks) and procrl's PPO rollouts.

A copy of the tiny model whose tokenizer pads with its EOS, sampled with a +100 logit bias on the
EOS (``trainer.generation_kwargs: {sequence_bias: ...}``, which GRPO and PPO both honour), so every
completion is the EOS alone: that one token must count in the loss mask
(``completions/mean_length`` 1, not 0) and end the completion (``completions/clipped_ratio`` 0)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from procrl.launch import cli

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "recipes" / "gsm8k_tiny_smoke.yaml"


@pytest.fixture(scope="module")
def eos_model(tmp_path_factory) -> Path:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from procrl.models.loading import ensure_tiny_model

    directory = tmp_path_factory.mktemp("pad-eq-eos") / "model"
    shutil.copytree(ensure_tiny_model(), directory)
    tokenizer = AutoTokenizer.from_pretrained(directory)
    tokenizer.pad_token = tokenizer.eos_token
    tokenizer.save_pretrained(directory)
    eos = tokenizer.eos_token_id
    model = AutoModelForCausalLM.from_pretrained(directory)
    model.config.pad_token_id = eos
    model.generation_config.pad_token_id = eos
    model.save_pretrained(directory)
    assert AutoTokenizer.from_pretrained(directory).pad_token_id == eos
    return directory


@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_the_eos_counts_in_the_loss_mask_when_pad_is_eos(eos_model, tmp_path, algorithm):
    from transformers import AutoTokenizer

    eos = AutoTokenizer.from_pretrained(eos_model).eos_token_id
    output = tmp_path / algorithm
    code = cli.main(
        [
            "train",
            str(TINY),
            "--output-dir",
            str(output),
            "--set",
            f"model.name_or_path={eos_model}",
            "--set",
            f"trainer.algorithm={algorithm}",
            "--set",
            "trainer.max_steps=1",
            "--set",
            "trainer.max_completion_length=8",
            "--set",
            f"trainer.generation_kwargs={{sequence_bias: [[[{eos}], 100.0]]}}",
        ]
    )
    assert code == 0
    history = json.loads((output / "trainer_state.json").read_text())["log_history"]
    logged = next(h for h in history if "completions/mean_length" in h)
    assert logged["completions/mean_length"] == pytest.approx(1.0)  # the EOS, kept
    if algorithm == "grpo":
        assert logged["completions/clipped_ratio"] == 0.0 and logged[
            "completions/mean_terminated_length"
        ] == pytest.approx(1.0)
    else:
        assert logged["val/num_eos_tokens"] == 4.0  # every rollout ended on its EOS
