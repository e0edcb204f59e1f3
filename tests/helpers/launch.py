"""Helpers for tests that start training the way users do (``accelerate launch``, ``procrl
train``, ``python RECIPE.yaml``) and read what the run recorded. Reusable by any test module:

    from tests.helpers.launch import REPO, TINY_RECIPE, read_run_info, run_command, accelerate

    result = run_command([*accelerate(), "launch", "--config_file", "launch/accelerate/zero2.yaml",
                          "--num_processes", "2", TINY_RECIPE, "--output-dir", out,
                          "--set", "trainer.max_steps=1"], tmp_path)
    assert result.returncode == 0, result.output
    assert read_run_info(out)["deepspeed_stage"] == 2
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TINY_RECIPE = str(REPO / "recipes" / "gsm8k_tiny_smoke.yaml")
BIN = Path(sys.executable).parent

# Variables a launcher sets; a test started under one must not pass them to the runs it starts.
_LAUNCHER_PREFIXES = (
    "ACCELERATE_",
    "PROCRL_LAUNCH_PLAN",
    "LOCAL_RANK",
    "RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_",
    "GROUP_RANK",
    "ROLE_",
)


def launch_env(tmp_path: Path | None = None, **extra: str) -> dict[str, str]:
    """Environment for a launched run: offline W&B, the shared tiny-model and DeepSpeed-op caches
    (CI sets PROCRL_CACHE / TORCH_EXTENSIONS_DIR; the defaults keep a second run fast), the venv's
    bin first on PATH, and no variables of an outer launcher."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_LAUNCHER_PREFIXES)}
    env["WANDB_MODE"] = "offline"
    env.setdefault("PROCRL_CACHE", str(REPO / ".cache" / "procrl"))
    env.setdefault("TORCH_EXTENSIONS_DIR", str(REPO / ".cache" / "torch_extensions"))
    if tmp_path is not None:
        env.setdefault("WANDB_DIR", str(tmp_path))
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """Both streams, tail first-class: what to show when an assertion fails."""
        return f"--- stdout ---\n{self.stdout[-6000:]}\n--- stderr ---\n{self.stderr[-6000:]}"


def run_command(
    command: list[str], tmp_path: Path | None = None, timeout: float = 600, cwd: Path = REPO, **env: str
) -> Result:
    """Run ``command`` from the repo root with :func:`launch_env`.

    A launch whose rendezvous port (accelerate's default 29500) is held by another process on this
    machine fails in torchrun before any rank starts, with nothing written: it is run once more after
    a few seconds. The launches of the multi-process test files run one after another (tests/conftest.py);
    this covers a port held by anything else on a shared machine."""

    def run() -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(c) for c in command],
            cwd=cwd,
            env=launch_env(tmp_path, **env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    done = run()
    if done.returncode != 0 and "EADDRINUSE" in done.stderr and "failed to listen" in done.stderr:
        time.sleep(5)
        done = run()
    return Result(done.returncode, done.stdout, done.stderr)


def free_port() -> int:
    """A TCP port free on this machine now, for a launch's ``--main_process_port``: launches on two
    pytest-xdist workers at once each get their own rendezvous port."""
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def accelerate() -> list[str]:
    """The ``accelerate`` command of this environment."""
    script = BIN / "accelerate"
    return [str(script)] if script.exists() else [sys.executable, "-m", "accelerate.commands.accelerate_cli"]


def procrl() -> list[str]:
    script = BIN / "procrl"
    return [str(script)] if script.exists() else [sys.executable, "-m", "procrl"]


def read_run_info(output_dir: str | Path) -> dict:
    return json.loads((Path(output_dir) / "run_info.json").read_text())


def read_trainer_state(output_dir: str | Path) -> dict:
    return json.loads((Path(output_dir) / "trainer_state.json").read_text())


def write_recipe(path: Path, base: str | Path = TINY_RECIPE, **sections) -> Path:
    """A copy of ``base`` with top-level sections replaced (e.g. ``launch={"num_processes": 2}``)."""
    import yaml

    raw = yaml.safe_load(Path(base).read_text())
    raw.update(sections)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path
