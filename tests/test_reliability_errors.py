"""Hostile inputs that must be one line (``procrl: error: ...``, exit 2), never a traceback:
validate's inputs, evaluate's disk and sample count, launch and trainer settings, the cache
folder, training text, and what --overwrite meets in a run's folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.core.folders import claim_folder
from tests.helpers.cli import ONE_STEP, assert_one_line_error, cli, fake_checkpoint, safetensors_bytes, snapshot
from tests.helpers.launch import REPO, TINY_RECIPE

MR_GSM8K = REPO / "tests" / "data" / "validate" / "mr_gsm8k_sample.json"
NO_TRACE = ["--set", "rewards.trace=false"]


def mr_gsm8k_records(n: int) -> list[dict]:
    return json.loads(MR_GSM8K.read_text())[:n]


def test_validate_refuses_a_steps_repr_too_deep_to_parse_in_one_line(tmp_path, capsys):
    """A 100,000-character steps string of unary minus signs: ast.literal_eval raised MemoryError."""
    record = dict(mr_gsm8k_records(1)[0], model_output_steps="-" * 99_999 + "1")
    data = tmp_path / "long.json"
    data.write_text(json.dumps([record]))
    result = cli(capsys, "validate", "--recipe", TINY_RECIPE, *NO_TRACE, "--data", data, "--output-dir", tmp_path / "v")
    assert_one_line_error(result, f"{data}:1", "'model_output_steps' must be a list of strings")
    assert not (tmp_path / "v").exists()


def test_validate_reads_its_data_from_a_pipe(tmp_path):
    lines = "".join(json.dumps(record) + "\n" for record in mr_gsm8k_records(3))
    out = tmp_path / "v"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "procrl",
            "validate",
            "--recipe",
            str(TINY_RECIPE),
            *NO_TRACE,
            "--data",
            "/dev/stdin",
            "--output-dir",
            str(out),
            "--quiet",
        ],
        input=lines,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert len((out / "rows.jsonl").read_text().splitlines()) == 3


@pytest.fixture
def full_disk(tmp_path):
    """A 16 KiB tmpfs: the report's first PNG does not fit (needs root; skipped otherwise)."""
    mount = tmp_path / "full"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a small tmpfs here")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_evaluate_on_a_full_disk_is_a_one_line_error(full_disk, capsys):
    from procrl.evaluation.evaluate.run import evaluate
    from procrl.recipe import load_recipe

    recipe = load_recipe(TINY_RECIPE, ["rewards.trace=false"])
    with pytest.raises(ConfigError, match=r"--output-dir: writing the report to .* failed \(No space left on device\)"):
        evaluate(recipe, limit=2, output_dir=full_disk / "report", completions=["#### 1", "#### 2"])


def test_evaluate_bounds_the_number_of_samples_before_loading(tmp_path, capsys):
    result = cli(
        capsys,
        "evaluate",
        "--recipe",
        TINY_RECIPE,
        "--num-samples",
        "1000000",
        "--temperature",
        "0.7",
        "--output-dir",
        tmp_path / "e",
    )
    assert_one_line_error(result, "--num-samples", "[1, 1024]", "1000000")
    assert not (tmp_path / "e").exists()


def test_a_launch_config_file_that_is_not_an_accelerate_config_is_one_line(tmp_path, capsys):
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    out = tmp_path / "run"
    for config, what in (("/etc/passwd", "holds a str"), (str(listed), "holds a list")):
        for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
            assert_one_line_error(
                cli(capsys, *argv, "--set", f"launch.config_file={config}"),
                "launch.config_file",
                "is not an accelerate config file",
                what,
            )
    assert not out.exists()


