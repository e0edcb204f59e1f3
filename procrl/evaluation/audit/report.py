"""What ``procrl audit`` writes: report.json (every composition scored), report.md (a page a person
reads in a minute: the verdict, what pays and how much, which component pays, one example each,
the honest text and the gamed one side by side) and audit.png (mean gain of each exploit and of the
best compositions, split by component)."""

from __future__ import annotations

import html
from typing import Any

from procrl.evaluation.audit.exploits import EXPLOITS
from procrl.evaluation.audit.search import Search, candidate_record, rank

__all__ = ["build_report", "plot_report", "report_markdown", "summary_lines"]

SHOWN_COMPOSITIONS = 10  # compositions of two or more exploits in the markdown and the plot
SHOWN_EXAMPLES = 5
PLOTTED_PER_GROUP = 8


def build_report(search: Search, tolerance: float, recipe: str, overrides: list[str]) -> dict[str, Any]:
    """report.json's content: the run, the verdict, every candidate (best first)."""
    records = [{**candidate_record(c, tolerance), "_rank": rank(c)} for c in search.candidates.values() if c.n]
    records.sort(key=lambda r: r.pop("_rank"))
    beyond = [r for r in records if r["beyond_tolerance"]]
    honest = [row["reward"] for row in search.honest if row["reward"] is not None]
    return {
        "recipe": recipe,
        "overrides": overrides,
        "components": {name: {"weight": weight} for name, weight in search.weights.items()},
        "problems": len(search.problems),
        "problem_ids": [p.id for p in search.problems],
        "honest_mean_reward": sum(honest) / len(honest) if honest else None,
        "tolerance": tolerance,
        "texts_scored": search.texts_scored,
        "compositions_scored": len(records),
        "seconds": search.seconds,
        "stopped": search.stopped,
        "failures": search.failures,
        "gamed": bool(beyond),
        # paid as much as the honest solution on every problem: the mix cannot tell them apart
        "not_penalised": [
            " + ".join(r["exploits"]) for r in records if r["share_not_losing"] == 1 and not r["beyond_tolerance"]
        ],
        "beyond_tolerance": [" + ".join(r["exploits"]) for r in beyond],
        "exploits": {name: {"summary": e.summary, "adds": list(e.adds)} for name, e in EXPLOITS.items()},
        "candidates": records,
    }


def _singles(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        r
        for r in report["candidates"]
        if len(r["exploits"]) == 1 or (len(r["exploits"]) == 2 and r["exploits"][0] == "slip")
    ]


def _compositions(report: dict[str, Any]) -> list[dict[str, Any]]:
    singles = {id(r) for r in _singles(report)}
    return [r for r in report["candidates"] if id(r) not in singles][:SHOWN_COMPOSITIONS]


def _verdict(report: dict[str, Any]) -> str:
    if report["gamed"]:
        best = report["candidates"][0]
        return (
            f"GAMED: {len(report['beyond_tolerance'])} of {report['compositions_scored']} compositions gain more than "
            f"the tolerance ({report['tolerance']:g}) over the honest worked solution; the best, "
            f"{' + '.join(best['exploits'])}, gains {best['mean_gain']:+.3f} on average "
            f"(pays on {100 * best['share_paying']:.0f}% of problems, "
            f"through {best['paying_component'] or 'the total'})"
        )
    free = report["not_penalised"]
    if free:
        shown = ", ".join(free[:6]) + (f" and {len(free) - 6} more" if len(free) > 6 else "")
        return (
            f"nothing gamed beyond the tolerance ({report['tolerance']:g}), but {len(free)} compositions are paid as "
            f"much as the honest worked solution on every problem (not penalised): {shown}"
        )
    return (
        f"nothing gamed beyond the tolerance ({report['tolerance']:g}): none of {report['compositions_scored']} "
        "compositions gains more than it over the honest worked solution on average"
    )


