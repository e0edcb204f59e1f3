"""End-to-end GRPO training of the embedded tiny model on CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from safetensors.torch import load_file

from procrl.launch import cli
from procrl.models.loading import ensure_tiny_model
from tests.helpers.wandb_records import config as wandb_config
from tests.helpers.wandb_records import history, run_file


def log_history(output_dir: Path) -> list[dict]:
    return json.loads((output_dir / "trainer_state.json").read_text())["log_history"]


def test_train_tiny_recipe_three_steps(tmp_path, tiny_recipe):
    output_dir = tmp_path / "run"
    code = cli.main(
        [
            "train",
            str(tiny_recipe),
            "--output-dir",
            str(output_dir),
            "--set",
            "trainer.max_steps=3",
            "--set",
            "trainer.save_steps=3",
        ]
    )
    assert code == 0
    history = log_history(output_dir)
    steps = [entry for entry in history if "rewards/accuracy/mean" in entry]
    assert len(steps) == 3
    assert all("rewards/format/mean" in entry for entry in steps)
    assert (output_dir / "checkpoint-3").is_dir()

    initial = load_file(ensure_tiny_model() / "model.safetensors")
    trained = load_file(output_dir / "model.safetensors")
    changed = [name for name in initial if not (initial[name] == trained[name]).all()]
    assert changed, "no weight changed after 3 GRPO steps"

    resolved = yaml.safe_load((output_dir / "recipe.yaml").read_text())
    assert resolved["recipe"] == "procrl/v1" and resolved["trainer"]["max_steps"] == 3
    info = json.loads((output_dir / "run_info.json").read_text())
    assert info["world_size"] == 1 and info["deepspeed_stage"] is None and info["seed"] == 0
    assert {"procrl_version", "trl_version", "torch_version", "distributed_type", "git_commit"} <= set(info)


def test_lora_training_saves_an_adapter(tmp_path, tiny_recipe):
    output_dir = tmp_path / "lora"
    code = cli.main(
        [
            "train",
            str(tiny_recipe),
            "--output-dir",
            str(output_dir),
            "--set",
            "trainer.max_steps=2",
            "--set",
            "model.lora={r: 4, lora_alpha: 8, target_modules: [q_proj, v_proj]}",
        ]
    )
    assert code == 0
    assert (output_dir / "adapter_config.json").is_file()
    assert any("rewards/accuracy/mean" in entry for entry in log_history(output_dir))


def test_wandb_offline_gets_resolved_recipe_without_secrets(tmp_path, tiny_recipe):
    """W&B config holds the resolved recipe; environment secrets never reach it."""
    env = dict(
        os.environ,
        WANDB_MODE="offline",
        WANDB_DIR=str(tmp_path),
        WANDB_API_KEY="wandb-secret-key-123",
        OPENAI_API_KEY="sk-very-secret-456",
    )
    recipe = yaml.safe_load(tiny_recipe.read_text())
    recipe["rewards"]["words"] = {
        "type": "tests.helpers.rewards:count_words",
        "weight": 0.0,
        "api_token": "inline-secret-789",
    }
    recipe_path = tmp_path / "recipe.yaml"
    recipe_path.write_text(yaml.safe_dump(recipe))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "procrl",
            "train",
            str(recipe_path),
            "--output-dir",
            str(tmp_path / "run"),
            "--set",
            "trainer.max_steps=1",
            "--set",
            "trainer.report_to=wandb",
            "--set",
            "logging.wandb_project=procrl-test",
        ],
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run = run_file(tmp_path / "wandb")
    procrl_config = wandb_config(run)["procrl"]
    assert procrl_config["recipe"] == "procrl/v1"
    assert procrl_config["rewards"]["accuracy"]["weight"] == 1.0
    assert procrl_config["rewards"]["words"]["api_token"] == "<redacted>"
    assert any("rewards/accuracy/mean" in row or "train/rewards/accuracy/mean" in row for row in history(run))
    everything = run.read_bytes()
    for secret in (b"wandb-secret-key-123", b"sk-very-secret-456", b"inline-secret-789"):
        assert secret not in everything
    saved = (tmp_path / "run" / "recipe.yaml").read_text()
    assert "inline-secret-789" not in saved


def test_train_reads_its_recipe_once(tmp_path, capsys, monkeypatch):
    """One training process reads its recipe file once: the launch decision, the pre-launch checks,
    the audit gate and the run itself share the one loaded recipe."""
    import procrl.recipe.load as load
    from tests.helpers.cli import ONE_STEP
    from tests.helpers.cli import cli as run_cli
    from tests.helpers.launch import TINY_RECIPE

    reads = []
    real = load.read_recipe_file
    monkeypatch.setattr(load, "read_recipe_file", lambda path: reads.append(str(path)) or real(path))
    result = run_cli(capsys, "train", TINY_RECIPE, *ONE_STEP, "--output-dir", tmp_path / "run")
    assert result.code == 0, result.err[-2000:]
    assert len(reads) == 1, reads
