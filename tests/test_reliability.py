"""Nothing lost, nothing hangs: checkpoints complete or absent, one run per output dir,
atomic and streaming ``procrl score``, bounded cost on hostile text, the openai judge's deadline
and retries, one-line errors instead of tracebacks, ``check`` refusing what ``train`` refuses,
redaction. The kill -9 resume runs (GRPO, PPO, ZeRO-2 x 2): tests/test_reliability_resume.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from tests.helpers.cli import (
    GOOD_ROWS,
    ONE_STEP,
    assert_one_line_error,
    cli,
    fake_checkpoint,
    procrl_run,
    reward_module,
    score,
    snapshot,
    write_rows,
)
from tests.helpers.launch import TINY_RECIPE

# --- 1. resume takes the newest complete checkpoint; saves are atomic -----------------------------


def test_resume_takes_the_newest_complete_checkpoint_and_says_why_it_skipped_others(tmp_path):
    from procrl.launch.accelerate import resume_checkpoint
    from procrl.trainers.checkpoints import find_resume_checkpoint

    fake_checkpoint(tmp_path, 2)
    (tmp_path / "checkpoint-4").mkdir()
    (tmp_path / "checkpoint-4" / "model.safetensors").write_bytes(b"w")  # killed before trainer_state.json
    truncated = fake_checkpoint(tmp_path, 5)
    (truncated / "trainer_state.json").write_text('{"global_step": 5, "log_hi')
    fake_checkpoint(tmp_path, 7)
    (tmp_path / "checkpoint-7" / "model.safetensors").unlink()  # state but no weights
    (tmp_path / "checkpoint-9").mkdir()  # empty
    assert resume_checkpoint(str(tmp_path)) == str(tmp_path / "checkpoint-2")
    point = find_resume_checkpoint(tmp_path)
    assert point.step == 2
    assert [(Path(p).name, reason.split(" (")[0]) for p, reason in point.skipped] == [
        ("checkpoint-9", "empty"),
        ("checkpoint-7", "no model weights"),
        ("checkpoint-5", "trainer_state.json is unreadable or truncated"),
        ("checkpoint-4", "no trainer_state.json"),
    ]
    assert point.describe()[0].startswith(f"resuming from {tmp_path / 'checkpoint-2'} (global step 2)")


def test_checkpoint_write_interrupted_leaves_no_checkpoint_under_its_name(tmp_path, monkeypatch):
    """transformers writes trainer_state.json last; a crash there must not leave a checkpoint-N
    that looks like one (the half-written one stays in .partial/, removed by the next start)."""
    from transformers.trainer_callback import TrainerState

    from procrl.launch.run import train
    from procrl.recipe import load_recipe

    original = TrainerState.save_to_json

    def crash_in_checkpoint_2(self, json_path):
        if Path(json_path).parent.name == "checkpoint-2":
            Path(json_path).write_text('{"global_step": 2, "log_hist')
            raise OSError(28, "No space left on device")
        return original(self, json_path)

    monkeypatch.setattr(TrainerState, "save_to_json", crash_in_checkpoint_2)
    out = tmp_path / "run"
    recipe = load_recipe(
        TINY_RECIPE,
        ["trainer.max_steps=2", "trainer.save_steps=1", "trainer.max_completion_length=8"],
        output_dir=str(out),
    )
    with pytest.raises(
        ConfigError,
        match=f"writing checkpoint-2 to {out} failed \\(.*No space left on device\\); it was "
        f"not published, {out / 'checkpoint-1'} is the newest complete checkpoint",
    ):
        train(recipe)
    assert (out / "checkpoint-1" / "trainer_state.json").is_file()
    assert not (out / "checkpoint-2").exists()
    assert (out / ".partial" / "checkpoint-2").is_dir()
    assert not (out / ".procrl.lock").exists()  # released although the run failed


def test_a_full_disk_during_a_checkpoint_is_a_one_line_error(tmp_path):
    """RLIMIT_FSIZE makes every write past 200 kB fail as a full disk would (the weights are ~430 kB)."""
    out = tmp_path / "run"
    done = procrl_run(["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP], tmp_path, limit_bytes=200_000)
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("procrl: error:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert f"writing checkpoint-1 to {out} failed" in errors[0] and "File too large" in errors[0]
    assert not (out / "checkpoint-1").exists() and not (out / ".procrl.lock").exists()


# --- 2. one run per output dir ---------------------------------------------------------------------


def test_output_dir_holding_a_run_is_refused_without_resume_or_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    fake_checkpoint(out, 4)
    (out / "trainer_state.json").write_text("{}")
    before = snapshot(out)
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP)
    line = assert_one_line_error(result, str(out), "checkpoint-4", "--resume", "--overwrite")
    assert "already holds a run" in line
    assert snapshot(out) == before


def test_overwrite_starts_afresh_and_removes_the_earlier_checkpoints(tmp_path, capsys):
    out = tmp_path / "run"
    fake_checkpoint(out, 7)
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, "--overwrite", *ONE_STEP)
    assert result.code == 0, result.err[-3000:]
    assert "--overwrite: removed checkpoint-7" in result.err
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1"]
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 1


@pytest.mark.parametrize("case", ["file", "parent_is_file"])
def test_output_dir_that_is_a_file_is_a_one_line_error(tmp_path, capsys, case):
    blocker = tmp_path / "occupied"
    blocker.write_text("not a directory\n")
    out = blocker if case == "file" else blocker / "run"
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP)
    assert_one_line_error(result, "output_dir", str(blocker))
    assert blocker.read_text() == "not a directory\n"


def test_an_unwritable_output_dir_is_a_one_line_error(tmp_path, capsys):
    if os.geteuid() == 0:  # root writes through file modes: a place the kernel refuses to anyone
        out = Path("/sys/procrl-run")
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o555)
        out = locked / "run"
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP)
    assert_one_line_error(result, "output_dir", str(out.parent if os.geteuid() else out))
    assert not out.exists()


def write_lock(out: Path, pid: int) -> None:
    from procrl.core.folders import claim_folder
    from procrl.core.processes import process_start_time
    from procrl.launch.output_dir import LOCK_FILE

    claim_folder(out, "train")  # a run marks its folder as it takes the lock
    (out / LOCK_FILE).write_text(
        json.dumps(
            {
                "pid": pid,
                "host": socket.gethostname(),
                "start_time": process_start_time(pid),
                "since": "2026-01-01 00:00:00",
                "command": "procrl train",
            }
        )
    )


def test_a_second_run_into_a_locked_output_dir_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        write_lock(out, other.pid)
        result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP)
        assert_one_line_error(result, "in use by another run", f"PID {other.pid}")
        assert sorted(p.name for p in out.iterdir()) == [".procrl-folder.json", ".procrl.lock"]
    finally:
        other.kill()
        other.wait()


def test_a_stale_lock_is_taken_over(tmp_path, capsys):
    out = tmp_path / "run"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    write_lock(out, gone.pid)
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP)
    assert result.code == 0, result.err[-3000:]
    assert f"took over a stale lock in {out} (PID {gone.pid} is no longer running)" in result.err
    assert not (out / ".procrl.lock").exists() and (out / "checkpoint-1").is_dir()


def test_the_lock_is_exclusive_and_released(tmp_path):
    from procrl.launch.output_dir import RunLock

    first = RunLock(str(tmp_path))
    assert first.acquire() is None
    record = json.loads((tmp_path / ".procrl.lock").read_text())
    assert record["pid"] == os.getpid() and record["host"] == socket.gethostname()
    with pytest.raises(ConfigError, match=f"in use by another run \\(PID {os.getpid()}"):
        RunLock(str(tmp_path)).acquire()
    first.release()
    assert not (tmp_path / ".procrl.lock").exists()
    with RunLock(str(tmp_path)):
        assert (tmp_path / ".procrl.lock").exists()
    assert not (tmp_path / ".procrl.lock").exists()


# --- 3. procrl score: atomic, streaming, row failures named -----------------------------------------


def test_score_refuses_to_write_over_its_input(tmp_path, capsys):
    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS)
    before = source.read_bytes()
    for same in (source, tmp_path / "." / "rows.jsonl"):
        assert_one_line_error(score(capsys, source, same), "--output", "is the input file")
    assert source.read_bytes() == before


def test_score_names_a_failing_row_and_scores_the_others(tmp_path, capsys, monkeypatch):
    module = reward_module(
        tmp_path,
        monkeypatch,
        "boom_on_row",
        (
            "def boom(prompts, completions, **kwargs):\n"
            "    if any('BOOM' in c for c in completions):\n"
            "        raise ValueError('cannot score BOOM')\n"
            "    return [float(len(c)) for c in completions]\n"
        ),
    )
    rows = [*GOOD_ROWS[:2], {"question": "?", "completion": "BOOM 1 + 1 = 2\n#### 2", "answer": "2"}, GOOD_ROWS[2]]
    source = write_rows(tmp_path / "rows.jsonl", rows)
    output = tmp_path / "scored.jsonl"
    result = score(
        capsys, source, output, "--set", f"rewards.length={{type: '{module}:boom', weight: 0.0, fallback: -1.0}}"
    )
    assert result.code == 0, result.err[-3000:]
    scored = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["rewards"]["length"] for row in scored] == [float(len(r["completion"])) for r in rows[:2]] + [
        -1.0,
        float(len(rows[3]["completion"])),
    ]
    assert scored[2]["diagnostics"]["length"]["error"] == "ValueError: cannot score BOOM"
    assert all(row["rewards"]["accuracy"] == 1.0 for row in scored)
    assert f"procrl: {source}:3: length failed (ValueError: cannot score BOOM); scored with its fallback" in result.err
    assert "failures of length: exception 1" in result.out


def test_score_streams_rows(monkeypatch):
    """score_rows takes an iterable and yields as it goes: an endless input gives its first rows."""
    import itertools

    from procrl.evaluation.score import score_rows
    from procrl.recipe import load_recipe
    from procrl.rewards import RewardMix

    mix = RewardMix(load_recipe(TINY_RECIPE).rewards)
    endless = ({**GOOD_ROWS[i % 3], "id": i} for i in itertools.count())
    first = list(itertools.islice(score_rows(mix, endless, batch_size=2), 5))
    assert [row["id"] for row in first] == [0, 1, 2, 3, 4]
    assert all(row["rewards"]["accuracy"] == 1.0 for row in first)


KILL_ON_THIRD_BATCH = (
    "import os, signal\n"
    "calls = []\n"
    "def killer(prompts, completions, **kwargs):\n"
    "    calls.append(1)\n"
    "    if len(calls) == 3:\n"
    "        os.kill(os.getpid(), signal.SIGKILL)\n"
    "    return [0.0 for _ in completions]\n"
)


def test_score_killed_mid_way_leaves_the_previous_output_as_it_was(tmp_path):
    (tmp_path / "kill_third.py").write_text(KILL_ON_THIRD_BATCH)
    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS * 4)
    output = tmp_path / "scored.jsonl"
    output.write_text('{"previous": "results"}\n')
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
            "--batch-size",
            "2",
            "--set",
            "rewards.killer={type: 'kill_third:killer', weight: 0.0}",
        ],
        tmp_path,
        pythonpath=[tmp_path],
        timeout=300,
    )
    assert done.returncode == -9, done.stderr[-2000:]
    assert output.read_text() == '{"previous": "results"}\n'


def test_score_on_a_full_disk_is_a_one_line_error_and_keeps_the_previous_output(tmp_path):
    """RLIMIT_FSIZE makes writes past 20 kB fail as a full disk would (EFBIG; Python ignores SIGXFSZ)."""
    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS * 40)
    output = tmp_path / "scored.jsonl"
    output.write_text('{"previous": "results"}\n')
    done = procrl_run(
        ["score", "--recipe", TINY_RECIPE, "--input", source, "--output", output, "--quiet", "--batch-size", "8"],
        tmp_path,
        limit_bytes=20_000,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("procrl: error:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert f"writing {output} failed (File too large); nothing written, {output} left as it was" in errors[0]
    assert output.read_text() == '{"previous": "results"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl", "scored.jsonl"]


@pytest.mark.parametrize("case", ["directory", "parent_is_file", "unwritable"])
def test_score_unwritable_output_is_a_one_line_error(tmp_path, capsys, case):
    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS)
    if case == "directory":
        output, words = tmp_path, ("is a directory",)
    elif case == "parent_is_file":
        output, words = source / "scored.jsonl", ("is a file",)
    elif os.geteuid() == 0:  # root writes through file modes: a place the kernel refuses to anyone
        output, words = Path("/sys/procrl-scores.jsonl"), ("cannot write in /sys",)
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o555)
        output, words = locked / "scored.jsonl", ("cannot write in", "Permission denied")
    assert_one_line_error(score(capsys, source, output), "--output", *words)
    assert not Path(output).is_file()


def test_score_batch_size_must_be_positive(tmp_path, capsys):
    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS)
    for size in ("0", "-3"):
        result = score(capsys, source, tmp_path / "out.jsonl", "--batch-size", size)
        assert result.code == 2 and "Traceback" not in result.err
        assert "error: argument --batch-size: must be a positive integer" in result.err
        assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    "case",
    ["latin1", "binary", "array", "nested", "nested_array", "not_object", "no_completion", "question_number", "empty"],
)
def test_bad_score_input_is_a_one_line_error_naming_the_line(tmp_path, capsys, case):
    source = tmp_path / "rows.jsonl"
    good = json.dumps(GOOD_ROWS[0]) + "\n"
    where = f"{source}:2:"
    if case == "latin1":
        source.write_bytes(good.encode() + '{"completion": "caf\xe9"}\n'.encode("latin-1"))
        words = (where, "not UTF-8")
    elif case == "binary":
        source.write_bytes(bytes(range(256)) * 4)
        words = (f"{source}:1:",)
    elif case == "array":
        source.write_text("[\n" + json.dumps(GOOD_ROWS[0]) + ",\n" + '{"completion": "x",]\n' + "]\n")
        words = (f"{source}:3:", "not valid JSON")
    elif case == "nested":
        source.write_text(good + "[" * 100_000 + "]" * 100_000 + "\n")
        words = (where, "nested too deeply")
    elif case == "nested_array":
        source.write_text("[\n" + json.dumps(GOOD_ROWS[0]) + ",\n" + "[" * 100_000 + "]" * 100_000 + "]\n")
        words = (f"{source}:3:", "nested too deeply")
    elif case == "not_object":
        source.write_text(good + "[1, 2]\n")
        words = (where, "expected a JSON object")
    elif case == "no_completion":
        source.write_text(good + '{"question": "q"}\n')
        words = (where, "'completion'")
    elif case == "question_number":
        source.write_text(good + '{"question": 12, "completion": "x"}\n')
        words = (where, "'question' must be a string, got int")
    else:
        source.write_text("\n \n")
        words = ("holds no rows",)
    output = tmp_path / "scored.jsonl"
    assert_one_line_error(score(capsys, source, output), *words)
    assert not output.exists()


def test_score_reads_a_json_array_in_pieces(tmp_path, capsys, monkeypatch):
    """A JSON array is parsed incrementally (here with 64-byte reads), rows keep their line numbers."""
    import procrl.core.jsonl
    import procrl.evaluation.score as scoring

    monkeypatch.setattr(procrl.core.jsonl, "_CHUNK", 64)
    source = tmp_path / "rows.json"
    source.write_text("[\n" + ",\n".join(json.dumps(row) for row in GOOD_ROWS * 5) + "\n]\n")
    assert [line for line, _ in scoring.iter_rows(source)] == list(range(2, 17))
    output = tmp_path / "scored.jsonl"
    result = score(capsys, source, output)
    assert result.code == 0, result.err[-2000:]
    assert len(output.read_text().splitlines()) == 15


# --- tracebacks -> one-line errors: custom reward code ----------------------------------------------


@pytest.mark.parametrize("case", ["raises_at_import", "syntax_error", "constructor_raises", "exits_at_import"])
def test_broken_reward_code_is_a_one_line_error_naming_the_key(tmp_path, capsys, monkeypatch, case):
    body, target, words = {
        "raises_at_import": (
            "raise RuntimeError('needs a GPU')\n",
            "f",
            ("rewards.custom.type", "RuntimeError: needs a GPU"),
        ),
        "syntax_error": (
            "def f(prompts, completions:\n    return []\n",
            "f",
            ("rewards.custom.type", "SyntaxError", "line 1"),
        ),
        "constructor_raises": (
            "class Scorer:\n    def __init__(self, **kwargs):\n        raise ValueError('no vocabulary')\n"
            "    def __call__(self, prompts, completions, **kwargs):\n        return [0.0] * len(completions)\n",
            "Scorer",
            ("rewards.custom", "could not be set up", "ValueError: no vocabulary"),
        ),
        "exits_at_import": ("import sys\nsys.exit(3)\n", "f", ("rewards.custom.type", "SystemExit: 3")),
    }[case]
    module = reward_module(tmp_path, monkeypatch, f"broken_{case}", body)
    result = cli(capsys, "check", TINY_RECIPE, "--set", f"rewards.custom={{type: '{module}:{target}'}}")
    assert_one_line_error(result, *words)


def test_a_reward_raising_system_exit_does_not_end_training(tmp_path, capsys, monkeypatch, caplog):
    module = reward_module(
        tmp_path, monkeypatch, "quits", "import sys\ndef quits(prompts, completions, **kwargs):\n    sys.exit(3)\n"
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
        "trainer.max_steps=2",
        "--set",
        f"rewards.quits={{type: '{module}:quits', weight: 0.5}}",
    )
    assert result.code == 0, result.err[-3000:]
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    # both steps trained; the 4 completions of each batch got the fallback, counted as failures
    assert [h.get("rewards/quits/failures/exception") for h in history if "loss" in h] == [4.0, 4.0]
    assert "reward component 'quits' failed on a batch of 4: SystemExit: 3" in caplog.text


# --- 4. bounded cost on hostile text (timings: benchmarks/hostile_text_bench.py) --------------------


@pytest.fixture
def spacy_splitter():
    """The optional spaCy sentence splitter for one test, the default restored after it."""
    pytest.importorskip("spacy", reason="the spacy extra is not installed")
    from procrl.core import text

    text.use_sentence_splitter("spacy")
    yield text
    text.use_sentence_splitter("rules")


def test_spacy_never_sees_a_long_token_or_a_long_text(monkeypatch, spacy_splitter):
    """spaCy's tokenizer is quadratic in the length of a token of affixes ("((((", "$$$$") and
    refuses texts over 1M characters: it is given chunks with long runs broken."""
    text_module = spacy_splitter

    real = text_module._spacy_pipeline()
    seen: list[str] = []

    class Recording:
        def pipe(self, texts, **kwargs):
            texts = list(texts)
            seen.extend(texts)
            return real.pipe(texts, **kwargs)

    monkeypatch.setattr(text_module, "_spacy_pipeline", lambda: Recording())
    completion = "We start.\n" + "(" * 4000 + " done.\n" + ("$" * 3000 + " ") * 10 + "\n#### 3"
    segmentation = text_module.segment(completion)
    assert seen and max(len(t) for t in seen) <= text_module.SPACY_CHUNK
    assert max(len(run) for t in seen for run in t.split()) <= text_module.SPACY_MAX_TOKEN
    assert [s.text for s in segmentation.steps][0] == "We start."
    assert segmentation.steps[1].start == completion.index("(")  # offsets still into the completion


@pytest.mark.parametrize("splitter", ["rules", "spacy"])
def test_a_line_over_spacys_limit_is_segmented(splitter, request):
    """Over 1M characters in one line spaCy raises E088; under the cap it is chunked. The rules
    splitter reads such a line in one linear scan."""
    from procrl.core.text import MAX_CHARS, segment

    if splitter == "spacy":
        request.getfixturevalue("spacy_splitter")
    line = ("each box holds twelve apples and " * 40_000)[:1_040_000]
    assert 1_000_000 < len(line) <= MAX_CHARS
    segmentation = segment(line + "\n#### 12")
    assert not segmentation.too_long
    assert segmentation.sentences[0].start == 0 and segmentation.sentences[-1].end == len(line.rstrip())


def test_completions_over_the_caps_are_too_long():
    from procrl.core.text import MAX_CHARS, MAX_LINES, MAX_STEPS, segment_batch

    normal = "3 x 4 = 12 apples.\n#### 12"
    cases = [
        "a" * (MAX_CHARS + 1),  # characters
        "apples\n" * (MAX_LINES + 1),  # lines
        "One step. " * (MAX_STEPS + 1),  # sentences (= steps of a one-line completion)
    ]
    segmentations = segment_batch([normal, *cases])
    assert not segmentations[0].too_long and len(segmentations[0].steps) == 1
    for segmentation in segmentations[1:]:
        assert segmentation.too_long and segmentation.steps == () and segmentation.sentences == ()


def test_the_mix_gives_too_long_completions_the_fallback_and_counts_them():
    from procrl.rewards import RewardBatch, RewardMix, parse_rewards

    mix = RewardMix(parse_rewards({"accuracy": {}, "first_error": {"fallback": -1.0}, "trace": {"tagger": "cues"}}))
    huge = "(" * (1 << 20) + "\n#### 12"
    batch = RewardBatch.from_texts(["3 x 4 = 12.\n#### 12", huge], golds=["12", "12"])
    outputs = mix.score_all(batch)
    assert outputs["accuracy"].scores == [1.0, None] and outputs["accuracy"].failures["too_long"] == 1
    assert outputs["first_error"].scores[1] == -1.0 and outputs["first_error"].failures["too_long"] == 1
    assert outputs["first_error"].step_scores[1] is None and outputs["trace"].details[1] == {"failure": "too_long"}
    assert outputs["trace"].scores[0] is not None


def test_score_gives_a_too_long_row_the_failure_policy(tmp_path, capsys):
    rows = [GOOD_ROWS[0], {"question": "?", "completion": "(" * 1_100_000 + "\n#### 1", "answer": "1"}, GOOD_ROWS[1]]
    source = write_rows(tmp_path / "rows.jsonl", rows)
    output = tmp_path / "scored.jsonl"
    result = score(capsys, source, output)
    assert result.code == 0, result.err[-2000:]
    scored = [json.loads(line) for line in output.read_text().splitlines()]
    assert scored[1]["rewards"]["accuracy"] is None and scored[1]["steps"] == []
    assert scored[0]["rewards"]["accuracy"] == scored[2]["rewards"]["accuracy"] == 1.0
    assert "failures of accuracy: too_long 1" in result.out


def test_arithmetic_scans_a_bounded_side_per_equation(monkeypatch):
    """Each '=' looks at most MAX_SIDE_SCAN characters to each side (a 64 KB '2 x 2 x ...' chain
    is not walked whole, copying the text before every 'x')."""
    import procrl.rewards.quantities.scanner as scanner
    from procrl.rewards.quantities import find_claims

    calls = 0
    real = scanner._side_char_ok

    def counting(text, index):
        nonlocal calls
        calls += 1
        return real(text, index)

    monkeypatch.setattr(scanner, "_side_char_ok", counting)
    chain = ("2 x " * 5000)[:-1] + " = 4 so 1 + 1 = 2"
    claims = find_claims(chain)
    assert [(c.left, c.right) for c in claims] == [("1 + 1", "2")]
    assert calls <= 3 * scanner.MAX_SIDE_SCAN


def _line_events(function, *args) -> int:
    """Python line events inside ``function``'s own code (a deterministic measure of its loops)."""
    code = function.__code__
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        if frame.f_code is not code:
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        function(*args)
    finally:
        sys.settrace(None)
    return count


