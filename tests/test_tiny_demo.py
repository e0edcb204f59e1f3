"""The CPU demo learns: a short GRPO run from procrl:tiny-reasoner with the demo recipe (its
first 40 of 100 steps, to keep CI short) raises held-out answer accuracy, without losing
reasoning-aware accuracy (slow: a few minutes on 2 cores; the measured figures of the full run
are in docs/cpu-lab.md, "The demo")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "recipes" / "gsm8k_tiny_cpu.yaml"
STEPS = 40
MARGIN = 0.03  # answer accuracy at least 0.03 above the starting model's on 200 problems


def _evaluate(model: str, out: Path) -> dict:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "procrl.launch.cli",
            "evaluate",
            "--recipe",
            str(RECIPE),
            "--model",
            model,
            "--split",
            "test",
            "--limit",
            "200",
            "--output-dir",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((out / "report.json").read_text())


@pytest.mark.slow
def test_short_demo_run_raises_held_out_accuracy(tmp_path):
    run = tmp_path / "tiny"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "procrl.launch.cli",
            "train",
            str(RECIPE),
            "--output-dir",
            str(run),
            "--set",
            f"trainer.max_steps={STEPS}",
            "--set",
            f"trainer.save_steps={STEPS}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    before, after = _evaluate("procrl:tiny-reasoner", tmp_path / "before"), _evaluate(str(run), tmp_path / "after")
    assert after["answer_accuracy"] >= before["answer_accuracy"] + MARGIN, (
        before["answer_accuracy"],
        after["answer_accuracy"],
    )
    assert after["reasoning_aware_accuracy"] > before["reasoning_aware_accuracy"], (
        before["reasoning_aware_accuracy"],
        after["reasoning_aware_accuracy"],
    )
    # learning, not gaming: the trained model still writes its steps
    assert after["behaviour"]["mean_steps"] >= 0.8 * before["behaviour"]["mean_steps"]
    history = json.loads((run / "trainer_state.json").read_text())["log_history"]
    assert any("diagnostics/hacking_suspect" in h for h in history)
