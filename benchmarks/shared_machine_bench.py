"""Two procrl commands on one machine: each one's slowdown against running alone.

Runs the same short training (the CPU demo recipe, a few GRPO steps from the shipped reasoner,
no checkpoints) once alone, then twice at the same time, under two thread settings:

* ``openmp-default``: OpenMP's own wait policy (threads spin before they sleep); the child imports
  torch before procrl, so procrl's setting is not applied: what procrl did before it set one;
* ``procrl``: what ``procrl`` does on its own (``OMP_WAIT_POLICY=PASSIVE``, procrl/core/threads.py).

Prints, per setting, the wall time alone, the wall times of the two concurrent runs, and the
slowdown (concurrent / alone). On a machine with as many cores as one run's threads, two runs
that share the cores fairly take about 2x; more than that is time lost to the contention.

    python benchmarks/shared_machine_bench.py [--steps 8] [--settings openmp-default procrl] [--json OUT]

Run it on an otherwise idle machine: anything else running inflates both figures.
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
RECIPE = REPO / "recipes" / "gsm8k_tiny_cpu.yaml"
# procrl's CLI with torch imported first: OpenMP then reads its environment before procrl can set anything
TORCH_FIRST = "import sys, torch; from procrl.launch.cli import main; sys.argv[0] = 'procrl'; sys.exit(main())"
PROCRL = "import sys; from procrl.launch.cli import main; sys.argv[0] = 'procrl'; sys.exit(main())"


def command(setting: str, output_dir: Path, steps: int) -> list[str]:
    code = TORCH_FIRST if setting == "openmp-default" else PROCRL
    return [
        sys.executable,
        "-c",
        code,
        "train",
        str(RECIPE),
        "--output-dir",
        str(output_dir),
        "--set",
        f"trainer.max_steps={steps}",
        "--set",
        "trainer.save_steps=100000",
        "--set",
        "trainer.logging_steps=100000",
        "--set",
        "logging.diagnostics=false",
    ]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["WANDB_MODE"] = "offline"
    return env


def run_together(setting: str, count: int, steps: int, scratch: Path) -> list[float]:
    """Start ``count`` runs at once; the wall time of each."""
    started, processes = [], []
    for index in range(count):
        out = scratch / f"{setting}-{count}-{index}"
        started.append(time.monotonic())
        processes.append(
            subprocess.Popen(
                command(setting, out, steps),
                cwd=REPO,
                env=environment(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    walls = [0.0] * count
    for index, process in enumerate(processes):
        _, err = process.communicate()
        walls[index] = time.monotonic() - started[index]
        if process.returncode != 0:
            raise SystemExit(f"{setting}: a run failed (exit {process.returncode}):\n{err[-2000:]}")
    return walls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8, help="GRPO steps per run")
    parser.add_argument(
        "--settings", nargs="+", default=["openmp-default", "procrl"], choices=["openmp-default", "procrl"]
    )
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    results = {"steps": args.steps, "cores": os.cpu_count(), "settings": {}}
    with tempfile.TemporaryDirectory(prefix="procrl-shared-") as scratch:
        for setting in args.settings:
            alone = run_together(setting, 1, args.steps, Path(scratch))[0]
            together = run_together(setting, 2, args.steps, Path(scratch))
            slowdown = [wall / alone for wall in together]
            results["settings"][setting] = {
                "alone_s": round(alone, 1),
                "together_s": [round(w, 1) for w in together],
                "slowdown": [round(s, 2) for s in slowdown],
            }
            print(
                f"{setting:>15}: alone {alone:6.1f} s; two at once {together[0]:6.1f} s and {together[1]:6.1f} s; "
                f"slowdown {slowdown[0]:.2f}x and {slowdown[1]:.2f}x",
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
