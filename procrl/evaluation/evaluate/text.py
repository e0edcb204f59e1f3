"""``procrl evaluate``'s report as text: report.md (:func:`report_markdown`) and the lines the command prints
(:func:`format_summary`), both read from report.json's dict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from procrl.evaluation.evaluate.generation import Sampling
from procrl.evaluation.evaluate.report import ACCURACY_KEYS

__all__ = ["format_summary", "report_markdown"]


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def _with_error(report: dict[str, Any], key: str, source: dict[str, Any] | None = None) -> str:
    source = report if source is None else source
    value, error = source.get(key), source.get(f"{key}_stderr")
    return _fmt(value) if value is None or error is None else f"{value:.4f} ± {error:.4f}"


def report_markdown(report: dict[str, Any]) -> str:
    generation = report.get("generation") or {}
    how = (
        "greedy"
        if generation.get("greedy", True)
        else f"{report.get('num_samples', 1)} samples per problem, temperature {generation.get('temperature')}, "
        f"top-p {generation.get('top_p')}, seed {generation.get('seed')}"
    )
    kind = f", answers: {report['answer_kind']}" if report.get("answer_kind") else ""
    lines = [
        f"# procrl evaluation: {report.get('model')} on {report.get('split')} (n = {report['n']}, {how}{kind})",
        "",
    ]
    lines += ["| metric | value ± standard error |", "|---|---|"]
    for key in ACCURACY_KEYS:
        lines.append(f"| {key} | {_with_error(report, key)} |")
    for key in report.get("sampled", {}) if report.get("num_samples", 1) > 1 else ():  # greedy: pass@1 = accuracy
        if not key.endswith("_stderr"):
            lines.append(f"| {key} | {_with_error(report, key, report['sampled'])} |")
    lines.append(f"| first_error_unjudged | {_fmt(report.get('first_error_unjudged'))} |")
    lines += [
        "",
        "Standard errors are over problems (binomial for one sample per problem); process_error_rate's is "
        "binomial over the right, judged completions. pass@k: unbiased estimator (Chen et al. 2021).",
    ]
    lines += [
        "",
        f"Answer accuracy from: {report['accuracy_source']}. First-error judge: "
        f"{report['first_error_component'] or 'none'}.",
        "",
    ]
    lines += [
        "## Components",
        "",
        "| component | type | weight | mean | std | scored | none | failures |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, c in report["components"].items():
        failures = ", ".join(f"{k}: {v}" for k, v in c["failures"].items()) or "-"
        lines.append(
            f"| {name} | {c['type']} | {_fmt(c['weight'])} | {_fmt(c['mean'])} | {_fmt(c['std'])} | "
            f"{c['n_scored']} | {c['none']} | {failures} |"
        )
    lines.append(
        f"| weighted total | | | {_fmt(report['reward']['mean'])} | {_fmt(report['reward']['std'])} | "
        f"{report['reward']['n_scored']} | {report['reward']['none']} | |"
    )
    if report["correlations"]:
        lines += ["", "## Correlations between components", "", "| pair | Pearson r |", "|---|---|"]
        lines += [f"| {pair} | {value:.3f} |" for pair, value in report["correlations"].items()]
    if "first_error" in report:
        fe = report["first_error"]
        lines += [
            "",
            "## First error",
            "",
            f"error found in {_fmt(fe.get('error_found_rate'))} of judged completions; "
            f"mean index {_fmt(fe.get('mean_index'))},"
            f" mean relative position {_fmt(fe.get('mean_relative_position'))}; "
            f"index histogram {fe['index_histogram']}, relative histogram {fe['relative_histogram']}",
        ]
        if fe.get("categories"):
            table = fe["categories"]
            lines += [
                "",
                "Errors found per category (ReTraceQA's; `none`: the judge named no category):",
                "",
                "| category | all errors | behind a right answer |",
                "|---|---|---|",
            ]
            lines += [f"| {c} | {n} | {table['right_answer'][c]} |" for c, n in table["all"].items()]
    for name, t in report.get("trace", {}).items():
        shares = ", ".join(f"{k} {v:.3f}" for k, v in t["element_share"].items()) or "n/a"
        lines += [
            "",
            f"## TRACE ({name})",
            "",
            f"state validity {_fmt(t['state_validity'])}, transition coherence "
            f"{_fmt(t['transition_coherence'])}; element shares: {shares}",
        ]
        if t.get("score_quartiles"):
            edges = t["score_bin_edges"]
            bins = ", ".join(
                f"[{a:.1f}, {b:.1f}{']' if i == len(edges) - 2 else ')'}: {n}"
                for i, (a, b, n) in enumerate(zip(edges, edges[1:], t["score_histogram"]))
                if n
            )
            quartiles = " / ".join(f"{v:.3f}" for v in t["score_quartiles"])
            lines += [
                "",
                f"TRACE per completion: min / 25% / median / 75% / max {quartiles}; completions per bin: {bins}",
            ]
    for name, r in report.get("receval", {}).items():
        lines += ["", f"## ReCEval ({name})", "", ", ".join(f"{k} {_fmt(v)}" for k, v in r.items()) or "n/a"]
    if report.get("plots"):
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in report["plots"]]
    if report.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {n}" for n in report["notes"]]
    return "\n".join(lines) + "\n"


def format_summary(report: dict[str, Any], sampling: Sampling, directory: Path) -> str:
    """The lines ``procrl evaluate`` prints: the accuracies with their standard errors, the judge,
    the notes and the files written into ``directory``."""
    how = (
        "greedy"
        if sampling.greedy
        else (
            f"{sampling.num_samples} samples per problem, temperature "
            f"{sampling.temperature}, top-p {sampling.top_p}, seed {sampling.seed}"
        )
    )
    lines = [f"{report['n']} problems, {how} (value ± standard error)"]
    judge = report.get("evaluation_judge")
    if judge:
        lines.append(
            f"reasoning-aware accuracy judged by {judge['component']!r}"
            + (" (in the trained mix)" if judge["trained_on"] else " (weight 0: not in the trained reward)")
        )
    for key in ACCURACY_KEYS:
        lines.append(f"{key:<28} {_with_error(report, key)}")
    for key in report["sampled"] if sampling.num_samples > 1 else ():  # greedy: pass@1 = maj@1 = accuracy
        if not key.endswith("_stderr"):
            lines.append(f"{key:<28} {_with_error(report, key, report['sampled'])}")
    lines += [f"note: {note}" for note in report["notes"]]
    lines.append(f"wrote {directory / 'report.json'}, {directory / 'report.md'} and {', '.join(report['plots'])}")
    return "\n".join(lines)
