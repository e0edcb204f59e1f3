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
# With several workers (`pytest -n 2`, the README's test command), each worker and the processes
# it starts use one thread: two workers on two cores, not four spinning threads (PyTorch's OpenMP
# threads busy-wait for each other on an oversubscribed CPU: a training step measured 4x slower).
if os.environ.get("PYTEST_XDIST_WORKER"):
    import signal

    # an xdist worker ignores SIGINT, and a process started with SIGINT ignored never gets Python's
    # KeyboardInterrupt: restore the default so the Ctrl-C tests' subprocesses see it
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Test files whose launches use accelerate's default rendezvous port, as a user's would: under
# pytest-xdist they run on one worker, one after another (`--dist loadgroup`), so that two launches
# never race for that port. The launches of other files name a free port
# (tests/helpers/launch.py::free_port) and run on either worker.
MULTI_PROCESS_FILES = {
    "test_custom_rewards.py",
    "test_launch.py",
    "test_launch_gpu_node.py",
    "test_launch_slow.py",
    "test_prelaunch.py",
    "test_receval_cli.py",
}


# The longest single tests (minutes each on 2 cores). Under `--dist loadgroup` pytest-xdist hands
# out the multi-process group first (the largest unit) and then the other tests in collection
# order: a multi-minute test collected last starts when the other worker has nothing left and
# runs alone at the end. Collected first, the long tests overlap the group and the short ones
# fill the tail (longest first: the classic way to balance a fixed number of workers).
LONGEST_FILES = ["test_tiny_demo.py", "test_process_vs_outcome.py", "test_smollm2.py", "test_scale_benchmarks.py"]


# tryfirst: pytest-xdist's own hook turns the xdist_group mark into the test id's "@group" suffix,
# which is what --dist loadgroup schedules by; the mark must be on the items before that hook runs.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in MULTI_PROCESS_FILES:
            item.add_marker(pytest.mark.xdist_group("multi_process"))

    # a file moves as a whole (its module fixtures are set up once per worker, not once per piece)
    slow_files = {item.path.name for item in items if item.get_closest_marker("slow")}

    def order(item) -> tuple[int, int]:
        name = item.path.name
        if name in LONGEST_FILES:
            return 0, LONGEST_FILES.index(name)
        return (1 if name in slow_files else 2), 0

    items.sort(key=order)  # stable: within a rank, the collection order


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
