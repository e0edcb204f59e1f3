"""``procrl eval-judge``: meta-evaluate a first-error judge on ProcessBench-format data.

Data: a JSON list or JSONL of ``{problem, steps, label}`` (label = index of the earliest wrong
step, -1 when all are correct; an optional ``answer``, the gold final answer or a GSM8K solution,
is shown to reference-mode judges exactly as training shows it: ``reference: answer`` the final
answer, ``reference: solution`` all of it).
Metrics (REWARDS.md section 4): acc_err = accuracy on samples with an error, acc_cor = accuracy
on all-correct samples, F1 = their harmonic mean (the ProcessBench metric). A sample without a
verdict counts as wrong. For a ``prm`` judge the step probabilities are kept and the threshold
is swept to report the F1-best one.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

from procrl.config import ConfigError

__all__ = [
    "cmd_eval_judge",
    "evaluate_judge",
    "format_report",
    "processbench_metrics",
    "read_processbench",
    "sweep_thresholds",
]

SWEEP = [round(0.05 * i, 2) for i in range(1, 20)]


def read_processbench(path: str | Path) -> list[dict[str, Any]]:
    """Records of a ProcessBench-format file, validated (one clear error per bad record)."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"--data: file not found: {path}")
    text = file.read_text(encoding="utf-8")
    try:
        if text.lstrip().startswith("["):
            records = json.loads(text)
        else:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON / JSONL ({error.msg}, line {error.lineno})") from None
    for number, record in enumerate(records, 1):
        where = f"{path}: record {number}"
        if not isinstance(record, dict):
            raise ConfigError(f"{where}: expected an object with problem, steps, label")
        for key in ("problem", "steps", "label"):
            if key not in record:
                raise ConfigError(f"{where}: missing {key!r}")
        steps, label = record["steps"], record["label"]
        if not isinstance(steps, list) or not steps or not all(isinstance(s, str) for s in steps):
            raise ConfigError(f"{where}: 'steps' must be a non-empty list of strings")
        if isinstance(label, bool) or not isinstance(label, int) or not -1 <= label < len(steps):
            raise ConfigError(f"{where}: 'label' must be -1 or a step index below {len(steps)}, got {label!r}")
    return records


def _bucket(label: int) -> str:
    return str(label) if label < 4 else "4+"


def processbench_metrics(labels: list[int], predictions: list[int | None]) -> dict[str, Any]:
    """acc_err, acc_cor, f1 (fractions), counts, and a confusion summary by error position."""
    if len(labels) != len(predictions):
        raise ValueError("labels and predictions differ in length")
    errors = [(l, p) for l, p in zip(labels, predictions) if l != -1]
    corrects = [p for l, p in zip(labels, predictions) if l == -1]
    acc_err = sum(p == l for l, p in errors) / len(errors) if errors else math.nan
    acc_cor = sum(p == -1 for p in corrects) / len(corrects) if corrects else math.nan
    if errors and corrects:
        f1 = 2 * acc_err * acc_cor / (acc_err + acc_cor) if acc_err + acc_cor > 0 else 0.0
    else:
        f1 = math.nan
    by_position: dict[str, dict[str, int]] = {}
    for label, prediction in errors:
        row = by_position.setdefault(_bucket(label), {"n": 0, "exact": 0, "early": 0, "late": 0, "missed": 0, "no_verdict": 0})
        row["n"] += 1
        if prediction is None:
            row["no_verdict"] += 1
        elif prediction == label:
            row["exact"] += 1
        elif prediction == -1:
            row["missed"] += 1
        elif prediction < label:
            row["early"] += 1
        else:
            row["late"] += 1
    correct_row = {
        "n": len(corrects),
        "correct": sum(p == -1 for p in corrects),
        "false_alarm": sum(p is not None and p >= 0 for p in corrects),
        "no_verdict": sum(p is None for p in corrects),
    }
    return {
        "n": len(labels),
        "n_error": len(errors),
        "n_correct": len(corrects),
        "acc_err": acc_err,
        "acc_cor": acc_cor,
        "f1": f1,
        "no_verdict": sum(p is None for p in predictions),
        "confusion": {"error_by_label": dict(sorted(by_position.items())), "all_correct": correct_row},
    }


def sweep_thresholds(labels: list[int], probabilities: list[list[float] | None], thresholds=SWEEP) -> dict[str, Any]:
    """F1 of a PRM at each threshold (k = first step below it) and the F1-best threshold."""
    from procrl.rewards.judges.prm import first_below

    rows = []
    for threshold in thresholds:
        predictions = [None if p is None else first_below(p, threshold) for p in probabilities]
        metrics = processbench_metrics(labels, predictions)
        rows.append({"threshold": threshold, "f1": metrics["f1"], "acc_err": metrics["acc_err"], "acc_cor": metrics["acc_cor"]})
    finite = [r for r in rows if not math.isnan(r["f1"])]
    best = max(finite, key=lambda r: r["f1"]) if finite else None
    return {"thresholds": rows, "best": best}


