"""``python benchmarks/gpu_acceptance.py``: the GPU acceptance run, here at tiny shapes on CPU
(``--tiny``): every training phase runs procrl's trainers (process GRPO under DeepSpeed ZeRO-3 on
one rank, PPO) and the TRACE component, reports time, peak memory and the reward mix's share; a
phase whose dependency is missing is skipped saying so, and a failed phase makes the exit status 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.launch import REPO

SCRIPT = REPO / "benchmarks" / "gpu_acceptance.py"
sys.path.insert(0, str(REPO / "benchmarks"))


@pytest.mark.slow
def test_tiny_acceptance_run_on_cpu(tmp_path):
    out = tmp_path / "acceptance.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    command = [sys.executable, str(SCRIPT), "--tiny", "--phases", "versions,grpo_zero3,ppo,trace", "--json", str(out)]
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    phases = json.loads(out.read_text())["phases"]
    assert [p for p, r in phases.items() if r["status"] != "ok"] == []
    assert phases["versions"]["packages"]["trl"] and phases["versions"]["device"] == "cpu"
    assert phases["grpo_zero3"]["zero_stage"] == 3 and phases["grpo_zero3"]["trained"] == "LoRA r=16"
    for name in ("grpo_zero3", "ppo"):
        step = phases[name]
        assert 0 < step["reward_seconds"] < step["seconds"] and step["peak_rss_bytes"] > 0
        assert step["loss"] is not None
    assert phases["trace"]["completions"] == 32 and phases["trace"]["failures"] == {}
    assert "| grpo_zero3 | ok |" in result.stdout and "reward mix share" in result.stdout


def test_a_missing_dependency_skips_and_a_failure_exits_1(tmp_path, monkeypatch, capsys):
    import gpu_acceptance

    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setitem(gpu_acceptance.NEEDS, "versions", ["procrl_absent_dependency"])
    assert gpu_acceptance.main(["--tiny", "--phases", "versions", "--json", str(tmp_path / "a.json")]) == 0
    skipped = json.loads((tmp_path / "a.json").read_text())["phases"]["versions"]
    assert skipped["status"] == "skipped"
    assert skipped["skipped"] == "needs procrl_absent_dependency (not installed)"
    monkeypatch.setitem(gpu_acceptance.NEEDS, "versions", [])
    monkeypatch.setitem(gpu_acceptance.LIMITS["cpu"], "versions", 0.01)
    assert gpu_acceptance.main(["--tiny", "--phases", "versions"]) == 1
    assert "FAILED: versions" in capsys.readouterr().err
