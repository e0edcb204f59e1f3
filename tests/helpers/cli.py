"""procrl's commands run by tests, in this process (:func:`cli`, with its exit status and output) or
as a process (:func:`procrl_run`), the one-line errors they must give, and the small files they read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.launch import REPO, TINY_RECIPE

ONE_STEP = ["--set", "trainer.max_steps=1", "--set", "trainer.save_steps=1", "--set", "trainer.max_completion_length=8"]


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    @property
    def errors(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith("procrl: error:")]


def cli(capsys, *argv) -> CliResult:
    """``procrl ARGV`` in this process: exit status, stdout, stderr."""
    from procrl.launch.cli import main

    capsys.readouterr()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit_:  # argparse
        code = exit_.code
    captured = capsys.readouterr()
    return CliResult(code, captured.out, captured.err)


def assert_one_line_error(result: CliResult, *words: str) -> str:
    """Exit status 2, exactly one ``procrl: error:`` line naming ``words``, no traceback."""
    assert result.code == 2, (result.code, result.err[-2000:])
    assert len(result.errors) == 1 and "Traceback" not in result.err, result.err[-2000:]
    for word in words:
        assert word in result.errors[0], (word, result.errors[0])
    return result.errors[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(folder.rglob("*"))
    }


def fake_checkpoint(folder: Path, step: int) -> Path:
    """A complete-looking checkpoint: trainer state with its step, and weights."""
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    (path / "model.safetensors").write_bytes(safetensors_bytes())
    return path


def safetensors_bytes() -> bytes:
    """A small real safetensors file (a checkpoint's weights are checked against their header)."""
    import numpy
    from safetensors.numpy import save

    return save({"weight": numpy.arange(4, dtype=numpy.float32)})


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


GOOD_ROWS = [
    {
        "question": "Ava has 3 bags of 4 apples. How many apples?",
        "completion": "3 x 4 = 12 apples.\n#### 12",
        "answer": "#### 12",
    },
    {"question": "Ben has 5 pens and buys 2. How many?", "completion": "5 + 2 = 7 pens.\n#### 7", "answer": "#### 7"},
    {
        "question": "Cy has 10 cards and gives 4 away. How many?",
        "completion": "10 - 4 = 6.\n#### 6",
        "answer": "#### 6",
    },
]


def score(capsys, source: Path, output: Path, *extra) -> CliResult:
    return cli(capsys, "score", "--recipe", TINY_RECIPE, "--input", source, "--output", output, "--quiet", *extra)


def reward_module(tmp_path: Path, monkeypatch, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def grep_secrets(folder: Path, secrets: list[str]) -> list[str]:
    """Every file under ``folder`` holding one of ``secrets`` (raw bytes: pickles, W&B's log)."""
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path.relative_to(folder)}: {s}" for s in secrets if s.encode() in data]
    return found


def procrl_run(
    argv: list,
    tmp_path: Path,
    limit_bytes: int | None = None,
    pythonpath: list = (),
    timeout=600,
    input: str | None = None,
    **env: str,
) -> subprocess.CompletedProcess:
    """``procrl ARGV`` as a process in ``tmp_path`` (optionally with every file capped at
    ``limit_bytes``, as a full disk would stop it: RLIMIT_FSIZE, EFBIG; Python ignores SIGXFSZ;
    ``input``: its standard input)."""
    import resource

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    path = os.pathsep.join([*map(str, pythonpath), str(REPO)])
    return subprocess.run(
        [sys.executable, "-m", "procrl.launch.cli", *map(str, argv)],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=small_disk if limit_bytes else None,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", **env},
    )
