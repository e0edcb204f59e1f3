"""Process vs outcome credit on the tiny reasoner: the experiment every process-reward paper runs.

From ``procrl:tiny-reasoner``, seven arms train with the same number of steps, prompts and
completions per step, and are judged on the same held-out problems:

1. ``outcome_acc``        outcome GRPO, accuracy only;
2. ``outcome_acc_fe``     outcome GRPO, accuracy + first_error (arithmetic judge);
3. ``process_min``        process GRPO (``credit: process``, ``process_aggregation: min``), accuracy + first_error;
4. ``process_sum``        the same with ``process_aggregation: sum`` (DeepSeekMath's rule);
5. ``ppo_process``        PPO with process credit, accuracy + first_error;
6. ``outcome_acc_ref``    outcome GRPO, accuracy + first_error with the reference judge (``backend: reference``);
7. ``process_ref``        process GRPO (min), accuracy + first_error with the reference judge.

Each arm runs ``procrl train recipes/gsm8k_tiny_cpu.yaml`` with ``--set`` overrides (the recipe's
other settings: learning rate, batch, generation length, temperature) for each seed, then
``procrl evaluate`` with the unchanged recipe (so every arm is scored by the same mix) on the
first ``--eval-limit`` problems of the test split, greedy: answer accuracy, reasoning-aware
accuracy, inflation, mean steps per completion, mean length, process reward. Reasoning-aware
accuracy is judged twice from the same completions: by the evaluation judge (``--eval-judge``,
default ``reference``: ``procrl evaluate --judge reference``, a weight-0 component the trained
mixes of arms 1-5 do not contain) and by the recipe's arithmetic judge (the one arms 2-5 train on,
``reasoning_aware_accuracy_arithmetic``: right answer and its first_error score 0). The starting
model is evaluated the same way once. The reward-hacking watch (``procrl/observe/hacking.py``) compares
each arm's mean over seeds with the start.

Writes ``results.json``, ``results.md`` and ``process_vs_outcome.png`` (training curves + final
bars with the seed spread) as ``NAME-COMMIT.{json,md,png}`` to ``--results-dir``
(``benchmarks/process_vs_outcome/``, beside the experiment's README), and the runs' checkpoints and
reports to ``--work-dir``. ``--quick``:
1 seed, 2 steps, 20 problems, a smoke run of the whole pipeline (its numbers mean nothing). The
arms ``goal`` and ``goal_accuracy_only`` (the inflation goal of ``recipes/gsm8k_tiny_process.yaml``
and the same recipe with accuracy alone) run only when named with ``--arms``.

    python benchmarks/process_vs_outcome.py                 # the seven arms, 3 seeds (time: docs/cpu-lab.md)
    python benchmarks/process_vs_outcome.py --quick         # ~3 min (plus the reasoner build if not cached)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

RECIPE = REPO / "recipes" / "gsm8k_tiny_cpu.yaml"
FIRST_ERROR_ONLY = ["rewards.format=false", "rewards.trace=false"]
ARMS: dict[str, dict[str, object]] = {
    "outcome_acc": {
        "label": "outcome GRPO, accuracy",
        "set": [*FIRST_ERROR_ONLY, "rewards.first_error=false", "trainer.credit=outcome"],
    },
    "outcome_acc_fe": {
        "label": "outcome GRPO, accuracy + first_error",
        "set": [*FIRST_ERROR_ONLY, "trainer.credit=outcome"],
    },
    "process_min": {
        "label": "process GRPO (min), accuracy + first_error",
        "set": [
            *FIRST_ERROR_ONLY,
            "trainer.credit=process",
            "trainer.process_rewards=[first_error]",
            "trainer.process_aggregation=min",
        ],
    },
    "process_sum": {
        "label": "process GRPO (sum), accuracy + first_error",
        "set": [
            *FIRST_ERROR_ONLY,
            "trainer.credit=process",
            "trainer.process_rewards=[first_error]",
            "trainer.process_aggregation=sum",
        ],
    },
    "ppo_process": {
        "label": "PPO, process credit, accuracy + first_error",
        "set": [
            *FIRST_ERROR_ONLY,
            "trainer.algorithm=ppo",
            "trainer.credit=process",
            "trainer.process_rewards=[first_error]",
            "trainer.process_aggregation=min",
        ],
    },
    "outcome_acc_ref": {
        "label": "outcome GRPO, accuracy + first_error (reference judge)",
        "set": [*FIRST_ERROR_ONLY, "rewards.first_error.backend=reference", "trainer.credit=outcome"],
    },
    "process_ref": {
        "label": "process GRPO (min), accuracy + first_error (reference judge)",
        "set": [
            *FIRST_ERROR_ONLY,
            "rewards.first_error.backend=reference",
            "trainer.credit=process",
            "trainer.process_rewards=[first_error]",
            "trainer.process_aggregation=min",
        ],
    },
    # the inflation goal: recipes/gsm8k_tiny_process.yaml as shipped, and the same recipe with accuracy alone
    "goal": {"label": "gsm8k_tiny_process.yaml", "recipe": REPO / "recipes" / "gsm8k_tiny_process.yaml", "set": []},
    "goal_accuracy_only": {
        "label": "gsm8k_tiny_process.yaml, accuracy only (outcome GRPO)",
        "recipe": REPO / "recipes" / "gsm8k_tiny_process.yaml",
        "set": ["rewards.first_error=false"],
    },
}
SEVEN_ARMS = tuple(arm for arm in ARMS if not arm.startswith("goal"))
METRICS = (
    "answer_accuracy",
    "reasoning_aware_accuracy",
    "reasoning_aware_accuracy_arithmetic",
    "inflation",
    "inflation_arithmetic",
    "mean_steps",
    "mean_length",
    "process_reward",
)
EVAL_JUDGES = ("reference", "arithmetic")
CURVES = ("rewards/accuracy/mean", "rewards/first_error/mean")
SIGNAL = (
    "diagnostics/signal/mixed_right_groups",
    "diagnostics/signal/sound_minus_flawed_advantage",
    "diagnostics/inflation",
)
BASELINE = "outcome_acc"
# each arm's difference from the baseline, per (seed, problem): metric -> per-problem values it is computed from
PAIRED = {
    "answer_accuracy": lambda p: p["right"],
    "reasoning_aware_accuracy": lambda p: p["sound"],
    "reasoning_aware_accuracy_arithmetic": lambda p: p["sound_arithmetic"],
    "inflation": lambda p: [r - s for r, s in zip(p["right"], p["sound"])],
    "inflation_arithmetic": lambda p: [r - s for r, s in zip(p["right"], p["sound_arithmetic"])],
}
BOOTSTRAP_RESAMPLES = 2000


def paired_bootstrap(
    arm: list[list[float]], baseline: list[list[float]], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> dict[str, float]:
    """The mean difference arm - baseline over seeds and problems (``arm[s][p]``: seed s, problem p;
    seeds paired by index, problems by position) and its 95% interval from a bootstrap that resamples
    seeds, then problems, with replacement (a two-level bootstrap: both are sources of variation)."""
    import random

    rng = random.Random(seed)
    differences = [[a - b for a, b in zip(run, base)] for run, base in zip(arm, baseline)]
    mean = sum(map(sum, differences)) / sum(map(len, differences))
    draws = []
    for _ in range(resamples):
        total, count = 0.0, 0
        for _ in differences:
            run = differences[rng.randrange(len(differences))]
            for _ in run:
                total += run[rng.randrange(len(run))]
            count += len(run)
        draws.append(total / count)
    draws.sort()
    return {"difference": mean, "low": draws[int(0.025 * resamples)], "high": draws[int(0.975 * resamples) - 1]}


def compare_with_baseline(arms: dict[str, dict[int, dict]], baseline: str | None = None) -> dict[str, dict]:
    """Per arm (the baseline excepted), :func:`paired_bootstrap` of every metric of ``PAIRED``
    against the baseline (``outcome_acc``, or ``goal_accuracy_only`` for the goal arm), over the seeds
    both ran."""
    if baseline is None:
        baseline = "goal_accuracy_only" if "goal_accuracy_only" in arms else BASELINE
    if baseline not in arms:
        return {}
    out = {}
    for arm, seeds in arms.items():
        common = [s for s in seeds if s in arms[baseline]]
        if arm == baseline or not common:
            continue
        out[arm] = {
            metric: paired_bootstrap(
                [values(seeds[s]["eval"]["per_problem"]) for s in common],
                [values(arms[baseline][s]["eval"]["per_problem"]) for s in common],
            )
            for metric, values in PAIRED.items()
        }
    return out


LOCK: list[str] = []  # ["flock", FILE] with --lock: each command waits for the machine's other heavy jobs


def _procrl(*args: str, log: Path) -> None:
    command = [*LOCK, sys.executable, "-m", "procrl.launch.cli", *args]
    env = {**os.environ, "WANDB_MODE": os.environ.get("WANDB_MODE", "disabled")}
    with log.open("w") as handle:
        result = subprocess.run(command, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise SystemExit(
            f"failed ({result.returncode}): {' '.join(command)}\nlast lines of {log}:\n"
            + "\n".join(log.read_text().splitlines()[-20:])
        )


def evaluate(model: str, directory: Path, limit: int, judge: str = "reference") -> dict[str, float | None]:
    """``procrl evaluate`` with the unchanged recipe, reasoning-aware accuracy judged by ``judge``
    (``--judge``: a weight-0 component outside the trained mix, unless it is ``arithmetic``, the
    recipe's own first_error), and by the recipe's arithmetic first_error from the same completions."""
    directory.mkdir(parents=True, exist_ok=True)
    judged = [] if judge == "arithmetic" else ["--judge", judge]
    _procrl(
        "evaluate",
        "--recipe",
        str(RECIPE),
        "--model",
        model,
        "--split",
        "test",
        "--limit",
        str(limit),
        "--batch-size",
        "50",
        "--output-dir",
        str(directory),
        "--overwrite",
        *judged,
        log=directory / "evaluate.log",
    )
    return evaluate_report(directory)


def evaluate_report(directory: Path) -> dict:
    """The figures of one ``procrl evaluate`` report directory (its report.json and completions.jsonl)."""
    report = json.loads((directory / "report.json").read_text())
    behaviour = report["behaviour"]
    rows = [json.loads(line) for line in (directory / "completions.jsonl").read_text().splitlines() if line.strip()]
    right = [int(r["correct"] is not None and r["correct"] >= 1.0) for r in rows]
    # the evaluation judge's verdict: first_error -1 = judged and no error found
    sound = [int(ok and r["first_error"] == -1) for ok, r in zip(right, rows)]
    # the arithmetic judge's verdict: first_error 0 = checked and no error
    # (flat penalty; -1: error, unverified, no steps)
    arithmetic = [int(ok and r["rewards"].get("first_error") == 0.0) for ok, r in zip(right, rows)]
    return {
        "answer_accuracy": report["answer_accuracy"],
        "reasoning_aware_accuracy": report["reasoning_aware_accuracy"],
        "reasoning_aware_accuracy_arithmetic": sum(arithmetic) / len(arithmetic) if arithmetic else None,
        "evaluation_judge": report["first_error_component"],
        "inflation": report["inflation"],
        "inflation_arithmetic": (sum(right) - sum(arithmetic)) / len(rows) if rows else None,
        "mean_steps": behaviour["mean_steps"],
        "mean_length": behaviour["mean_length"],
        "process_reward": behaviour["process_reward"],
        "per_problem": {"right": right, "sound": sound, "sound_arithmetic": arithmetic},
    }


def _trained(directory: Path, steps: int) -> bool:
    try:
        state = json.loads((directory / "run" / "trainer_state.json").read_text())
    except (OSError, ValueError):
        return False
    return state.get("global_step") == steps and (directory / "run" / "model.safetensors").is_file()


def _finished(directory: Path, steps: int, limit: int) -> bool:
    try:
        report = json.loads((directory / "eval" / "report.json").read_text())
    except (OSError, ValueError):
        return False
    return _trained(directory, steps) and report.get("n") == limit


def _curve(directory: Path) -> list[dict]:
    history = json.loads((directory / "run" / "trainer_state.json").read_text())["log_history"]
    return [
        {key: h[key] for key in ("step", *CURVES, *SIGNAL) if key in h}
        for h in history
        if "step" in h and any(c in h for c in CURVES)
    ]


def train(arm: str, seed: int, steps: int, directory: Path, extra: list[str] = ()) -> list[dict]:
    directory.mkdir(parents=True, exist_ok=True)
    recipe = ARMS[arm].get("recipe", RECIPE)
    if "rewards.first_error=false" in ARMS[arm]["set"]:  # settings of a component the arm leaves out
        extra = [o for o in extra if not o.startswith("rewards.first_error.")]
    overrides = [
        *ARMS[arm]["set"],
        *extra,
        f"trainer.seed={seed}",
        f"trainer.max_steps={steps}",
        "trainer.logging_steps=1",
        f"trainer.save_steps={steps}",
        "trainer.report_to=none",
    ]
    _procrl(
        "train",
        str(recipe),
        "--output-dir",
        str(directory / "run"),
        "--overwrite",
        *[item for o in overrides for item in ("--set", o)],
        log=directory / "train.log",
    )
    return _curve(directory)


def _mean_std(values: list[float | None]) -> tuple[float | None, float | None]:
    present = [v for v in values if v is not None]
    if not present:
        return None, None
    mean = sum(present) / len(present)
    if len(present) < 2:
        return mean, None  # no spread from a single seed
    return mean, math.sqrt(sum((v - mean) ** 2 for v in present) / (len(present) - 1))


def summarize(start: dict, arms: dict[str, dict[int, dict]]) -> dict[str, dict]:
    from procrl.observe.hacking import Behaviour, suspicions

    def as_behaviour(m: dict) -> Behaviour:
        return Behaviour(m["mean_steps"], m["mean_length"], m["process_reward"], m["answer_accuracy"])

    out = {}
    for arm, seeds in arms.items():
        row = {}
        for metric in METRICS:
            row[metric], row[f"{metric}_std"] = _mean_std([s["eval"].get(metric) for s in seeds.values()])
        row["hacking_suspect"] = suspicions(as_behaviour(start), as_behaviour(row))
        out[arm] = row
    return out


def _fmt(value: float | None, std: float | None = None, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{digits}f}" + (f" ± {std:.{digits}f}" if std is not None else "")


def _interval(comparison: dict | None, metric: str) -> str:
    if not comparison:
        return ""
    c = comparison[metric]
    return f"{c['difference']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"


def markdown(results: dict) -> str:
    s = results["settings"]
    judge = s.get("eval_judge", "arithmetic")
    lines = [
        f"Process vs outcome credit from `procrl:tiny-reasoner`: {s['steps']} steps x {s['completions_per_step']} "
        f"completions per arm and seed, seeds {s['seeds']}, greedy evaluation on the first {s['eval_limit']} "
        f"test problems (mean ± std over seeds). Reasoning-aware accuracy judged by the {judge} judge"
        + (
            " (a weight-0 evaluation judge, not in the arms' trained mixes unless an arm trains on it)"
            if judge != "arithmetic"
            else ""
        )
        + " and by the arithmetic judge (the recipe's first_error). "
        f"Run time {results['runtime_s'] / 60:.1f} min on {s['cpus']} CPU cores.",
        "",
        f"| arm | answer acc. | reasoning-aware acc. ({judge}) | reasoning-aware acc. (arithmetic) | inflation | "
        "steps / completion | length (chars) | hacking suspect |",
        "|---|---|---|---|---|---|---|---|",
    ]
    start = results["start"]
    lines.append(
        f"| starting model | {_fmt(start['answer_accuracy'])} | {_fmt(start['reasoning_aware_accuracy'])} | "
        f"{_fmt(start.get('reasoning_aware_accuracy_arithmetic'))} | {_fmt(start['inflation'])} | "
        f"{_fmt(start['mean_steps'], digits=2)} | {_fmt(start['mean_length'], digits=0)} | |"
    )
    for arm, row in results["summary"].items():
        suspect = "; ".join(row["hacking_suspect"]) or "no"
        arithmetic = _fmt(
            row.get("reasoning_aware_accuracy_arithmetic"), row.get("reasoning_aware_accuracy_arithmetic_std")
        )
        lines.append(
            f"| {ARMS[arm]['label']} | {_fmt(row['answer_accuracy'], row['answer_accuracy_std'])} | "
            f"{_fmt(row['reasoning_aware_accuracy'], row['reasoning_aware_accuracy_std'])} | "
            f"{arithmetic} | "
            f"{_fmt(row['inflation'], row['inflation_std'])} | {_fmt(row['mean_steps'], row['mean_steps_std'], 2)} | "
            f"{_fmt(row['mean_length'], row['mean_length_std'], 0)} | {suspect} |"
        )
    comparisons = results.get("vs_baseline") or {}
    if comparisons:
        baseline = "goal_accuracy_only" if "goal_accuracy_only" in results["arms"] else BASELINE
        lines += [
            "",
            f"Difference from {ARMS[baseline]['label']} (paired over seeds and problems; 95% interval of a "
            f"bootstrap over seeds and problems, {BOOTSTRAP_RESAMPLES} resamples):",
            "",
            f"| arm | answer acc. | reasoning-aware ({judge}) | reasoning-aware (arithmetic) | inflation ({judge}) | "
            "inflation (arithmetic) |",
            "|---|---|---|---|---|---|",
        ]
        for arm, comparison in comparisons.items():
            lines.append(
                f"| {ARMS[arm]['label']} | "
                + " | ".join(
                    _interval(comparison, m)
                    for m in (
                        "answer_accuracy",
                        "reasoning_aware_accuracy",
                        "reasoning_aware_accuracy_arithmetic",
                        "inflation",
                        "inflation_arithmetic",
                    )
                )
                + " |"
            )
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = list(results["summary"])
    colors = dict(zip(arms, plt.get_cmap("tab10").colors))
    figure, axes = plt.subplots(1, 3, figsize=(17, 4.8))
    for axis, key, title in (
        (axes[0], CURVES[0], "training reward: accuracy"),
        (axes[1], CURVES[1], "training reward: first_error (0 best, -1 error)"),
    ):
        for arm in arms:
            runs = [s["curve"] for s in results["arms"][arm].values()]
            steps = sorted({h["step"] for run in runs for h in run if key in h})
            means = []
            for step in steps:
                values = [h[key] for run in runs for h in run if h["step"] == step and key in h]
                means.append(sum(values) / len(values))
            if len(means) >= 5:  # a moving average over 5 steps: single steps are 4 prompts
                means = [
                    sum(means[max(0, i - 4) : i + 1]) / len(means[max(0, i - 4) : i + 1]) for i in range(len(means))
                ]
            if steps:
                axis.plot(steps, means, label=arm, color=colors[arm])
        axis.set_title(title)
        axis.set_xlabel("step (mean over seeds, 5-step moving average)")
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    axis = axes[2]
    judge = results["settings"].get("eval_judge", "arithmetic")
    bars = [("answer_accuracy", None, "--"), ("reasoning_aware_accuracy", "//", ":")]
    if judge != "arithmetic" and "reasoning_aware_accuracy_arithmetic" in results["start"]:
        bars.append(("reasoning_aware_accuracy_arithmetic", "..", "-."))
    width = 0.8 / len(bars)
    for position, (metric, hatch, line) in enumerate(bars):
        offset = (position - (len(bars) - 1) / 2) * width
        for i, arm in enumerate(arms):
            values = [s["eval"][metric] for s in results["arms"][arm].values() if s["eval"].get(metric) is not None]
            if not values:
                continue
            mean = sum(values) / len(values)
            axis.bar(i + offset, mean, width, color=colors[arm], hatch=hatch, edgecolor="black", linewidth=0.5)
            axis.scatter([i + offset] * len(values), values, color="black", s=10, zorder=3)
        axis.axhline(results["start"][metric], color="gray", linestyle=line, linewidth=1)
    axis.set_xticks(range(len(arms)), arms, rotation=20, fontsize=8)
    top = max(
        [results["start"]["answer_accuracy"]]
        + [s["eval"]["answer_accuracy"] for a in arms for s in results["arms"][a].values()]
    )
    axis.set_ylim(0, min(1.0, top + 0.1))
    judged = f"reasoning-aware: {judge} judge (//)" + (", arithmetic judge (..)" if len(bars) == 3 else "")
    axis.set_title(f"held-out answer accuracy (plain)\n{judged}\ndots: seeds; lines: starting model", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="Smoke run: 1 seed, 2 steps, 20 problems.")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="Training seeds (default 0 1 2).")
    parser.add_argument("--steps", type=int, default=None, help="Training steps per run (default: 60).")
    parser.add_argument("--eval-limit", type=int, default=None, help="Held-out problems (default 500).")
    parser.add_argument(
        "--arms",
        nargs="+",
        choices=list(ARMS),
        default=list(SEVEN_ARMS),
        help="Arms to run (default: the seven of the experiment).",
    )
    parser.add_argument(
        "--eval-judge",
        choices=EVAL_JUDGES,
        default="reference",
        help="Judge of reasoning-aware accuracy (procrl evaluate --judge); 'arithmetic': the recipe's own "
        "first_error, which arms 2-5 train on (the arithmetic judge's figure is reported either way).",
    )
    parser.add_argument(
        "--set",
        dest="extra",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="An override for every arm's training (e.g. trainer.learning_rate=3e-4). Repeatable.",
    )
    parser.add_argument("--name", default="process_vs_outcome", help="Results file name (the commit is appended).")
    parser.add_argument(
        "--results-dir",
        default=str(REPO / "benchmarks" / "process_vs_outcome"),  # next to this experiment's README
        help="Where NAME-COMMIT.json, .md and .png are written.",
    )
    parser.add_argument(
        "--work-dir",
        default=str(REPO / "outputs" / "process_vs_outcome"),
        help="The runs' checkpoints and evaluation reports (large; not for the repository).",
    )
    parser.add_argument(
        "--replot",
        default=None,
        metavar="RESULTS_JSON",
        help="Only re-render the .md and the PNG next to this results file.",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="Reuse the runs and evaluations of the work dir that finished with these settings.",
    )
    parser.add_argument(
        "--lock",
        default=None,
        metavar="FILE",
        help="Run each train and evaluate command under flock FILE (one heavy job at a time).",
    )
    args = parser.parse_args(argv)
    if args.lock:
        LOCK[:] = ["flock", args.lock]
    if args.replot:
        path = Path(args.replot)
        results = json.loads(path.read_text())
        results["vs_baseline"] = compare_with_baseline(results["arms"])
        path.write_text(json.dumps(results, indent=2) + "\n")
        path.with_suffix(".md").write_text(markdown(results))
        plot(results, path.with_suffix(".png"))
        print(markdown(results))
        return 0
    seeds = args.seeds or ([0] if args.quick else [0, 1, 2])
    steps = args.steps or (2 if args.quick else 60)
    limit = args.eval_limit or (20 if args.quick else 500)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    results_dir = Path(args.results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    stem = results_dir / f"{args.name}-{commit()}"
    started = time.monotonic()

    from procrl.recipe import load_recipe

    recipe = load_recipe(str(RECIPE))
    print(f"starting model: evaluating on {limit} held-out problems", flush=True)
    reusable = (
        args.reuse
        and (work / "start" / "report.json").is_file()
        and json.loads((work / "start" / "report.json").read_text()).get("n") == limit
    )
    start = (
        evaluate_report(work / "start")
        if reusable
        else evaluate("procrl:tiny-reasoner", work / "start", limit, args.eval_judge)
    )
    arms: dict[str, dict[int, dict]] = {}
    for arm in args.arms:
        for seed in seeds:
            run_started = time.monotonic()
            directory = work / arm / f"seed{seed}"
            if args.reuse and _finished(directory, steps, limit):
                curve, result = _curve(directory), evaluate_report(directory / "eval")
            else:
                curve = (
                    _curve(directory)
                    if args.reuse and _trained(directory, steps)
                    else train(arm, seed, steps, directory, args.extra)
                )
                result = evaluate(str(directory / "run"), directory / "eval", limit, args.eval_judge)
            arms.setdefault(arm, {})[seed] = {
                "eval": result,
                "curve": curve,
                "seconds": round(time.monotonic() - run_started, 1),
            }
            print(
                f"{arm} seed {seed}: answer {result['answer_accuracy']:.3f}, reasoning-aware "
                f"{result['reasoning_aware_accuracy']:.3f} ({args.eval_judge} judge), "
                f"{result['reasoning_aware_accuracy_arithmetic']:.3f} (arithmetic judge) "
                f"({time.monotonic() - run_started:.0f} s)",
                flush=True,
            )
    results = {
        "settings": {
            "recipe": str(RECIPE.relative_to(REPO)),
            "steps": steps,
            "seeds": seeds,
            "eval_limit": limit,
            "completions_per_step": recipe.trainer_args["per_device_train_batch_size"],
            "num_generations": recipe.trainer_args["num_generations"],
            "learning_rate": recipe.trainer_args["learning_rate"],
            "arms": {a: ARMS[a]["set"] for a in args.arms},
            "extra": args.extra,
            "quick": args.quick,
            "cpus": os.cpu_count(),
            "eval_judge": args.eval_judge,
            "commit": commit(),
            "command": " ".join(["python", "benchmarks/process_vs_outcome.py", *(argv or sys.argv[1:])]),
        },
        "start": start,
        "arms": arms,
        "summary": summarize(start, arms),
        "vs_baseline": compare_with_baseline(arms),
        "runtime_s": round(time.monotonic() - started, 1),
    }
    stem.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    stem.with_suffix(".md").write_text(markdown(results))
    plot(results, stem.with_suffix(".png"))
    print(markdown(results))
    print(f"wrote {stem}.json, .md and .png")
    return 0


def commit() -> str:
    """The commit the figures come from; ``+dirty`` when tracked files differ from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short=7", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no", "--", "procrl", "recipes") else "")


if __name__ == "__main__":
    sys.exit(main())