def test_report_to_is_checked_against_transformers_integrations(tmp_path, capsys):
    from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

    from procrl.recipe import REPORT_TO_INTEGRATIONS

    assert set(REPORT_TO_INTEGRATIONS) == {"all", "none", *INTEGRATION_TO_CALLBACK}
    out = tmp_path / "run"
    for value in ("carrier_pigeon", "[wandb, carrier_pigeon]"):
        for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
            assert_one_line_error(
                cli(capsys, *argv, "--set", f"trainer.report_to={value}"),
                "trainer.report_to",
                "'carrier_pigeon'",
                "'tensorboard'",
                "'wandb'",
                "'none'",
            )
    assert not out.exists()
    assert cli(capsys, "check", TINY_RECIPE, "--set", "trainer.report_to=[tensorboard]").code == 0


def test_procrl_cache_that_is_a_file_is_one_line(tmp_path, capsys, monkeypatch):
    cache = tmp_path / "cache"
    cache.write_text("not a folder\n")
    monkeypatch.setenv("PROCRL_CACHE", str(cache))
    out = tmp_path / "run"
    for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
        assert_one_line_error(cli(capsys, *argv), "PROCRL_CACHE", str(cache), "not a directory")
    assert cache.read_text() == "not a folder\n"


def test_a_lone_surrogate_in_a_training_question_is_one_line(tmp_path, capsys):
    data = tmp_path / "train.jsonl"
    data.write_text(
        '{"question": "How many apples?", "answer": "#### 4"}\n'
        '{"question": "How many \\ud800 pears?", "answer": "#### 5"}\n'
    )
    out = tmp_path / "run"
    for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
        assert_one_line_error(
            cli(capsys, *argv, "--set", f"data.dataset={data}"),
            f"{data}:2",
            "'question'",
            "lone surrogate",
            "character 10",
        )
    assert not out.exists()


def test_overwrite_never_follows_a_symlinked_checkpoint(tmp_path, capsys):
    out = tmp_path / "run"
    fake_checkpoint(out, 2)
    elsewhere = fake_checkpoint(tmp_path / "user", 4)
    (out / "checkpoint-4").symlink_to(elsewhere)
    before, theirs = snapshot(out), snapshot(elsewhere)
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, "--overwrite", *ONE_STEP)
    # the folder rule refuses a link out of the run's folder before --overwrite deletes anything
    assert_one_line_error(result, str(out / "checkpoint-4"), "is a symlink", "never writes through a link")
    assert snapshot(elsewhere) == theirs and (out / "checkpoint-4").is_symlink()
    assert (out / "checkpoint-2" / "trainer_state.json").is_file()  # nothing deleted before the refusal
    assert {k for k in snapshot(out) if not k.startswith(".")} >= {k for k in before if not k.startswith(".")}


# --- a damaged checkpoint is not complete ----------------------------------------------------------


@pytest.fixture(scope="module")
def two_checkpoints(tmp_path_factory) -> Path:
    """A real run of 2 steps with checkpoint-1 and checkpoint-2 (copied by each test)."""
    from procrl.launch.run import train
    from procrl.recipe import load_recipe

    out = tmp_path_factory.mktemp("run") / "run"
    train(
        load_recipe(
            TINY_RECIPE,
            ["trainer.max_steps=2", "trainer.save_steps=1", "trainer.max_completion_length=8"],
            output_dir=str(out),
        )
    )
    assert (out / "checkpoint-1").is_dir() and (out / "checkpoint-2").is_dir()
    return out


def run_copy(source: Path, tmp_path: Path) -> Path:
    import shutil

    out = tmp_path / "run"
    shutil.copytree(source, out, ignore=shutil.ignore_patterns(".procrl.lock"))
    return out


