"""Nothing outside the run is touched, no secret is written, interruptions lose nothing: writes through
symlinks and straight to devices and pipes, never a rename onto them; build-tiny-reasoner never deletes what procrl did
not create; the final model complete or absent (SIGTERM and a full disk during the final save); a full disk while
writing optimizer.pt; secrets out of training_args.bin, W&B's run files, errors and the plan; resuming a finished or
changed run; Ctrl-C and SIGTERM in score and train. Each secret test greps every file under the output
dir and every printed line."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers.cli import (
    GOOD_ROWS,
    assert_one_line_error,
    cli,
    grep_secrets,
    procrl_run,
    score,
    snapshot,
    write_rows,
)
from tests.helpers.launch import REPO, TINY_RECIPE, procrl, run_command

ONE_STEP = ["--set", "trainer.max_steps=1", "--set", "trainer.save_steps=1", "--set", "trainer.max_completion_length=8"]
TWO_STEPS = [
    "--set",
    "trainer.max_steps=2",
    "--set",
    "trainer.save_steps=1",
    "--set",
    "trainer.save_total_limit=2",
    "--set",
    "trainer.max_completion_length=8",
]
CRASH_HOOK = REPO / "tests" / "reliability_crash"


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("procrl: error:")]


def leftovers(folder: Path) -> list[str]:
    """Temporary files procrl could have left."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if ".partial" in p.name)


# --- 1. procrl score: through symlinks, straight to devices and pipes -------------------------------


def test_score_writes_through_a_symlink_to_the_file_it_names(tmp_path, capsys):
    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS)
    (tmp_path / "results").mkdir()
    real = tmp_path / "results" / "scores.jsonl"
    real.write_text('{"previous": "results"}\n')
    link = tmp_path / "link.jsonl"
    link.symlink_to(Path("results") / "scores.jsonl")
    result = score(capsys, source, link)
    assert result.code == 0, result.err[-2000:]
    assert link.is_symlink() and os.readlink(link) == str(Path("results") / "scores.jsonl")  # still the same link
    assert [json.loads(line)["completion"] for line in real.read_text().splitlines()] == [
        r["completion"] for r in GOOD_ROWS
    ]
    assert leftovers(tmp_path) == []


def test_score_through_a_dangling_symlink_creates_its_target(tmp_path, capsys):
    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS)
    link = tmp_path / "link.jsonl"
    link.symlink_to("target.jsonl")
    assert score(capsys, source, link).code == 0
    assert link.is_symlink() and len((tmp_path / "target.jsonl").read_text().splitlines()) == 3


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node needs root")
@pytest.mark.parametrize("through_link", [False, True], ids=["device", "symlink_to_device"])
def test_score_writes_straight_to_a_character_device_and_never_replaces_it(tmp_path, capsys, through_link):
    """A null device of our own (mknod 1:3, what /dev/null is), never the machine's /dev/null."""
    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS)
    device = tmp_path / "null"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    output = device
    if through_link:
        output = tmp_path / "to-null"
        output.symlink_to(device)
    result = score(capsys, source, output)
    assert result.code == 0, result.err[-2000:]
    assert stat.S_ISCHR(os.lstat(device).st_mode) and os.lstat(device).st_rdev == os.makedev(1, 3)
    assert not through_link or output.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["rows.jsonl", "null", *(["to-null"] if through_link else [])]
    )
    assert f"wrote 3 rows to {output}" in result.out


