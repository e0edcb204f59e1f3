"""What a run leaves and prints: W&B files under the run's output_dir (not the working
directory), TRL's gradient_checkpointing deprecation warnings filtered at procrl's entry points
(only those), and PPO's step_time, so that diagnostics/time_share/* and overhead_share exist
under ``algorithm: ppo`` as under GRPO."""

from __future__ import annotations

import warnings

from procrl.core.known_warnings import filter_known_warnings
from procrl.recipe import load_recipe
from tests.helpers.launch import REPO, TINY_RECIPE, procrl, read_trainer_state, run_command

RENAMED = [
    "gradient_checkpointing",
    "gradient_checkpointing_enable",
    "gradient_checkpointing_disable",
    "is_gradient_checkpointing",
]


def test_only_the_gradient_checkpointing_rename_warnings_are_filtered():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        filter_known_warnings()
        for old in RENAMED:
            new = old.replace("gradient_checkpointing", "activation_checkpointing")
            warnings.warn(
                f"`{old}` is deprecated and will be removed in v6. Use `{new}` instead.", FutureWarning, stacklevel=1
            )
        warnings.warn("`use_cache` is deprecated and will be removed in v6.", FutureWarning, stacklevel=1)
        warnings.warn(
            "`gradient_checkpointing_enable` is deprecated and will be removed in v6.", UserWarning, stacklevel=1
        )
    assert [str(w.message) for w in caught] == [
        "`use_cache` is deprecated and will be removed in v6.",
        "`gradient_checkpointing_enable` is deprecated and will be removed in v6.",
    ]


def test_wandb_files_go_under_output_dir_and_no_gradient_checkpointing_warnings(tmp_path):
    """`procrl train` started from one directory, W&B offline, no WANDB_DIR: the W&B run lands in
    OUTPUT_DIR/wandb/, nothing in the working directory; with gradient checkpointing on (TRL
    toggles it around every generation) none of the rename warnings is printed."""
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "run"
    result = run_command(
        [
            *procrl(),
            "train",
            TINY_RECIPE,
            "--output-dir",
            out,
            "--set",
            "trainer.max_steps=2",
            "--set",
            "trainer.report_to=wandb",
            "--set",
            "trainer.gradient_checkpointing=true",
        ],
        cwd=work,
    )  # no tmp_path: launch_env sets no WANDB_DIR
    assert result.returncode == 0, result.output
    assert list((out / "wandb").glob("offline-run-*")), sorted(p.name for p in out.iterdir())
    assert not (work / "wandb").exists()
    for old in RENAMED:
        assert f"`{old}` is deprecated" not in result.stderr, result.output


def test_wandb_dir_set_by_the_user_wins(tmp_path, monkeypatch):
    import os

    from procrl.observe.wandb import wandb_dir

    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "mine"))
    with wandb_dir(str(tmp_path / "run")):
        assert os.environ["WANDB_DIR"] == str(tmp_path / "mine")
    monkeypatch.delenv("WANDB_DIR")
    with wandb_dir(str(tmp_path / "run")):
        assert os.environ["WANDB_DIR"] == str((tmp_path / "run").resolve())
    assert "WANDB_DIR" not in os.environ  # restored: the next in-process run gets its own


def test_ppo_logs_step_time_and_time_shares(tmp_path):
    from procrl.launch.run import train

    recipe = load_recipe(
        REPO / "recipes" / "gsm8k_tiny_smoke.yaml",
        [
            "trainer.algorithm=ppo",
            "trainer.max_steps=2",
            "trainer.max_completion_length=12",
            "trainer.save_steps=10",
            "trainer.gradient_accumulation_steps=2",
            "trainer.per_device_train_batch_size=4",
        ],
        output_dir=str(tmp_path / "ppo"),
    )
    train(recipe)
    logged = [entry for entry in read_trainer_state(tmp_path / "ppo")["log_history"] if "loss" in entry]
    assert len(logged) == 2
    for entry in logged:
        assert entry["step_time"] > 0
        for name in ("accuracy", "format", "trace"):
            assert 0 < entry[f"diagnostics/time_share/{name}"] < 1, entry
        assert 0 <= entry["diagnostics/overhead_share"] < 1
