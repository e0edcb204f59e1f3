"""Hostile inputs that must be one line (``procrl: error: ...``, exit 2), never a traceback:
validate's inputs, evaluate's disk and sample count, launch and trainer settings, the cache
folder, training text, and what --overwrite meets in a run's folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from tests.helpers.cli import ONE_STEP, assert_one_line_error, cli, fake_checkpoint, snapshot
from tests.helpers.launch import REPO, TINY_RECIPE

MR_GSM8K = REPO / "tests" / "data" / "validate" / "mr_gsm8k_sample.json"
NO_TRACE = ["--set", "rewards.trace=false"]


def mr_gsm8k_records(n: int) -> list[dict]:
    return json.loads(MR_GSM8K.read_text())[:n]


def test_validate_refuses_a_steps_repr_too_deep_to_parse_in_one_line(tmp_path, capsys):
    """A 100,000-character steps string of unary minus signs: ast.literal_eval raised MemoryError."""
    record = dict(mr_gsm8k_records(1)[0], model_output_steps="-" * 99_999 + "1")
    data = tmp_path / "long.json"
    data.write_text(json.dumps([record]))
    result = cli(capsys, "validate", "--recipe", TINY_RECIPE, *NO_TRACE, "--data", data, "--output-dir", tmp_path / "v")
    assert_one_line_error(result, f"{data}:1", "'model_output_steps' must be a list of strings")
    assert not (tmp_path / "v").exists()


def test_validate_reads_its_data_from_a_pipe(tmp_path):
    lines = "".join(json.dumps(record) + "\n" for record in mr_gsm8k_records(3))
    out = tmp_path / "v"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "procrl",
            "validate",
            "--recipe",
            str(TINY_RECIPE),
            *NO_TRACE,
            "--data",
            "/dev/stdin",
            "--output-dir",
            str(out),
            "--quiet",
        ],
        input=lines,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert len((out / "rows.jsonl").read_text().splitlines()) == 3


@pytest.fixture
def full_disk(tmp_path):
    """A 16 KiB tmpfs: the report's first PNG does not fit (needs root; skipped otherwise)."""
    mount = tmp_path / "full"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a small tmpfs here")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_evaluate_on_a_full_disk_is_a_one_line_error(full_disk, capsys):
    from procrl.evaluation.evaluate import evaluate
    from procrl.recipe import load_recipe

    recipe = load_recipe(TINY_RECIPE, ["rewards.trace=false"])
    with pytest.raises(ConfigError, match=r"--output-dir: writing the report to .* failed \(No space left on device\)"):
        evaluate(recipe, limit=2, output_dir=full_disk / "report", completions=["#### 1", "#### 2"])


def test_evaluate_bounds_the_number_of_samples_before_loading(tmp_path, capsys):
    result = cli(
        capsys,
        "evaluate",
        "--recipe",
        TINY_RECIPE,
        "--num-samples",
        "1000000",
        "--temperature",
        "0.7",
        "--output-dir",
        tmp_path / "e",
    )
    assert_one_line_error(result, "--num-samples", "[1, 1024]", "1000000")
    assert not (tmp_path / "e").exists()


def test_a_launch_config_file_that_is_not_an_accelerate_config_is_one_line(tmp_path, capsys):
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    out = tmp_path / "run"
    for config, what in (("/etc/passwd", "holds a str"), (str(listed), "holds a list")):
        for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
            assert_one_line_error(
                cli(capsys, *argv, "--set", f"launch.config_file={config}"),
                "launch.config_file",
                "is not an accelerate config file",
                what,
            )
    assert not out.exists()


def test_report_to_is_checked_against_transformers_integrations(tmp_path, capsys):
    from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

    from procrl.recipe import REPORT_TO_INTEGRATIONS

    assert set(REPORT_TO_INTEGRATIONS) == {"all", "none", *INTEGRATION_TO_CALLBACK}
    out = tmp_path / "run"
    for value in ("carrier_pigeon", "[wandb, carrier_pigeon]"):
        for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
            assert_one_line_error(
                cli(capsys, *argv, "--set", f"trainer.report_to={value}"),
                "trainer.report_to",
                "'carrier_pigeon'",
                "'tensorboard'",
                "'wandb'",
                "'none'",
            )
    assert not out.exists()
    assert cli(capsys, "check", TINY_RECIPE, "--set", "trainer.report_to=[tensorboard]").code == 0


