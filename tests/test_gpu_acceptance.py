"""``python benchmarks/gpu_acceptance.py``: the GPU acceptance run, here at tiny shapes on CPU
(``--tiny``): every training phase runs procrl's trainers (process GRPO under DeepSpeed ZeRO-3 on
one rank, PPO) and the TRACE component, reports time, peak memory and the reward mix's share; a
phase whose dependency is missing is skipped saying so, and a failed phase makes the exit status 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


def _watch(peak: dict, error: str | None = None):
    import gpu_acceptance

    watch = gpu_acceptance.GpuProcessWatch()
    watch.peak, watch.error = dict(peak), error
    return watch


def test_the_launcher_check_fails_a_launcher_that_holds_gpu_memory():
    from gpu_acceptance import GIB, launcher_verdict

    clean = {"pid": 10, "torch_imported": True, "cuda_initialized": False}
    # on CPU there is nothing to hold
    assert launcher_verdict(False, clean, 10, 11, None)["verdict"] == "not applicable (no CUDA device)"
    # NVML sees the rank and not the launcher: the attribution works and the launcher is clean
    ok = launcher_verdict(True, clean, 10, 11, _watch({11: 20 * GIB}))
    assert ok["verdict"].startswith("ok: NVML saw the rank (pid 11) hold 20.0 GiB")
    assert ok["nvml_bytes_by_pid"] == {"11": 20 * GIB}
    # a container hides the pids: the launcher's own CUDA state is the whole check
    hidden = launcher_verdict(True, clean, 10, 11, _watch({4242: GIB}))
    assert hidden["verdict"].startswith("ok: the launcher never initialised CUDA")
    # the launcher initialised CUDA: a context on the GPU for the whole run
    dirty = {"pid": 10, "torch_imported": True, "cuda_initialized": True, "reserved_bytes": GIB // 2}
    failed = launcher_verdict(True, dirty, 10, 11, _watch({11: GIB}))
    assert failed["verdict"] == (
        "failed: the accelerate launch process initialised CUDA (0.50 GiB reserved by torch, plus its context)"
    )
    # NVML attributes memory to the launcher's pid, whatever torch says
    seen = launcher_verdict(True, clean, 10, 11, _watch({10: GIB // 4, 11: GIB}))
    assert seen["verdict"] == "failed: NVML attributes 0.25 GiB to the launcher (pid 10)"
    # no report at all (the launcher died before its atexit ran) is not a pass
    assert launcher_verdict(True, None, 10, 11, _watch({}))["verdict"].startswith("failed: the launcher wrote no")


def test_the_bundles_declared_requirements_are_checked_against_what_is_installed(monkeypatch):
    from importlib import metadata

    import gpu_acceptance

    declared = {
        "datasets": [
            "pyarrow>=21.0.0",
            "fsspec[http]<=2026.4.0,>=2023.1.0",
            "absent-dist>=1",
            'pytest; extra == "dev"',
        ],
        "trl": ["accelerate>=1.10.1", 'harbor>=0.13; python_version >= "9.0"'],
    }
    installed = {"pyarrow": "19.0.1", "fsspec": "2026.9.0", "accelerate": "1.15.0", "pytest": "1.0"}

    def version(name):
        if name not in installed:
            raise metadata.PackageNotFoundError(name)
        return installed[name]

    def requires(name):
        if name not in declared:
            raise metadata.PackageNotFoundError(name)
        return declared[name]

    monkeypatch.setattr(metadata, "version", version)
    monkeypatch.setattr(metadata, "requires", requires)
    assert gpu_acceptance.unmet_requirements(["datasets", "trl", "not-installed"]) == [
        "datasets needs pyarrow>=21.0.0: 19.0.1 installed",
        "datasets needs fsspec<=2026.4.0,>=2023.1.0: 2026.9.0 installed",
        "datasets needs absent-dist>=1: not installed",
    ]


def test_a_deadline_that_is_spent_fails_the_phases_it_cannot_start_and_keeps_the_json(tmp_path, capsys):
    import gpu_acceptance

    out = tmp_path / "a.json"
    # 1 s cannot hold a phase (MIN_PHASE_SECONDS): versions is not started, and says why
    assert gpu_acceptance.main(["--tiny", "--phases", "versions", "--deadline", "1", "--json", str(out)]) == 1
    versions = json.loads(out.read_text())["phases"]["versions"]
    assert versions["status"] == "failed" and versions["error"].startswith("not started: ")
    assert versions["error"].endswith(" s left of --deadline 1 s")
    assert "FAILED: versions" in capsys.readouterr().err
    for bad in ("0", "-5", "nan", "inf"):
        with pytest.raises(SystemExit):
            gpu_acceptance.main(["--tiny", "--deadline", bad])


def test_require_all_turns_a_skipped_phase_into_a_failure(tmp_path, monkeypatch, capsys):
    import gpu_acceptance

    monkeypatch.setitem(gpu_acceptance.NEEDS, "versions", ["procrl_absent_dependency"])
    assert gpu_acceptance.main(["--tiny", "--phases", "versions"]) == 0
    assert gpu_acceptance.main(["--tiny", "--phases", "versions", "--require-all"]) == 1
    assert "FAILED: versions" in capsys.readouterr().err


def _wait_for_pid(pid_file) -> int:
    import time

    for _ in range(400):
        if pid_file.is_file() and pid_file.read_text().strip():
            return int(pid_file.read_text())
        time.sleep(0.05)
    raise AssertionError("the stand-in never started its rank")


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in state  # a zombie holds no memory


def _gone(pid: int) -> bool:
    import time

    for _ in range(100):
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_phase_over_its_limit_is_ended_with_every_process_it_started(tmp_path):
    from gpu_acceptance import PhaseProcesses

    pid_file = tmp_path / "rank.pid"
    # a launcher stand-in: its "rank" runs in a session of its own (as torchrun starts ranks), out
    # of reach of the launcher's process group, and the launcher waits for it
    launcher = subprocess.Popen(
        ["bash", "-c", f"setsid sleep 300 & echo $! > {pid_file}; wait"], start_new_session=True
    )
    processes = PhaseProcesses(launcher, interval=0.05)
    rank = _wait_for_pid(pid_file)
    assert rank in processes.stop()
    assert launcher.poll() is not None and _gone(rank)


def test_a_rank_left_behind_by_a_finished_launcher_is_ended_too(tmp_path):
    from gpu_acceptance import PhaseProcesses

    pid_file = tmp_path / "rank.pid"
    # the launcher stand-in returns after a moment and leaves its "rank" running
    launcher = subprocess.Popen(
        ["bash", "-c", f"setsid sleep 300 & echo $! > {pid_file}; sleep 1"], start_new_session=True
    )
    processes = PhaseProcesses(launcher, interval=0.05)
    rank = _wait_for_pid(pid_file)
    launcher.wait(timeout=30)
    assert _alive(rank)
    assert processes.stop() == [rank]
    assert _gone(rank)