def test_boxed_extraction_is_linear_on_unbalanced_boxes():
    from procrl.core.answers import extract_boxed

    text = "\\boxed{" * 1500 + "\\boxed{42}"
    assert extract_boxed(text) == "42"
    unbalanced = "\\boxed{" * 1500
    assert extract_boxed(unbalanced) is None
    assert _line_events(extract_boxed, unbalanced) < 20 * len(unbalanced)


def test_cue_tagger_reads_a_bounded_prefix_of_a_sentence():
    from procrl.rewards.scorers.taggers import CueTagger

    tagger = CueTagger()
    long_sentence = "x " * 400 + "we know that she has 3 apples"
    assert tagger.sentence_proba(long_sentence) == tagger.sentence_proba(long_sentence[: CueTagger.MAX_CHARS])


# --- 5. the openai judge: a deadline per attempt, retries until every verdict arrives -------------


def judge_mix(base_url: str, **settings):
    from procrl.rewards import RewardMix, parse_rewards

    spec = {"backend": "openai", "model": "judge", "base_url": base_url, "backoff_s": 0.01, **settings}
    return RewardMix(parse_rewards({"first_error": spec}))


def judged_batch(count: int):
    from procrl.rewards import RewardBatch

    completion = "First 3 + 4 = 7.\nThen 7 * 2 = 14.\nFinally 14 - 1 = 13.\n#### 13"
    return RewardBatch.from_texts([completion] * count, [f"Question ITEM {i}" for i in range(count)])


