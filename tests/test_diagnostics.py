"""Process diagnostics: the pure functions on hand-built RewardOutputs (numbers computed by hand),
the batch observer through a real RewardMix and TRL's reward-function contract, the callback's
time shares, and (slow) a W&B offline run of the tiny recipe read back from its run file."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from procrl.observe import plots
from procrl.observe import stats as diag
from procrl.observe.callback import DiagnosticsCallback
from procrl.rewards import RewardBatch, RewardMix, RewardOutput

REPO = Path(__file__).resolve().parent.parent


# --- correlations -------------------------------------------------------------------------


def test_pearson_matches_statistics_and_skips_none():
    xs = [0.1, 0.5, None, 0.9, 0.3, 0.7]
    ys = [1.0, 2.5, 7.0, 2.0, None, 4.0]
    pairs = [(x, y) for x, y in zip(xs, ys) if x is not None and y is not None]
    expected = statistics.correlation([p[0] for p in pairs], [p[1] for p in pairs])
    assert diag.pearson(xs, ys) == pytest.approx(expected)
    assert diag.pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_pearson_undefined_cases_are_none():
    assert diag.pearson([1.0, 1.0, 1.0], [0.0, 1.0, 2.0]) is None  # constant side
    assert diag.pearson([1.0, None], [2.0, 3.0]) is None  # one usable pair
    assert diag.pearson([], []) is None


def test_component_correlations_only_defined_pairs():
    result = diag.component_correlations({"a": [0.0, 1.0, 2.0], "b": [0.0, 2.0, 4.0], "c": [1.0, 1.0, 1.0]})
    assert result == {"a~b": pytest.approx(1.0)}


# --- first error and process error rate ------------------------------------------------------


def _judge_output(indices, steps):
    scores = [None if k is None else (-(n - k) / n if k >= 0 else 0.0) for k, n in zip(indices, steps)]
    details = [
        {"index": k, "num_steps": n, "category": None, "verdict": "ok" if k is not None else "no_verdict"}
        for k, n in zip(indices, steps)
    ]
    return RewardOutput(scores=scores, details=details)


def test_process_error_stats_by_hand():
    correct = [True, True, True, False, False, None]
    records = diag.first_error_records(_judge_output([-1, 2, None, -1, 0, -1], [3, 4, 2, 3, 2, 5]))
    stats = diag.process_error_stats(correct, records)
    assert stats["answer_accuracy"] == pytest.approx(3 / 6)
    assert stats["reasoning_aware_accuracy"] == pytest.approx(1 / 6)  # only sample 0: right and no error
    assert stats["inflation"] == pytest.approx(2 / 6)
    assert stats["process_error_rate"] == pytest.approx(1 / 2)  # right with a verdict: 0, 1; flawed: 1
    assert stats["first_error_unjudged"] == 1
    without_judge = diag.process_error_stats(correct, None)
    assert without_judge["reasoning_aware_accuracy"] is None and without_judge["inflation"] is None


def test_first_error_scalars_and_relative_bins():
    records = diag.first_error_records(_judge_output([0, 3, -1, None, 1], [4, 4, 2, 3, 2]))
    out = diag.first_error_scalars(records)
    assert out["error_found_rate"] == pytest.approx(3 / 4)
    assert out["mean_index"] == pytest.approx((0 + 3 + 1) / 3)
    relative = [0 / 4, 3 / 4, 1 / 2]
    assert out["mean_relative_position"] == pytest.approx(sum(relative) / 3)
    # bins of width 0.2: 0.0 -> bin 0, 0.5 -> bin 2, 0.75 -> bin 3
    assert [out[f"relative_bin_{i}"] for i in range(5)] == pytest.approx([1 / 3, 0, 1 / 3, 1 / 3, 0])


def test_first_error_records_take_step_count_from_segmentation_when_missing():
    output = RewardOutput(scores=[-0.5, None], details=[{"index": 1}, {"index": "x"}])
    records = diag.first_error_records(output, num_steps=[2, 3])
    assert records == [diag.FirstErrorRecord(1, 2), diag.FirstErrorRecord(None, 3)]


def test_histogram_edges():
    assert diag.histogram([0.0, 0.2, 0.39, 1.0, 1.5, -0.1], [0.0, 0.2, 0.4, 1.0]) == [1, 2, 1]


# --- TRACE and ReCEval -----------------------------------------------------------------------


def _trace_output():
    counts = [[0] * 8 for _ in range(8)]
    counts[1][0] = 3  # Data/Evidence -> Claim
    counts[1][2] = 1  # Data/Evidence -> Warrant
    counts[6][6] = 2  # Monitoring -> Monitoring
    return RewardOutput(
        scores=[0.8, 0.4],
        metrics={"state_validity": 0.75, "transition_coherence": 0.2},
        extras={"transition_counts": counts, "labels": diag.TRACE_LABELS},
    )


def test_row_normalized_transition_matrix():
    shares = diag.row_normalized(diag.transition_counts(_trace_output()))
    assert shares[1][0] == pytest.approx(0.75) and shares[1][2] == pytest.approx(0.25)
    assert shares[6][6] == 1.0 and sum(shares[0]) == 0.0


def test_receval_stats_by_hand():
    output = RewardOutput(
        scores=[0.2, 0.5, None],
        details=[
            {"min_step": 1, "step_values": [0.9, 0.2, 0.6]},
            {"min_step": 0, "step_values": [0.5, 0.7]},
            {"min_step": None, "step_values": []},
        ],
    )
    stats = diag.receval_stats(output)
    assert stats["min_step_mean"] == pytest.approx(0.5)
    assert stats["min_step_relative_mean"] == pytest.approx((1 / 3 + 0) / 2)
    assert stats["step_value_mean"] == pytest.approx((0.9 + 0.2 + 0.6 + 0.5 + 0.7) / 5)
    assert diag.receval_position_profile(output, 4) == pytest.approx([0.7, 0.45, 0.6, None])


def test_component_kinds_by_shape_not_name():
    outputs = {
        "acc": RewardOutput(scores=[1.0]),
        "judge_a": _judge_output([-1], [2]),
        "structure": _trace_output(),
        "steps_ok": RewardOutput(scores=[0.3], details=[{"min_step": 0, "step_values": [0.3]}]),
        "fmt": RewardOutput(scores=[1.0]),
    }
    types = {
        "acc": "accuracy",
        "judge_a": "my.module:Judge",
        "structure": "trace",
        "steps_ok": "receval_correctness",
        "fmt": "format",
    }
    assert diag.component_kinds(types, outputs) == {
        "acc": "accuracy",
        "judge_a": "first_error",
        "structure": "trace",
        "steps_ok": "receval",
    }


def test_batch_scalars_keys_and_values():
    outputs = {
        "accuracy": RewardOutput(scores=[1.0, 1.0, 0.0, 1.0], seconds=0.01),
        "judge": _judge_output([-1, 1, 0, None], [2, 2, 3, 2]),
        "trace": _trace_output(),
    }
    outputs["trace"].scores = [0.9, 0.1, 0.5, 0.7]
    scalars = diag.batch_scalars({"accuracy": "accuracy", "judge": "first_error", "trace": "trace"}, outputs)
    assert scalars["diagnostics/process_error_rate"] == pytest.approx(1 / 2)  # right+judged: 0, 1; flawed: 1
    assert scalars["diagnostics/reasoning_aware_accuracy"] == pytest.approx(1 / 4)
    assert scalars["diagnostics/inflation"] == pytest.approx(3 / 4 - 1 / 4)
    assert scalars["diagnostics/first_error/error_found_rate"] == pytest.approx(2 / 3)
    assert scalars["diagnostics/trace/transitions"] == 6
    assert scalars["diagnostics/seconds/accuracy"] == pytest.approx(0.01)
    expected = statistics.correlation([1.0, 1.0, 0.0, 1.0], [0.9, 0.1, 0.5, 0.7])
    assert scalars["diagnostics/correlation/accuracy~trace"] == pytest.approx(expected)
    assert all(isinstance(v, float) for v in scalars.values())


def test_step_rows_mark_first_error_and_carry_step_scores():
    batch = RewardBatch.from_texts(["Step 1: 2 + 2 = 4.\n\nStep 2: 4 * 3 = 13.\n\nThe answer is 13."], ["q"], ["12"])
    judge = _judge_output([1], [2])
    judge.step_scores = [[0.0, -1.0]]
    rows = diag.step_rows(batch, {"judge": judge, "accuracy": RewardOutput(scores=[0.0])}, {"judge": "first_error"})
    lines = rows[0]["steps"].splitlines()
    assert lines[0].startswith("(0) [judge=0]") and "FIRST ERROR" not in lines[0]
    assert lines[1].startswith("(1) [judge=-1] <- FIRST ERROR") and "4 * 3 = 13" in lines[1]
    assert rows[0]["first_error"] == 1 and rows[0]["reward/accuracy"] == 0.0


def test_plots_render_png():
    records = diag.first_error_records(_judge_output([0, 2, -1, 1], [3, 4, 2, 2]))
    figures = [
        plots.plot_first_error_histogram(records),
        plots.plot_transition_heatmap(diag.transition_counts(_trace_output())),
        plots.plot_component_distributions({"a": [0.1, 0.5, None], "b": [1.0, 0.0, 1.0]}),
    ]
    for figure in figures:
        assert plots.figure_png(figure).startswith(b"\x89PNG")
    heatmap_cells = [t for t in figures[1].axes[0].texts]
    assert sorted(t.get_text() for t in heatmap_cells) == ["1", "2", "3"]  # one count per non-zero cell


# --- observer through the mix (TRL's reward-function contract), callback time shares --------------


def _mix_with_hand_components():
    return RewardMix.from_recipe_rewards(
        {
            "accuracy": {"weight": 1.0},
            "judge": {"type": "first_error", "backend": "arithmetic", "weight": 0.5},
            "trace": {"type": "trace", "tagger": "cues", "weight": 0.1},
        }
    )


def _trl_call(mix, completions, answers, metrics, extras):
    kwargs = {
        "answer": answers,
        "question": ["q"] * len(completions),
        "trainer_state": None,
        "log_metric": lambda name, value: metrics.setdefault(name, []).append(value),
        "log_extra": lambda column, values: extras.setdefault(column, []).extend(values),
    }
    # as TRL does: synchronous reward functions one after the other, then the async ones together
    results = [f(prompts=["p"] * len(completions), completions=completions, **kwargs) for f in mix.reward_functions()]

    async def gather():
        return await asyncio.gather(*[r for r in results if inspect.isawaitable(r)])

    awaited = iter(asyncio.run(gather()))
    return [next(awaited) if inspect.isawaitable(r) else r for r in results]


def test_observer_logs_once_per_batch_after_the_last_component():
    mix = _mix_with_hand_components()
    callback = DiagnosticsCallback.attach(mix)
    completions = [
        "Step 1: 3 + 4 = 7.\n\nStep 2: 7 * 2 = 14.\n\nThe answer is 14.",  # right, sound
        "Step 1: 3 + 4 = 8.\n\nStep 2: 8 * 2 = 14.\n\nThe answer is 14.",  # right, first error at 0
        "Step 1: 3 + 4 = 7.\n\nStep 2: 7 * 2 = 15.\n\nThe answer is 15.",  # wrong, error at 1
    ]
    metrics, extras = {}, {}
    _trl_call(mix, completions, ["14", "14", "14"], metrics, extras)
    assert metrics["diagnostics/reasoning_aware_accuracy"] == [pytest.approx(1 / 3)]  # logged once
    assert metrics["diagnostics/process_error_rate"] == [pytest.approx(1 / 2)]
    assert metrics["diagnostics/inflation"] == [pytest.approx(2 / 3 - 1 / 3)]
    assert metrics["diagnostics/first_error/mean_index"] == [pytest.approx(0.5)]
    assert extras["first_error"] == [-1, 0, 1]
    assert callback._window.first_errors == {
        "judge": [diag.FirstErrorRecord(-1, 2), diag.FirstErrorRecord(0, 2), diag.FirstErrorRecord(1, 2)]
    }
    # a second batch is observed again
    _trl_call(mix, completions[:1], ["14"], metrics, extras)
    assert len(metrics["diagnostics/reasoning_aware_accuracy"]) == 2


def test_observer_failure_never_reaches_training():
    mix = _mix_with_hand_components()

    def broken(*args):
        raise RuntimeError("boom")

    mix.batch_observers.append(broken)
    rewards = _trl_call(mix, ["The answer is 3."], ["3"], {}, {})
    assert rewards[0] == [1.0]


def test_on_log_adds_time_share_to_logs_and_log_history(monkeypatch):
    import itertools

    from transformers import TrainerState

    import procrl.observe.callback as callback_module

    # a clock that advances 0.25 s a reading: observing one batch (two readings) costs 0.25 s
    clock = itertools.count(0.0, 0.25)
    monkeypatch.setattr(callback_module, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    callback = DiagnosticsCallback({"a": "accuracy", "b": "format"})
    batch = RewardBatch.from_texts(["x"])
    callback.observe(
        batch, {"a": RewardOutput(scores=[1.0], seconds=0.2), "b": RewardOutput(scores=[0.0], seconds=0.05)}, None, None
    )
    callback.observe(
        batch, {"a": RewardOutput(scores=[1.0], seconds=0.1), "b": RewardOutput(scores=[0.0], seconds=0.05)}, None, None
    )
    state = TrainerState()
    state.global_step = 2
    logs = {"loss": 0.1, "step_time": 1.5}  # mean over the 2 steps of the window
    state.log_history.append({**logs, "step": 2})
    args = SimpleNamespace(report_to=[])
    callback.on_log(args, state, None, logs=logs)
    assert logs["diagnostics/time_share/a"] == pytest.approx(0.3 / 3.0)
    assert logs["diagnostics/time_share/b"] == pytest.approx(0.1 / 3.0)
    assert state.log_history[-1]["diagnostics/time_share/a"] == pytest.approx(0.1)
    assert logs["diagnostics/overhead_share"] == pytest.approx(2 * 0.25 / 3.0)  # two observed batches


# --- a real W&B offline run of the tiny recipe ---------------------------------------------------


@pytest.mark.slow
def test_wandb_offline_run_contains_diagnostics(tmp_path):
    from tests.helpers.wandb_records import read_records, run_file

    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    command = [
        sys.executable,
        "-m",
        "procrl",
        "train",
        str(REPO / "recipes" / "gsm8k_tiny_smoke.yaml"),
        "--output-dir",
        str(tmp_path / "run"),
        "--set",
        "trainer.max_steps=2",
        "--set",
        "trainer.report_to=wandb",
        "--set",
        "trainer.save_steps=100",
        # the tiny reasoner writes checkable steps (the random tiny model's output never is)
        "--set",
        "model.name_or_path=procrl:tiny-reasoner",
        "--set",
        "trainer.max_completion_length=64",
        # the recipe's trace (cue tagger) plus the model-free arithmetic first-error judge
        "--set",
        "rewards.judge={type: first_error, backend: arithmetic, weight: 0.1}",
    ]
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]

    history = json.loads((tmp_path / "run" / "trainer_state.json").read_text())["log_history"]
    steps = [h for h in history if "loss" in h]
    assert len(steps) == 2
    for key in (
        "diagnostics/reasoning_aware_accuracy",
        "diagnostics/inflation",
        "diagnostics/first_error/error_found_rate",
        "diagnostics/seconds/trace",
        "diagnostics/time_share/trace",
        "diagnostics/time_share/accuracy",
        "diagnostics/behaviour/steps",
        "diagnostics/behaviour/length",
        "diagnostics/behaviour/process_reward",
    ):
        assert all(key in h for h in steps), key

    items: dict[str, list] = {}
    for record in read_records(run_file(tmp_path / "wandb")):
        if record.WhichOneof("record_type") == "history":
            for item in record.history.item:
                key = item.key or "/".join(item.nested_key)
                items.setdefault(key, []).append(json.loads(item.value_json))
    for key in (
        "train/diagnostics/reasoning_aware_accuracy",
        "train/diagnostics/inflation",
        "train/diagnostics/time_share/trace",
        "train/diagnostics/seconds/judge",
    ):
        assert key in items, sorted(k for k in items if "diagnostics" in k)
    # media are stored flattened: <key>/_type, <key>/format, <key>/path ...
    assert items["train/diagnostics/trace/transition_heatmap/_type"][0] == "image-file"
    assert items["train/diagnostics/trace/transition_heatmap/format"][0] == "png"
    assert items["train/diagnostics/first_error/histogram/_type"][0] == "image-file"
    assert items["train/diagnostics/completions/_type"][0] == "table-file"
    image = items["train/diagnostics/trace/transition_heatmap/path"][0]
    assert (run_file(tmp_path / "wandb").parent / "files" / image).is_file()

    # the trained output directory is a loadable model for procrl evaluate
    from procrl.launch.cli import main as cli_main

    code = cli_main(
        [
            "evaluate",
            "--recipe",
            str(REPO / "recipes" / "gsm8k_tiny_smoke.yaml"),
            "--model",
            str(tmp_path / "run"),
            "--limit",
            "2",
            "--max-new-tokens",
            "8",
            "--output-dir",
            str(tmp_path / "eval"),
        ]
    )
    assert code == 0
    assert json.loads((tmp_path / "eval" / "report.json").read_text())["n"] == 2


def test_learning_signal_counts_groups_with_a_sound_and_a_flawed_right_answer():
    from procrl.observe.stats import FirstErrorRecord, learning_signal

    groups = ["a", "a", "a", "b", "b", "c", "c"]
    correct = [True, True, False, True, True, True, False]
    records = [
        FirstErrorRecord(-1, 3),
        FirstErrorRecord(2, 3),
        FirstErrorRecord(-1, 3),  # a: sound + flawed right
        FirstErrorRecord(1, 3),
        FirstErrorRecord(2, 3),  # b: two flawed right answers
        FirstErrorRecord(-1, 3),
        FirstErrorRecord(None, 3),
    ]  # c: no flawed right answer
    totals = [1.0, 0.5, 0.0, 0.5, 0.5, 1.0, 0.0]
    signal = learning_signal(groups, correct, records, totals)
    assert signal["diagnostics/signal/mixed_right_groups"] == 1 / 3
    assert signal["diagnostics/signal/sound_minus_flawed_reward"] == 0.5
    # group a: totals 1, 0.5, 0 -> sample std 0.5, so the advantage gap is 0.5 / 0.5
    assert signal["diagnostics/signal/sound_minus_flawed_advantage"] == pytest.approx(1.0)
    assert learning_signal(["x", "x"], [True, True], [FirstErrorRecord(-1, 2)] * 2, [1.0, 1.0]) == {
        "diagnostics/signal/mixed_right_groups": 0.0
    }
