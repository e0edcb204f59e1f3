"""``procrl eval-judge``: ``procrl validate`` restricted to one first-error judge.

Data: any format ``procrl validate`` reads (:mod:`procrl.evaluation.corpora`), e.g. ProcessBench-format
``{problem, steps, label}`` (label = index of the earliest wrong step, -1 when all are correct;
an optional ``answer``, the gold final answer or a GSM8K solution, is shown to reference-mode
judges exactly as training shows it). As in validate, the steps are joined as the model wrote
them and segmented by procrl, the label is moved onto procrl's steps by character offsets, and
the judge is run through the reward mix (``procrl score``'s code), so it sees what it sees in
training. Metrics (docs/spec.md section 4): acc_err = accuracy on samples with an error, acc_cor
= accuracy on all-correct samples, F1 = their harmonic mean (the ProcessBench metric). A sample
without a verdict (a judge failure, no steps) counts as wrong; a chain in which the arithmetic
judge found nothing to check is its verdict -1 (the reward penalises it: the AUROC line and
validate's unverified share say how often). For a ``prm`` judge the
step probabilities are kept and the threshold is swept to report the F1-best one. Prints the
judge's table (or ``--json``); writes validate's report files only with ``--output-dir``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError
from procrl.core.jsonl import iter_records
from procrl.evaluation.corpora import read_solutions
from procrl.evaluation.validate.metrics import SWEEP, processbench_metrics, sweep_thresholds
from procrl.evaluation.validate.plot import plot_validation
from procrl.evaluation.validate.run import choose_output_dir, quiet_stdout, run_validation, select_specs, write_outputs
from procrl.rewards.first_error import FirstErrorReward

__all__ = [
    "SWEEP",
    "evaluate_judge",
    "format_report",
    "judge_report",
    "processbench_metrics",
    "read_processbench",
    "sweep_thresholds",
]


def read_processbench(path: str | Path) -> list[dict[str, Any]]:
    """Records of a labelled-solutions file, each checked as ``procrl validate`` checks it (one
    clear error per bad record)."""

    read_solutions(path)
    return [value for _, value in iter_records(path, "--data")]


def _pick_specs(specs: list, name: str | None) -> list:

    judges = [s for s in specs if isinstance(s.target, type) and issubclass(s.target, FirstErrorReward)]
    if name is not None:
        known = [s.name for s in specs]
        if name not in known:
            raise ConfigError(f"--component: no reward named {name!r} in the recipe (has: {', '.join(known)})")
        if name not in [s.name for s in judges]:
            raise ConfigError(f"--component: {name!r} is not a first_error component")
        return select_specs(specs, [name])
    if len(judges) != 1:
        found = ", ".join(s.name for s in judges) or "none"
        raise ConfigError(f"--component: the recipe has {len(judges)} first_error components ({found}); name one")
    return select_specs(specs, [judges[0].name])


def judge_report(report: dict[str, Any], name: str) -> dict[str, Any]:
    """The judge's part of a validate report in eval-judge's shape (its keys at the top)."""
    entry = report["components"][name]
    local = dict(entry["localisation"])
    sweep = local.pop("threshold_sweep", None)
    out = {
        **local,
        "component": name,
        "backend": entry["backend"],
        "model": entry["model"],
        "failures": entry.get("failures", {}),
        "auroc": entry["auroc"],
        "auroc_ci": entry["auroc_ci"],
        "by_class": entry["by_class"],
        "segmentation": report.get("segmentation"),
        "format": report.get("format"),
    }
    if "threshold" in entry:
        out["threshold"] = entry["threshold"]
        out["threshold_sweep"] = sweep
    return out


def _percent(value: float) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.1f}"


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"judge: {report['backend']}" + (f" ({report['model']})" if report.get("model") else ""),
        f"samples: {report['n']} ({report['n_error']} with an error, {report['n_correct']} all correct)",
        f"acc_err {_percent(report['acc_err'])}   acc_cor {_percent(report['acc_cor'])}   F1 {_percent(report['f1'])}",
        f"no verdict: {report['no_verdict']}"
        + (
            ""
            if not any(report["failures"].values())
            else "   failures: " + ", ".join(f"{k} {v}" for k, v in report["failures"].items() if v)
        ),
    ]
    if report.get("auroc") is not None:
        low, high = report["auroc_ci"]
        lines.append(f"AUROC sound vs flawed (the reward): {report['auroc']:.3f} [{low:.2f}, {high:.2f}]")
    skipped = report.get("label_not_on_procrl_steps", 0)
    if skipped:
        lines.append(f"left out: {skipped} labels outside procrl's steps")
    lines += ["", "error samples by label position: n / exact / early / late / missed / no verdict"]
    for bucket, row in report["confusion"]["error_by_label"].items():
        lines.append(
            f"  step {bucket:<3} {row['n']:>5} {row['exact']:>6} {row['early']:>6} {row['late']:>5}"
            f" {row['missed']:>7} {row['no_verdict']:>6}"
        )
    correct = report["confusion"]["all_correct"]
    lines.append(
        f"all-correct samples: {correct['n']}: -1 {correct['correct']},"
        f" false alarm {correct['false_alarm']}, no verdict {correct['no_verdict']}"
    )
    sweep = report.get("threshold_sweep")
    if sweep:
        lines += ["", f"threshold sweep (configured {report['threshold']}):"]
        for row in sweep["thresholds"]:
            lines.append(
                f"  {row['threshold']:.2f}  F1 {_percent(row['f1'])}  acc_err {_percent(row['acc_err'])}"
                f"  acc_cor {_percent(row['acc_cor'])}"
            )
        if sweep["best"]:
            lines.append(f"F1-best threshold: {sweep['best']['threshold']:.2f} (F1 {_percent(sweep['best']['f1'])})")
    return "\n".join(lines)


def evaluate_judge(
    recipe: str,
    overrides: list[str],
    data: str,
    component: str | None = None,
    limit: int | None = None,
    device: str | None = None,
    output_dir: str | None = None,
    overwrite: bool = False,
    quiet: bool = False,
) -> dict[str, Any]:
    """The judge's report (:func:`judge_report`) on the labelled solutions in ``data``; validate's
    report files written into ``output_dir`` when given (refused before any work by the folder
    rule). ``quiet``: no progress bar, and what libraries print goes to stderr."""

    directory = choose_output_dir(output_dir, recipe, data, overwrite, command=EVAL_JUDGE) if output_dir else None
    with quiet_stdout(quiet):
        result = run_validation(
            recipe,
            overrides,
            data,
            limit=limit,
            device=device,
            progress=not quiet,
            specs_filter=lambda specs: _pick_specs(specs, component),
        )
    name = next(
        n
        for n, c in result.report["components"].items()
        if "localisation" in c and (component is None or n == component)
    )
    report = judge_report(result.report, name)
    if directory is not None:
        write_outputs(
            directory, result.report, result.items, plot_validation(result.items, result.report, {}), command=EVAL_JUDGE
        )
    return report


EVAL_JUDGE = "eval-judge"  # the command named in the folder marker (procrl/core/folders.py)
