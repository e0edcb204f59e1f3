"""Every piece of work is bounded: a custom reward that never returns gets a deadline (its samples
the fallback, counted as ``timeout``), and ``score --output FIFO`` says it waits for a reader."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from procrl.core.config import ConfigError
from procrl.rewards import RewardBatch, RewardComponent, RewardMix, RewardOutput, parse_rewards
from tests.helpers.cli import GOOD_ROWS, ONE_STEP, assert_one_line_error, cli, procrl_run, reward_module, write_rows
from tests.helpers.launch import REPO, TINY_RECIPE

RELEASE = threading.Event()  # set at the end of each test: the stuck calls of this process return


@pytest.fixture(autouse=True)
def release_stuck_calls():
    RELEASE.clear()
    yield
    RELEASE.set()


def never_returns(prompts, completions, **kwargs):
    RELEASE.wait(10**6)  # time.sleep(10**6), but released when the test ends
    return [1.0] * len(completions)


class NeverReturns(RewardComponent):
    def score(self, batch):
        RELEASE.wait(10**6)
        return RewardOutput(scores=[1.0] * len(batch))


class NeverReturnsAsync(RewardComponent):
    is_async = True

    async def ascore(self, batch):
        await asyncio.sleep(10**6)
        return RewardOutput(scores=[1.0] * len(batch))


def batch_of(n: int = 3) -> RewardBatch:
    return RewardBatch.from_texts(
        [f"{i} + 1 = {i + 1}\n#### {i + 1}" for i in range(n)], golds=[str(i + 1) for i in range(n)]
    )


@pytest.mark.parametrize("target", ["never_returns", "NeverReturns"])
def test_a_custom_reward_that_never_returns_gets_its_fallback_at_the_deadline(target):
    mix = RewardMix(
        parse_rewards(
            {
                "accuracy": {},
                "stuck": {"type": f"tests.test_reliability_hangs:{target}", "deadline_s": 0.3, "fallback": -1.0},
            }
        )
    )
    outputs = mix.score_all(batch_of())  # returns at all: the deadline, not the sleep
    assert outputs["stuck"].scores == [-1.0] * 3 and outputs["stuck"].failures == {"timeout": 3}
    assert "0.3 s deadline (rewards.stuck.deadline_s)" in outputs["stuck"].details[0]["error"]
    assert outputs["accuracy"].scores == [1.0] * 3
    # the abandoned call still runs: the next batch gets the fallback at once, without a second stuck thread
    threads = threading.active_count()
    again = mix.score_all(batch_of(2))
    assert again["stuck"].failures == {"timeout": 2} and "has not returned" in again["stuck"].details[0]["error"]
    assert threading.active_count() == threads
    RELEASE.set()  # once it returns, the component is called again
    while any(t.name == "procrl-reward-stuck" for t in threading.enumerate()):
        time.sleep(0.01)
    assert mix.score_all(batch_of(2))["stuck"].scores == [1.0, 1.0]


def test_an_async_reward_past_its_deadline_is_cancelled():
    mix = RewardMix(
        parse_rewards(
            {"stuck": {"type": "tests.test_reliability_hangs:NeverReturnsAsync", "deadline_s": 0.3, "fallback": 0.0}}
        )
    )
    output = asyncio.run(mix.acompute("stuck", batch_of()))
    assert output.failures == {"timeout": 3} and output.scores == [0.0] * 3
    assert "cancelled" in output.details[0]["error"]
    assert mix.compute("stuck", batch_of(2)).failures == {"timeout": 2}  # the blocking path too


def test_the_deadline_setting_defaults_and_is_validated(capsys):
    specs = {
        s.name: s
        for s in parse_rewards(
            {
                "accuracy": {},
                "custom": {"type": "tests.test_reliability_hangs:never_returns"},
                "none": {"type": "tests.test_reliability_hangs:never_returns", "deadline_s": None},
            }
        )
    }
    assert specs["accuracy"].deadline_s is None  # built-ins bound their own work
    assert specs["custom"].deadline_s == 600.0 and specs["none"].deadline_s is None
    assert "deadline_s" not in specs["custom"].settings  # a common key, not passed to the function
    for bad in (0, -1, "soon", float("inf")):
        with pytest.raises(ConfigError, match=r"rewards.custom.deadline_s: expected a positive number of seconds"):
            parse_rewards({"custom": {"type": "tests.test_reliability_hangs:never_returns", "deadline_s": bad}})
    assert_one_line_error(
        cli(capsys, "check", TINY_RECIPE, "--set", "rewards.accuracy.deadline_s=0"),
        "rewards.accuracy.deadline_s",
        "positive",
    )


def test_a_reward_fast_within_its_deadline_is_unchanged():
    import torch

    seen = {}

    class Sees(RewardComponent):
        def score(self, batch):
            seen["grad"] = torch.is_grad_enabled()
            return RewardOutput(scores=[0.5] * len(batch))

    from procrl.rewards.spec import ComponentSpec

    mix = RewardMix([ComponentSpec("sees", "tests:Sees", 1.0, None, "group_mean", Sees.Settings(), Sees, 5.0)])
    with torch.no_grad():  # thread-local: the worker gets the caller's mode
        assert mix.score_all(batch_of())["sees"].scores == [0.5] * 3
    assert seen["grad"] is False


def test_score_and_the_process_end_when_a_reward_never_returns(tmp_path):
    """In a subprocess: the stuck call's thread must not keep the process alive after the summary."""
    (tmp_path / "stuck_reward.py").write_text(
        "import time\n\ndef stuck(prompts, completions, **kwargs):\n"
        "    time.sleep(10**6)\n    return [1.0] * len(completions)\n"
    )
    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS)
    output = tmp_path / "out.jsonl"
    done = procrl_run(
        [
            "score",
            "--recipe",
            TINY_RECIPE,
            "--input",
            source,
            "--output",
            output,
            "--quiet",
            "--set",
            "rewards.trace=false",
            "--set",
            "rewards.stuck={type: 'stuck_reward:stuck', deadline_s: 1, fallback: -1.0}",
        ],
        tmp_path,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["rewards"]["stuck"] for row in rows] == [-1.0] * 3
    assert [row["rewards"]["accuracy"] for row in rows] == [1.0] * 3
    assert "failures of stuck: timeout 3" in done.stdout
    assert "no result within its 1 s deadline" in done.stderr


