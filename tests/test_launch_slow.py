"""Launching for real on CPU: the literal commands of the README's "Scaling out" section, with the
tiny recipe and 1-2 steps. Each test starts processes (accelerate, torchrun, DeepSpeed over gloo)
and reads run_info.json / trainer_state.json of the run."""

from __future__ import annotations

import re
import sys
import zipfile

import pytest

from tests.helpers.launch import (
    REPO,
    TINY_RECIPE,
    accelerate,
    procrl,
    read_run_info,
    read_trainer_state,
    run_command,
    write_recipe,
)

pytestmark = pytest.mark.slow


def test_accelerate_launch_recipe_single_process_then_resume_continues_the_step_count(tmp_path):
    out = tmp_path / "run"
    first = run_command(
        [
            *accelerate(),
            "launch",
            TINY_RECIPE,
            "--output-dir",
            out,
            "--set",
            "trainer.max_steps=2",
            "--set",
            "trainer.save_steps=2",
            "--set",
            "trainer.report_to=wandb",
        ],
        tmp_path,
    )
    assert first.returncode == 0, first.output
    info = read_run_info(out)
    assert (info["world_size"], info["distributed_type"], info["deepspeed_stage"]) == (1, "NO", None)
    assert (out / "checkpoint-2").is_dir() and read_trainer_state(out)["global_step"] == 2
    run_id = (out / "wandb_run_id").read_text().strip()

    resumed = run_command(
        [
            *procrl(),
            "train",
            TINY_RECIPE,
            "--output-dir",
            out,
            "--resume",
            "--set",
            "trainer.max_steps=4",
            "--set",
            "trainer.save_steps=2",
            "--set",
            "trainer.report_to=wandb",
        ],
        tmp_path,
    )
    assert resumed.returncode == 0, resumed.output
    assert f"procrl: resuming from {out / 'checkpoint-2'} (global step 2)" in resumed.stderr
    state = read_trainer_state(out)
    assert state["global_step"] == 4 and (out / "checkpoint-4").is_dir()
    steps = [entry["step"] for entry in state["log_history"] if "loss" in entry]
    assert steps == [1, 2, 3, 4]  # history of the first run kept, then steps 3 and 4
    # the resumed process trained 2 steps, not 4: one per-step log line each (logging_steps: 1)
    assert len(re.findall(r"^step \d+/4 \| loss ", resumed.stdout, re.M)) == 2, resumed.output
    # same W&B run: the id is kept and both offline runs wrote under it
    assert (out / "wandb_run_id").read_text().strip() == run_id
    runs = sorted(p.name for p in (tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 2 and all(name.endswith(f"-{run_id}") for name in runs), runs


def test_accelerate_launch_multi_gpu_two_cpu_processes(tmp_path):
    out = tmp_path / "ddp"
    result = run_command(
        [
            *accelerate(),
            "launch",
            "--multi_gpu",
            "--num_processes",
            "2",
            TINY_RECIPE,
            "--output-dir",
            out,
            "--set",
            "trainer.max_steps=2",
        ],
        tmp_path,
    )
    assert result.returncode == 0, result.output
    info = read_run_info(out)
    assert (info["world_size"], info["distributed_type"]) == (2, "MULTI_CPU")
    assert read_trainer_state(out)["global_step"] == 2


@pytest.mark.parametrize("stage", [2, 3])
def test_accelerate_launch_deepspeed_zero(stage, tmp_path):
    out = tmp_path / f"zero{stage}"
    result = run_command(
        [
            *accelerate(),
            "launch",
            "--config_file",
            f"launch/accelerate/zero{stage}.yaml",
            "--num_processes",
            "2",
            TINY_RECIPE,
            "--output-dir",
            out,
            "--set",
            "trainer.max_steps=1",
        ],
        tmp_path,
    )
    assert result.returncode == 0, result.output
    info = read_run_info(out)
    assert (info["world_size"], info["distributed_type"], info["deepspeed_stage"]) == (2, "DEEPSPEED", stage)
    assert read_trainer_state(out)["global_step"] == 1


def test_python_runs_a_recipe(tmp_path):
    out = tmp_path / "py"
    result = run_command([sys.executable, TINY_RECIPE, "--set", "trainer.max_steps=1", "--output-dir", out], tmp_path)
    assert result.returncode == 0, result.output
    assert read_run_info(out)["world_size"] == 1 and read_trainer_state(out)["global_step"] == 1


def test_recipe_launch_section_is_honoured_by_a_bare_accelerate_launch(tmp_path):
    """`accelerate launch RECIPE` without flags launches as the recipe's launch: section says
    (the same path `procrl train RECIPE` takes)."""
    recipe = write_recipe(tmp_path / "two.yaml", launch={"num_processes": 2})
    out = tmp_path / "two"
    result = run_command(
        [*accelerate(), "launch", recipe, "--output-dir", out, "--set", "trainer.max_steps=1"], tmp_path
    )
    assert result.returncode == 0, result.output
    assert "procrl: launching" in result.stderr and "--num_processes 2 --multi_gpu" in result.stderr
    assert read_run_info(out)["world_size"] == 2


def test_pip_builds_install_the_start_up_hook(tmp_path):
    """Both wheel kinds pip builds (regular and editable, PEP 660) carry the .pth at their root."""
    import shutil

    source = tmp_path / "src"  # a copy: building writes build/ and *.egg-info next to the sources
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "procrl_recipe_hook.py"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "procrl", source / "procrl", ignore=shutil.ignore_patterns("__pycache__"))
    wheels = []
    for hook in ("build_wheel", "build_editable"):  # what pip calls (PEP 517 / PEP 660), one process each
        code = f"import sys; from setuptools import build_meta as b; print('WHEEL', b.{hook}(sys.argv[1]))"
        result = run_command([sys.executable, "-c", code, tmp_path], tmp_path, timeout=300, cwd=source)
        assert result.returncode == 0, result.output
        wheels.append(tmp_path / result.stdout.strip().splitlines()[-1].split()[1])
    expected = (
        "import sys; getattr(sys, 'argv', None) and sys.argv[0].lower()"
        ".endswith(('.yaml', '.yml', 'accelerate', 'accelerate-launch'))"
    )
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            assert "zzz-procrl-recipe-hook.pth" in names, (wheel.name, names[:20])
            assert archive.read("zzz-procrl-recipe-hook.pth").decode().startswith(expected)
            record = next(n for n in names if n.endswith(".dist-info/RECORD"))
            assert "zzz-procrl-recipe-hook.pth," in archive.read(record).decode()  # pip uninstall removes it
    with zipfile.ZipFile(wheels[0]) as archive:
        regular = archive.namelist()
    assert "procrl_recipe_hook.py" in regular and "procrl/launch/accelerate.py" in regular
    assert "editable" in wheels[1].name


def test_a_zero3_run_launched_by_flags_ends_with_a_model_from_pretrained_loads(tmp_path):
    from transformers import AutoModelForCausalLM

    from tests.helpers.launch import free_port

    out = tmp_path / "run"
    # accelerate's flag default does not gather 16-bit weights on save (the recipes' zero3.yaml does)
    flags = ["--use_deepspeed", "--zero_stage", "3", "--num_processes", "2", "--main_process_port", str(free_port())]
    result = run_command(
        [*accelerate(), "launch", *flags, TINY_RECIPE, "--output-dir", out, "--set", "trainer.max_steps=1"], tmp_path
    )
    assert result.returncode == 0, result.output
    info = read_run_info(out)
    assert (info["world_size"], info["distributed_type"], info["deepspeed_stage"]) == (2, "DEEPSPEED", 3)
    # not DeepSpeed shards and zero_to_fp32.py alone: every weight there, none newly initialised
    model, loading = AutoModelForCausalLM.from_pretrained(out, output_loading_info=True)
    assert not loading["missing_keys"] and not loading["mismatched_keys"], loading
    assert sum(p.numel() for p in model.parameters()) > 0
    assert f"the model is in {out}" in result.stdout, result.output
