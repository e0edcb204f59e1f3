"""Evaluation during training (``trainer.eval_steps``): the held-out metrics from scored batches,
the recipe checks, and the ``eval_*`` keys in trainer_state.json / ``eval/*`` in W&B for GRPO,
process GRPO and PPO."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.data import load_examples
from procrl.launch import cli
from procrl.recipe import load_recipe
from procrl.rewards import RewardBatch, RewardMix
from procrl.trainers.held_out import OutcomeCollector, held_out_metrics
from tests.helpers.training import STEP_REWARD

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "recipes" / "gsm8k_tiny_smoke.yaml"
EVAL_KEYS = (
    "eval_answer_accuracy",
    "eval_answer_accuracy_stderr",
    "eval_reasoning_aware_accuracy",
    "eval_reasoning_aware_accuracy_stderr",
    "eval_inflation",
    "eval_inflation_stderr",
    "eval_problems",
)


def _slip_first_note(solution: str) -> str:
    """The same solution with the first calculator result off by one (an arithmetic slip in step 0)."""
    match = re.search(r"=(-?\d+)>>(-?\d+)", solution)
    wrong = int(match.group(1)) + 1
    return solution[: match.start()] + f"={wrong}>>{wrong}" + solution[match.end() :]


def test_held_out_metrics_from_scored_batches():
    recipe = load_recipe(TINY, ["rewards.trace=false", "rewards.judge={type: first_error, backend: arithmetic}"])
    problems = list(load_examples(recipe.data, "test").select(range(3)))
    mix = RewardMix(recipe.rewards)
    collector = OutcomeCollector({name: spec.type for name, spec in mix.specs.items()})
    mix.batch_observers.append(collector.observe)
    p0, p1, p2 = problems
    gold2 = int(p2["answer"].split("####")[-1])
    rows = [  # (problem, completion): two samples of problem 0, one each of 1 and 2
        (p0, p0["answer"]),  # the worked reference: right, sound
        (p0, _slip_first_note(p0["answer"])),  # right answer, a wrong calculation in step 0
        (p1, p1["answer"]),  # right, sound
        (p2, p2["answer"].rsplit("####", 1)[0] + f"#### {gold2 + 5}"),  # wrong answer
    ]
    mix.score_all(
        RewardBatch.from_texts([c for _, c in rows], [p["question"] for p, _ in rows], [p["answer"] for p, _ in rows])
    )
    metrics = held_out_metrics(collector.rows, judged=collector.judged)
    assert metrics["problems"] == 3 and metrics["completions"] == 4
    # per problem: right 2/2, 1/1, 0/1; sound 1/2, 1/1, 0/1
    assert metrics["answer_accuracy"] == pytest.approx(2 / 3)
    assert metrics["answer_accuracy_stderr"] == pytest.approx(math.sqrt(2 / 3 * 1 / 3 / 3))
    assert metrics["reasoning_aware_accuracy"] == pytest.approx((0.5 + 1 + 0) / 3)
    assert metrics["inflation"] == pytest.approx(0.5 / 3)
    assert metrics["process_error_rate"] == pytest.approx(1 / 3)  # 3 right and judged, 1 flawed
    assert metrics["rewards/accuracy/mean"] == pytest.approx(3 / 4)
    assert "maj@1" not in metrics  # problems have different sample counts: no majority vote
    # the distributed sampler's padding repeats prompts: samples beyond the expected count are dropped
    capped = held_out_metrics(collector.rows, judged=True, samples_per_problem=1)
    assert capped["completions"] == 3 and capped["answer_accuracy"] == pytest.approx(2 / 3)
    assert capped["reasoning_aware_accuracy"] == pytest.approx(2 / 3)  # problem 0 keeps its first, sound sample
    assert capped["maj@1"] == pytest.approx(2 / 3)


def test_recipe_refuses_evaluating_on_training_data(tmp_path):
    with pytest.raises(ConfigError, match=r"data.eval_split: 'train' is the training split"):
        load_recipe(TINY, ["trainer.eval_steps=5", "data.eval_split=train"])
    with pytest.raises(ConfigError, match=r"data.eval_split: .*'validaton'.*did you mean 'validation'"):
        load_recipe(TINY, ["trainer.eval_steps=5", "data.eval_split=validaton"])
    train_file = tmp_path / "train.jsonl"
    train_file.write_text(json.dumps({"question": "1 + 1?", "answer": "#### 2"}) + "\n")
    with pytest.raises(ConfigError, match="data.eval_dataset: data.dataset is a local file"):
        load_recipe(TINY, [f"data.dataset={train_file}", "trainer.eval_steps=5"])
    load_recipe(TINY, [f"data.dataset={train_file}"])  # no evaluation, no held-out data needed
    recipe = load_recipe(
        TINY, [f"data.dataset={train_file}", "trainer.eval_steps=5", f"data.eval_dataset={train_file}"]
    )
    assert recipe.data.eval_dataset == str(train_file)  # another file than train.jsonl in practice; the user's call
    with pytest.raises(ConfigError, match="data.eval_limit: must be >= 1"):
        load_recipe(TINY, ["data.eval_limit=0"])


def test_eval_steps_turns_on_step_evaluation():
    from procrl.launch.run import build_training_args

    recipe = load_recipe(TINY, ["trainer.eval_steps=3"])
    args = build_training_args(recipe, [1.0, 0.2, 0.2])
    assert args.eval_strategy == "steps" and args.eval_steps == 3
    assert build_training_args(load_recipe(TINY), [1.0, 0.2, 0.2]).eval_strategy == "no"


def _log_history(output_dir: Path) -> list[dict]:
    return json.loads((output_dir / "trainer_state.json").read_text())["log_history"]


def _eval_records(output_dir: Path) -> list[dict]:
    return [h for h in _log_history(output_dir) if "eval_answer_accuracy" in h]


COMMON = [
    "--set",
    "trainer.max_steps=2",
    "--set",
    "trainer.eval_steps=2",
    "--set",
    "data.eval_limit=2",
    "--set",
    "trainer.save_steps=100",
    "--set",
    "trainer.max_completion_length=12",
    "--set",
    "rewards.judge={type: first_error, backend: arithmetic, weight: 0.1}",
]


def test_grpo_logs_held_out_accuracy_to_trainer_state_and_wandb(tmp_path):
    from tests.helpers.wandb_records import read_records

    env = {
        **os.environ,
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
    }
    command = [
        sys.executable,
        "-m",
        "procrl",
        "train",
        str(TINY),
        "--output-dir",
        str(tmp_path / "run"),
        "--set",
        "trainer.report_to=wandb",
        *COMMON,
    ]
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]

    (record,) = _eval_records(tmp_path / "run")  # one evaluation, at step 2
    assert record["step"] == 2
    for key in EVAL_KEYS:
        assert key in record, key
    assert record["eval_problems"] == 2 and record["eval_completions"] == 2 * 4  # num_generations_eval = 4
    assert {"eval_pass@4", "eval_maj@4", "eval_reasoning_aware_pass@4"} <= set(record)
    assert 0.0 <= record["eval_reasoning_aware_accuracy"] <= record["eval_answer_accuracy"] <= 1.0
    # the same completions TRL scored for its own eval reward metric
    assert record["eval_answer_accuracy"] == pytest.approx(record["eval_rewards/accuracy/mean"])
    assert not any(k.startswith("eval_diagnostics/") for k in record)  # held-out batches stay out of them
    assert all("eval_answer_accuracy" not in h for h in _log_history(tmp_path / "run") if "loss" in h)

    (run_file,) = sorted(tmp_path.rglob("offline-run-*/run-*.wandb"))
    logged = set()
    for entry in read_records(run_file):
        if entry.WhichOneof("record_type") == "history":
            logged.update(item.key or "/".join(item.nested_key) for item in entry.history.item)
    for key in (
        "eval/answer_accuracy",
        "eval/answer_accuracy_stderr",
        "eval/reasoning_aware_accuracy",
        "eval/inflation",
        "eval/pass@4",
    ):
        assert key in logged, sorted(k for k in logged if k.startswith("eval/"))


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["process_grpo", "ppo"])
def test_process_grpo_and_ppo_log_held_out_accuracy(tmp_path, variant):
    extra = {
        "process_grpo": ["--set", "trainer.credit=process"],
        "ppo": [
            "--set",
            "trainer.algorithm=ppo",
            "--set",
            "trainer.credit=process",
            "--set",
            f"rewards.steps={{type: {STEP_REWARD}, weight: 1.0}}",
        ],
    }[variant]
    code = cli.main(["train", str(TINY), "--output-dir", str(tmp_path / "run"), *COMMON, *extra])
    assert code == 0
    (record,) = _eval_records(tmp_path / "run")
    for key in EVAL_KEYS:
        assert key in record, key
    # GRPO samples num_generations_eval (4) completions per held-out prompt, PPO one
    assert record["eval_problems"] == 2
    assert record["eval_completions"] == (2 if variant == "ppo" else 8)
    assert record["eval_inflation"] == pytest.approx(
        record["eval_answer_accuracy"] - record["eval_reasoning_aware_accuracy"]
    )
    assert "eval_rewards/judge/mean" in record