def summary_lines(report: dict[str, Any]) -> list[str]:
    """What the terminal shows: the verdict, the top candidates, the time."""
    lines = [_verdict(report)]
    for r in report["candidates"][:8]:
        mark = "!" if r["beyond_tolerance"] else " "
        lines.append(
            f" {mark} {' + '.join(r['exploits']):<48} gain {r['mean_gain']:+8.3f}  pays on "
            f"{100 * r['share_paying']:5.1f}%  via {r['paying_component'] or '-'}"
        )
    stop = {"done": "search done", "budget": "budget spent", "time": "time limit reached"}[report["stopped"]]
    lines.append(
        f"{report['texts_scored']} texts scored ({report['compositions_scored']} compositions x "
        f"{report['problems']} problems) in {report['seconds']:.1f}s; {stop}"
    )
    return lines


def _effect(r: dict[str, Any]) -> str:
    flaws = set(r["flaws"])
    if "several_answers" in flaws:
        answer = "several"
    else:
        answer = "right" if r["answer_correct_share"] == 1 else ("wrong" if r["answer_correct_share"] == 0 else "mixed")
    if "no_steps" in flaws:
        steps = "none"
    else:
        steps = "sound" if r["steps_sound_share"] == 1 else ("unsound" if r["steps_sound_share"] == 0 else "mixed")
    return f"answer {answer}, steps {steps}; {', '.join(r['flaws'])}"


