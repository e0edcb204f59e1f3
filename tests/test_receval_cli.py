"""ReCEval through the command line: `procrl check` of the 7B recipe, `procrl score` on GSM8K
reference solutions and a tiny GRPO run, all on CPU with tiny local models."""

from __future__ import annotations

import json
import math

import pytest

from procrl.launch import cli
from procrl.rewards.scorers.nli import write_tiny_nli_model

NAMES = ("receval_correctness", "receval_informativeness")


@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory):
    return write_tiny_nli_model(
        tmp_path_factory.mktemp("nli") / "model", id2label={0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}, seed=1
    )


def test_check_7b_recipe_loads_no_model(repo_root, capsys):
    assert cli.main(["check", str(repo_root / "recipes" / "gsm8k_receval.yaml")]) == 0
    out = capsys.readouterr().out
    assert "not scored: loads MoritzLaurer/DeBERTa-v3-large-mnli-fever-anli-ling-wanli" in out
    assert "not scored: loads the trainer's reference model" in out


def test_score_gsm8k_references_with_tiny_models(repo_root, gsm8k_train, tiny_nli, tmp_path, capsys):
    rows = [json.loads(line) for line in gsm8k_train.read_text().splitlines()[:12]]
    source = tmp_path / "in.jsonl"
    source.write_text(
        "".join(
            json.dumps({"question": r["question"], "completion": r["answer"], "answer": r["answer"]}) + "\n"
            for r in rows
        )
    )
    output = tmp_path / "out.jsonl"
    code = cli.main(
        [
            "score",
            "--recipe",
            str(repo_root / "recipes" / "gsm8k_receval.yaml"),
            "--input",
            str(source),
            "--output",
            str(output),
            "--quiet",
            "--set",
            f"rewards.receval_correctness.nli_model={tiny_nli}",
            "--set",
            "rewards.receval_informativeness.lm=procrl:tiny-qwen2",
        ]
    )
    assert code == 0
    scored = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(scored) == 12
    for row in scored:
        correctness = row["rewards"]["receval_correctness"]
        informativeness = row["rewards"]["receval_informativeness"]
        assert correctness is not None and 0.0 <= correctness <= 1.0
        assert informativeness is not None and -1.0 <= informativeness <= 1.0
        assert row["rewards"]["accuracy"] == 1.0
        for name, low in (("receval_correctness", 0.0), ("receval_informativeness", -1.0)):
            details = row["diagnostics"][name]
            assert row["rewards"][name] == pytest.approx(details["step_values"][details["min_step"]])
            step_values = [step["scores"][name] for step in row["steps"]]
            assert step_values == pytest.approx(details["step_values"])
            assert all(math.isfinite(v) and low <= v <= 1.0 for v in step_values)
    assert "receval_correctness" in capsys.readouterr().out


@pytest.mark.slow  # ~20 s each on 2 cores
@pytest.mark.parametrize(
    "reference",
    [
        ["--set", "trainer.beta=0.04"],  # TRL's ref_model
        ["--set", "model.lora={r: 4, lora_alpha: 8, target_modules: [q_proj, v_proj]}"],  # adapters disabled
    ],
    ids=["ref_model", "lora_policy"],
)
def test_tiny_training_logs_both_components(tiny_recipe, tiny_nli, tmp_path, reference):
    output_dir = tmp_path / "run"
    code = cli.main(
        [
            "train",
            str(tiny_recipe),
            "--output-dir",
            str(output_dir),
            "--set",
            "trainer.max_steps=2",
            "--set",
            "trainer.save_steps=100",
            *reference,
            "--set",
            f"rewards.receval_correctness.nli_model={tiny_nli}",
            "--set",
            "rewards.receval_informativeness.lm=reference",
        ]
    )
    assert code == 0
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    steps = [entry for entry in history if "rewards/receval_correctness/mean" in entry]
    assert len(steps) == 2
    for entry in steps:
        assert 0.0 <= entry["rewards/receval_correctness/mean"] <= 1.0
        assert "rewards/receval_informativeness/mean" in entry
        assert (
            "rewards/receval_informativeness/ig_mean" in entry
            or entry["rewards/receval_informativeness/failures/no_answer"] == 4
        )
        assert "rewards/receval_informativeness/failures/exception" not in entry
        assert "rewards/receval_correctness/failures/exception" not in entry


@pytest.mark.slow
def test_training_without_a_reference_model_counts_failures_and_goes_on(tiny_recipe, tiny_nli, tmp_path):
    output_dir = tmp_path / "run"
    code = cli.main(
        [
            "train",
            str(tiny_recipe),
            "--output-dir",
            str(output_dir),
            "--set",
            "trainer.max_steps=1",
            "--set",
            "trainer.save_steps=100",
            "--set",
            "trainer.beta=0.0",
            "--set",
            "rewards.receval_informativeness.lm=reference",
        ]
    )
    assert code == 0
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    entry = next(e for e in history if "rewards/accuracy/mean" in e)
    assert entry["rewards/receval_informativeness/failures/exception"] == 4


@pytest.mark.slow  # ~45 s: two DeepSpeed ZeRO-3 ranks over gloo
def test_zero3_two_ranks_reference_model_and_nli(repo_root, tiny_recipe, tiny_nli, tmp_path):
    """Under ZeRO-3 the NLI model loads whole (not partitioned) and the sharded reference model
    runs the same number of forward passes on every rank (batch_size 1 makes the counts differ)."""
    import os
    import subprocess
    import sys

    output_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(repo_root / "launch" / "accelerate" / "zero3.yaml"),
        "--num_processes",
        "2",
        "-m",
        "procrl.run",
        str(tiny_recipe),
        "--output-dir",
        str(output_dir),
        "--set",
        "trainer.max_steps=2",
        "--set",
        "trainer.save_steps=100",
        "--set",
        "trainer.beta=0.04",
        "--set",
        f"rewards.receval_correctness.nli_model={tiny_nli}",
        "--set",
        "rewards.receval_informativeness.lm=reference",
        "--set",
        "rewards.receval_informativeness.batch_size=1",
    ]
    result = subprocess.run(command, cwd=repo_root, env=dict(os.environ), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    steps = [entry for entry in history if "rewards/receval_correctness/mean" in entry]
    assert len(steps) == 2
    for entry in steps:
        assert "rewards/receval_informativeness/mean" in entry
        assert not any(key.endswith("failures/exception") for key in entry)
