"""``accelerate launch RECIPE`` as it runs on a GPU node, emulated on CPU (tests/helpers/gpu_node.py:
accelerate's launcher finds N devices; the ranks it starts train on CPU over gloo). Each case reads
``run_info.json`` against the recipe and the line printed:

* no flags, no default config: the recipe's launch, whatever the device count;
* accelerate's default config, or the user's flags: what the user chose, and one line naming the
  difference and the command that gives the recipe's launch;
* a launch whose memory plan does not fit the node's GPUs: refused in one line, nothing started.
"""

from __future__ import annotations

import pytest

from procrl.launch.launched import PLAN_ENV, LaunchPlan, decide_launch, launch_report, plan_launch, predicted_setup
from procrl.recipe import load_recipe
from tests.helpers.gpu_node import gpu_node, node_env, write_default_config
from tests.helpers.launch import REPO, TINY_RECIPE, read_run_info, run_command

ZERO2 = ["--set", "launch.config_file=launch/accelerate/zero2.yaml", "--set", "launch.num_processes=2"]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    return gpu_node(tmp_path_factory.mktemp("node"))


def _launch(node, tmp_path, flags, recipe_args, gpus=2, memory=None, hf_home=None):
    hf_home = hf_home or tmp_path / "hf"
    hf_home.mkdir(exist_ok=True)
    out = tmp_path / "run"
    result = run_command(
        [node, "launch", *flags, TINY_RECIPE, "--output-dir", out, "--set", "trainer.max_steps=1", *recipe_args],
        tmp_path,
        timeout=600,
        **node_env(gpus, hf_home, memory),
    )
    return result, out


@pytest.mark.slow
def test_no_flags_on_a_two_gpu_node_gets_the_recipes_deepspeed_launch(node, tmp_path):
    result, out = _launch(node, tmp_path, [], ZERO2)
    assert result.returncode == 0, result.output
    info = read_run_info(out)
    # without procrl deciding, accelerate would start 2 plain data-parallel ranks (it found 2 GPUs)
    assert (info["world_size"], info["distributed_type"], info["deepspeed_stage"]) == (2, "DEEPSPEED", 2)
    assert info["launch"]["differences"] == [] and info["launch"]["source"] == "the recipe's launch section"
    assert "launching as the recipe's launch section says: accelerate launch --config_file" in result.stderr
    assert "procrl: note: launched as" not in result.stderr


@pytest.mark.slow
def test_no_flags_and_a_one_process_recipe_on_a_two_gpu_node_runs_one_process(node, tmp_path):
    result, out = _launch(node, tmp_path, [], [])
    assert result.returncode == 0, result.output
    info = read_run_info(out)
    assert (info["world_size"], info["distributed_type"]) == (1, "NO"), info
    assert info["launch"]["differences"] == []


@pytest.mark.slow
def test_a_default_accelerate_config_is_the_users_choice_and_the_difference_is_one_line(node, tmp_path):
    config = write_default_config(tmp_path / "hf", distributed_type="MULTI_GPU", num_processes=2)
    result, out = _launch(node, tmp_path, [], [])
    assert result.returncode == 0, result.output
    info = read_run_info(out)
    assert info["world_size"] == 2 and info["deepspeed_stage"] is None
    assert info["launch"]["differences"] == [
        "plain data parallel (DDP) instead of one process",
        "2 processes instead of 1",
    ]
    assert str(config) in info["launch"]["source"]
    notes = [line for line in result.stderr.splitlines() if line.startswith("procrl: note: launched as")]
    assert len(notes) == 1, result.stderr  # rank 0 only
    assert f"from accelerate's default config {config}" in notes[0]
    assert "For the recipe's launch: accelerate launch --num_processes 1" in notes[0]


