"""launch/slurm/train_multinode.sbatch end to end on one machine (PROCRL_LOCAL=1: every "node" is
this machine, no srun), with procrl's local OpenAI-compatible test server as the judge on the
judge node: the served name comes from the recipe, training waits until the judge answers, a
judge that comes up late is waited for, and one that never comes up or serves another name stops
the script in one line before anything trains.

Also here: a judge that goes down during training stops the run (trainer.stop_after_failed_steps)
instead of training on the other rewards alone."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.launch import (
    REPO,
    TINY_RECIPE,
    free_port,
    launch_env,
    procrl,
    read_trainer_state,
    run_command,
    write_recipe,
)

pytestmark = pytest.mark.slow
SCRIPT = REPO / "launch" / "slurm" / "train_multinode.sbatch"


def _judge_recipe(tmp_path, **judge):
    import yaml

    rewards = yaml.safe_load(open(TINY_RECIPE))["rewards"]
    rewards["first_error"] = {
        "weight": 0.5,
        "backend": "openai",
        "model": "judge",
        "base_url": "http://127.0.0.1:9/v1",
        "timeout_s": 5,
        "max_retries": 0,
        **judge,
    }
    return write_recipe(tmp_path / "judge.yaml", rewards=rewards)


def _sbatch(tmp_path, recipe, judge_cmd, port, timeout="60", steps=2):
    env = launch_env(
        tmp_path,
        PROCRL_LOCAL="1",
        PROCRL_NODES="127.0.0.1 127.0.0.1",
        JUDGE_NODES="1",
        JUDGE_PORT=str(port),
        JUDGE_CMD=judge_cmd,
        WAIT_TIMEOUT=timeout,
        GPUS_PER_NODE="1",
        ACCELERATE_CONFIG="none",
        MAIN_PORT=str(free_port()),
        PYTHON=sys.executable,
    )
    out = tmp_path / "run"
    done = subprocess.run(
        ["bash", str(SCRIPT), str(recipe), "--output-dir", str(out), "--set", f"trainer.max_steps={steps}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    return done, out


def _server(port, name='"$PROCRL_JUDGE_SERVED_NAME"', start_after=0):
    return (
        f"{sys.executable} -m procrl.testing.openai_server --port {port} --served-model-name {name}"
        f" --start-after {start_after}"
    )


def test_a_judge_that_comes_up_late_is_waited_for_and_serves_the_recipes_name(tmp_path):
    port = free_port()
    done, out = _sbatch(tmp_path, _judge_recipe(tmp_path), _server(port, start_after=6), port)
    assert done.returncode == 0, done.stderr[-4000:]
    waited = [line for line in done.stderr.splitlines() if "the judge server answers (after" in line]
    assert waited and int(waited[0].split("after ")[1].split(" s")[0]) >= 4, done.stderr[-3000:]
    logged = [entry for entry in read_trainer_state(out)["log_history"] if "rewards/first_error/mean" in entry]
    assert len(logged) == 2
    for entry in logged:  # every judge call answered: no failure of any kind
        assert not any(key.startswith("rewards/first_error/failures/") and value for key, value in entry.items())


def test_a_judge_that_never_answers_stops_the_script_in_one_line(tmp_path):
    port = free_port()
    done, out = _sbatch(tmp_path, _judge_recipe(tmp_path), "sleep 300", port, timeout="4")
    assert done.returncode == 3, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("procrl: error:")]
    assert errors == [
        f"procrl: error: the judge server at http://127.0.0.1:{port}/v1 did not answer within 4 s "
        f"(last: {errors[0].split('(last: ')[1]}"
    ], done.stderr
    assert errors[0].endswith("; nothing was trained") and not out.exists()


def test_a_judge_whose_server_ends_fails_at_once(tmp_path):
    port = free_port()
    done, out = _sbatch(tmp_path, _judge_recipe(tmp_path), "exit 1", port, timeout="120")
    assert done.returncode == 3 and "ended before it answered" in done.stderr, done.stderr[-3000:]


def test_a_judge_serving_another_name_stops_the_script_in_one_line(tmp_path):
    port = free_port()
    done, out = _sbatch(tmp_path, _judge_recipe(tmp_path), _server(port, name="Qwen/Qwen2.5-72B-Instruct"), port)
    assert done.returncode == 3, done.stderr[-3000:]
    assert (
        f"procrl: error: the judge server at http://127.0.0.1:{port}/v1 serves ['Qwen/Qwen2.5-72B-Instruct'], not "
        "'judge', the name the recipe asks for (start it with --served-model-name judge); nothing was trained"
    ) in done.stderr
    assert not out.exists()


def test_a_vllm_serve_judge_command_gets_the_recipes_served_name(tmp_path):
    env = launch_env(
        tmp_path,
        DRY_RUN="1",
        PROCRL_NODES="n1 n2",
        JUDGE_NODES="1",
        JUDGE_CMD="vllm serve Qwen/Qwen2.5-72B-Instruct --port 8000",
        PYTHON=sys.executable,
    )
    done = subprocess.run(
        ["bash", str(SCRIPT), str(_judge_recipe(tmp_path, model="my-judge"))],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    import shlex

    judge, wait = (shlex.split(line) for line in done.stdout.splitlines()[:2])
    assert judge[-1] == "vllm serve Qwen/Qwen2.5-72B-Instruct --port 8000 --served-model-name my-judge"
    assert wait[wait.index("--model") + 1] == "my-judge"  # the readiness wait checks that name


def test_a_judge_down_during_training_stops_the_run_with_a_checkpoint(tmp_path):
    recipe = _judge_recipe(tmp_path, base_url=f"http://127.0.0.1:{free_port()}/v1", timeout_s=2)
    out = tmp_path / "run"
    result = run_command(
        [
            *procrl(),
            "train",
            recipe,
            "--output-dir",
            out,
            "--set",
            "trainer.max_steps=6",
            "--set",
            "trainer.stop_after_failed_steps=2",
            "--set",
            "trainer.save_steps=100",
        ],
        tmp_path,
    )
    assert result.returncode == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("procrl: error:")]
    assert len(errors) == 1, result.stderr[-3000:]
    assert errors[0].startswith(
        "procrl: error: rewards.first_error failed on every sample for 2 consecutive steps (connection_error"
    )
    assert "stopped at step 2" in errors[0] and "--resume" in errors[0]
    assert (out / "checkpoint-2").is_dir() and not (out / "model.safetensors").exists()
    assert json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())["global_step"] == 2