def test_a_reply_dripped_byte_by_byte_is_cut_at_the_attempt_deadline():
    """Each byte arrives well within timeout_s, so a per-read timeout never fires; the deadline
    is for the whole attempt: the verdict is a timeout, not a reply taken in after seconds."""
    from procrl.testing.openai_server import Reply, ScriptedOpenAIServer

    def dripping(prompt, attempt):
        return Reply("The reasoning holds. \\boxed{-1}", drip_s=0.02)

    with ScriptedOpenAIServer(dripping) as server:
        output = judge_mix(server.base_url, timeout_s=0.3, max_retries=1).compute("first_error", judged_batch(1))
        assert output.details[0]["verdict"] == "timeout" and output.failures["timeout"] == 1
        assert server.attempts("ITEM 0") == 2


def test_every_verdict_arrives_through_30_percent_faults_with_8_retries():
    """500, 429, slow (past the deadline) and non-JSON 200 replies on 30% of the attempts, fixed
    by a seeded draw per (prompt, attempt): with max_retries 8 every verdict arrives, right."""
    import random
    import re

    from procrl.testing.openai_server import Reply, ScriptedOpenAIServer

    injected = {"500": 0, "429": 0, "slow": 0, "html 200": 0}

    def faulty(prompt, attempt):
        item = int(re.search(r"ITEM (\d+)", prompt).group(1))
        draw = random.Random(f"{item}-{attempt}")
        if draw.random() < 0.3:
            kind = draw.choice(list(injected))
            injected[kind] += 1
            if kind == "500":
                return Reply(status=500)
            if kind == "429":
                return Reply(status=429, headers={"Retry-After": "0"})
            if kind == "slow":
                return Reply(f"\\boxed{{{item % 3}}}", delay_s=0.6)
            return Reply(body=b"<html><body>502 Bad Gateway</body></html>")
        return Reply(f"Step {item % 3} is wrong. \\boxed{{{item % 3}}}")

    with ScriptedOpenAIServer(faulty) as server:
        count = 40
        output = judge_mix(server.base_url, timeout_s=0.3, max_retries=8).compute("first_error", judged_batch(count))
    assert all(value > 0 for value in injected.values()), injected
    assert [detail["verdict"] for detail in output.details] == ["ok"] * count
    assert [detail["index"] for detail in output.details] == [i % 3 for i in range(count)]
    assert not any(output.failures.get(kind) for kind in ("timeout", "http_error", "bad_response", "connection_error"))