@pytest.mark.slow
def test_user_flags_win_over_the_recipes_launch_with_one_line(node, tmp_path):
    result, out = _launch(node, tmp_path, ["--multi_gpu", "--num_processes", "2"], ZERO2)
    assert result.returncode == 0, result.output
    info = read_run_info(out)
    assert (info["world_size"], info["deepspeed_stage"]) == (2, None)
    assert info["launch"]["differences"] == ["plain data parallel (DDP) instead of DeepSpeed ZeRO-2"]
    notes = [line for line in result.stderr.splitlines() if line.startswith("procrl: note: launched as")]
    assert len(notes) == 1 and "command-line flags --multi_gpu --num_processes 2" in notes[0], result.stderr
    assert "For the recipe's launch: accelerate launch --config_file" in notes[0]


@pytest.mark.slow
def test_a_launch_that_does_not_fit_the_gpus_stops_before_any_rank_starts(node, tmp_path):
    result, out = _launch(node, tmp_path, [], ZERO2, memory=4 * 1024**2)  # a 4 MiB "GPU"
    assert result.returncode == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("procrl: error:")]
    assert len(errors) == 1 and "launch: DeepSpeed ZeRO-2 over 2 processes needs about" in errors[0], result.stderr
    assert "more than this emulated GPU's 4.0 MiB" in errors[0]
    assert not (out / "run_info.json").exists() and "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_gpu_memory_query_that_raises_still_gets_the_recipes_launch_with_one_line(node, tmp_path):
    result, out = _launch(node, tmp_path, [], ZERO2, memory="raise")
    assert result.returncode == 0, result.output
    info = read_run_info(out)
    # the recipe's launch, not accelerate's own count of the GPUs (2 plain data-parallel ranks)
    assert (info["world_size"], info["distributed_type"], info["deepspeed_stage"]) == (2, "DEEPSPEED", 2)
    assert info["launch"]["source"] == "the recipe's launch section" and info["launch"]["differences"] == []
    warnings = [line for line in result.stderr.splitlines() if "could not run" in line]
    assert warnings == [
        "procrl: warning: the GPU memory check could not run (RuntimeError: CUDA error: unspecified launch "
        "failure (emulated driver error)); launching without it"
    ], result.stderr
    assert "Traceback" not in result.stderr and "launching as the recipe's launch section says" in result.stderr


@pytest.mark.slow
def test_a_launch_that_cannot_be_decided_stops_in_one_line_and_starts_no_rank(node, tmp_path):
    # the recipe's config file is a directory: reading it for the decision fails
    bad = ["--set", f"launch.config_file={tmp_path}", "--set", "launch.num_processes=2"]
    result, out = _launch(node, tmp_path, [], bad)
    assert result.returncode == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("procrl: error:")]
    assert len(errors) == 1 and "launch.config_file" in errors[0], result.stderr
    assert "Traceback" not in result.stderr and not (out / "run_info.json").exists()


@pytest.mark.slow
def test_a_two_machine_launch_over_a_one_node_recipe_names_the_idle_gpus(node, tmp_path):
    # the second machine never comes: a GPU too small for the plan stops the launch before any rank
    flags = ["--num_machines", "2", "--machine_rank", "0", "--main_process_ip", "127.0.0.1"]
    result, out = _launch(node, tmp_path, flags, ZERO2, memory=4 * 1024**2)
    assert result.returncode == 2 and not (out / "run_info.json").exists(), result.output
    idle = [line for line in result.stderr.splitlines() if "idle" in line]
    assert idle == [
        "procrl: warning: 2 process(es) over 2 machines is 1 per machine (num_processes counts all machines), "
        "leaving 1 of this machine's 2 GPUs idle; to use them all: --num_processes 4"
    ], result.stderr


# --- the decision itself, in this process (no launch) -------------------------------------------


def _decide(flags, recipe_args=(), monkeypatch=None, tmp_path=None):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.chdir(REPO)
    overrides = [recipe_args[i + 1] for i in range(0, len(recipe_args), 2)]
    return decide_launch(load_recipe(TINY_RECIPE, overrides), list(flags))


