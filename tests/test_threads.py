"""procrl sets OpenMP's passive wait before torch loads (procrl/core/threads.py), leaves a value the
user set alone, and cannot change it once torch is loaded (OpenMP reads it once)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PRINT = "import os; print(os.environ.get('OMP_WAIT_POLICY'))"


def _policy(code: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    environment.update(env, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(
    ("code", "env", "expected"),
    [
        (f"import procrl; {PRINT}", {}, "PASSIVE"),
        (f"from procrl.launch.cli import main; {PRINT}", {}, "PASSIVE"),  # the procrl command's module
        (f"import procrl; {PRINT}", {"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE"),  # the user's setting wins
        (f"import torch, procrl; {PRINT}", {}, "None"),  # too late: OpenMP has read its environment
    ],
)
def test_wait_policy_is_set_before_torch_unless_the_user_set_one(code, env, expected):
    assert _policy(code, **env) == expected