# --- check refuses what train refuses; data files; recipe files ------------------------------------


REFUSED = [
    (["--set", "data.split=test"], "data.split"),
    (["--set", "trainer.max_steps=0"], "trainer.max_steps"),
    (["--set", "trainer.save_steps=-5"], "trainer.save_steps"),
    (["--set", "trainer.num_generations=3"], "trainer.num_generations"),  # 4 per batch: not whole groups of 3
    (["--set", "trainer.algorithm=ppo", "--set", "trainer.per_device_train_batch_size=6"], "trainer.num_generations"),
]


@pytest.mark.parametrize("overrides,key", REFUSED, ids=[key + "-" + o[-1] for o, key in REFUSED])
def test_check_refuses_what_train_refuses(tmp_path, capsys, overrides, key):
    checked = cli(capsys, "check", TINY_RECIPE, *overrides)
    assert_one_line_error(checked, key)
    out = tmp_path / "run"
    trained = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *overrides)
    assert_one_line_error(trained, key)
    assert not out.exists()  # nothing written


def test_a_data_file_named_as_a_test_split_is_refused_unless_forced(tmp_path, capsys, gsm8k_train):
    test_file = tmp_path / "gsm8k_test.jsonl"
    test_file.write_text("".join(gsm8k_train.read_text().splitlines(keepends=True)[:16]))
    data = ["--set", f"data.dataset={test_file}"]
    for command in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", tmp_path / "run", *ONE_STEP]):
        assert_one_line_error(cli(capsys, *command, *data), "data.dataset", "test split", "data.allow_test_data")
    forced = cli(capsys, "check", TINY_RECIPE, *data, "--set", "data.allow_test_data=true")
    assert forced.code == 0, forced.err[-2000:]