def test_training_goes_on_past_a_reward_that_never_returns(tmp_path, capsys, monkeypatch):
    module = reward_module(
        tmp_path, monkeypatch, "stuck_train", "from tests.test_reliability_hangs import never_returns\n"
    )
    out = tmp_path / "run"
    result = cli(
        capsys,
        "train",
        TINY_RECIPE,
        "--output-dir",
        out,
        *ONE_STEP,
        "--set",
        f"rewards.stuck={{type: '{module}:never_returns', weight: 0.5, deadline_s: 1}}",
    )
    assert result.code == 0, result.err[-3000:]
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    step = next(h for h in history if "loss" in h)
    assert step["rewards/stuck/failures/timeout"] == 4.0
    assert "rewards/accuracy/mean" in step


def test_score_says_it_waits_for_a_reader_of_a_fifo(tmp_path):
    fifo = tmp_path / "scores.fifo"
    os.mkfifo(fifo)
    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "procrl",
            "score",
            "--recipe",
            str(TINY_RECIPE),
            "--input",
            str(source),
            "--output",
            str(fifo),
            "--quiet",
            "--set",
            "rewards.trace=false",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"},
    )
    watchdog = threading.Timer(120, process.kill)  # a silent wait would block readline forever
    watchdog.start()
    try:
        said = []
        while not said or "waiting for a reader" not in said[-1]:  # each readline blocks until score says something
            said.append(process.stderr.readline())
            assert said[-1], said  # not the end of stderr
        assert f"procrl: waiting for a reader of {fifo} (--output is a FIFO)" in said[-1], said
        with open(fifo) as reader:
            rows = [json.loads(text) for text in reader]
        assert [row["rewards"]["accuracy"] for row in rows] == [1.0] * 3
        assert process.wait(timeout=120) == 0
    finally:
        watchdog.cancel()
        process.kill()
        process.wait()


# --- a reward cannot end, flood or hold the process ----------------------------------------------------


REWARDS = """
import os
import threading
import time


def exits(completions, **kwargs):
    os._exit(0)


class Mine(BaseException):
    pass


def base_exception(completions, **kwargs):
    raise Mine("not an Exception")


def generator_exit(completions, **kwargs):
    raise GeneratorExit("closed")


def floods(completions, **kwargs):
    raise ValueError("x" * 50_000_000)


def starts_a_thread(completions, **kwargs):
    threading.Thread(target=time.sleep, args=(10**6,), name="reward-worker", daemon=False).start()
    return [1.0] * len(completions)
"""


