"""Collectives that cannot hang: two ranks (gloo on CPU) score ReCEval informativeness on a
reference model sharded by DeepSpeed ZeRO-3, whose every forward pass is an all-gather. A failure
on one rank (in a forward pass, or before the scorer), a rank whose batch is over the caps, and a
rank without rows all end with both ranks still in step: the failure is counted on both (the
decision is taken together), and the next batch scores normally. A hang fails on the timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.launch import REPO, free_port

pytestmark = pytest.mark.slow


def test_two_ranks_stay_in_step_when_one_fails(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "TORCH_EXTENSIONS_DIR": os.environ.get("TORCH_EXTENSIONS_DIR", str(REPO / ".cache" / "torch_extensions")),
    }
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(REPO / "launch" / "accelerate" / "zero3.yaml"),
        "--num_processes",
        "2",
        "--main_process_port",
        str(free_port()),
        str(REPO / "tests" / "helpers" / "collective_scoring.py"),
        str(tmp_path),
    ]
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-4000:])
    ranks = [json.loads((tmp_path / f"rank{k}.json").read_text()) for k in range(2)]
    for rank in ranks:
        assert rank["ok"]["failures"] == {} and all(s is not None for s in rank["ok"]["scores"])
        # a forward pass failed on rank 1 only: both give up the batch, both count it
        assert rank["forward_fails"]["failures"] == {"exception": 2}
        assert rank["fails_before"]["failures"] == {"exception": 2}
        assert all(s is not None for s in rank["after"]["scores"]) and rank["after"]["failures"] == {}
        assert rank["stats"]["collective_failures"] == 2
    zero, one = ranks
    # rank 1 over the caps or without rows: rank 0 scores normally, rank 1 counts its too_long
    assert zero["over_caps"]["failures"] == {} and all(s is not None for s in zero["over_caps"]["scores"])
    assert one["over_caps"]["failures"] == {"too_long": 1}
    assert zero["empty"]["failures"] == {} and one["empty"] == {"failures": {}, "scores": []}
    assert one["stats"]["dummy_passes"] > 0  # it kept rank 0's all-gathers company
    assert zero["ok"]["scores"] == one["ok"]["scores"]  # the same chains, the same sharded model
