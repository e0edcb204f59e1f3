"""The terminal line of a logging step: short, with what a researcher watches."""

from __future__ import annotations

from procrl.observe.console import console_line


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
