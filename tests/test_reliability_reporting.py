"""What procrl reports is what happened: a reward returning the wrong number of scores is counted
by ``score`` as by training; ``evaluate --split`` names a folder, never a path out of the output
dir; ``train --num_processes 0`` is refused as ``launch.num_processes: 0`` is; a reward's print()
goes to stderr, so ``score --output /dev/stdout`` prints rows alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from procrl.evaluation.evaluate import run as ev
from tests.helpers.cli import ONE_STEP, assert_one_line_error, cli, procrl_run
from tests.helpers.launch import TINY_RECIPE

REWARDS = """
def short(completions, **kwargs):
    return [0.5]  # one score, whatever the batch


def chatty(completions, **kwargs):
    print("chatty reward: scoring", len(completions), "completions")
    return [1.0 for _ in completions]
"""

ROWS = [{"question": f"{n}+1?", "completion": f"{n}+1={n + 1} #### {n + 1}", "answer": str(n + 1)} for n in range(3)]


@pytest.fixture
def rewards(tmp_path, monkeypatch):
    (tmp_path / "odd_rewards.py").write_text(REWARDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    return rows


def test_a_wrong_length_reward_is_counted_by_score_as_by_training(tmp_path, capsys, rewards):
    from procrl.evaluation.score import score_file
    from procrl.recipe import load_recipe
    from procrl.rewards import RewardBatch, RewardMix

    overrides = ["rewards.short={type: odd_rewards:short, weight: 0.5, fallback: 0.0}"]
    recipe = load_recipe(TINY_RECIPE, overrides, scoring=True)
    # the scoring core training calls once per batch (the TRL adapter's)
    trained = RewardMix(recipe.rewards).score_all(
        RewardBatch.from_texts(
            [r["completion"] for r in ROWS], [r["question"] for r in ROWS], [r["answer"] for r in ROWS]
        )
    )["short"]
    assert trained.failures == {"wrong_length": 3} and trained.scores == [0.0, 0.0, 0.0]
    reported: list[str] = []
    summary = score_file(
        RewardMix(recipe.rewards),
        str(rewards),
        str(tmp_path / "scored.jsonl"),
        batch_size=3,
        progress=False,
        report=reported.append,
    )
    assert summary.failures["short"] == {"wrong_length": 3}
    scored = [json.loads(line) for line in (tmp_path / "scored.jsonl").read_text().splitlines()]
    assert [row["rewards"]["short"] for row in scored] == [0.0, 0.0, 0.0]
    assert reported == [
        f"{rewards}:1-3: short returned the wrong number of scores for this batch of 3 rows "
        "(wrong_length); each row scored with its fallback"
    ]
    result = cli(
        capsys,
        "score",
        "--recipe",
        TINY_RECIPE,
        "--set",
        overrides[0],
        "--input",
        rewards,
        "--output",
        tmp_path / "again.jsonl",
        "--quiet",
    )
    assert "failures of short: wrong_length 3" in result.out and "short returned the wrong number" in result.err


def test_evaluate_split_names_a_folder_inside_the_output_dir(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(
        ev, "generate_completions", lambda source, prompts, *a, **k: (["#### 1"] * len(prompts), "transformers")
    )
    out = tmp_path / "a" / "b" / "c" / "out"
    problems = tmp_path / "problems.jsonl"  # a local file: it has no splits, so any --split is taken
    problems.write_text("".join(json.dumps({"question": r["question"], "answer": r["answer"]}) + "\n" for r in ROWS))
    result = cli(
        capsys,
        "evaluate",
        "--recipe",
        TINY_RECIPE,
        "--set",
        "rewards.trace=false",
        "--set",
        f"output_dir={out}",
        "--set",
        f"data.dataset={problems}",
        "--model",
        "procrl:tiny-qwen2",
        "--limit",
        "2",
        "--split",
        "../../../x",
    )
    assert result.code == 0, result.err[-3000:]
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("report.json"))
    assert written == [str(Path("a/b/c/out/eval-x-procrl-tiny-qwen2/report.json"))]
    assert json.loads((out / "eval-x-procrl-tiny-qwen2" / "report.json").read_text())["split"] == "../../../x"


@pytest.mark.parametrize("flag", [["--num_processes", "0"], ["--num_processes=0"], ["--num_machines", "0"]])
def test_train_num_processes_0_is_refused_as_in_a_recipe(tmp_path, capsys, flag):
    name = flag[0].split("=")[0]
    recipe = cli(
        capsys,
        "train",
        TINY_RECIPE,
        "--output-dir",
        tmp_path / "run",
        *ONE_STEP,
        "--set",
        f"launch.{name.lstrip('-')}=0",
    )
    assert_one_line_error(recipe, f"launch.{name.lstrip('-')}: must be >= 1, got 0")
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", tmp_path / "run", *ONE_STEP, *flag)
    assert_one_line_error(result, f"{name}: must be >= 1, got 0")
    assert not (tmp_path / "run").exists()


def test_a_rewards_print_never_reaches_score_rows_on_stdout(tmp_path, rewards):
    done = procrl_run(
        [
            "score",
            "--recipe",
            TINY_RECIPE,
            "--set",
            "rewards.chatty={type: odd_rewards:chatty, weight: 0.1}",
            "--input",
            rewards,
            "--output",
            "/dev/stdout",
            "--quiet",
        ],
        tmp_path,
        pythonpath=[tmp_path],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]  # every line a row
    assert [row["rewards"]["chatty"] for row in rows] == [1.0, 1.0, 1.0]
    assert "chatty reward: scoring 3 completions" in done.stderr
