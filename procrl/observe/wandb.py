"""Weights & Biases plumbing shared by training and ``procrl evaluate``: W&B's files under the run's
output dir, and a stable run id so that a resumed run continues the same W&B run."""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

from procrl.core.atomic import write_bytes

__all__ = ["WANDB_RUN_ID_FILE", "set_wandb_run_id", "wandb_dir"]

WANDB_RUN_ID_FILE = "wandb_run_id"


@contextlib.contextmanager
def wandb_dir(output_dir: str):
    """W&B writes its files (``wandb/run-*`` or ``wandb/offline-run-*``) under the run's
    ``output_dir`` (W&B's ``dir``, through ``WANDB_DIR``, which transformers' WandbCallback leaves
    to W&B), not the working directory, so that runs started from one place do not pile up. A
    ``WANDB_DIR`` set by the user wins. The variable is restored afterwards (in-process runs)."""
    if "WANDB_DIR" in os.environ:
        yield
        return
    directory = Path(output_dir).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    os.environ["WANDB_DIR"] = str(directory)
    try:
        yield
    finally:
        os.environ.pop("WANDB_DIR", None)


def set_wandb_run_id(output_dir: str, resume: bool, is_main: bool = True) -> str:
    """Give the W&B run a stable id stored in ``output_dir/wandb_run_id``; a resumed run reuses it
    (WANDB_RUN_ID + WANDB_RESUME=allow), so its curves continue in the same W&B run."""
    path = Path(output_dir) / WANDB_RUN_ID_FILE
    if resume and path.is_file():
        run_id = path.read_text().strip()
        os.environ["WANDB_RESUME"] = "allow"
    else:
        run_id = os.environ.get("WANDB_RUN_ID") or uuid.uuid4().hex[:12]
    os.environ["WANDB_RUN_ID"] = run_id
    if is_main:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(path, (run_id + "\n").encode())  # a kill never leaves half an id for --resume to read
    return run_id
