"""Cost of the process diagnostics: the tiny CPU recipe trained with ``logging.diagnostics`` on
vs off, same seed, runs interleaved (off, on, off, on, ...) so that load on a shared machine
hits both arms alike.

Prints two ratios (on / off; target <= 1.05): TRL's mean ``step_time`` (generation, reward
scoring with the batch observer, forward/backward; the first step, which loads spaCy, is left
out) and the wall time per step (``train_runtime / steps``, which also counts each logging
step: time shares, and with ``--wandb`` the W&B histograms, plots and tables). On a shared,
loaded machine both ratios are noisy; the third number, ``diagnostics/overhead_share`` (time
spent in the diagnostics code itself, measured in-process, over step time), is not.

By default both arms add model-free process rewards (the arithmetic first-error judge and the
TRACE cue tagger) to the recipe, so that every diagnostic has data to work on.

    OMP_NUM_THREADS=1 python benchmarks/diagnostics_bench.py [--steps 20] [--repeats 2] [--wandb] [--recipe-only]

(one torch thread per run keeps a shared 2-core machine from turning 0.1 s steps into seconds of
thread contention, which swamps the difference being measured).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "recipes" / "gsm8k_tiny_smoke.yaml"
PROCESS_REWARDS = [
    "rewards.judge={type: first_error, backend: arithmetic, weight: 0.2}",
    "rewards.trace={type: trace, tagger: cues, weight: 0.2}",
]


def run(diagnostics: bool, steps: int, use_wandb: bool, recipe_only: bool, workdir: Path, tag: str) -> dict:
    output = workdir / tag
    overrides = [
        f"logging.diagnostics={'true' if diagnostics else 'false'}",
        f"trainer.max_steps={steps}",
        f"trainer.save_steps={steps * 10}",
        f"trainer.report_to={'wandb' if use_wandb else 'none'}",
    ]
    if not recipe_only:
        overrides += PROCESS_REWARDS
    command = [sys.executable, "-m", "procrl.run", str(RECIPE), "--output-dir", str(output)]
    for override in overrides:
        command += ["--set", override]
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(workdir), "TOKENIZERS_PARALLELISM": "false"}
    result = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"training failed ({tag}):\n{result.stderr[-3000:]}")
    history = json.loads((output / "trainer_state.json").read_text())["log_history"]
    step_times = [h["step_time"] for h in history if "step_time" in h][1:]
    runtime = next(h["train_runtime"] for h in history if "train_runtime" in h)
    shares = [
        sum(v for k, v in h.items() if k.startswith("diagnostics/time_share/")) for h in history if "step_time" in h
    ]
    overhead = [h["diagnostics/overhead_share"] for h in history if "diagnostics/overhead_share" in h][1:]
    return {
        "step_time": statistics.mean(step_times),
        "wall_per_step": runtime / steps,
        "reward_share": statistics.mean(shares) if shares and diagnostics else None,
        "overhead_share": statistics.mean(overhead) if overhead else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="Training steps per run.")
    parser.add_argument("--repeats", type=int, default=2, help="Runs per arm (interleaved).")
    parser.add_argument("--wandb", action="store_true", help="Log to W&B offline in both arms (plots, tables).")
    parser.add_argument("--recipe-only", action="store_true", help="The recipe's own rewards only (accuracy, format).")
    args = parser.parse_args()
    results: dict[bool, list[dict]] = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix="procrl-diag-bench-") as tmp:
        for repeat in range(args.repeats):
            for diagnostics in (False, True):
                tag = f"{'on' if diagnostics else 'off'}-{repeat}"
                results[diagnostics].append(run(diagnostics, args.steps, args.wandb, args.recipe_only, Path(tmp), tag))
                r = results[diagnostics][-1]
                print(f"  {tag:<6} step_time {r['step_time']:.4f} s   wall/step {r['wall_per_step']:.4f} s")
    off = {k: statistics.mean(r[k] for r in results[False]) for k in ("step_time", "wall_per_step")}
    on = {k: statistics.mean(r[k] for r in results[True]) for k in ("step_time", "wall_per_step")}
    shares = [r["reward_share"] for r in results[True] if r["reward_share"] is not None]
    overhead = [r["overhead_share"] for r in results[True] if r["overhead_share"] is not None]
    rewards = "accuracy, format" + ("" if args.recipe_only else ", first_error (arithmetic), trace (cues)")
    print(
        f"tiny recipe, {args.steps} steps x {args.repeats} runs per arm, rewards: {rewards},"
        f" W&B: {'offline' if args.wandb else 'off'}"
    )
    print(
        f"mean step_time      off {off['step_time']:.4f} s  on {on['step_time']:.4f} s"
        f"  ratio on/off {on['step_time'] / off['step_time']:.3f}"
    )
    print(
        f"mean wall per step  off {off['wall_per_step']:.4f} s  on {on['wall_per_step']:.4f} s"
        f"  ratio on/off {on['wall_per_step'] / off['wall_per_step']:.3f}"
    )
    if shares:
        print(f"reward components' share of step time (diagnostics/time_share, summed): {statistics.mean(shares):.3f}")
    if overhead:
        print(
            f"diagnostics' own time over step time, measured in-process (diagnostics/overhead_share): "
            f"{statistics.mean(overhead):.2e}  (the ratio the diagnostics account for: 1 + this)"
        )


if __name__ == "__main__":
    main()
