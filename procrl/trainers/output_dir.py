"""The output directory of a training run: one run per directory, one process writing it.

* :func:`check_output_dir` refuses, before anything loads, an output dir that is a file (or
  under one), and one that already holds a run unless the run is resumed (``--resume``) or
  replaced (``--overwrite``): a second run would delete the first one's checkpoints through
  rotation and overwrite its model. Beyond that the folder follows procrl's one rule for the
  folders it writes (:mod:`procrl.core.folders`): new, empty, marked as procrl train's, or
  named by ``--overwrite`` (or ``--resume``); never a link out of it.
* :class:`RunLock` is a lock file (``.procrl.lock``: PID, host, process start time) created
  exclusively by the run's main process and removed when it exits. A second run into the same
  directory is refused while the first is alive; a lock whose process is gone (kill -9, a
  crash) is stale and taken over, with a note. A lock from another host cannot be checked:
  it is refused, naming the file to remove.
* What a run writes beside its checkpoints (``recipe.yaml``, ``run_info.json``:
  :func:`write_artifacts`) and what ``--resume`` reads of it (:func:`finished_run`,
  :func:`recipe_changes`).
"""

from __future__ import annotations

import atexit
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import procrl
from procrl.core import yaml_core
from procrl.core.config import ConfigError
from procrl.core.folders import check_folder, claim_folder, write_file
from procrl.core.paths import writable_dir_problem
from procrl.core.processes import holder_gone, holder_record
from procrl.core.redaction import redact, redact_argv
from procrl.trainers.checkpoints import (
    INCOMPLETE_PREFIX,
    STAGING_DIR,
    final_model_problem,
    list_checkpoints,
    newest_complete_checkpoint,
)

__all__ = [
    "LOCK_FILE",
    "RECIPE_FILE",
    "RunLock",
    "check_output_dir",
    "clear_previous_run",
    "finished_note",
    "finished_run",
    "recipe_changes",
    "run_contents",
    "run_info",
    "write_artifacts",
]

LOCK_FILE = ".procrl.lock"
TRAIN = "train"  # the command named in the folder marker (procrl/core/folders.py)
# Files a run leaves at the top of its output dir (besides checkpoint-N directories).
_RUN_FILES = (
    "trainer_state.json",
    "run_info.json",
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "adapter_model.safetensors",
)


