"""``procrl validate``'s words: the terminal table (:func:`format_table`) and report.md
(:func:`report_markdown`), both read from report.json's dict alone."""

from __future__ import annotations

import math
from typing import Any

from procrl.evaluation.corpora import CLASS_LABELS, CLASSES, FLAWED_UNLABELLED, RIGHT_FLAWED, SOUND, WRONG
from procrl.evaluation.validate.report import MIN_CLASS, TOTAL

__all__ = ["format_table", "report_markdown"]


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _pct(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{100 * value:.0f}%"


def _auroc_cell(stats: dict[str, Any], key: str = "auroc") -> str:
    value = stats.get(key)
    if value is None:
        if not stats.get("n_sound"):
            return "n/a (no sound)"
        if key == "auroc_right_answer":
            return f"n/a (<{MIN_CLASS})"
        return "n/a (no flawed)"
    low, high = stats.get(f"{key}_ci") or (None, None)
    return f"{value:.3f} [{_fmt(low, 2)}, {_fmt(high, 2)}]"


def _rows_of(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [*report["components"].items(), ("weighted total", report[TOTAL])]


def _localisation_rows(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, ProcessBench metrics) of every first-error component and every per-step peer."""
    rows = [(name, stats["localisation"]) for name, stats in report["components"].items() if stats.get("localisation")]
    rows += [
        (f"{name} (peer)", peer["localisation"]) for name, peer in report["peers"].items() if peer.get("localisation")
    ]
    return [(name, local) for name, local in rows if (local.get("breakdown") or {}).get("n")]


def _by(distances: dict[str, int]) -> str:
    return "/".join(str(distances[k]) for k in ("1", "2", "3+"))


def localisation_table(report: dict[str, Any]) -> list[str]:
    """Where the verdicts on flawed rows fall, one line per judge and peer (terminal)."""
    rows = _localisation_rows(report)
    if not rows:
        return []
    lines = [
        "",
        f"{'first error on flawed':<22}{'n':>6}{'exact':>7}{'early':>7}{'late':>7}{'none':>7}{'no verdict':>11}"
        f"   {'early by 1/2/3+':<16}{'late by 1/2/3+':<16}",
    ]
    for name, local in rows:
        b = local["breakdown"]
        lines.append(
            f"{name[:21]:<22}{b['n']:>6}"
            + "".join(f"{_pct(b[k] / b['n']):>7}" for k in ("exact", "early", "late", "none"))
            + f"{_pct(b['no_verdict'] / b['n']):>11}   {_by(b['early_by']):<16}{_by(b['late_by']):<16}"
        )
    return lines


def format_table(report: dict[str, Any]) -> str:
    """The terminal summary: one line per component, then what the numbers rest on."""
    classes = report["classes"]
    present = [k for k in CLASSES if k in classes]
    data = str(report.get("data"))
    files = data.split(", ")
    data = data if len(files) == 1 else f"{files[0]} and {len(files) - 1} more files"
    head = (
        f"procrl validate: {report.get('recipe')} on {data} ({report.get('format')}, "
        f"{report['n']} solutions: " + ", ".join(f"{classes[k]} {CLASS_LABELS[k]}" for k in present) + ")"
    )
    short = {SOUND: "sound", RIGHT_FLAWED: "right-fl", WRONG: "wrong", FLAWED_UNLABELLED: "flawed?"}
    columns = [f"{'component':<22}", f"{'AUROC sound/flawed':<22}", f"{'AUROC right-answer':<22}"]
    columns += [f"{short[k]:>9}" for k in present] + [
        f"{'none':>6}",
        f"{'acc_err':>8}",
        f"{'acc_cor':>8}",
        f"{'F1':>6}",
    ]
    over_classes = " " * 66 + ("mean per class" if len(present) > 1 else "mean").rjust(9 * len(present)).rstrip()
    lines = [head, "", over_classes, "".join(columns)]
    for name, stats in _rows_of(report):
        by_class = stats["by_class"]
        none = sum((by_class[k].get("none") or 0) * by_class[k]["n"] for k in by_class) / max(report["n"], 1)
        local = stats.get("localisation") or {}
        cells = [f"{name[:21]:<22}", f"{_auroc_cell(stats):<22}", f"{_auroc_cell(stats, 'auroc_right_answer'):<22}"]
        cells += [f"{_fmt(by_class.get(k, {}).get('mean')):>9}" for k in present]
        cells += [
            f"{_pct(none):>6}",
            f"{_pct(local.get('acc_err')) if local else '':>8}",
            f"{_pct(local.get('acc_cor')) if local else '':>8}",
            f"{_pct(local.get('f1')) if local else '':>6}",
        ]
        lines.append("".join(cells))
    notes = []
    for name, stats in report["components"].items():
        by_class = stats["by_class"]
        if "localisation" in stats:
            local = stats["localisation"]
            parts = []
            if any("unverified" in c for c in by_class.values()):
                parts.append(
                    "no checkable computation: "
                    + ", ".join(f"{short[k]} {_pct(by_class[k]['unverified'])}" for k in present if k in by_class)
                )
            flawed = sum(by_class[k]["n"] for k in by_class if k != SOUND)
            if flawed:
                parts.append(f"finds an error in {_pct(local['error_found'])} of {flawed} flawed")
            if local["n_correct"]:
                parts.append(f"false alarm on {local['false_alarm']} of {local['n_correct']} sound")
            if local["label_not_on_procrl_steps"]:
                parts.append(f"{local['label_not_on_procrl_steps']} labels fall outside procrl's steps")
            best = (local.get("threshold_sweep") or {}).get("best")
            if best:
                parts.append(f"F1-best threshold {best['threshold']:.2f} (F1 {_pct(best['f1'])})")
            notes.append(f"{name}: " + "; ".join(parts))
        if "agreement" in stats and stats["agreement"]["labelled"]:
            a = stats["agreement"]
            kinds = a.get("by_kind") or {}
            notes.append(
                f"{name}: agrees with the labelled answer correctness on {a['agree']}/{a['scored']}"
                + (
                    " (" + ", ".join(f"{k} {v['agree']}/{v['scored']}" for k, v in kinds.items()) + ")"
                    if len(kinds) > 1
                    else ""
                )
                + (f"; {a['no_score']} without a gold answer" if a["no_score"] else "")
            )
    seg = report.get("segmentation")
    if seg:
        notes.append(
            f"segmentation: {_fmt(seg['mean_data_steps'], 1)} data steps vs {_fmt(seg['mean_procrl_steps'], 1)} "
            f"procrl steps per solution; {_pct(seg['boundary_recall'])} of the data's step starts are procrl's, "
            f"{_pct(seg['boundary_precision'])} of procrl's are the data's; identical in {_pct(seg['identical'])}"
        )
    if notes:
        lines += [""] + notes
    lines += localisation_table(report)
    if report["peers"]:
        lines += [
            "",
            f"{'peer (same rows)':<22}{'matched':>9}  {'AUROC sound/flawed':<22}{'AUROC right-answer':<22}"
            f"{'acc_err':>8}{'acc_cor':>8}{'F1':>6}",
        ]
        for name, peer in report["peers"].items():
            local = peer.get("localisation") or {}
            lines.append(
                f"{name[:21]:<22}{_pct(peer['matched_fraction']):>9}  {_auroc_cell(peer):<22}"
                f"{_auroc_cell(peer, 'auroc_right_answer'):<22}{_pct(local.get('acc_err')) if local else '-':>8}"
                f"{_pct(local.get('acc_cor')) if local else '-':>8}{_pct(local.get('f1')) if local else '-':>6}"
            )
    return "\n".join(lines)


def report_markdown(report: dict[str, Any]) -> str:
    classes = report["classes"]
    present = [k for k in CLASSES if k in classes]
    lines = [
        f"# procrl validate: {report.get('recipe')} on {report.get('data')}",
        "",
        f"Format {report.get('format')}, {report['n']} solutions: "
        + ", ".join(f"{classes[k]} {CLASS_LABELS[k]}" for k in present)
        + ".",
        "",
    ]
    if report.get("overrides"):
        lines += ["Overrides: " + ", ".join(f"`{o}`" for o in report["overrides"]), ""]
    lines += [
        "| component | AUROC sound vs flawed [95% CI] | AUROC among right answers | "
        + " | ".join(f"mean {CLASS_LABELS[k]}" for k in present)
        + " | no opinion | acc_err | acc_cor | F1 |",
        "|---|---|---|" + "---|" * len(present) + "---|---|---|---|",
    ]
    for name, stats in _rows_of(report):
        local = stats.get("localisation") or {}
        by_class = stats["by_class"]
        none = sum((by_class[k].get("none") or 0) * by_class[k]["n"] for k in by_class) / max(report["n"], 1)
        lines.append(
            f"| {name} | {_auroc_cell(stats)} | {_auroc_cell(stats, 'auroc_right_answer')} | "
            + " | ".join(_fmt(by_class.get(k, {}).get("mean")) for k in present)
            + f" | {_pct(none)} | {_pct(local.get('acc_err')) if local else ''} | "
            f"{_pct(local.get('acc_cor')) if local else ''} | {_pct(local.get('f1')) if local else ''} |"
        )
    lines += [
        "",
        f"AUROC: ties count half; interval: {report['settings']['resamples']} stratified bootstrap resamples, "
        f"seed {report['settings']['seed']}; among right answers: sound vs right answer but flawed, when each has "
        f">= {MIN_CLASS} scored solutions.",
        "",
    ]
    lines += [
        "## Per class",
        "",
        "| component | class | n | mean | no opinion | fallback | no steps | unverified |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, stats in _rows_of(report):
        for klass, c in stats["by_class"].items():
            lines.append(
                f"| {name} | {CLASS_LABELS[klass]} | {c['n']} | {_fmt(c['mean'])} | {_pct(c.get('none'))} | "
                f"{_pct(c.get('fallback')) if 'fallback' in c else ''} | "
                f"{_pct(c['no_steps']) if 'no_steps' in c else ''} | "
                f"{_pct(c['unverified']) if 'unverified' in c else ''} |"
            )
    kinds = [(n, s["by_kind"]) for n, s in _rows_of(report) if s.get("by_kind")]
    if kinds:
        names = list(kinds[0][1])
        lines += [
            "",
            "## AUROC sound vs each kind of flaw",
            "",
            "| component | " + " | ".join(names) + " |",
            "|---|" + "---|" * len(names),
        ]
        lines += [
            f"| {n} | " + " | ".join(f"{_fmt(k[x]['auroc'])} (n={k[x]['n']})" for x in names) + " |" for n, k in kinds
        ]
    judges = [(n, s) for n, s in report["components"].items() if "localisation" in s]
    if judges:
        lines += [
            "",
            "## First-error localisation on procrl's steps",
            "",
            "| component | n sound | n flawed (label on procrl's steps) | "
            "acc_err | acc_cor | F1 | error found in flawed | "
            "false alarms | labels outside procrl's steps |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name, stats in judges:
            loc = stats["localisation"]
            lines.append(
                f"| {name} | {loc['n_correct']} | {loc['n_error']} | "
                f"{_pct(loc['acc_err'])} | {_pct(loc['acc_cor'])} | "
                f"{_pct(loc['f1'])} | {_pct(loc['error_found'])} | "
                f"{loc['false_alarm']} | {loc['label_not_on_procrl_steps']} |"
            )
    breakdown = _localisation_rows(report)
    if breakdown:
        lines += [
            "",
            "## Where the first error is put on flawed rows",
            "",
            "| judge | flawed | exact | early (by 1 / 2 / 3+) | "
            "late (by 1 / 2 / 3+) | none | no verdict | acc_err | acc_cor | F1 |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, local in breakdown:
            b = local["breakdown"]
            share = {k: _pct(b[k] / b["n"]) for k in ("exact", "early", "late", "none", "no_verdict")}
            lines.append(
                f"| {name} | {b['n']} | {share['exact']} | "
                f"{share['early']} ({_by(b['early_by']).replace('/', ' / ')}) | "
                f"{share['late']} ({_by(b['late_by']).replace('/', ' / ')}) | "
                f"{share['none']} | {share['no_verdict']} | "
                f"{_pct(local['acc_err'])} | {_pct(local['acc_cor'])} | {_pct(local['f1'])} |"
            )
        lines += [
            "",
            "Exact: the labelled first wrong step; early / late: another step before / after it (counts by "
            "distance in steps); none: no error found; a peer's steps are the data's own.",
        ]
    seg = report.get("segmentation")
    if seg:
        lines += [
            "",
            "## Step boundaries: the data's against procrl's",
            "",
            f"- mean steps per solution: data {_fmt(seg['mean_data_steps'], 2)},"
            f" procrl {_fmt(seg['mean_procrl_steps'], 2)}",
            f"- data step starts that start a procrl step: {_pct(seg['boundary_recall'])}; procrl step starts that "
            f"start a data step: {_pct(seg['boundary_precision'])}"
            " (within procrl's reasoning: the answer line is no step)",
            f"- identical boundaries: {_pct(seg['identical'])} of {seg['n']} solutions",
        ]
    for name, stats in report["components"].items():
        a = stats.get("agreement")
        if a and a["labelled"]:
            lines += [
                "",
                f"## {name}: agreement with the labelled final-answer correctness",
                "",
                f"{a['agree']} of {a['scored']} agree ({_pct(a['agreement'])});"
                f" {a['no_score']} labelled rows without a gold answer."
                + (
                    ""
                    if len(a.get("by_kind") or {}) < 2
                    else " By kind: "
                    + ", ".join(f"{k} {v['agree']}/{v['scored']}" for k, v in a["by_kind"].items())
                    + "."
                ),
                "",
            ]
            for d in a["disagreements"]:
                lines.append(
                    f"- `{d['id']}`: labelled {'right' if d['labelled_correct'] else 'wrong'}, predicted "
                    f"{d['predicted']!r}, gold {d['gold']!r}"
                )
    if report["peers"]:
        lines += [
            "",
            "## Peers on the same rows",
            "",
            "| peer | matched | AUROC sound vs flawed |"
            " AUROC among right answers | acc_err | acc_cor | F1 | step-count mismatches |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, p in report["peers"].items():
            loc = p.get("localisation") or {}
            lines.append(
                f"| {name} | {p['matched']} ({_pct(p['matched_fraction'])}) | {_auroc_cell(p)} | "
                f"{_auroc_cell(p, 'auroc_right_answer')} | {_pct(loc.get('acc_err')) if loc else '-'} | "
                f"{_pct(loc.get('acc_cor')) if loc else '-'} | {_pct(loc.get('f1')) if loc else '-'} | "
                f"{p.get('step_count_mismatch', '-')} |"
            )
        lines += [
            "",
            f"Peer solution score: the minimum over steps; localisation: the first step below "
            f"{report['settings']['peer_threshold']} on the data's own steps.",
        ]
    lines += ["", "![score distributions and ROC curves](validate.png)", ""]
    return "\n".join(lines)