@pytest.mark.parametrize("damage", ["truncated weights", "garbage optimizer", "none of the model's tensors"])
def test_resume_passes_over_a_damaged_checkpoint_naming_it(two_checkpoints, tmp_path, capsys, damage):
    out = run_copy(two_checkpoints, tmp_path)
    if damage == "truncated weights":
        weights = out / "checkpoint-2" / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
        why = "model.safetensors is damaged (truncated:"
    elif damage == "none of the model's tensors":
        # readable, whole, and holding another model's tensor: resumed, transformers logged the missing
        # keys and training went on from the base weights
        (out / "checkpoint-2" / "model.safetensors").write_bytes(safetensors_bytes())
        why = "model.safetensors holds none of the"
    else:
        (out / "checkpoint-2" / "optimizer.pt").write_bytes(b"this is not a torch file\n" * 40)
        why = "optimizer.pt is damaged (not a torch.save file"
    result = cli(
        capsys,
        "train",
        TINY_RECIPE,
        "--output-dir",
        out,
        "--resume",
        "--set",
        "trainer.max_steps=3",
        "--set",
        "trainer.save_steps=1",
        "--set",
        "trainer.max_completion_length=8",
    )
    assert result.code == 0, result.err[-3000:]
    assert f"skipped {out / 'checkpoint-2'}: {why}" in result.err
    assert f"resuming from {out / 'checkpoint-1'} (global step 1)" in result.err
    assert (out / "incomplete-checkpoint-2").is_dir()  # kept for inspection, out of the way
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 3


def test_resume_with_every_checkpoint_damaged_is_one_line(two_checkpoints, tmp_path, capsys):
    out = run_copy(two_checkpoints, tmp_path)
    for step in (1, 2):
        (out / f"checkpoint-{step}" / "optimizer.pt").write_bytes(b"\0" * 100)
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, "--resume", "--set", "trainer.max_steps=3")
    assert_one_line_error(
        result,
        "--resume: no complete checkpoint",
        "checkpoint-2: optimizer.pt is damaged",
        "checkpoint-1: optimizer.pt is damaged",
    )


@pytest.mark.parametrize(
    "name, content, why",
    [
        ("optimizer.pt", {}, "optimizer.pt is damaged (holds no 'state', 'param_groups')"),
        ("optimizer.pt", "a string", "optimizer.pt is damaged (holds a str, not a state dict)"),
        ("scheduler.pt", "a string", "scheduler.pt is damaged (holds a str, not a state dict)"),
        ("scheduler.pt", [1, 2], "scheduler.pt is damaged (holds a list, not a state dict)"),
    ],
)
def test_a_state_file_that_loads_but_is_not_its_state_is_damaged(two_checkpoints, tmp_path, name, content, why):
    """``torch.save({})`` as optimizer.pt, a string as scheduler.pt: whole archives that load, on
    which transformers' resume raised KeyError or AttributeError. The checkpoint is damaged and
    the resume takes the one before it."""
    import torch

    from procrl.trainers.checkpoints import find_resume_checkpoint

    out = run_copy(two_checkpoints, tmp_path)
    torch.save(content, out / "checkpoint-2" / name)
    point = find_resume_checkpoint(out)
    assert point.checkpoint == str(out / "checkpoint-1")
    assert point.skipped == [(str(out / "checkpoint-2"), why)]


# --- settings and names that are one line before anything loads -------------------------------------------


def test_a_count_past_64_bits_is_refused_by_check_and_train(tmp_path, capsys):
    """gradient_accumulation_steps: 10**37 passed check and ended train after the model loaded."""
    huge = str(10**37)
    for argv in (
        ["check", TINY_RECIPE],
        ["train", TINY_RECIPE, "--output-dir", tmp_path / "run", *ONE_STEP],
    ):
        result = cli(capsys, *argv, "--set", f"trainer.gradient_accumulation_steps={huge}")
        assert_one_line_error(result, "trainer.gradient_accumulation_steps:", huge, "64-bit")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("device", ["/dev/zero", "fifo"])
def test_a_dataset_that_is_a_device_or_a_fifo_is_refused_by_check_and_train(tmp_path, capsys, device):
    if device == "fifo":
        device = tmp_path / "rows.fifo"
        os.mkfifo(device)
    for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", tmp_path / "run", *ONE_STEP]):
        result = cli(capsys, *argv, "--set", f"data.dataset={device}")
        assert_one_line_error(result, f"data.dataset: {device} is a")
    assert not (tmp_path / "run").exists()