def run_contents(output_dir: str | os.PathLike) -> list[str]:
    """Names in ``output_dir`` that show a run was there (empty when it holds none)."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    names = [path.name for _, path in sorted(list_checkpoints(folder))]
    names += sorted(p.name for p in folder.glob(INCOMPLETE_PREFIX + "checkpoint-*"))
    names += [name for name in _RUN_FILES if (folder / name).exists()]
    return names


def check_output_dir(output_dir: str, resume: bool = False, overwrite: bool = False) -> None:
    """One-line ConfigError when a run may not write into ``output_dir`` (read-only check)."""
    if resume and overwrite:
        raise ConfigError(
            "--resume and --overwrite exclude each other: continue the run in the output dir, or replace it"
        )
    problem = writable_dir_problem(Path(output_dir))
    if problem:
        raise ConfigError(f"output_dir: {problem}")
    found = run_contents(output_dir)
    if found and not (resume or overwrite):
        shown = ", ".join(found[:4]) + (f", ... ({len(found)} entries)" if len(found) > 4 else "")
        raise ConfigError(
            f"output_dir: {output_dir} already holds a run ({shown}); use --resume to continue it, or --overwrite to "
            "delete its checkpoints and start afresh"
        )
    # --resume names the folder as --overwrite does: the user says the run in it is theirs to continue
    check_folder(output_dir, TRAIN, overwrite=overwrite or resume, option="output_dir")


def clear_previous_run(output_dir: str) -> list[str]:
    """``--overwrite``: delete the earlier run's checkpoints (complete, incomplete, staged) and
    its trainer state and W&B run id; the new run overwrites the rest. Returns what was removed."""
    folder = Path(output_dir)
    removed = []
    targets = [path for _, path in list_checkpoints(folder)] + sorted(folder.glob(INCOMPLETE_PREFIX + "checkpoint-*"))
    linked = [path for path in targets if path.is_symlink()]
    if linked:  # checked before anything is deleted: a link is never followed out of the run, nor removed
        raise ConfigError(
            f"--overwrite: {linked[0]} is a symlink (-> {os.readlink(linked[0])}); procrl deletes the "
            f"checkpoints it wrote, never a link or what it points to: remove or move it yourself"
        )
    for path in targets:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
        removed.append(path.name)
    for name in ("trainer_state.json", "wandb_run_id"):
        if (folder / name).is_file():
            (folder / name).unlink()
            removed.append(name)
    return removed


def discard_staging(output_dir: str) -> list[str]:
    """Remove ``.partial/`` (what a killed run was saving); returns the checkpoints it held."""
    staging = Path(output_dir) / STAGING_DIR
    if not staging.exists():
        return []
    names = sorted(entry.name for entry in staging.iterdir()) if staging.is_dir() else []
    shutil.rmtree(staging) if staging.is_dir() else staging.unlink()
    return names


# --- the lock ----------------------------------------------------------------------------------


class RunLock:
    """``with RunLock(output_dir): ...`` or :meth:`acquire` / :meth:`release` (also at exit)."""

    def __init__(self, output_dir: str):
        self.path = Path(output_dir) / LOCK_FILE
        self.held = False

    def _record(self) -> dict:
        return {
            **holder_record(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S"),
            "command": " ".join(redact_argv(sys.argv[:6])),
        }

    def holder(self) -> dict | None:
        """The lock's record, or None when there is no lock file."""
        from procrl.core.jsonl import read_small_json

        try:  # bounded: whatever is under the lock's name now, procrl did not necessarily write it
            record = read_small_json(self.path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}

    def stale(self, record: dict) -> bool:
        """Whether the lock's process is gone (only decidable on the same host)."""
        return holder_gone(record)

    def check(self) -> None:
        """ConfigError when a live process holds the lock (read-only)."""
        record = self.holder()
        if record is None or self.stale(record):
            return
        raise ConfigError(self._busy_message(record))

    def _busy_message(self, record: dict) -> str:
        folder = self.path.parent
        if not record:
            return f"output_dir: {folder} is locked by an unreadable {self.path}; remove it if no run is writing there"
        where = f"PID {record.get('pid')} on {record.get('host')}, since {record.get('since')}"
        if record.get("host") != socket.gethostname():
            return (
                f"output_dir: {folder} is in use by a run on another host ({where}); wait for it, or remove "
                f"{self.path} if that run is gone"
            )
        return (
            f"output_dir: {folder} is in use by another run ({where}); "
            "wait for it to finish, or use another --output-dir"
        )

    def acquire(self) -> str | None:
        """Take the lock; returns a note when a stale lock was taken over. ConfigError when busy.
        The folder is marked as procrl train's first (procrl/core/folders.py)."""
        claim_folder(self.path.parent, TRAIN)
        note = None
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                record = self.holder()
                if record is None:
                    continue  # released in between
                if not self.stale(record):
                    raise ConfigError(self._busy_message(record)) from None
                note = f"took over a stale lock in {self.path.parent} (PID {record.get('pid')} is no longer running)"
                try:
                    self.path.unlink()
                except FileNotFoundError:
                    pass
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(self._record(), handle)
            self.held = True
            atexit.register(self.release)
            return note
        raise ConfigError(f"output_dir: could not take the lock {self.path}")

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        record = self.holder()
        if record and record.get("pid") == os.getpid():
            try:
                self.path.unlink()
            except OSError:  # gone, or the folder was made read-only: the next run takes a stale lock over
                pass

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


# --- the run in the output dir against the recipe (for --resume) ---------------------------------

RECIPE_FILE = "recipe.yaml"  # the run's recipe as it started, written by its main process
_MISSING = object()


def _differences(before: Any, after: Any, key: str = "") -> list[tuple[str, Any, Any]]:
    """``(dotted key, old, new)`` where two recipe trees differ; a section present on one side
    only is one difference."""
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for name in [*before, *(k for k in after if k not in before)]:
            found += _differences(
                before.get(name, _MISSING), after.get(name, _MISSING), f"{key}.{name}" if key else str(name)
            )
        return found
    return [] if before == after else [(key, before, after)]