def test_procrl_cache_that_is_a_file_is_one_line(tmp_path, capsys, monkeypatch):
    cache = tmp_path / "cache"
    cache.write_text("not a folder\n")
    monkeypatch.setenv("PROCRL_CACHE", str(cache))
    out = tmp_path / "run"
    for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
        assert_one_line_error(cli(capsys, *argv), "PROCRL_CACHE", str(cache), "not a directory")
    assert cache.read_text() == "not a folder\n"


def test_a_lone_surrogate_in_a_training_question_is_one_line(tmp_path, capsys):
    data = tmp_path / "train.jsonl"
    data.write_text(
        '{"question": "How many apples?", "answer": "#### 4"}\n'
        '{"question": "How many \\ud800 pears?", "answer": "#### 5"}\n'
    )
    out = tmp_path / "run"
    for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
        assert_one_line_error(
            cli(capsys, *argv, "--set", f"data.dataset={data}"),
            f"{data}:2",
            "'question'",
            "lone surrogate",
            "character 10",
        )
    assert not out.exists()


def test_overwrite_never_follows_a_symlinked_checkpoint(tmp_path, capsys):
    out = tmp_path / "run"
    fake_checkpoint(out, 2)
    elsewhere = fake_checkpoint(tmp_path / "user", 4)
    (out / "checkpoint-4").symlink_to(elsewhere)
    before, theirs = snapshot(out), snapshot(elsewhere)
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, "--overwrite", *ONE_STEP)
    # the folder rule refuses a link out of the run's folder before --overwrite deletes anything
    assert_one_line_error(result, str(out / "checkpoint-4"), "is a symlink", "never writes through a link")
    assert snapshot(elsewhere) == theirs and (out / "checkpoint-4").is_symlink()
    assert (out / "checkpoint-2" / "trainer_state.json").is_file()  # nothing deleted before the refusal
    assert {k for k in snapshot(out) if not k.startswith(".")} >= {k for k in before if not k.startswith(".")}


# --- a damaged checkpoint is not complete ----------------------------------------------------------


@pytest.fixture(scope="module")
def two_checkpoints(tmp_path_factory) -> Path:
    """A real run of 2 steps with checkpoint-1 and checkpoint-2 (copied by each test)."""
    from procrl.launch.run import train
    from procrl.recipe import load_recipe

    out = tmp_path_factory.mktemp("run") / "run"
    train(
        load_recipe(
            TINY_RECIPE,
            ["trainer.max_steps=2", "trainer.save_steps=1", "trainer.max_completion_length=8"],
            output_dir=str(out),
        )
    )
    assert (out / "checkpoint-1").is_dir() and (out / "checkpoint-2").is_dir()
    return out


def run_copy(source: Path, tmp_path: Path) -> Path:
    import shutil

    out = tmp_path / "run"
    shutil.copytree(source, out, ignore=shutil.ignore_patterns(".procrl.lock"))
    return out


@pytest.mark.parametrize("damage", ["truncated weights", "garbage optimizer"])
def test_resume_passes_over_a_damaged_checkpoint_naming_it(two_checkpoints, tmp_path, capsys, damage):
    out = run_copy(two_checkpoints, tmp_path)
    if damage == "truncated weights":
        weights = out / "checkpoint-2" / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
        why = "model.safetensors is damaged (truncated:"
    else:
        (out / "checkpoint-2" / "optimizer.pt").write_bytes(b"this is not a torch file\n" * 40)
        why = "optimizer.pt is damaged (not a torch.save file"
    result = cli(
        capsys,
        "train",
        TINY_RECIPE,
        "--output-dir",
        out,
        "--resume",
        "--set",
        "trainer.max_steps=3",
        "--set",
        "trainer.save_steps=1",
        "--set",
        "trainer.max_completion_length=8",
    )
    assert result.code == 0, result.err[-3000:]
    assert f"skipped {out / 'checkpoint-2'}: {why}" in result.err
    assert f"resuming from {out / 'checkpoint-1'} (global step 1)" in result.err
    assert (out / "incomplete-checkpoint-2").is_dir()  # kept for inspection, out of the way
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 3


def test_resume_with_every_checkpoint_damaged_is_one_line(two_checkpoints, tmp_path, capsys):
    out = run_copy(two_checkpoints, tmp_path)
    for step in (1, 2):
        (out / f"checkpoint-{step}" / "optimizer.pt").write_bytes(b"\0" * 100)
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, "--resume", "--set", "trainer.max_steps=3")
    assert_one_line_error(
        result,
        "--resume: no complete checkpoint",
        "checkpoint-2: optimizer.pt is damaged",
        "checkpoint-1: optimizer.pt is damaged",
    )
