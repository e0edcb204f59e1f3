"""The terminal line of a logging step: short, with what a researcher watches."""

from __future__ import annotations

from procrl.observe.console import console_line
from tests.helpers.cli import ONE_STEP, cli
from tests.helpers.launch import TINY_RECIPE


def test_console_line_keeps_the_watched_numbers_and_drops_the_rest():
    logs = {
        "loss": 0.005708,
        "grad_norm": 0.283,
        "reward": -0.1749,
        "rewards/accuracy/mean": 0.09375,
        "rewards/accuracy/std": 0.29,
        "rewards/first_error/mean": -0.9062,
        "rewards/first_error/fallback/filled": 0,
        "diagnostics/reasoning_aware_accuracy": 0.09375,
        "diagnostics/inflation": 0.0,
        "diagnostics/hacking_suspect": 0.0,
        "diagnostics/first_error/relative_bin_0": 0.72,
        "step_time": 3.853,
    }
    line = console_line(logs, 5, 100)
    assert line == (
        "step 5/100 | loss 0.005708 | reward -0.1749 | accuracy 0.09375 | first_error -0.9062 | "
        "reasoning-aware 0.09375 | inflation 0 | hacking_suspect 0 | 3.9 s/step"
    )
    assert "done: 100 steps in 183 s" in console_line({"train_runtime": 183.2, "train_loss": 0.1}, 100, 100)
    assert console_line({"eval_loss": 0.5, "eval_answer_accuracy": 0.4}, 10, 100) == "step 10/100 | eval answer 0.4"
    assert console_line({"ppo/kl": 0.01}, 3, 10) == "step 3/10 | ppo/kl 0.01"


def test_a_run_ends_with_one_summary_line_naming_the_saved_model(tmp_path, capsys):
    """The summary comes after the final save (transformers logs it before), as the last line."""
    out = tmp_path / "run"
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP, "--set", "trainer.logging_steps=1")
    assert result.code == 0, result.err[-3000:]
    lines = result.out.strip().splitlines()
    assert [line for line in lines if line.startswith("done:")] == lines[-1:], lines
    assert lines[-1].startswith("done: 1 step in ") and f"; the model is in {out} (every metric" in lines[-1]
    assert any(line.startswith("step 1/1 | loss ") for line in lines[:-1]), lines
    assert (out / "model.safetensors").is_file()
