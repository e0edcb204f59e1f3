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
    work, results_dir = tmp_path / "work", tmp_path / "results"
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "process_vs_outcome.py"),
            "--quick",
            "--steps",
            "1",
            "--arms",
            *ARMS,
            "--work-dir",
            str(work),
            "--results-dir",
            str(results_dir),
            "--name",
            "pvo",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    written = sorted(p.name for p in results_dir.iterdir())
    assert len(written) == 3 and all(name.startswith("pvo-") for name in written)  # named after the commit
    stem = results_dir / written[0].rsplit(".", 1)[0]
    results = json.loads(stem.with_suffix(".json").read_text())
    assert stem.name == f"pvo-{results['settings']['commit']}"
    assert list(results["summary"]) == ARMS and results["settings"]["quick"] is True
    # reasoning-aware accuracy by the reference judge (outside arms 1-5's trained mixes) and by the arithmetic one
    assert results["settings"]["eval_judge"] == "reference"
    for arm in ARMS:
        run = results["arms"][arm]["0"]
        assert 0.0 <= run["eval"]["answer_accuracy"] <= 1.0 and run["eval"]["mean_steps"] > 0
        assert run["eval"]["evaluation_judge"] == "eval_judge"
        per_problem = run["eval"]["per_problem"]
        assert len(per_problem["right"]) == results["settings"]["eval_limit"] == 20
        assert sum(per_problem["right"]) / 20 == pytest.approx(run["eval"]["answer_accuracy"])
        for key, sound in (
            ("reasoning_aware_accuracy", "sound"),
            ("reasoning_aware_accuracy_arithmetic", "sound_arithmetic"),
        ):
            assert sum(per_problem[sound]) / 20 == pytest.approx(run["eval"][key])
            assert all(s <= r for s, r in zip(per_problem[sound], per_problem["right"]))
        assert run["curve"] and "rewards/accuracy/mean" in run["curve"][0]
        assert "Traceback" not in (work / arm / "seed0" / "train.log").read_text()
        assert isinstance(results["summary"][arm]["hacking_suspect"], list)
    assert "rewards.first_error.backend=reference" in results["settings"]["arms"]["process_ref"]
    # each arm against accuracy-only GRPO, paired over the same problems
    assert set(results["vs_baseline"]) == set(ARMS) - {"outcome_acc"}
    for arm, comparison in results["vs_baseline"].items():
        base = results["arms"]["outcome_acc"]["0"]["eval"]
        mine = results["arms"][arm]["0"]["eval"]
        assert comparison["answer_accuracy"]["difference"] == pytest.approx(
            mine["answer_accuracy"] - base["answer_accuracy"]
        )
        assert comparison["answer_accuracy"]["low"] <= comparison["answer_accuracy"]["difference"] + 1e-12
    # every arm trained with the same steps and completions per step
    assert results["settings"]["steps"] == 1 and results["settings"]["completions_per_step"] == 64
    table = stem.with_suffix(".md").read_text()
    # rows of the two tables (a separator line starts with "|-"): header, start and arms; header and arms but one
    assert table.count("\n| ") == (2 + len(ARMS)) + (1 + len(ARMS) - 1)
    png = stem.with_suffix(".png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


def test_paired_bootstrap_by_hand():
    sys.path.insert(0, str(REPO / "benchmarks"))
    from process_vs_outcome import paired_bootstrap

    # two seeds of four problems: differences 1, 0, 0, 0 and 1, 1, 0, 0 -> mean 3/8
    result = paired_bootstrap([[1, 1, 0, 0], [1, 1, 1, 0]], [[0, 1, 0, 0], [0, 0, 1, 0]], resamples=500)
    assert result["difference"] == 3 / 8
    assert 0.0 <= result["low"] < 3 / 8 < result["high"] <= 1.0
    same = paired_bootstrap([[1, 0, 1]], [[1, 0, 1]], resamples=50)
    assert same == {"difference": 0.0, "low": 0.0, "high": 0.0}