def test_a_set_key_deeper_than_a_recipe_nests_is_one_line(capsys):
    """--set with a 3,000-part key raised RecursionError."""
    result = cli(capsys, "check", TINY_RECIPE, "--set", ".".join(["trainer"] * 3000) + "=1")
    assert_one_line_error(result, "a key of 3,000 parts", "100 levels")


@pytest.mark.parametrize("name", ["long path", "not UTF-8"])
def test_an_output_dir_the_kernel_or_the_files_cannot_name_is_one_line(tmp_path, capsys, name):
    """A 5,000-byte path (a traceback), and a name with bytes that are not UTF-8 (it trained, then
    the first checkpoint's model card raised UnicodeEncodeError and the run was lost)."""
    if name == "long path":
        out = tmp_path.joinpath(*["d" * 200] * 25)
        words = ["bytes long, more than the 4,096"]
    else:
        out = tmp_path / os.fsdecode(b"run-\xff\xfe")
        words = ["not UTF-8", "\\xff"]
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP)
    assert_one_line_error(result, "output_dir:", *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_file_name_is_printed_escaped_in_a_refusal(tmp_path, capsys):
    """A name holding a newline and a terminal escape sequence: the refusal stays one line and
    prints neither raw (``\\n``, ``\\x1b`` as written in Python)."""
    hostile = tmp_path / "run\n\x1b[31mred\x1b[0m"
    hostile.write_text("a file, not a folder")
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", hostile, *ONE_STEP)
    line = assert_one_line_error(result, "output_dir:", "is a file")
    assert "\x1b" not in result.err and "run\\n\\x1b[31mred\\x1b[0m" in line
    assert result.err.count("\n") == 1


def test_a_lock_of_random_bytes_is_one_line(tmp_path, capsys):
    """A .procrl.lock of random bytes raised UnicodeDecodeError; it is an unreadable lock."""
    out = claim_folder(tmp_path / "run", "train")
    (out / ".procrl.lock").write_bytes(bytes(range(256)) * 4)
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP)
    assert_one_line_error(result, f"locked by an unreadable {out / '.procrl.lock'}")


def test_a_lock_in_a_folder_made_read_only_is_left_without_a_second_traceback(tmp_path, monkeypatch):
    """The output dir made read-only mid-run: the checkpoint's error line is the run's last word,
    and removing the lock at exit (which the read-only folder refuses) is no second traceback;
    the error line asks for write access, not for free space."""
    import errno

    from procrl.trainers.checkpoints import _remedy
    from procrl.trainers.output_dir import RunLock

    lock = RunLock(str(tmp_path / "run"))
    lock.acquire()

    def read_only(self, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(Path, "unlink", read_only)  # what a read-only mount answers; root ignores chmod
    lock.release()
    monkeypatch.undo()
    assert (tmp_path / "run" / ".procrl.lock").exists()
    denied = RuntimeError("safetensors could not write")
    denied.__context__ = PermissionError(errno.EACCES, "Permission denied")
    assert _remedy(denied, "D") == "make D writable and "
    assert _remedy(OSError(errno.ENOSPC, "No space left on device"), "D") == "free space and "


@pytest.mark.parametrize("length", [250, 256])
def test_score_output_names_of_any_length(tmp_path, capsys, length):
    """A 256-byte --output name gave "generator didn't stop after throw()" (every OSError in
    score's input handling did); a 250-byte one is written (its temporary name fits too)."""
    from tests.helpers.cli import GOOD_ROWS, score, write_rows

    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS)
    output = tmp_path / ("o" * (length - 6) + ".jsonl")
    result = score(capsys, source, output, "--set", "rewards.trace=false")
    if length > 255:
        assert_one_line_error(result, "--output", "is 256 bytes long, more than the 255 a name may have")
    else:
        assert result.code == 0, result.err[-2000:]
        assert len(output.read_text().splitlines()) == 3