def _score_with(tmp_path, reward: str, **kwargs):
    (tmp_path / "hostile_reward.py").write_text(REWARDS)
    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS)
    output = tmp_path / "out.jsonl"
    done = procrl_run(
        [
            "score",
            "--recipe",
            TINY_RECIPE,
            "--input",
            source,
            "--output",
            output,
            "--quiet",
            "--set",
            "rewards.trace=false",
            "--set",
            f"rewards.hostile={{type: 'hostile_reward:{reward}', fallback: -1.0}}",
        ],
        tmp_path,
        pythonpath=[tmp_path],
        **kwargs,
    )
    rows = [json.loads(line) for line in output.read_text().splitlines()] if output.exists() else []
    return done, rows


@pytest.mark.parametrize("reward", ["exits", "base_exception", "generator_exit"])
def test_a_reward_that_exits_or_raises_a_base_exception_fails_like_any_other(tmp_path, reward):
    """os._exit(0) in a custom reward ended score with exit 0, no output and no message; a
    BaseException subclass or GeneratorExit was a traceback. Each is the reward's failure: its
    fallback, the failure counted, the other components' scores kept."""
    done, rows = _score_with(tmp_path, reward)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [row["rewards"]["hostile"] for row in rows] == [-1.0] * 3  # the fallback
    assert [row["rewards"]["accuracy"] for row in rows] == [1.0] * 3
    assert "failures of hostile: exception 3" in done.stdout
    assert "Traceback" not in done.stderr
    said = {"exits": "os._exit(0)", "base_exception": "Mine: not an Exception", "generator_exit": "GeneratorExit"}
    assert said[reward] in rows[0]["diagnostics"]["hostile"]["error"]


def test_a_reward_that_exits_does_not_end_training(tmp_path):
    (tmp_path / "hostile_reward.py").write_text(REWARDS)
    out = tmp_path / "run"
    done = procrl_run(
        [
            "train",
            TINY_RECIPE,
            "--output-dir",
            out,
            *ONE_STEP,
            "--set",
            "rewards.hostile={type: 'hostile_reward:exits'}",
        ],
        tmp_path,
        pythonpath=[tmp_path],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    assert next(h for h in history if "loss" in h)["rewards/hostile/failures/exception"] == 4.0


def test_a_rewards_50_mb_message_is_cut(tmp_path):
    """A reward raising a 50 MB message wrote 250 MB to stderr (and as much into the rows)."""
    done, rows = _score_with(tmp_path, "floods")
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(done.stderr) < 100_000 and (tmp_path / "out.jsonl").stat().st_size < 100_000
    assert "(50,000,000 characters)" in rows[0]["diagnostics"]["hostile"]["error"]


def test_a_reward_that_leaves_a_thread_running_does_not_keep_the_process(tmp_path):
    """The rows were written and the process never exited: Python waits for every thread that
    is not a daemon. procrl ends when its command is done, naming the thread it did not wait for."""
    done, rows = _score_with(tmp_path, "starts_a_thread", timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [row["rewards"]["hostile"] for row in rows] == [1.0] * 3
    assert "not waiting for reward-worker" in done.stderr


def test_score_says_it_waits_for_a_writer_of_an_input_fifo(tmp_path):
    """--input FIFO with no writer blocked without a word."""
    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    output = tmp_path / "out.jsonl"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "procrl",
            "score",
            "--recipe",
            str(TINY_RECIPE),
            "--input",
            str(fifo),
            "--output",
            str(output),
            "--quiet",
            "--set",
            "rewards.trace=false",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"},
    )
    watchdog = threading.Timer(120, process.kill)  # a silent wait would block readline forever
    watchdog.start()
    try:
        said = []
        while not said or "waiting for a writer" not in said[-1]:
            said.append(process.stderr.readline())
            assert said[-1], said
        assert f"procrl: waiting for a writer of {fifo} (--input is a FIFO)" in said[-1], said
        with open(fifo, "w") as writer:
            writer.write("".join(json.dumps(row) + "\n" for row in GOOD_ROWS))
        assert process.wait(timeout=120) == 0
        assert len(output.read_text().splitlines()) == 3
    finally:
        watchdog.cancel()
        process.kill()
        process.wait()
