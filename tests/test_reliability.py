"""Nothing lost, nothing hangs (issue 13): checkpoints complete or absent, one run per output dir,
atomic and streaming ``procrl score``, bounded cost on hostile text, the openai judge's deadline
and retries, one-line errors instead of tracebacks, ``check`` refusing what ``train`` refuses,
redaction. The kill -9 resume runs (GRPO, PPO, ZeRO-2 x 2): tests/test_reliability_resume.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from procrl.config import ConfigError
from tests.launch_utils import REPO, TINY_RECIPE

ONE_STEP = ["--set", "trainer.max_steps=1", "--set", "trainer.save_steps=1", "--set", "trainer.max_completion_length=8"]


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    @property
    def errors(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith("procrl: error:")]


def cli(capsys, *argv) -> CliResult:
    """``procrl ARGV`` in this process: exit status, stdout, stderr."""
    from procrl.cli import main

    capsys.readouterr()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit_:  # argparse
        code = exit_.code
    captured = capsys.readouterr()
    return CliResult(code, captured.out, captured.err)


def assert_one_line_error(result: CliResult, *words: str) -> str:
    """Exit status 2, exactly one ``procrl: error:`` line naming ``words``, no traceback."""
    assert result.code == 2, (result.code, result.err[-2000:])
    assert len(result.errors) == 1 and "Traceback" not in result.err, result.err[-2000:]
    for word in words:
        assert word in result.errors[0], (word, result.errors[0])
    return result.errors[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(folder.rglob("*"))}


def fake_checkpoint(folder: Path, step: int) -> Path:
    """A complete-looking checkpoint: trainer state with its step, and weights."""
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    (path / "model.safetensors").write_bytes(b"weights")
    return path


# --- 1. resume takes the newest complete checkpoint; saves are atomic -----------------------------


def test_resume_takes_the_newest_complete_checkpoint_and_says_why_it_skipped_others(tmp_path):
    from procrl.checkpoints import find_resume_checkpoint
    from procrl.launch import resume_checkpoint

    fake_checkpoint(tmp_path, 2)
    (tmp_path / "checkpoint-4").mkdir()
    (tmp_path / "checkpoint-4" / "model.safetensors").write_bytes(b"w")  # killed before trainer_state.json
    truncated = fake_checkpoint(tmp_path, 5)
    (truncated / "trainer_state.json").write_text('{"global_step": 5, "log_hi')
    fake_checkpoint(tmp_path, 7)
    (tmp_path / "checkpoint-7" / "model.safetensors").unlink()  # state but no weights
    (tmp_path / "checkpoint-9").mkdir()  # empty
    assert resume_checkpoint(str(tmp_path)) == str(tmp_path / "checkpoint-2")
    point = find_resume_checkpoint(tmp_path)
    assert point.step == 2
    assert [(Path(p).name, reason.split(" (")[0]) for p, reason in point.skipped] == [
        ("checkpoint-9", "empty"), ("checkpoint-7", "no model weights"),
        ("checkpoint-5", "trainer_state.json is unreadable or truncated"), ("checkpoint-4", "no trainer_state.json"),
    ]
    assert point.describe()[0].startswith(f"resuming from {tmp_path / 'checkpoint-2'} (global step 2)")


def test_checkpoint_write_interrupted_leaves_no_checkpoint_under_its_name(tmp_path, monkeypatch):
    """transformers writes trainer_state.json last; a crash there must not leave a checkpoint-N
    that looks like one (the half-written one stays in .partial/, removed by the next start)."""
    from transformers.trainer_callback import TrainerState

    from procrl.recipe import load_recipe
    from procrl.run import train

    original = TrainerState.save_to_json

    def crash_in_checkpoint_2(self, json_path):
        if Path(json_path).parent.name == "checkpoint-2":
            Path(json_path).write_text('{"global_step": 2, "log_hist')
            raise OSError(28, "No space left on device")
        return original(self, json_path)

    monkeypatch.setattr(TrainerState, "save_to_json", crash_in_checkpoint_2)
    out = tmp_path / "run"
    recipe = load_recipe(TINY_RECIPE, ["trainer.max_steps=2", "trainer.save_steps=1", "trainer.max_completion_length=8"],
                         output_dir=str(out))
    with pytest.raises(OSError, match="No space left"):
        train(recipe)
    assert (out / "checkpoint-1" / "trainer_state.json").is_file()
    assert not (out / "checkpoint-2").exists()
    assert (out / ".partial" / "checkpoint-2").is_dir()
    assert not (out / ".procrl.lock").exists()  # released although the run failed


# --- 2. one run per output dir ---------------------------------------------------------------------


def test_output_dir_holding_a_run_is_refused_without_resume_or_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    fake_checkpoint(out, 4)
    (out / "trainer_state.json").write_text("{}")
    before = snapshot(out)
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP)
    line = assert_one_line_error(result, str(out), "checkpoint-4", "--resume", "--overwrite")
    assert "already holds a run" in line
    assert snapshot(out) == before


def test_overwrite_starts_afresh_and_removes_the_earlier_checkpoints(tmp_path, capsys):
    out = tmp_path / "run"
    fake_checkpoint(out, 7)
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, "--overwrite", *ONE_STEP)
    assert result.code == 0, result.err[-3000:]
    assert "--overwrite: removed checkpoint-7" in result.err
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1"]
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 1


@pytest.mark.parametrize("case", ["file", "parent_is_file"])
def test_output_dir_that_is_a_file_is_a_one_line_error(tmp_path, capsys, case):
    blocker = tmp_path / "occupied"
    blocker.write_text("not a directory\n")
    out = blocker if case == "file" else blocker / "run"
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP)
    assert_one_line_error(result, "output_dir", str(blocker))
    assert blocker.read_text() == "not a directory\n"


def write_lock(out: Path, pid: int) -> None:
    from procrl.output_dir import LOCK_FILE, _start_time

    out.mkdir(parents=True, exist_ok=True)
    (out / LOCK_FILE).write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "start_time": _start_time(pid),
                                             "since": "2026-01-01 00:00:00", "command": "procrl train"}))


def test_a_second_run_into_a_locked_output_dir_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        write_lock(out, other.pid)
        result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP)
        assert_one_line_error(result, "in use by another run", f"PID {other.pid}")
        assert sorted(p.name for p in out.iterdir()) == [".procrl.lock"]
    finally:
        other.kill()
        other.wait()


def test_a_stale_lock_is_taken_over(tmp_path, capsys):
    out = tmp_path / "run"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    write_lock(out, gone.pid)
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP)
    assert result.code == 0, result.err[-3000:]
    assert f"took over a stale lock in {out} (PID {gone.pid} is no longer running)" in result.err
    assert not (out / ".procrl.lock").exists() and (out / "checkpoint-1").is_dir()


def test_the_lock_is_exclusive_and_released(tmp_path):
    from procrl.output_dir import RunLock

    first = RunLock(str(tmp_path))
    assert first.acquire() is None
    record = json.loads((tmp_path / ".procrl.lock").read_text())
    assert record["pid"] == os.getpid() and record["host"] == socket.gethostname()
    with pytest.raises(ConfigError, match=f"in use by another run \\(PID {os.getpid()}"):
        RunLock(str(tmp_path)).acquire()
    first.release()
    assert not (tmp_path / ".procrl.lock").exists()
    with RunLock(str(tmp_path)):
        assert (tmp_path / ".procrl.lock").exists()
    assert not (tmp_path / ".procrl.lock").exists()
