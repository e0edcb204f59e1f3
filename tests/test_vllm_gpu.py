"""The vLLM paths with the real engine: PPO and process-supervised GRPO, ``vllm_mode: colocate``,
on a small random Qwen2 (head size 64, which vLLM's attention kernels take). Needs a CUDA GPU
and vLLM; skipped elsewhere (CI has no GPU: the CPU tests in tests/test_vllm_generation.py run
the same trainers against a stand-in for the engine).

With the policy's weights pushed to vLLM after each update, the policy's log-probs of vLLM's
samples match vLLM's own up to kernel numerics; a failed push would let them drift apart."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
import torch

from tests.helpers.training import run_train

REPO = Path(__file__).resolve().parent.parent
FAKES = REPO / "tests" / "fakes"


def real_vllm_on_gpu() -> bool:
    if not torch.cuda.is_available():
        return False
    spec = importlib.util.find_spec("vllm")
    return spec is not None and spec.origin is not None and FAKES not in Path(spec.origin).parents


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not real_vllm_on_gpu(), reason="needs a CUDA GPU and vLLM installed (the real engine)"),
]

ALGORITHMS = {
    "ppo": ["--set", "trainer.algorithm=ppo", "--set", "trainer.credit=process", "--set", "trainer.beta=0.05"],
    "grpo_process": ["--set", "trainer.credit=process"],
}


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_real_vllm_colocate(tmp_path, algorithm):
    from procrl.models.loading import ensure_tiny_model

    model = ensure_tiny_model(hidden_size=256)
    out = tmp_path / "run"
    run_train(
        tmp_path,
        [
            "recipes/gsm8k_tiny_smoke.yaml",
            "--output-dir",
            str(out),
            *ALGORITHMS[algorithm],
            "--set",
            f"model.name_or_path={model}",
            "--set",
            "trainer.max_steps=4",
            "--set",
            "trainer.save_steps=100",
            "--set",
            "trainer.max_completion_length=24",
            "--set",
            "rewards.first_error={weight: 0.5}",
            "--set",
            "trainer.use_vllm=true",
            "--set",
            "trainer.vllm_mode=colocate",
            "--set",
            "trainer.vllm_gpu_memory_utilization=0.2",
        ],
        timeout=1200,
    )
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    gaps = [
        h["sampling/sampling_logp_difference/mean"] for h in history if "sampling/sampling_logp_difference/mean" in h
    ]
    assert len(gaps) == 4, history
    assert all(math.isfinite(g) and g < 0.05 for g in gaps), gaps
