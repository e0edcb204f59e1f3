"""GRPO on the tiny CPU recipe with the arithmetic first-error judge added from the command
line: the reward and its failure counts reach TRL's logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_tiny_grpo_logs_first_error_reward_and_failure_counts(tmp_path):
    output_dir = tmp_path / "run"
    env = {**os.environ, "WANDB_MODE": "offline"}
    command = [
        sys.executable,
        "-m",
        "procrl",
        "train",
        str(REPO / "recipes" / "gsm8k_tiny_smoke.yaml"),
        "--output-dir",
        str(output_dir),
        "--set",
        "rewards.first_error.weight=0.5",
        "--set",
        "rewards.first_error.backend=arithmetic",
        "--set",
        "trainer.max_steps=3",
        "--set",
        "trainer.save_steps=100",
    ]
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    steps = [entry for entry in history if "rewards/first_error/mean" in entry]
    assert len(steps) == 3
    for entry in steps:
        assert -1.0 <= entry["rewards/first_error/mean"] <= 0.0
        for kind in ("no_verdict", "timeout", "http_error", "bad_response", "no_steps"):
            assert f"rewards/first_error/failures/{kind}" in entry