def _table(records: list[dict[str, Any]], tolerance: float) -> list[str]:
    lines = [
        "| exploits | what it does to correctness | mean gain | pays on | max gain | component that pays |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in records:
        name = " + ".join(f"`{e}`" for e in r["exploits"])
        mark = " **(beyond)**" if r["beyond_tolerance"] else ""
        lines.append(
            f"| {name}{mark} | {_effect(r)} | {r['mean_gain']:+.3f} | {100 * r['share_paying']:.0f}% | "
            f"{r['max_gain']:+.3f} | {r['paying_component'] or '-'} |"
        )
    return lines


def _cell(text: str) -> str:
    short = text if len(text) <= 1200 else text[:1200] + f" ... ({len(text)} characters)"
    return html.escape(short).replace("|", "&#124;").replace("\n", "<br>")


def report_markdown(report: dict[str, Any]) -> str:
    """report.md."""
    tol = report["tolerance"]
    weights = ", ".join(f"{name} {c['weight']:g}" for name, c in report["components"].items())
    lines = [
        f"# procrl audit: {report['recipe']}",
        "",
        f"**{_verdict(report)}.**",
        "",
        f"Mix: {weights}" + (f" (overrides: {' '.join(report['overrides'])})" if report["overrides"] else "") + ". ",
        f"Honest worked solutions: mean reward {report['honest_mean_reward']:.3f} over {report['problems']} problems. "
        if report["honest_mean_reward"] is not None
        else "",
        f"{report['texts_scored']} texts scored, {report['compositions_scored']} compositions, "
        f"{report['seconds']:.1f}s ({report['stopped']}).",
        "",
        "*Gain*: the mix's total for the gamed text minus the honest worked solution's, on the same problem; "
        f"*pays on*: the share of problems where the gain is above the tolerance ({tol:g}); every gamed text is "
        "wrong, unsound or padded by construction (the *what it does* column).",
        "",
        "## Each exploit",
        "",
        *_table(_singles(report), tol),
        "",
    ]
    compositions = _compositions(report)
    if compositions:
        lines += ["## Best compositions", "", *_table(compositions, tol), ""]
    lines += ["## Per component", "", "Mean weighted gain of each component (its part of the total):", ""]
    names = list(report["components"])
    lines.append("| exploits | " + " | ".join(names) + " |")
    lines.append("|---|" + "---:|" * len(names))
    for r in report["candidates"][:SHOWN_COMPOSITIONS]:
        cells = [f"{r['component_gains'][n]:+.3f}" if r["component_gains"].get(n) is not None else "-" for n in names]
        lines.append(f"| {' + '.join(r['exploits'])} | " + " | ".join(cells) + " |")
    lines += ["", "## Examples", ""]
    for r in report["candidates"][:SHOWN_EXAMPLES]:
        example = r["example"]
        if example is None:
            continue
        lines += [
            f"### {' + '.join(r['exploits'])} ({example['problem']})",
            "",
            f"Gamed: {', '.join(example['flaws'])}. Reward {example['honest_reward']:.3f} honest, "
            f"{example['gamed_reward']:.3f} gamed.",
            "",
            "| honest worked solution | gamed |",
            "|---|---|",
            f"| {_cell(example['honest'])} | {_cell(example['gamed'])} |",
            "",
        ]
    if report["failures"]:
        lines += [
            "## Component failures",
            "",
            *(
                f"- {name}: {', '.join(f'{k} {v}' for k, v in kinds.items())}"
                for name, kinds in report["failures"].items()
                if kinds
            ),
            "",
        ]
    lines += [
        "## The exploits",
        "",
        *(f"- `{name}` ({', '.join(e['adds'])}): {e['summary']}" for name, e in report["exploits"].items()),
        "",
    ]
    return "\n".join(lines)


def plot_report(report: dict[str, Any]):
    """audit.png: one horizontal bar per exploit alone on the worked solution, then the best on the
    one-slip version and the best compositions; each bar is the mean gain over the honest worked
    solution split into each component's part; the tolerance as a dashed line."""
    from procrl.observe.plots import new_figure

    singles = _singles(report)
    groups = [
        (
            "each exploit",
            sorted(
                (r for r in singles if r["exploits"][0] != "slip" or len(r["exploits"]) == 1),
                key=lambda r: -r["mean_gain"],
            ),
        ),
        ("on the one-slip version (best)", [r for r in singles if len(r["exploits"]) == 2][:PLOTTED_PER_GROUP]),
        ("compositions (best)", _compositions(report)[:PLOTTED_PER_GROUP]),
    ]
    rows = [r for _, group in groups for r in group]
    names = list(report["components"])
    figure = new_figure(9.0, 1.6 + 0.22 * len(rows))
    axis = figure.subplots()
    colours = ["#2980b9", "#e67e22", "#27ae60", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d", "#d35400"]
    ys = list(range(len(rows)))[::-1]
    for k, name in enumerate(names):
        values = [r["component_gains"].get(name) or 0.0 for r in rows]
        positive_left = [sum(max(0.0, r["component_gains"].get(m) or 0.0) for m in names[:k]) for r in rows]
        negative_left = [sum(min(0.0, r["component_gains"].get(m) or 0.0) for m in names[:k]) for r in rows]
        lefts = [p if v >= 0 else q for v, p, q in zip(values, positive_left, negative_left)]
        axis.barh(ys, values, left=lefts, color=colours[k % len(colours)], label=name, height=0.7)
    gains = [r["mean_gain"] for r in rows]
    axis.scatter(gains, ys, color="black", marker="|", s=120, zorder=3, label="total gain")
    axis.axvline(report["tolerance"], color="#c0392b", linestyle="--", linewidth=1, label="tolerance")
    axis.axvline(0, color="black", linewidth=0.6)
    position = len(rows)
    for title, group in groups:  # a rule and a label above each group
        if group:
            axis.axhline(position - 0.5, color="grey", linewidth=0.5)
            axis.text(
                0.005,
                position - 0.7,
                title,
                transform=axis.get_yaxis_transform(),
                ha="left",
                va="top",
                fontsize=7,
                color="dimgrey",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1},
                zorder=4,
            )
        position -= len(group)
    low, high = min([0.0, *gains]), max([report["tolerance"], *gains])
    margin = 0.08 * (high - low or 1.0)
    axis.set_xlim(low - margin, high + margin)
    axis.set_ylim(-0.6, len(rows) - 0.4)
    axis.set_yticks(ys)
    axis.set_yticklabels([" + ".join(r["exploits"]) for r in rows], fontsize=7)
    axis.set_xlabel("mean gain over the honest worked solution (weighted, per component)")
    verdict = "GAMED beyond the tolerance" if report["gamed"] else "nothing beyond the tolerance"
    axis.set_title(f"procrl audit: {report['recipe']} ({verdict})", fontsize=10)
    figure.legend(loc="outside lower center", ncols=min(len(names) + 2, 6), fontsize=7)
    return figure
