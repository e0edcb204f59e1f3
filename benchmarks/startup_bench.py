"""Start-up cost of ``procrl score`` (one row) and ``procrl check``: wall time and peak memory
(max RSS), against ``python -c "import trl"`` / ``from trl import GRPOConfig`` and, with
``--baseline REV``, against the same commands of an older procrl commit in the same run.

Each arm is a fresh interpreter (``python -m procrl ...``), runs are interleaved, medians are
reported; peak memory is the child's own ``ru_maxrss`` (``os.wait4``). The baseline is extracted
with ``git archive REV`` into a temporary directory that goes first on ``PYTHONPATH`` (same venv,
same dependencies, same recipe and input); every arm runs in a scratch directory, since
``python -m`` puts the working directory first on the path. Threads are pinned
(``OMP_NUM_THREADS=1``).

    python benchmarks/startup_bench.py [--runs 7] [--baseline REV]

Prints each arm's median wall time and peak memory, and with a baseline revision the ratios
baseline / this checkout (the target for ``score``: at least 2x on both).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "recipes" / "gsm8k_tiny_smoke.yaml"
GSM8K = REPO.parent / "shared" / "data" / "gsm8k" / "train.jsonl"
FALLBACK_ROW = {
    "question": "Tom has 3 apples and buys 4 more. How many apples does he have?",
    "answer": "He has 3 + 4 = <<3+4=7>>7 apples.\n#### 7",
}


def one_row(path: Path) -> Path:
    """The first GSM8K train problem with its reference solution as the completion."""
    row = json.loads(GSM8K.read_text().splitlines()[0]) if GSM8K.is_file() else FALLBACK_ROW
    path.write_text(
        json.dumps({"question": row["question"], "completion": row["answer"], "answer": row["answer"]}) + "\n"
    )
    return path


def measure(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one child process, from its own rusage (os.wait4);
    fails loudly on a non-zero exit."""
    with tempfile.TemporaryFile() as stderr:
        start = time.perf_counter()
        process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            stderr.seek(0)
            sys.exit(f"failed ({process.returncode}): {' '.join(argv)}\n{stderr.read().decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024  # KiB on Linux


def extract(revision: str, directory: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", revision, "procrl", "procrl_recipe_hook.py"], cwd=REPO, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive, check=True)
    return directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="Runs per arm (interleaved); medians are reported.")
    parser.add_argument(
        "--baseline", default=None, help="Git revision to compare with (e.g. the commit before the change)."
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        row = one_row(tmp_path / "row.jsonl")
        env = dict(
            os.environ,
            OMP_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            TOKENIZERS_PARALLELISM="false",
            HF_HUB_OFFLINE="1",
            WANDB_MODE="offline",
        )
        env.pop("PYTHONPATH", None)
        python = sys.executable

        def procrl_args(tag: str) -> dict[str, list[str]]:
            out = tmp_path / f"{tag}.jsonl"
            return {
                f"score 1 row{tag}": [
                    python,
                    "-m",
                    "procrl",
                    "score",
                    "--recipe",
                    str(RECIPE),
                    "--input",
                    str(row),
                    "--output",
                    str(out),
                    "--quiet",
                ],
                f"check{tag}": [python, "-m", "procrl", "check", str(RECIPE)],
            }

        arms: dict[str, tuple[list[str], dict[str, str]]] = {}
        for name, argv in procrl_args("").items():
            arms[name] = (argv, env)
        arms["python -c 'import trl'"] = ([python, "-c", "import trl"], env)
        arms["python -c 'from trl import GRPOConfig'"] = ([python, "-c", "from trl import GRPOConfig"], env)
        if args.baseline:
            old = extract(args.baseline, Path(tempfile.mkdtemp(dir=tmp)))
            old_env = dict(env, PYTHONPATH=str(old))
            for name, argv in procrl_args(f" @{args.baseline}").items():
                arms[name] = (argv, old_env)

        for argv, arm_env in arms.values():  # warm the file cache (and the tiny model cache) once
            measure(argv, arm_env, tmp_path)
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in arms}
        for _ in range(args.runs):
            for name, (argv, arm_env) in arms.items():
                results[name].append(measure(argv, arm_env, tmp_path))

    medians = {
        name: (statistics.median(w for w, _ in rows), statistics.median(m for _, m in rows))
        for name, rows in results.items()
    }
    width = max(map(len, medians))
    print(f"{'command':<{width}}  {'wall (s)':>9}  {'peak RSS (MiB)':>14}   medians of {args.runs} interleaved runs")
    for name, (wall, memory) in medians.items():
        print(f"{name:<{width}}  {wall:9.2f}  {memory:14.0f}")
    if args.baseline:
        print()
        for command in ("score 1 row", "check"):
            wall, memory = medians[command]
            base_wall, base_memory = medians[f"{command} @{args.baseline}"]
            print(
                f"{command}: {args.baseline} / this checkout = {base_wall / wall:.2f}x wall, "
                f"{base_memory / memory:.2f}x peak memory"
            )


if __name__ == "__main__":
    main()