def test_score_writes_straight_to_a_named_pipe(tmp_path, capsys):
    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS)
    fifo = tmp_path / "scores.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def reader():
        with open(fifo, "rb") as handle:
            received.append(handle.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    result = score(capsys, source, fifo)
    thread.join(timeout=60)
    assert result.code == 0, result.err[-2000:]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the pipe
    assert [json.loads(line)["answer"] for line in received[0].decode().splitlines()] == [
        r["answer"] for r in GOOD_ROWS
    ]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("name", ["/dev/fd/1", "/proc/self/fd/1"])
@pytest.mark.parametrize("stdout_is", ["pipe", "file"])
def test_score_to_this_process_stdout_prints_the_rows(tmp_path, name, stdout_is):
    """The rows go to the process's stdout (a pipe, or the file the shell redirected it to), the
    summary to stderr; nothing is renamed onto the descriptor's name."""
    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS)
    argv = [
        sys.executable,
        "-m",
        "procrl",
        "score",
        "--recipe",
        TINY_RECIPE,
        "--input",
        source,
        "--output",
        name,
        "--quiet",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if stdout_is == "pipe":
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
        printed = done.stdout
    else:
        with open(tmp_path / "redirected.jsonl", "w") as stdout:
            done = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
        printed = (tmp_path / "redirected.jsonl").read_text()
    assert done.returncode == 0, done.stderr[-2000:]
    assert [json.loads(line)["completion"] for line in printed.splitlines()] == [r["completion"] for r in GOOD_ROWS]
    assert f"wrote 3 rows to {name}" in done.stderr and "reward" in done.stderr  # the summary, out of the rows' way
    assert leftovers(tmp_path) == []


def test_dev_stdout_is_this_process_descriptor():
    """/dev/stdout (a symlink to /proc/self/fd/1) is written through descriptor 1, never renamed onto."""
    from procrl.core.atomic import output_target

    for name in ("/dev/stdout", "/dev/stderr"):
        target = output_target(name)
        assert target.kind == "descriptor" and target.fd == {"/dev/stdout": 1, "/dev/stderr": 2}[name]
    assert output_target("/dev/null").kind == "stream"


def test_score_refuses_a_socket_as_output(tmp_path, capsys):
    import socket

    source = write_rows(tmp_path / "rows.jsonl", GOOD_ROWS)
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(tmp_path / "scores.sock"))
    try:
        line = assert_one_line_error(score(capsys, source, tmp_path / "scores.sock"), "--output", "is a socket")
    finally:
        listening.close()
    assert "regular files, character devices and pipes" in line
    assert stat.S_ISSOCK(os.lstat(tmp_path / "scores.sock").st_mode) and leftovers(tmp_path) == []


def test_published_files_go_through_symlinks_inside_the_folder_and_into_devices(tmp_path):
    """The final model's files are moved into the output dir by the same rule (procrl.core.atomic.replace_file),
    within the folder: a symlink that stays in it is written through, one that leads out of it is refused."""
    from procrl.core.atomic import replace_file
    from procrl.core.config import ConfigError

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "config.json").write_text("old")
    run = tmp_path / "run"
    (run / "shared").mkdir(parents=True)
    (run / "shared" / "config.json").write_text("old")
    (run / "config.json").symlink_to(run / "shared" / "config.json")
    (run / "generation_config.json").symlink_to(elsewhere / "config.json")
    fifo = run / "training_args.bin"
    os.mkfifo(fifo)
    staged = tmp_path / "staged"
    staged.mkdir()
    for name in ("config.json", "generation_config.json", "training_args.bin", "tokenizer.json"):
        (staged / name).write_text(f"new {name}")
    received: list[bytes] = []
    thread = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    thread.start()
    for name in ("config.json", "training_args.bin"):
        replace_file(staged / name, run / name, within=run)
    thread.join(timeout=30)
    assert (run / "config.json").is_symlink() and (run / "shared" / "config.json").read_text() == "new config.json"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and received == [b"new training_args.bin"]
    with pytest.raises(ConfigError, match="generation_config.json is a symlink to .*, outside"):
        replace_file(staged / "generation_config.json", run / "generation_config.json", within=run)
    assert (elsewhere / "config.json").read_text() == "old"
    (run / "tokenizer.json").mkdir()
    with pytest.raises(ConfigError, match="tokenizer.json is a directory"):
        replace_file(staged / "tokenizer.json", run / "tokenizer.json")


# --- 2. build-tiny-reasoner never deletes what procrl did not create --------------------------------


def test_build_tiny_reasoner_refuses_a_directory_it_did_not_create(tmp_path, capsys):
    folder = tmp_path / "mine"
    (folder / "notes").mkdir(parents=True)
    (folder / "thesis.tex").write_text("three years of work\n")
    (folder / "notes" / "a.txt").write_text("a\n")
    before = snapshot(folder)
    line = assert_one_line_error(
        cli(capsys, "build-tiny-reasoner", "--output-dir", folder, "--quiet"),
        "--output-dir",
        str(folder),
        "not a procrl:tiny-reasoner build",
    )
    assert "thesis.tex" in line
    assert snapshot(folder) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # no temporary sibling either