def recipe_changes(recipe) -> list[str]:
    """``KEY: OLD -> NEW`` for every key whose value differs between the run's ``recipe.yaml``
    and ``recipe`` (both redacted; ``output_dir`` left out); empty when there is no recipe.yaml."""

    saved = Path(recipe.output_dir) / RECIPE_FILE
    try:
        before = yaml_core.load(saved.read_text(encoding="utf-8")) or {}
    except Exception:  # noqa: BLE001 - no or an unreadable old recipe: nothing to compare
        return []
    after = yaml_core.load(yaml_core.dump(redact(recipe.resolved()))) or {}  # as written: the same types

    def shown(value: Any) -> str:
        text = "(not set)" if value is _MISSING else json.dumps(value, default=str)
        return text if len(text) <= 160 else text[:157] + "..."

    return [
        f"{key}: {shown(old)} -> {shown(new)}" for key, old, new in _differences(before, after) if key != "output_dir"
    ]


def finished_run(recipe) -> tuple[str, int, int] | None:
    """For ``--resume``: ``(what, step, max_steps)`` when the run in the output dir is finished
    (its complete final model, or else its newest complete checkpoint, reached the recipe's
    ``max_steps``: resuming would train past it), or None when there is training left."""

    folder = Path(recipe.output_dir)
    done = []
    if final_model_problem(folder) is None and (folder / "trainer_state.json").is_file():
        done.append(("its final model", folder / "trainer_state.json"))
    newest = newest_complete_checkpoint(folder)
    if newest:
        done.append((Path(newest).name, Path(newest) / "trainer_state.json"))
    for what, state_file in done:
        try:
            state = json.loads(state_file.read_text(encoding="utf-8"))
            step = int(state["global_step"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        target = recipe.trainer_args.get("max_steps", -1)
        if not isinstance(target, int) or target <= 0:
            target = int(state.get("max_steps") or 0)  # trained by epochs: the total the run had planned
        if target > 0 and step >= target:
            return what, step, target
    return None


def finished_note(recipe) -> str | None:
    """The line ``--resume`` prints instead of training when the run is finished and its final
    model is complete (None otherwise)."""

    finished = finished_run(recipe)
    if finished is None or finished[0] != "its final model" or final_model_problem(recipe.output_dir) is not None:
        return None
    _, step, target = finished
    return (
        f"--resume: the run in {recipe.output_dir} is finished (global step {step} of max_steps {target}, final model "
        "saved); nothing to train. Raise trainer.max_steps to train further"
    )


# --- what a run writes beside its checkpoints ------------------------------------------------------


def _git_commit() -> str | None:
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "HEAD"],
                capture_output=True,
                text=True,
                timeout=5,
                check=True,
                cwd=Path(__file__).resolve().parent,
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        return None


def run_info(trainer, recipe, launch: dict | None = None) -> dict[str, Any]:
    """``run_info.json``: versions, the launch (world size, distributed type, DeepSpeed stage, device), the seed,
    the algorithm and credit, the git commit and the recipe's path."""
    import torch
    import transformers
    import trl

    state = trainer.accelerator.state
    plugin = getattr(state, "deepspeed_plugin", None)
    return {
        "procrl_version": procrl.__version__,
        "trl_version": trl.__version__,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "world_size": trainer.accelerator.num_processes,
        "distributed_type": str(state.distributed_type).split(".")[-1],
        "deepspeed_stage": getattr(plugin, "zero_stage", None) if plugin is not None else None,
        "device": str(trainer.accelerator.device),
        "seed": trainer.args.seed,
        "algorithm": recipe.trainer.algorithm,
        "credit": recipe.trainer.credit,
        "git_commit": _git_commit(),
        "recipe_path": recipe.path,
        # what the launcher gave this run, against the recipe's launch section (procrl/launch/launched.py)
        "launch": launch,
    }


def write_artifacts(trainer, recipe, resumed_at: int | None = None, launch: dict | None = None) -> None:
    """``recipe.yaml`` (redacted) and ``run_info.json``. A resumed run keeps the run's
    ``recipe.yaml``; a recipe that differs from it is saved beside it as
    ``recipe-resumed-at-step-N.yaml`` (:func:`recipe_changes` says how)."""

    if not trainer.accelerator.is_main_process:
        return

    output = Path(recipe.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    text = yaml_core.dump(redact(recipe.resolved()))
    original = output / RECIPE_FILE
    if resumed_at is None or not original.is_file():
        write_file(output, RECIPE_FILE, text)
    elif recipe_changes(recipe):
        write_file(output, f"recipe-resumed-at-step-{resumed_at}.yaml", text)
    write_file(output, "run_info.json", json.dumps(run_info(trainer, recipe, launch), indent=2) + "\n")