@pytest.mark.parametrize("case", ["empty", "malformed", "question_number", "question_null", "no_answer", "latin1"])
def test_bad_data_files_are_one_line_errors_naming_the_row(tmp_path, capsys, case):
    data = tmp_path / "problems.jsonl"
    good = '{"question": "Ava has 3 apples. How many?", "answer": "#### 3"}\n'
    content, words = {
        "empty": ("\n", ("holds no rows",)),
        "malformed": (good + '{"question": "Ben?", "answer": \n', (f"{data}:2", "not valid JSON")),
        "question_number": (
            good + '{"question": 12, "answer": "1"}\n',
            (f"{data}:2", "'question' must be a non-empty string"),
        ),
        "question_null": (good + '{"question": null, "answer": "1"}\n', (f"{data}:2", "'question'")),
        "no_answer": (good + '{"question": "Cy?"}\n', (f"{data}:2", "'answer' must be a string or a number")),
        "latin1": (None, (f"{data}:2", "not UTF-8")),
    }[case]
    if content is None:
        data.write_bytes(good.encode() + '{"question": "Caf\xe9?", "answer": "1"}\n'.encode("latin-1"))
    else:
        data.write_text(content)
    out = tmp_path / "run"
    for command in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
        assert_one_line_error(cli(capsys, *command, "--set", f"data.dataset={data}"), "data.dataset", *words)
    assert not out.exists()