@pytest.mark.parametrize("case", ["empty_path", "file", "unwritable"])
def test_build_tiny_reasoner_bad_output_dir_is_one_line_before_training(tmp_path, capsys, case):
    if case == "empty_path":
        target, words = "", ("--output-dir", "empty path")
    elif case == "file":
        target = tmp_path / "model.bin"
        target.write_text("not a directory\n")
        words = ("--output-dir", str(target), "is a file")
    elif os.geteuid() == 0:  # root writes through file modes: a place the kernel refuses to anyone
        target, words = Path("/sys/procrl-reasoner"), ("--output-dir", "/sys")
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o555)
        target, words = locked / "reasoner", ("--output-dir", str(locked))
    before = snapshot(tmp_path)
    assert_one_line_error(cli(capsys, "build-tiny-reasoner", "--output-dir", target, "--quiet"), *words)
    assert snapshot(tmp_path) == before  # nothing written (no FILE.partialPID)


def test_build_tiny_reasoner_replaces_only_its_own_builds(tmp_path):
    """A real (small) build: into a new dir, then over that build (replaced), never over a build
    a user put a file into; a stale temporary folder of a killed build is removed."""
    from procrl.core.config import ConfigError
    from procrl.models.reasoner import BUILD_MARKER, ReasonerSpec, build_tiny_reasoner

    small = ReasonerSpec(train_examples=16)
    out = tmp_path / "reasoner"
    first = build_tiny_reasoner(out, small, progress=False)
    assert (out / "model.safetensors").is_file() and first["training_rows"] == 16
    assert sorted(first["files"]) == sorted(p.name for p in out.iterdir())
    killed = tmp_path / "reasoner.partial999999"  # no such process
    killed.mkdir()
    (killed / BUILD_MARKER).write_text(json.dumps({"pid": 999999, "host": socket.gethostname(), "start_time": None}))
    (killed / "config.json").write_text("{}")
    stamp = (out / "model.safetensors").stat().st_ino
    build_tiny_reasoner(out, small, progress=False)  # over its own build: replaced by a new folder
    assert (out / "model.safetensors").stat().st_ino != stamp and not killed.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reasoner"]
    (out / "eval-results.jsonl").write_text("mine\n")
    before = snapshot(out)
    with pytest.raises(ConfigError, match="eval-results.jsonl"):
        build_tiny_reasoner(out, small, progress=False)
    assert snapshot(out) == before


# --- 3. the final model: complete or absent ---------------------------------------------------------


MODEL_FILES = ("config.json", "model.safetensors", "generation_config.json", "tokenizer.json", "training_args.bin")


