"""kill -9 in the middle of writing a checkpoint, then ``procrl train --resume``:
GRPO in one process, PPO in one process, GRPO under DeepSpeed ZeRO-2 with 2 ranks.

The crash is real: a ``sitecustomize`` on the run's PYTHONPATH (tests/reliability_crash) makes
the main process, when it writes ``trainer_state.json`` of ``checkpoint-4`` (the last file
transformers writes into a checkpoint), write half of it, record the metrics it has logged so far
and SIGKILL itself. Next to that, the test leaves the debris of other interrupted saves: an empty
``checkpoint-6`` and a ``checkpoint-5`` holding only weights. ``--resume`` must start from
``checkpoint-2`` (the newest complete one), name what it skipped and why, take over the dead
run's lock, and train steps 3-4 to the same metrics as the run that was killed had logged."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.launch import REPO, TINY_RECIPE, free_port, procrl, run_command

pytestmark = pytest.mark.slow

CRASH_HOOK = REPO / "tests" / "reliability_crash"
COMMON = [
    "--set",
    "trainer.max_steps=4",
    "--set",
    "trainer.save_steps=2",
    "--set",
    "trainer.save_total_limit=3",
    "--set",
    "trainer.max_completion_length=16",
]
PPO = [
    "--set",
    "trainer.algorithm=ppo",
    "--set",
    "trainer.credit=process",
    "--set",
    "trainer.beta=0.05",
    "--set",
    "trainer.num_iterations=2",
    "--set",
    "rewards.first_error={weight: 0.5}",
]


def zero2_launch() -> list[str]:
    return [
        "--config_file",
        str(REPO / "launch" / "accelerate" / "zero2.yaml"),
        "--num_processes",
        "2",
        "--main_process_port",
        str(free_port()),
    ]


# per-step metrics that measure time or the machine, not the training
_NOT_COMPARED = ("time", "seconds", "overhead_share", "per_second", "epoch")


def crash_env(reference: Path) -> dict[str, str]:
    pythonpath = os.pathsep.join(p for p in (str(CRASH_HOOK), str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {
        "PYTHONPATH": pythonpath,
        "PROCRL_TEST_KILL_AT": "checkpoint-4",
        "PROCRL_TEST_REFERENCE": str(reference),
        "OMP_NUM_THREADS": "1",
    }


def steps(history: list[dict]) -> dict[int, dict]:
    """Per-step training logs (the entries with a loss), by step."""
    return {entry["step"]: entry for entry in history if "loss" in entry}


def compared(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if isinstance(v, (int, float)) and not any(w in k for w in _NOT_COMPARED)}


def assert_same_metrics(resumed: dict, reference: dict, step: int) -> None:
    got, want = compared(resumed), compared(reference)
    assert set(got) == set(want), (step, sorted(set(got) ^ set(want)))
    for key, value in want.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(got[key]), (step, key)
        else:
            assert got[key] == pytest.approx(value, rel=1e-5, abs=1e-6), (step, key, got[key], value)


def kill_then_resume(tmp_path: Path, extra: list[str], launch: list[str] | None = None) -> None:
    out = tmp_path / "run"
    reference = tmp_path / "reference_log_history.json"
    command = [*procrl(), "train", TINY_RECIPE, "--output-dir", out, *COMMON, *extra, *(launch or [])]
    killed = run_command(command, tmp_path, **crash_env(reference))
    assert killed.returncode != 0, killed.output
    assert reference.is_file(), killed.output  # it really died while writing checkpoint-4
    assert (out / "checkpoint-2" / "trainer_state.json").is_file()
    assert not (out / "checkpoint-4").exists()  # saved atomically: the half-written one never got its name
    # debris of other interrupted saves, as left by tools that do not save atomically
    (out / "checkpoint-6").mkdir(exist_ok=True)
    (out / "checkpoint-5").mkdir(exist_ok=True)
    weights = next((out / "checkpoint-2").glob("*.safetensors"))
    shutil.copy(weights, out / "checkpoint-5" / weights.name)

    resumed = run_command([*command, "--resume"], tmp_path, OMP_NUM_THREADS="1")
    assert resumed.returncode == 0, resumed.output
    err = resumed.stderr
    assert f"procrl: resuming from {out / 'checkpoint-2'} (global step 2)" in err, err[-3000:]
    assert f"skipped {out / 'checkpoint-6'}: empty" in err
    assert f"skipped {out / 'checkpoint-5'}: no trainer_state.json" in err
    assert "stale lock" in err  # the killed run's lock, taken over
    assert (out / "incomplete-checkpoint-6").is_dir() and (out / "incomplete-checkpoint-5").is_dir()
    assert not (out / ".partial").exists() and not (out / ".procrl.lock").exists()
    state = json.loads((out / "checkpoint-4" / "trainer_state.json").read_text())
    assert state["global_step"] == 4
    final = steps(json.loads((out / "trainer_state.json").read_text())["log_history"])
    killed_run = steps(json.loads(reference.read_text()))
    assert sorted(final) == [1, 2, 3, 4] and sorted(killed_run) == [1, 2, 3, 4]
    for step in (3, 4):  # trained after the restart: the same as the run that was killed had logged
        assert_same_metrics(final[step], killed_run[step], step)


def test_grpo_resumes_from_the_newest_complete_checkpoint_after_kill_9(tmp_path):
    kill_then_resume(tmp_path, [])


def test_ppo_resumes_from_the_newest_complete_checkpoint_after_kill_9(tmp_path):
    kill_then_resume(tmp_path, PPO)


def test_zero2_two_ranks_resume_from_the_newest_complete_checkpoint_after_kill_9(tmp_path):
    kill_then_resume(
        tmp_path,
        ["--set", "trainer.per_device_train_batch_size=2", "--set", "trainer.num_generations=2"],
        launch=zero2_launch(),
    )
