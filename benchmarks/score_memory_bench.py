"""Peak memory of ``procrl score`` at 1k, 10k and 100k rows: streaming (what ``procrl score``
does: one batch in memory, running sums for the summary) against a load-everything baseline in
the same run (every input row read into a list, every scored row kept for the summary, the
output written at the end: what ``procrl score`` did before), each in its own process, peak RSS
from the kernel (``wait4``). Rows are GSM8K-style problems with their reference solutions as
completions (the embedded generator: no download), scored with the recipe's reward mix.

    python benchmarks/score_memory_bench.py [--rows 1000 10000 100000] [--recipe recipes/gsm8k_tiny_smoke.yaml]

Flat memory shows as the same peak RSS at every size for streaming; the baseline grows with
the rows. Times are wall-clock on a shared machine: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def write_rows(path: Path, count: int) -> None:
    from procrl.data.synthetic import generate_problems

    problems = generate_problems(min(count, 5000), seed=0)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(count):
            problem = problems[i % len(problems)]
            handle.write(
                json.dumps(
                    {
                        "id": i,
                        "question": problem["question"],
                        "completion": problem["answer"],
                        "answer": problem["answer"],
                    }
                )
                + "\n"
            )


def load_everything(recipe_path: str, source: str, output: str, batch_size: int) -> None:
    """The baseline: all rows in a list, all scored rows kept, the summary and the output at the end."""
    from procrl.evaluation.score import RunningSummary, score_batch
    from procrl.recipe import load_recipe
    from procrl.rewards import RewardMix

    rows = [json.loads(line) for line in Path(source).read_text(encoding="utf-8").splitlines() if line.strip()]
    mix = RewardMix(load_recipe(recipe_path, scoring=True).rewards)
    scored = []
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        batch_rows, _, _ = score_batch(mix, list(range(start + 1, start + 1 + len(chunk))), chunk)
        scored.extend(batch_rows)
    summary = RunningSummary(mix.names)
    for row in scored:
        summary.add(row)
    Path(output).write_text("".join(json.dumps(row) + "\n" for row in scored), encoding="utf-8")
    print(summary.format())


def measure(command: list[str]) -> tuple[float, float]:
    """Peak RSS (MiB) and seconds of a child process."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{process.stderr.read().decode()[-2000:]}")
    return usage.ru_maxrss / 1024, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--recipe", default=str(REPO / "recipes" / "gsm8k_tiny_smoke.yaml"))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--baseline-worker", nargs=3, metavar=("RECIPE", "INPUT", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline_worker:
        load_everything(*args.baseline_worker, batch_size=args.batch_size)
        return

    procrl = [
        sys.executable,
        "-m",
        "procrl",
        "score",
        "--recipe",
        args.recipe,
        "--quiet",
        "--batch-size",
        str(args.batch_size),
    ]
    print(f"{'rows':>8}{'input MiB':>11}{'streaming MiB':>15}{'s':>8}{'load-everything MiB':>21}{'s':>8}{'ratio':>8}")
    with tempfile.TemporaryDirectory() as folder:
        for count in args.rows:
            source = Path(folder) / f"rows_{count}.jsonl"
            write_rows(source, count)
            streaming, streaming_s = measure(
                [*procrl, "--input", str(source), "--output", str(Path(folder) / "streamed.jsonl")]
            )
            baseline, baseline_s = measure(
                [
                    sys.executable,
                    __file__,
                    "--batch-size",
                    str(args.batch_size),
                    "--baseline-worker",
                    args.recipe,
                    str(source),
                    str(Path(folder) / "loaded.jsonl"),
                ]
            )
            same = (Path(folder) / "streamed.jsonl").read_bytes() == (Path(folder) / "loaded.jsonl").read_bytes()
            size = source.stat().st_size / 2**20
            print(
                f"{count:>8}{size:>11.1f}{streaming:>15.0f}{streaming_s:>8.0f}{baseline:>21.0f}{baseline_s:>8.0f}"
                f"{baseline / streaming:>8.2f}{'' if same else '  OUTPUTS DIFFER'}",
                flush=True,
            )


if __name__ == "__main__":
    main()