def test_sigterm_during_the_final_save_publishes_nothing_and_resume_saves_it(tmp_path, capsys):
    """SIGTERM while config.json of the final model is half written (tests/reliability_crash):
    the top of the output dir holds no model file, the line names the checkpoint that holds the
    finished model, evaluate refuses the dir naming it, and --resume saves the final model from it
    without training a step more."""
    out = tmp_path / "run"
    killed = procrl_run(
        ["train", TINY_RECIPE, "--output-dir", out, *TWO_STEPS],
        tmp_path,
        pythonpath=[CRASH_HOOK],
        PROCRL_TEST_TERM_AT="final-config",
        PROCRL_TEST_OUTPUT_DIR=str(out),
    )
    assert killed.returncode == 143, killed.stderr[-3000:]
    assert "Traceback" not in killed.stderr
    lines = [line for line in killed.stderr.splitlines() if line.startswith("procrl: interrupted")]
    assert lines == [
        f"procrl: interrupted (SIGTERM); nothing lost: training had finished, but the final model was not "
        f"published in {out}; {out / 'checkpoint-2'} holds it: use it, or procrl train --resume publishes "
        "it from there"
    ], killed.stderr[-3000:]
    assert not any((out / name).exists() for name in (*MODEL_FILES, "trainer_state.json")), sorted(os.listdir(out))
    assert not (out / ".partial").exists() and not (out / ".procrl.lock").exists()
    refused = cli(capsys, "evaluate", "--recipe", TINY_RECIPE, "--model", out, "--limit", "1")
    assert_one_line_error(refused, "--model", "holds no final model", str(out / "checkpoint-2"))

    resumed = procrl_run(["train", TINY_RECIPE, "--output-dir", out, *TWO_STEPS, "--resume"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"saved the final model from {out / 'checkpoint-2'}; nothing to train" in resumed.stderr
    assert (out / "model.safetensors").read_bytes() == (out / "checkpoint-2" / "model.safetensors").read_bytes()
    assert json.loads((out / "config.json").read_text())["model_type"] == "qwen2"
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 2
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]


def test_a_full_disk_during_the_final_save_is_one_line_and_publishes_nothing(tmp_path):
    """No checkpoint (save_strategy no); every file capped at 200 kB, the weights are ~430 kB."""
    out = tmp_path / "run"
    done = procrl_run(
        [
            "train",
            TINY_RECIPE,
            "--output-dir",
            out,
            "--set",
            "trainer.max_steps=1",
            "--set",
            "trainer.save_strategy=no",
            "--set",
            "trainer.max_completion_length=8",
        ],
        tmp_path,
        limit_bytes=200_000,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert len(error_lines(done.stderr)) == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    line = error_lines(done.stderr)[0]
    assert f"writing the final model to {out} failed" in line and "File too large" in line
    assert "nothing was published there, no checkpoint was saved yet" in line and "--resume" not in line
    assert not any((out / name).exists() for name in (*MODEL_FILES, "trainer_state.json")), sorted(os.listdir(out))
    assert not (out / ".partial").exists()


def test_a_full_disk_while_writing_optimizer_pt_is_one_line_without_resume_advice(tmp_path):
    """Capped at 600 kB: checkpoint-1's weights (~430 kB) fit, its optimizer.pt (~880 kB) does not."""
    out = tmp_path / "run"
    done = procrl_run(["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP], tmp_path, limit_bytes=600_000)
    assert done.returncode == 2, done.stderr[-3000:]
    assert len(error_lines(done.stderr)) == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    line = error_lines(done.stderr)[0]
    assert (out / ".partial" / "checkpoint-1" / "model.safetensors").is_file()  # it failed after the weights
    assert f"writing checkpoint-1 to {out} failed" in line and "no checkpoint was saved yet" in line
    assert "--resume" not in line and "train again" in line
    assert not (out / "checkpoint-1").exists() and not (out / "model.safetensors").exists()


# --- 4. secrets -------------------------------------------------------------------------------------


def test_no_secret_in_any_file_of_a_run_with_wandb_or_in_what_it_prints(tmp_path):
    """A run with W&B (offline), a Hub token, a judge URL with credentials and a vLLM server URL
    with credentials: training_args.bin (top and every checkpoint), W&B's run-*.wandb (it stores
    the command line and the config), recipe.yaml, the lock, stdout and stderr hold none of them."""
    from procrl.testing.openai_server import Reply, ScriptedOpenAIServer

    hub, judge_password, vllm_password = "hf_HUBSECRET4242", "JUDGEPASS777", "VLLMPASS555"
    with ScriptedOpenAIServer(lambda prompt, attempt: Reply("All steps hold. \\boxed{-1}")) as server:
        judged = server.base_url.replace("http://", f"http://alice:{judge_password}@")
        out = tmp_path / "run"
        done = run_command(
            [
                *procrl(),
                "train",
                TINY_RECIPE,
                "--output-dir",
                out,
                *TWO_STEPS,
                "--set",
                "trainer.report_to=wandb",
                "--set",
                f"trainer.hub_token={hub}",
                "--set",
                f"trainer.vllm_server_base_url=http://bob:{vllm_password}@10.0.0.1:8000",
                "--set",
                f"rewards.first_error={{backend: openai, model: judge, base_url: '{judged}', "
                "weight: 0.1, max_retries: 0, timeout_s: 5}",
            ],
            tmp_path,
        )
    assert done.returncode == 0, done.output
    assert list(tmp_path.rglob("offline-run-*/run-*.wandb")), sorted(p.name for p in tmp_path.iterdir())  # WANDB_DIR
    assert (out / "training_args.bin").is_file() and (out / "checkpoint-2" / "training_args.bin").is_file()
    secrets = [hub, judge_password, vllm_password]
    assert grep_secrets(out, secrets) == []
    assert grep_secrets(tmp_path, secrets) == []  # nothing else written anywhere either
    assert not [s for s in secrets if s in done.stdout + done.stderr]
    import torch

    args = torch.load(out / "training_args.bin", weights_only=False)
    assert args.hub_token is None and args.max_steps == 2  # the rest of the arguments as they were


def test_check_prints_no_credentials_in_the_plan(capsys):
    result = cli(
        capsys, "check", TINY_RECIPE, "--set", "model.name_or_path=https://alice:MODELSECRET9@example.com/models/q"
    )
    assert "MODELSECRET9" not in result.out + result.err
    assert "model" in result.out and "https://<redacted>@example.com/models/q" in result.out.split("plan:")[1]


@pytest.mark.parametrize(
    "override,words",
    [
        (
            "data.dataset=https://alice:DATASECRET1@example.com/d.jsonl",
            ("data.dataset: file not found: https://<redacted>@example.com/d.jsonl",),
        ),
        (
            "trainer.hub_token=[TOKENSECRET2, ANOTHERSECRET]",
            ("trainer.hub_token", "got list ['<redacted>', '<redacted>']"),
        ),
        ("trainer.hub_token=98765432", ("trainer.hub_token", "got int <redacted>")),
        ("trainer.hub_token: TOKENSECRET3", ("expected key.path=value",)),
        ("rewards.first_error=[{backend: openai, base_url: 'https://u:URLSECRET4@h/v1'}]", ("rewards.first_error",)),
    ],
    ids=["url_in_file_not_found", "list_token", "int_token", "mistyped_set", "url_beside_a_bad_value"],
)
def test_error_messages_carry_no_secret(capsys, override, words):
    for command in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", "/nonexistent-procrl/run"]):
        result = cli(capsys, *command, "--set", override)
        line = assert_one_line_error(result, *words)
        assert "SECRET" not in result.out + result.err, line


def test_config_errors_are_redacted_whoever_raises_them():
    from procrl.core.config import ConfigError
    from procrl.core.redaction import register_secrets

    register_secrets({"judge": {"api_key": "sk-REGISTERED-77"}})
    message = str(ConfigError("x: failed with sk-REGISTERED-77 at https://me:pw@h/v1?api_key=abc"))
    assert message == "x: failed with <redacted> at https://<redacted>@h/v1?api_key=<redacted>"


# --- 5. resume: a finished run, a changed recipe ----------------------------------------------------


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A run trained to its max_steps (2), checkpoints 1 and 2, final model saved."""
    out = tmp_path_factory.mktemp("finished") / "run"
    done = run_command([*procrl(), "train", TINY_RECIPE, "--output-dir", out, *TWO_STEPS], out.parent)
    assert done.returncode == 0, done.output
    return out


def copy_run(source: Path, tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / "run"
    shutil.copytree(source, target, symlinks=True)
    return target


def test_resuming_a_finished_run_trains_nothing_and_keeps_every_checkpoint(finished_run, tmp_path, capsys):
    out = copy_run(finished_run, tmp_path)
    before = snapshot(out)
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *TWO_STEPS, "--resume")
    assert result.code == 0, result.err[-3000:]
    assert (
        f"procrl: --resume: the run in {out} is finished (global step 2 of max_steps 2, final model saved); nothing "
        "to train. Raise trainer.max_steps to train further"
    ) in result.err
    assert snapshot(out) == before  # no step 3, no checkpoint rotated away, nothing rewritten


def test_resuming_with_a_changed_recipe_keeps_both_recipes_and_says_what_changed(finished_run, tmp_path, capsys):
    out = copy_run(finished_run, tmp_path)
    original = (out / "recipe.yaml").read_bytes()
    result = cli(
        capsys,
        "train",
        TINY_RECIPE,
        "--output-dir",
        out,
        *TWO_STEPS,
        "--resume",
        "--set",
        "trainer.max_steps=3",
        "--set",
        "trainer.learning_rate=1e-4",
        "--set",
        "rewards.format.weight=0.5",
        "--set",
        "rewards.length_cue={type: format, weight: 0.1}",
        "--set",
        "trainer.vllm_server_base_url=http://bob:CHANGEDSECRET@10.0.0.1:8000",
    )
    assert result.code == 0, result.err[-3000:]
    assert "CHANGEDSECRET" not in result.out + result.err
    changed = [line.removeprefix("procrl:   ") for line in result.err.splitlines() if line.startswith("procrl:   ")]
    assert changed == [
        "trainer.learning_rate: 0.001 -> 0.0001",
        "trainer.max_steps: 2 -> 3",
        'trainer.vllm_server_base_url: (not set) -> "http://<redacted>@10.0.0.1:8000"',
        "rewards.format.weight: 0.2 -> 0.5",
        changed[4],
    ], result.err[-3000:]
    assert changed[4].startswith('rewards.length_cue: (not set) -> {"type": "format", "weight": 0.1')
    assert "the recipe differs from the run's recipe.yaml in 5 key(s)" in result.err
    assert (out / "recipe.yaml").read_bytes() == original  # the run's settings stay
    resumed = (out / "recipe-resumed-at-step-2.yaml").read_text()
    assert "learning_rate: 0.0001" in resumed and "max_steps: 3" in resumed and "CHANGEDSECRET" not in resumed
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 3
    assert grep_secrets(out, ["CHANGEDSECRET"]) == []


# --- 6. Ctrl-C and SIGTERM ----------------------------------------------------------------------------


SIGNAL_ON_THIRD_CALL = (
    "import os, signal\n"
    "calls = []\n"
    "def stop(prompts, completions, **kwargs):\n"
    "    calls.append(1)\n"
    "    if len(calls) == 3:\n"
    "        os.kill(os.getpid(), getattr(signal, os.environ['PROCRL_TEST_SIGNAL']))\n"
    "    return [0.0 for _ in completions]\n"
)


@pytest.mark.parametrize(
    "signal_name,code,how", [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "interrupted (SIGTERM)")]
)
def test_an_interrupted_score_is_one_line_and_leaves_the_previous_output(tmp_path, signal_name, code, how):
    (tmp_path / "stop_third.py").write_text(SIGNAL_ON_THIRD_CALL)
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
            "rewards.stop={type: 'stop_third:stop', weight: 0.0}",
        ],
        tmp_path,
        pythonpath=[tmp_path],
        PROCRL_TEST_SIGNAL=signal_name,
    )
    assert done.returncode == code, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1] == f"procrl: {how}; nothing lost: {output} left as it was"
    assert output.read_text() == '{"previous": "results"}\n'
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("__")) == [
        "rows.jsonl",
        "scored.jsonl",
        "stop_third.py",
    ]  # no hidden .partial left


@pytest.mark.parametrize(
    "signal_name,code,how", [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "interrupted (SIGTERM)")]
)
def test_interrupted_training_is_one_line_naming_the_checkpoint(tmp_path, signal_name, code, how):
    """The reward is called once per step: the signal arrives in step 3, after checkpoint-2."""
    (tmp_path / "stop_third.py").write_text(SIGNAL_ON_THIRD_CALL)
    out = tmp_path / "run"
    done = procrl_run(
        [
            "train",
            TINY_RECIPE,
            "--output-dir",
            out,
            "--set",
            "trainer.max_steps=4",
            "--set",
            "trainer.save_steps=1",
            "--set",
            "trainer.max_completion_length=8",
            "--set",
            "rewards.stop={type: 'stop_third:stop', weight: 0.0}",
        ],
        tmp_path,
        pythonpath=[tmp_path],
        PROCRL_TEST_SIGNAL=signal_name,
    )
    assert done.returncode == code, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("procrl: interrupted")]
    assert lines == [
        f"procrl: {how}; nothing lost: {out / 'checkpoint-2'} is the newest complete checkpoint: continue with --resume"
    ]
    assert not (out / ".procrl.lock").exists() and not (out / "checkpoint-3").exists()
    assert not (out / "model.safetensors").exists()
