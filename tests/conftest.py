"""Shared test fixtures: paths, offline W&B. The embedded models are cached where procrl caches
them ($PROCRL_CACHE, default ~/.cache/procrl), so the tiny reasoner built by scripts/setup.sh is
the one the tests use (its cache key follows its build settings)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
GSM8K_DIR = REPO_ROOT.parent / "shared" / "data" / "gsm8k"
TINY_RECIPE = REPO_ROOT / "recipes" / "gsm8k_tiny_smoke.yaml"

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def gsm8k_train() -> Path:
    path = GSM8K_DIR / "train.jsonl"
    if not path.is_file():
        pytest.skip(f"GSM8K data not found at {path}")
    return path


@pytest.fixture(scope="session")
def tiny_recipe() -> Path:
    return TINY_RECIPE


@pytest.fixture(autouse=True)
def _no_shared_wandb_service():
    """An in-process ``wandb.init`` exports WANDB_SERVICE, and every later subprocess would then
    attach to this process's wandb-core service (and collide on run ids): tear it down after
    each test so that runs stay independent."""
    yield
    import sys

    if "WANDB_SERVICE" in os.environ:
        wandb = sys.modules.get("wandb")
        if wandb is not None:
            wandb.teardown()
        os.environ.pop("WANDB_SERVICE", None)