@pytest.mark.parametrize("case", ["latin1", "binary"])
def test_a_recipe_that_is_not_utf8_text_is_a_one_line_error(tmp_path, capsys, case):
    recipe = tmp_path / "recipe.yaml"
    if case == "latin1":
        recipe.write_bytes(b"recipe: procrl/v1\ndescription: caf\xe9\n")
        words = ("line 2", "not UTF-8")
    else:
        recipe.write_bytes(bytes(range(256)))
        words = ("recipe.yaml",)
    for command in ("check", "train"):
        assert_one_line_error(cli(capsys, command, recipe), str(recipe), *words)


def test_check_sends_no_request_unless_asked(capsys):
    from procrl.testing.openai_server import Reply, ScriptedOpenAIServer

    with ScriptedOpenAIServer(lambda prompt, attempt: Reply("All steps hold. \\boxed{-1}")) as server:
        judge = f"rewards.first_error={{backend: openai, model: judge, base_url: '{server.base_url}'}}"
        quiet = cli(capsys, "check", TINY_RECIPE, "--set", judge)
        assert quiet.code == 0, quiet.err[-2000:]
        assert server.requests == []
        assert (
            f"first_error              not scored: sends requests to {server.base_url} (use --probe-judge" in quiet.out
        )
        probed = cli(capsys, "check", TINY_RECIPE, "--set", judge, "--probe-judge")
        assert probed.code == 0 and len(server.requests) == 2