def evaluate_judge(component, records: list[dict], chunk: int = 256, progress: bool = False) -> dict[str, Any]:
    """Run ``component``'s judge over the records (concurrency applies within each chunk)."""
    from procrl.rewards.judges import FAILURE_KINDS

    # the judge is asked exactly as in training: the same prompt, the gold reduced to what the
    # component's `reference` setting shows (its final answer by default in reference mode)
    items = [component.make_item(r["problem"], tuple(r["steps"]), r.get("answer")) for r in records]
    verdicts = []
    from tqdm.auto import tqdm

    with tqdm(total=len(items), desc="judging", unit="sample", disable=not progress) as bar:
        for start in range(0, len(items), chunk):
            verdicts.extend(asyncio.run(component.judge_items(items[start : start + chunk])))
            bar.update(min(chunk, len(items) - start))
    labels = [r["label"] for r in records]
    predictions = [v.index if v.ok else None for v in verdicts]
    report = processbench_metrics(labels, predictions)
    failures = dict.fromkeys(FAILURE_KINDS, 0)
    for verdict in verdicts:
        if not verdict.ok:
            failures[verdict.status] = failures.get(verdict.status, 0) + 1
    report["failures"] = failures
    report["backend"] = component.settings.backend
    report["model"] = component.settings.model
    if getattr(component.judge, "has_threshold", False):
        report["threshold"] = component.settings.threshold
        report["threshold_sweep"] = sweep_thresholds(labels, [v.step_probabilities for v in verdicts])
    return report


def _percent(value: float) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.1f}"


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"judge: {report['backend']}" + (f" ({report['model']})" if report.get("model") else ""),
        f"samples: {report['n']} ({report['n_error']} with an error, {report['n_correct']} all correct)",
        f"acc_err {_percent(report['acc_err'])}   acc_cor {_percent(report['acc_cor'])}   F1 {_percent(report['f1'])}",
        f"no verdict: {report['no_verdict']}"
        + ("" if not any(report["failures"].values()) else "   failures: " + ", ".join(f"{k} {v}" for k, v in report["failures"].items() if v)),
        "",
        "error samples by label position: n / exact / early / late / missed / no verdict",
    ]
    for bucket, row in report["confusion"]["error_by_label"].items():
        lines.append(f"  step {bucket:<3} {row['n']:>5} {row['exact']:>6} {row['early']:>6} {row['late']:>5} {row['missed']:>7} {row['no_verdict']:>6}")
    correct = report["confusion"]["all_correct"]
    lines.append(f"all-correct samples: {correct['n']}: -1 {correct['correct']}, false alarm {correct['false_alarm']}, no verdict {correct['no_verdict']}")
    sweep = report.get("threshold_sweep")
    if sweep:
        lines += ["", f"threshold sweep (configured {report['threshold']}):"]
        for row in sweep["thresholds"]:
            lines.append(f"  {row['threshold']:.2f}  F1 {_percent(row['f1'])}  acc_err {_percent(row['acc_err'])}  acc_cor {_percent(row['acc_cor'])}")
        if sweep["best"]:
            lines.append(f"F1-best threshold: {sweep['best']['threshold']:.2f} (F1 {_percent(sweep['best']['f1'])})")
    return "\n".join(lines)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def _pick_component(mix, name: str | None):
    from procrl.rewards.first_error import FirstErrorReward

    if name is not None:
        if name not in mix.components:
            raise ConfigError(f"--component: no reward named {name!r} in the recipe (has: {', '.join(mix.names)})")
        component = mix.components[name]
        if not isinstance(component, FirstErrorReward):
            raise ConfigError(f"--component: {name!r} is not a first_error component")
        return component
    judges = [c for c in mix.components.values() if isinstance(c, FirstErrorReward)]
    if len(judges) != 1:
        found = ", ".join(c.name for c in judges) or "none"
        raise ConfigError(f"--component: the recipe has {len(judges)} first_error components ({found}); name one")
    return judges[0]


def cmd_eval_judge(args) -> int:
    from procrl.recipe import load_recipe
    from procrl.rewards.base import RewardMix, RuntimeContext

    recipe = load_recipe(args.recipe, args.overrides, scoring=True)  # the judge only: no model/trainer needed
    component = _pick_component(RewardMix(recipe.rewards), args.component)
    component.bind(RuntimeContext(device=getattr(args, "device", None) or "cpu"))
    records = read_processbench(args.data)
    if args.limit is not None:
        if args.limit < 1:
            raise ConfigError(f"--limit: must be at least 1, got {args.limit}")
        records = records[: args.limit]
    report = evaluate_judge(component, records, progress=not args.json)
    if args.json:
        print(json.dumps(_json_safe(report)))
    else:
        print(format_report(report))
    return 0


def _run(args) -> int:
    import torch

    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    return cmd_eval_judge(args)


def add_eval_judge_command(commands) -> None:
    """Register ``procrl eval-judge`` on the CLI's subparsers."""
    parser = commands.add_parser(
        "eval-judge", help="Meta-evaluate a first-error judge on ProcessBench-format data (acc_err, acc_cor, F1)."
    )
    parser.add_argument("--recipe", required=True, help="Path to a recipe YAML file with a first_error component.")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="Override a recipe key (dotted path; value parsed as YAML). Repeatable.")
    parser.add_argument("--data", required=True, help="JSON list or JSONL of {problem, steps, label[, answer]}.")
    parser.add_argument("--component", default=None, help="Name of the first_error component (needed when the recipe has several).")
    parser.add_argument("--limit", type=int, default=None, help="Evaluate only the first N records.")
    parser.add_argument("--device", default=None, help="Device of hf/prm judges (default: cuda when available, else cpu).")
    parser.add_argument("--json", action="store_true", help="Print one JSON object instead of the table.")
    parser.set_defaults(handler=_run)
