"""Launching (fast part): the accelerate command built from a recipe's launch section, the
start-up hook's cost and its hands-off behaviour on other YAML files, the plan's parameter and
memory arithmetic, resume helpers. Runs that train are in test_launch_slow.py."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import procrl_recipe_hook
from procrl.core.config import ConfigError
from procrl.launch.accelerate import (
    inside_launcher,
    parent_accelerate_flags,
    resume_checkpoint,
    split_launch_args,
    train_command,
)
from procrl.observe.wandb import set_wandb_run_id
from procrl.recipe import load_recipe
from procrl.recipe.launch import accelerate_command, needs_launcher, resolve_config_file
from tests.helpers.launch import REPO, TINY_RECIPE, launch_env, write_recipe

LAUNCH_CONFIGS = ["single_gpu", "ddp", "zero2", "zero3", "zero3_offload", "multinode_zero3"]


# --- the accelerate command ----------------------------------------------------------------------


def _flags(command: list[str]) -> list[str]:
    start = command.index("accelerate.commands.launch") + 1
    return command[start:]


def test_the_launch_tests_run_in_one_xdist_group(request):
    """Under the README's test command (``-n 2 --dist loadgroup``) the launch test files run on one
    worker, one after another (tests/conftest.py), so that two launches never race for accelerate's
    rendezvous port. pytest-xdist schedules by the ``@group`` suffix it adds to a test's id: when a
    pytest release stops that from taking (ids that cannot be changed), the grouping is lost silently."""
    if not request.config.getvalue("loadgroup") or not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("not run under pytest-xdist with --dist loadgroup")
    assert request.node.nodeid.endswith("@multi_process"), request.node.nodeid


def test_launch_section_becomes_accelerate_flags():
    recipe = load_recipe(REPO / "recipes" / "gsm8k_trace.yaml")
    assert needs_launcher(recipe)
    flags = _flags(accelerate_command(recipe))
    assert flags == ["--config_file", str(REPO / "launch" / "accelerate" / "zero3.yaml"), "--num_processes", "8"]


def test_command_line_flags_win_over_the_launch_section():
    recipe = load_recipe(REPO / "recipes" / "gsm8k_trace.yaml")
    flags = _flags(accelerate_command(recipe, ["--num_processes", "2", "--config_file=launch/accelerate/zero2.yaml"]))
    # the recipe's values for flags the user gave are gone; the user's come last (argparse: last wins)
    assert flags == ["--num_processes", "2", "--config_file=launch/accelerate/zero2.yaml"]


def test_processes_without_config_file_use_ddp_and_respect_a_single_process_override(tmp_path):
    recipe = load_recipe(write_recipe(tmp_path / "r.yaml", launch={"num_processes": 2}))
    assert _flags(accelerate_command(recipe)) == ["--num_processes", "2", "--multi_gpu"]
    # --num_processes 1 from the command line: no --multi_gpu (accelerate would refuse it)
    assert _flags(accelerate_command(recipe, ["--num_processes", "1"])) == ["--num_processes", "1"]
    # a type flag or config file from the command line: procrl adds no type flag of its own
    assert "--multi_gpu" not in _flags(accelerate_command(recipe, ["--use_deepspeed"]))


def test_train_command_passes_recipe_overrides_and_resume():
    recipe = load_recipe(TINY_RECIPE)
    assert not needs_launcher(recipe)
    command = train_command(recipe, TINY_RECIPE, ["trainer.max_steps=2"], "out", True, ["--num_processes", "2"])
    assert command[command.index("-m", 3) :] == [
        "-m",
        "procrl.run",
        TINY_RECIPE,
        "--set",
        "trainer.max_steps=2",
        "--output-dir",
        "out",
        "--resume",
    ]


def test_config_file_is_found_relative_to_the_recipe_parents(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the repo: the recipe's parent directories find launch/
    found = resolve_config_file("launch/accelerate/zero2.yaml", str(REPO / "recipes" / "gsm8k_trace.yaml"))
    assert found == REPO / "launch" / "accelerate" / "zero2.yaml"
    with pytest.raises(ConfigError, match="launch.config_file: launch/nope.yaml not found"):
        resolve_config_file("launch/nope.yaml", str(REPO / "recipes" / "gsm8k_trace.yaml"))


def test_unknown_train_flags_are_refused_with_one_line():
    assert split_launch_args(["--num_processes", "2", "--mixed_precision", "no"]) == [
        "--num_processes",
        "2",
        "--mixed_precision",
        "no",
    ]
    with pytest.raises(
        ConfigError, match="--no-such-flag: neither a procrl train option nor an accelerate launch flag"
    ):
        split_launch_args(["--no-such-flag"])


def test_inside_launcher_detection():
    assert not inside_launcher({"PATH": "/bin"})
    assert inside_launcher({"LOCAL_RANK": "0"})  # torchrun / DeepSpeed launcher
    assert inside_launcher({"ACCELERATE_MIXED_PRECISION": "no"})  # accelerate's single-process launcher
    assert inside_launcher({"PROCRL_LAUNCH_PLAN": "{}"})  # procrl's own launch plan


def test_parent_accelerate_flags_read_from_the_parent_command_line(tmp_path):
    def cmdline(*argv: str) -> str:
        path = tmp_path / "cmdline"
        path.write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
        return str(path)

    bare = cmdline("/venv/bin/python3", "/venv/bin/accelerate", "launch", "r.yaml", "--set", "a=1")
    assert parent_accelerate_flags("r.yaml", bare) == []
    flagged = cmdline("/venv/bin/python3", "/venv/bin/accelerate", "launch", "--num_processes", "1", "r.yaml")
    assert parent_accelerate_flags("r.yaml", flagged) == ["--num_processes", "1"]
    module = cmdline("python", "-m", "accelerate.commands.launch", "--config_file", "c.yaml", "r.yaml")
    assert parent_accelerate_flags("r.yaml", module) == ["--config_file", "c.yaml"]
    assert parent_accelerate_flags("r.yaml", cmdline("bash", "-c", "python r.yaml")) is None
    assert parent_accelerate_flags("r.yaml", str(tmp_path / "missing")) is None


@pytest.mark.parametrize("name", LAUNCH_CONFIGS)
def test_launch_configs_parse_with_accelerate(name):
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(str(REPO / "launch" / "accelerate" / f"{name}.yaml"))
    expected = {
        "single_gpu": ("NO", None),
        "ddp": ("MULTI_GPU", None),
        "zero2": ("DEEPSPEED", 2),
        "zero3": ("DEEPSPEED", 3),
        "zero3_offload": ("DEEPSPEED", 3),
        "multinode_zero3": ("DEEPSPEED", 3),
    }[name]
    assert str(config.distributed_type).split(".")[-1] == expected[0]
    stage = (config.deepspeed_config or {}).get("zero_stage")
    assert stage == expected[1]
    assert config.mixed_precision == "no"  # precision comes from the recipe's trainer.bf16
    if name == "zero3_offload":
        assert config.deepspeed_config["offload_optimizer_device"] == "cpu"
    if name == "multinode_zero3":
        assert config.num_machines == 2 and config.deepspeed_config["deepspeed_multinode_launcher"] == "standard"


# --- the start-up hook ---------------------------------------------------------------------------


def test_marker_scan_needs_a_top_level_marker_line(tmp_path):
    cases = {
        "recipe: procrl/v1\nmodel: {name_or_path: x}\n": True,
        "# comment\nrecipe: 'procrl/v1'  # marker\n": True,
        'recipe: "procrl/v1"\n': True,
        "config:\n  recipe: procrl/v1\n": False,  # nested: not a recipe
        "# recipe: procrl/v1\nname: x\n": False,
        "recipe: procrl/v2\n": False,
        "name: procrl/v1\n": False,
    }
    for index, (text, expected) in enumerate(cases.items()):
        path = tmp_path / f"f{index}.yaml"
        path.write_text(text)
        assert procrl_recipe_hook.has_marker(str(path)) is expected, text
    assert procrl_recipe_hook.has_marker(str(tmp_path / "missing.yaml")) is False


def test_pth_file_is_installed_in_site_packages():
    site = Path(sysconfig.get_paths()["purelib"])
    pth = site / "zzz-procrl-recipe-hook.pth"
    assert pth.is_file(), "reinstall procrl (pip install -e .) to get the recipe start-up hook"
    line = pth.read_text().strip()
    assert line.startswith("import sys;") and "__import__('procrl_recipe_hook').run()" in line
    assert line.index("endswith") < line.index("__import__")  # the suffix check guards the import


def _imports(argv: list[str], tmp_path: Path) -> tuple[set[str], subprocess.CompletedProcess]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        capture_output=True,
        text=True,
        env=launch_env(tmp_path),
        cwd=tmp_path,
        timeout=60,
    )
    modules = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            modules.add(line.rsplit("|", 1)[1].strip())
    return modules, done


def _procrl_modules(modules: set[str]) -> set[str]:
    return {m for m in modules if m == "procrl" or m.startswith("procrl.")}


def test_hook_adds_no_import_for_other_python_starts(tmp_path):
    modules, done = _imports(["-c", "pass"], tmp_path)
    assert done.returncode == 0
    assert "procrl_recipe_hook" not in modules and not _procrl_modules(modules)
    assert "encodings" in modules  # the importtime listing works (the check above can fail)


def test_hook_reads_but_never_imports_procrl_for_a_yaml_that_is_not_a_recipe(tmp_path):
    other = tmp_path / "config.yaml"
    other.write_text("x: int = 1\nprint('ran as python')\n")  # YAML-looking, valid Python
    before = other.stat().st_mtime_ns
    modules, done = _imports([str(other)], tmp_path)
    assert done.returncode == 0 and done.stdout == "ran as python\n"
    assert "procrl_recipe_hook" in modules  # the hook looked (suffix matched) ...
    assert not _procrl_modules(modules)  # ... but did not import procrl
    assert other.stat().st_mtime_ns == before


def _clean_env() -> dict[str, str]:
    """No PYTHONPATH & co (they would put procrl on the bare venv's path), hook not switched off."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PROCRL_RECIPE_HOOK"))}


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """The same interpreter in a fresh venv without procrl (or anything else) installed."""
    directory = tmp_path_factory.mktemp("bare-venv")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(directory)], check=True, timeout=120)
    python = directory / "bin" / "python"
    probe = subprocess.run(
        [str(python), "-c", "import importlib.util as u; print(u.find_spec('procrl_recipe_hook'))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=directory,
        env=_clean_env(),
    )
    assert probe.stdout.strip() == "None"
    return str(python)


NOT_RECIPES = {
    "syntax_error.yaml": "name: my-config\nsteps:\n  - run: echo hi\n",
    "name_error.yml": "name: my_config\n",
    "valid_python.yaml": "a: 1\n",
    "nested_marker.yaml": "config:\n  recipe: procrl/v1\n",
    "commented_marker.YAML": "# recipe: procrl/v1\nsteps: [1, 2\n",
}


@pytest.mark.parametrize("name", sorted(NOT_RECIPES))
def test_non_recipe_yaml_fails_exactly_as_without_procrl(name, tmp_path, bare_python):
    path = tmp_path / name
    path.write_text(NOT_RECIPES[name])
    env = _clean_env()
    ours = subprocess.run([sys.executable, str(path), "--flag"], capture_output=True, text=True, env=env, cwd=tmp_path)
    bare = subprocess.run([bare_python, str(path), "--flag"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert (ours.returncode, ours.stdout, ours.stderr) == (bare.returncode, bare.stdout, bare.stderr)
    if name != "valid_python.yaml":
        assert ours.returncode == 1 and "Error" in ours.stderr


def test_hook_reports_an_invalid_recipe_in_one_line_with_status_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("recipe: procrl/v1\nmodle: {name_or_path: x}\n")
    done = subprocess.run(
        [sys.executable, str(bad)], capture_output=True, text=True, env=launch_env(tmp_path), cwd=tmp_path, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "procrl: error: modle: unknown key (did you mean 'model'?); top-level keys: recipe, description, "
        "output_dir, model, data, trainer, rewards, logging, launch, segmentation, audit"
    ]


def test_hook_can_be_switched_off(tmp_path):
    recipe = write_recipe(tmp_path / "r.yaml")
    done = subprocess.run(
        [sys.executable, str(recipe)],
        capture_output=True,
        text=True,
        env=launch_env(tmp_path, PROCRL_RECIPE_HOOK="0"),
        cwd=tmp_path,
        timeout=60,
    )
    # Python runs the YAML as code (and fails on its first line that is not valid Python)
    assert done.returncode == 1 and "SyntaxError" in done.stderr and "procrl" not in done.stderr.lower()


# --- resume helpers ------------------------------------------------------------------------------


def test_resume_without_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="--resume: no checkpoint-\\* directory in"):
        resume_checkpoint(str(tmp_path))
    (tmp_path / "checkpoint-2").mkdir()
    (tmp_path / "checkpoint-10").mkdir()
    with pytest.raises(ConfigError, match="no complete checkpoint .*checkpoint-10: empty.*checkpoint-2: empty"):
        resume_checkpoint(str(tmp_path))


def test_wandb_run_id_is_persisted_and_reused_on_resume(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_RUN_ID", raising=False)
    monkeypatch.delenv("WANDB_RESUME", raising=False)
    first = set_wandb_run_id(str(tmp_path), resume=False)
    assert (tmp_path / "wandb_run_id").read_text().strip() == first == os.environ["WANDB_RUN_ID"]
    monkeypatch.delenv("WANDB_RUN_ID")
    assert set_wandb_run_id(str(tmp_path), resume=True) == first
    assert os.environ["WANDB_RESUME"] == "allow"
    monkeypatch.delenv("WANDB_RUN_ID")
    assert set_wandb_run_id(str(tmp_path), resume=False) != first  # a fresh run gets a fresh id


# --- SLURM ---------------------------------------------------------------------------------------


def test_slurm_script_starts_one_accelerate_launch_per_training_node(tmp_path):
    import shlex

    from accelerate.commands.launch import launch_command_parser

    script = REPO / "launch" / "slurm" / "train_multinode.sbatch"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    env = launch_env(
        tmp_path,
        DRY_RUN="1",
        PROCRL_NODES="n1 n2 n3 n4",
        VLLM_NODES="1",
        JUDGE_NODES="1",
        JUDGE_CMD="vllm serve Qwen/Qwen2.5-72B-Instruct --port 8000",
        VLLM_MODEL="Qwen/Qwen2.5-7B-Instruct",
        PYTHON="python",
    )
    done = subprocess.run(
        ["bash", str(script), "recipes/gsm8k_judge.yaml", "--set", "trainer.max_steps=3"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [shlex.split(line) for line in done.stdout.strip().splitlines()]
    serve, judge, wait_vllm, wait_judge, *train = lines
    assert serve[:5] == ["srun", "--nodes=1", "--ntasks=1", "-w", "n3"]
    # what TRL's VLLMClient needs of the server (trl.scripts.vllm_serve.build_command), no data parallelism
    assert serve[5:7] == ["env", "VLLM_SERVER_DEV_MODE=1"] and "serve" in serve and "Qwen/Qwen2.5-7B-Instruct" in serve
    for flag, value in (
        ("--weight-transfer-config", '{"backend": "nccl"}'),
        ("--logprobs-mode", "processed_logprobs"),
        ("--max-logprobs", "-1"),
        ("--tensor-parallel-size", "1"),
        ("--port", "8000"),
    ):
        assert serve[serve.index(flag) + 1] == value, flag
    assert "--data-parallel-size" not in serve and "--data_parallel_size" not in serve
    # the judge serves the name the recipe's judge asks for (gsm8k_judge.yaml: model: judge)
    assert (
        judge[4] == "n4" and judge[-1] == "vllm serve Qwen/Qwen2.5-72B-Instruct --port 8000 --served-model-name judge"
    )
    # training starts once both answer (bounded waits that fail in one line)
    assert wait_vllm[1:4] == ["-m", "procrl.launch.services", "wait"] and "--health" in wait_vllm
    assert wait_vllm[wait_vllm.index("--url") + 1] == "http://n3:8000"
    assert wait_judge[wait_judge.index("--url") + 1] == "http://n4:8000/v1"
    assert wait_judge[wait_judge.index("--model") + 1] == "judge"
    assert len(train) == 2
    for rank, command in enumerate(train):
        assert command[:3] == ["python", "-m", "accelerate.commands.launch"]
        args = launch_command_parser().parse_args(command[3:])
        assert (args.machine_rank, args.num_machines, args.num_processes) == (rank, 2, 16)
        assert (args.main_process_ip, args.config_file) == ("n1", "launch/accelerate/multinode_zero3.yaml")
        assert args.module and args.training_script == "procrl.run"
        assert args.training_script_args == [
            "recipes/gsm8k_judge.yaml",
            "--set",
            "trainer.vllm_mode=server",
            "--set",
            "trainer.vllm_server_base_url=http://n3:8000",
            "--set",
            "rewards.first_error.backend=openai",
            "--set",
            "rewards.first_error.base_url=http://n4:8000/v1",
            "--set",
            "trainer.max_steps=3",
        ]
    too_few = subprocess.run(
        ["bash", str(script), "recipes/gsm8k_judge.yaml"],
        capture_output=True,
        text=True,
        env={**env, "PROCRL_NODES": "n1 n2"},
        cwd=REPO,
        timeout=60,
    )
    assert too_few.returncode == 2 and "leave none for training" in too_few.stderr