def test_multi_node_flags_keep_the_recipes_config_file(monkeypatch, tmp_path):
    flags = ["--num_machines", "2", "--machine_rank", "1", "--main_process_ip", "10.0.0.1", "--num_processes", "4"]
    argv, source = _decide(flags, ZERO2, monkeypatch, tmp_path)
    config = str(REPO / "launch" / "accelerate" / "zero2.yaml")
    # the recipe's config file, the user's placement flags (their --num_processes wins over the recipe's)
    assert argv == ["--config_file", config, *flags]
    assert source == "the recipe's launch section and command-line flags " + " ".join(flags)


@pytest.mark.parametrize(
    "flags",
    [["--multi_gpu", "--num_processes", "2"], ["--config_file", "launch/accelerate/ddp.yaml"], ["--cpu"]],
)
def test_a_flag_naming_the_distributed_type_is_the_users_launch(flags, monkeypatch, tmp_path):
    argv, source = _decide(flags, ZERO2, monkeypatch, tmp_path)
    assert argv == flags and source == "command-line flags " + " ".join(flags)


def test_a_default_config_is_the_users_launch(monkeypatch, tmp_path):
    config = write_default_config(tmp_path / "hf")
    argv, source = _decide([], ZERO2, monkeypatch, tmp_path)
    assert argv == [] and source == f"accelerate's default config {config}"


def test_no_flags_get_the_recipes_flags(monkeypatch, tmp_path):
    assert _decide([], [], monkeypatch, tmp_path) == (["--num_processes", "1"], "the recipe's launch section")
    config = str(REPO / "launch" / "accelerate" / "zero2.yaml")
    assert _decide([], ZERO2, monkeypatch, tmp_path)[0] == ["--config_file", config, "--num_processes", "2"]


def test_the_predicted_launch_is_accelerates_own_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.chdir(REPO)
    zero3 = predicted_setup(["--config_file", "launch/accelerate/zero3.yaml", "--num_processes", "8"])
    assert (zero3.distributed_type, zero3.zero_stage, zero3.world_size) == ("DEEPSPEED", 3, 8)
    ddp = predicted_setup(["--multi_gpu", "--num_processes", "2"])
    assert (ddp.distributed_type, ddp.world_size, ddp.describe()) == (
        "MULTI_GPU",
        2,
        "plain data parallel (DDP) over 2 processes",
    )


def test_the_plan_is_decided_once_and_read_back_by_the_ranks(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.chdir(REPO)
    recipe = load_recipe(TINY_RECIPE, [ZERO2[1], ZERO2[3]])
    plan = plan_launch(recipe, [])
    config = str(REPO / "launch" / "accelerate" / "zero2.yaml")
    assert plan.flags == ("--config_file", config, "--num_processes", "2")
    assert plan.source == "the recipe's launch section"
    assert (plan.recipe.distributed_type, plan.recipe.zero_stage, plan.recipe.world_size) == ("DEEPSPEED", 2, 2)
    assert (plan.launched.distributed_type, plan.launched.zero_stage, plan.launched.world_size) == ("DEEPSPEED", 2, 2)
    assert LaunchPlan.from_env({PLAN_ENV: plan.to_env()}) == plan
    # a rank reads the source and the recipe's launch from the plan, not from a recipe read anew
    monkeypatch.setenv(PLAN_ENV, plan.to_env())
    report = launch_report(load_recipe(TINY_RECIPE, []))  # a one-process recipe: the plan's launch wins
    assert report["source"] == plan.source and report["recipe"] == plan.recipe.as_dict()


@pytest.mark.parametrize(
    "value",
    [
        "",
        "not json",
        "[]",
        "5",
        '{"source": "x"}',
        '{"source": "x", "flags": 5, "recipe": {}}',
        '{"source": "x", "flags": [], "recipe": {"bogus": 1}}',
        "[" * 100_000 + "]" * 100_000,
    ],
)
def test_a_plan_variable_that_is_not_a_plan_is_no_plan(value):
    assert LaunchPlan.from_env({PLAN_ENV: value}) is None