def test_credentials_in_urls_are_redacted_and_lookalikes_are_not(capsys):
    from procrl.launch.run import redact

    tree = {
        "base_url": "https://judge:sk-live-123@api.example.com/v1",
        "url": "http://h/v1?api_key=sk-9&x=1",
        "api_key_env": "JUDGE_KEY",
        "max_tokens": 1024,
        "max_completion_length": 32,
        "hf_token": "hf_abc",
        "tokenizer": "Qwen/Qwen2.5-0.5B",
        "pad_token": "<|endoftext|>",
        "api_token": "t0k",
        "password": "pw",
        "key": "answer",
        "items": [{"access_token": "abc"}],
    }
    assert redact(tree) == {
        "base_url": "https://<redacted>@api.example.com/v1",
        "url": "http://h/v1?api_key=<redacted>&x=1",
        "api_key_env": "JUDGE_KEY",
        "max_tokens": 1024,
        "max_completion_length": 32,
        "hf_token": "<redacted>",
        "tokenizer": "Qwen/Qwen2.5-0.5B",
        "pad_token": "<|endoftext|>",
        "api_token": "<redacted>",
        "password": "<redacted>",
        "key": "answer",
        "items": [{"access_token": "<redacted>"}],
    }
    judge = "rewards.first_error={backend: openai, model: j, base_url: 'https://judge:sk-live-123@127.0.0.1:9/v1'}"
    result = cli(capsys, "check", TINY_RECIPE, "--set", judge)
    assert result.code == 0, result.err[-2000:]
    assert "sk-live-123" not in result.out + result.err
    assert "base_url: https://<redacted>@127.0.0.1:9/v1" in result.out and "max_tokens: 1024" in result.out
