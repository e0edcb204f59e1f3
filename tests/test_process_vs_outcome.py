"""benchmarks/process_vs_outcome.py --quick runs its arms end to end and writes its files (slow:
~1.5 minutes on 2 cores once the tiny reasoner is built). Four of the seven arms, one per code
path: outcome GRPO, process GRPO (sum), PPO with process credit, process GRPO on the reference
judge; the other three differ from these only in --set overrides (kept short for CI's budget)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ARMS = ["outcome_acc", "process_sum", "ppo_process", "process_ref"]


@pytest.mark.slow
def test_quick_experiment_writes_results_table_and_plot(tmp_path):
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "process_vs_outcome.py"), "--quick", "--steps", "1",
                             "--arms", *ARMS, "--output-dir", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    arms = ARMS
    assert list(results["summary"]) == arms and results["settings"]["quick"] is True
    # reasoning-aware accuracy by the reference judge (outside arms 1-5's trained mixes) and by the arithmetic one
    assert results["settings"]["eval_judge"] == "reference"
    for arm in arms:
        run = results["arms"][arm]["0"]
        assert 0.0 <= run["eval"]["answer_accuracy"] <= 1.0 and run["eval"]["mean_steps"] > 0
        assert run["eval"]["evaluation_judge"] == "eval_judge"
        for key in ("reasoning_aware_accuracy", "reasoning_aware_accuracy_arithmetic"):
            assert 0.0 <= run["eval"][key] <= run["eval"]["answer_accuracy"]
    for arm in ("process_ref",):  # trained on the reference judge
        assert "rewards.first_error.backend=reference" in results["settings"]["arms"][arm]
        train_log = (tmp_path / arm / "seed0" / "train.log").read_text()
        assert "Traceback" not in train_log
        assert run["curve"] and "rewards/accuracy/mean" in run["curve"][0]
        assert isinstance(results["summary"][arm]["hacking_suspect"], list)
    # every arm trained with the same steps and completions per step
    assert results["settings"]["steps"] == 1 and results["settings"]["completions_per_step"] == 64
    table = (tmp_path / "results.md").read_text()
    assert table.count("\n| ") == 2 + len(arms)  # separator + starting model + one row per arm
    png = (tmp_path / "process_vs_outcome.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
