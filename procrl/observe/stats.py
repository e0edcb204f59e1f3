"""Process diagnostics, the numbers: what the reward mix saw in a batch, as pure functions of the
mix's per-batch :class:`RewardOutput` objects: scalars (``batch_scalars``, keyed
``diagnostics/...``), per-completion rows for the completions table (``step_rows``), and the
statistics ``procrl evaluate`` reports (first-error records, the process error rate, TRACE
transitions, ReCEval step profiles, component correlations). Figures of these numbers are in
:mod:`procrl.observe.plots`; the training callback that logs them in :mod:`procrl.observe.callback`.

Components are recognised by the shape of what they report (names are free in a recipe):
``accuracy``: spec type ``accuracy`` (1.0 right, 0.0 wrong); first error: details carrying
``index`` (-1 = no error) and ``num_steps``; TRACE: extras ``transition_counts`` (8x8, rows =
previous label) and ``labels``; ReCEval: details carrying ``min_step`` and ``step_values``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from procrl.rewards.protocol import RewardBatch, RewardOutput
from procrl.rewards.registry import component_info

__all__ = [
    "ACCURACY",
    "FIRST_ERROR",
    "FirstErrorRecord",
    "category_counts",
    "PREFIX",
    "RECEVAL",
    "RELATIVE_BINS",
    "TRACE",
    "TRACE_LABELS",
    "add_matrices",
    "batch_scalars",
    "component_correlations",
    "component_kinds",
    "evaluation_judge",
    "first_error_prefixes",
    "first_error_records",
    "first_error_scalars",
    "first_of_kind",
    "histogram",
    "learning_signal",
    "names_of_kind",
    "pearson",
    "process_error_stats",
    "receval_position_profile",
    "receval_stats",
    "relative_position",
    "row_normalized",
    "score_range",
    "step_rows",
    "transition_counts",
]

TRACE_LABELS = ["Claim", "Data/Evidence", "Warrant", "Backing", "Qualifier", "Rebuttal", "Monitoring", "Evaluation"]
RELATIVE_BINS = 5  # relative first-error position histogram: 5 bins over [0, 1]
ACCURACY, FIRST_ERROR, TRACE, RECEVAL = "accuracy", "first_error", "trace", "receval"
PREFIX = "diagnostics"


# --- recognising components -----------------------------------------------------------------


def _details_have(output: RewardOutput, *keys: str) -> bool:
    return any(isinstance(d, dict) and all(k in d for k in keys) for d in (output.details or []))


def component_kinds(types: dict[str, str], outputs: dict[str, RewardOutput]) -> dict[str, str]:
    """Component name -> one of accuracy / first_error / trace / receval, for those recognised."""
    kinds: dict[str, str] = {}
    names = [n for n in types if n in outputs] + [n for n in outputs if n not in types]  # recipe order first
    for name in names:
        output = outputs[name]
        type_name = str(types.get(name, name))
        declared = _declared_diagnostics(type_name)
        if ACCURACY in declared:
            kinds[name] = ACCURACY
        elif _details_have(output, "index", "num_steps") or FIRST_ERROR in declared:
            kinds[name] = FIRST_ERROR
        elif "transition_counts" in output.extras:
            kinds[name] = TRACE
        elif _details_have(output, "min_step", "step_values"):
            kinds[name] = RECEVAL
    return kinds


def _declared_diagnostics(type_name: str) -> tuple[str, ...]:
    """The diagnostics a component type declares (``RewardComponent.diagnostics``); none when unknown."""
    info = component_info(type_name)
    return info.diagnostics if info is not None else ()


def first_of_kind(kinds: dict[str, str], kind: str) -> str | None:
    return next((name for name, k in kinds.items() if k == kind), None)


def names_of_kind(kinds: dict[str, str], kind: str) -> list[str]:
    return [name for name, k in kinds.items() if k == kind]


def evaluation_judge(kinds: dict[str, str], preferred: str | None = None) -> str | None:
    """The first-error component that decides reasoning-aware accuracy: ``preferred`` (the
    recipe's ``data.eval_judge`` or ``procrl evaluate --judge``) when it is one, else the first."""
    if preferred is not None and kinds.get(preferred) == FIRST_ERROR:
        return preferred
    return next((name for name, kind in kinds.items() if kind == FIRST_ERROR), None)


def first_error_prefixes(judges: list[str], judge: str) -> list[str]:
    """Where a first-error component's diagnostics go: ``diagnostics/first_error`` for the first
    (or only) one, and with several, ``diagnostics/first_error/<name>`` for each, so that a
    second judge or penalty is described too, not silently dropped."""
    prefixes = [f"{PREFIX}/first_error"] if judge == judges[0] else []
    if len(judges) > 1:
        prefixes.append(f"{PREFIX}/first_error/{judge}")
    return prefixes


# --- correlations -------------------------------------------------------------------------


def pearson(xs: list[float | None], ys: list[float | None]) -> float | None:
    """Pearson correlation over the samples where both are not None; None with fewer than two
    such samples or when either side is constant (undefined, not zero)."""
    pairs = [(float(x), float(y)) for x, y in zip(xs, ys) if x is not None and y is not None]
    pairs = [(x, y) for x, y in pairs if math.isfinite(x) and math.isfinite(y)]
    if len(pairs) < 2:
        return None
    mean_x = sum(x for x, _ in pairs) / len(pairs)
    mean_y = sum(y for _, y in pairs) / len(pairs)
    sxx = sum((x - mean_x) ** 2 for x, _ in pairs)
    syy = sum((y - mean_y) ** 2 for _, y in pairs)
    if sxx <= 1e-12 or syy <= 1e-12:
        return None
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in pairs)
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def component_correlations(scores: dict[str, list[float | None]]) -> dict[str, float]:
    """``"a~b"`` -> Pearson correlation of components a and b over one batch (defined pairs only)."""
    names = list(scores)
    result = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            value = pearson(scores[a], scores[b])
            if value is not None:
                result[f"{a}~{b}"] = value
    return result


# --- first error and the process error rate --------------------------------------------------


@dataclass(frozen=True)
class FirstErrorRecord:
    """One completion's first-error verdict: ``index`` -1 = no error, None = no verdict."""

    index: int | None
    num_steps: int
    category: str | None = None  # the judge's error category (ReTraceQA's), when it names one


def first_error_records(output: RewardOutput, num_steps: list[int] | None = None) -> list[FirstErrorRecord]:
    """Verdicts from a first-error component's details; a sample without an integer index (or
    whose score is None: the judge failed) has no verdict."""
    details = output.details or [None] * len(output.scores)
    records = []
    for i, detail in enumerate(details):
        steps = num_steps[i] if num_steps is not None else 0
        if isinstance(detail, dict) and isinstance(detail.get("num_steps"), int):
            steps = detail["num_steps"]
        index = detail.get("index") if isinstance(detail, dict) else None
        if isinstance(index, bool) or not isinstance(index, int):
            records.append(FirstErrorRecord(None, steps))
        else:
            category = detail.get("category") if index >= 0 else None
            records.append(FirstErrorRecord(index, steps, category if isinstance(category, str) else None))
    return records


def category_counts(records: list[FirstErrorRecord], correct: list[bool | None] | None = None) -> dict[str, int] | None:
    """Errors found per category (``none``: found without one), among every completion or, with
    ``correct``, among those with a right answer (ReTraceQA's flawed-but-right); None when the
    judge named no category at all."""
    from procrl.rewards.judges.prompt import CATEGORIES

    found = [
        r
        for i, r in enumerate(records)
        if r.index is not None and r.index >= 0 and (correct is None or correct[i] is True)
    ]
    if not any(r.category for r in records):
        return None
    counts = {category: sum(r.category == category for r in found) for category in CATEGORIES}
    counts["none"] = sum(r.category not in CATEGORIES for r in found)
    return counts


def relative_position(index: int, num_steps: int) -> float:
    """Where a step falls in its chain, relative to the number of steps: ``index / num_steps``
    (0 = first step; the same convention as the first-error component's own metric)."""
    if num_steps <= 0:
        return 0.0
    return min(max(index / num_steps, 0.0), 1.0)


def histogram(values: Iterable[float], edges: list[float]) -> list[int]:
    """Counts per bin ``[edges[i], edges[i+1])``, the last bin closed; values outside are dropped."""
    counts = [0] * (len(edges) - 1)
    for value in values:
        for i in range(len(counts)):
            last = i == len(counts) - 1
            if edges[i] <= value < edges[i + 1] or (last and value == edges[-1]):
                counts[i] += 1
                break
    return counts


def process_error_stats(correct: list[bool | None], records: list[FirstErrorRecord] | None) -> dict[str, float | None]:
    """Answer accuracy, reasoning-aware accuracy (answer right AND the judge found no error),
    their gap (ReTraceQA's inflation) and the process error rate (among right answers with a
    verdict, the share whose reasoning has an error). A right answer without a verdict does not
    count as reasoning-aware correct. Values are None when undefined."""
    n = len(correct)
    right = [c is True for c in correct]
    answer_accuracy = sum(right) / n if n else None
    if records is None:
        return {
            "answer_accuracy": answer_accuracy,
            "reasoning_aware_accuracy": None,
            "inflation": None,
            "process_error_rate": None,
            "first_error_unjudged": None,
        }
    sound = [r and rec.index == -1 for r, rec in zip(right, records)]
    flawed = [r and rec.index is not None and rec.index >= 0 for r, rec in zip(right, records)]
    judged_right = sum(r and rec.index is not None for r, rec in zip(right, records))
    reasoning_aware = sum(sound) / n if n else None
    return {
        "answer_accuracy": answer_accuracy,
        "reasoning_aware_accuracy": reasoning_aware,
        "inflation": answer_accuracy - reasoning_aware if n else None,
        "process_error_rate": sum(flawed) / judged_right if judged_right else None,
        "first_error_unjudged": float(sum(rec.index is None for rec in records)),
    }


def first_error_scalars(records: list[FirstErrorRecord]) -> dict[str, float]:
    """Error-found rate, mean absolute and relative position, relative-position bin shares."""
    judged = [r for r in records if r.index is not None]
    found = [r for r in judged if r.index >= 0]
    out: dict[str, float] = {}
    if judged:
        out["error_found_rate"] = len(found) / len(judged)
    if found:
        relative = [relative_position(r.index, r.num_steps) for r in found]
        out["mean_index"] = sum(r.index for r in found) / len(found)
        out["mean_relative_position"] = sum(relative) / len(relative)
        edges = [i / RELATIVE_BINS for i in range(RELATIVE_BINS + 1)]
        for i, count in enumerate(histogram(relative, edges)):
            out[f"relative_bin_{i}"] = count / len(found)
        for category, count in (category_counts(records) or {}).items():
            out[f"category/{category}"] = count / len(found)  # share of the errors found
    return out


# --- TRACE and ReCEval ------------------------------------------------------------------------


def transition_counts(output: RewardOutput) -> list[list[float]] | None:
    """The 8x8 transition count matrix a TRACE component reported for a batch, if well formed."""
    matrix = output.extras.get("transition_counts")
    try:
        rows = [[float(v) for v in row] for row in matrix]
    except TypeError:
        return None
    if not rows or any(len(row) != len(rows) for row in rows):
        return None
    return rows


def add_matrices(total: list[list[float]] | None, matrix: list[list[float]]) -> list[list[float]]:
    if total is None:
        return [list(row) for row in matrix]
    return [[a + b for a, b in zip(ra, rb)] for ra, rb in zip(total, matrix)]


def row_normalized(matrix: list[list[float]]) -> list[list[float]]:
    """Each row as shares of its total (the probability of the next label given the previous)."""
    out = []
    for row in matrix:
        total = sum(row)
        out.append([v / total if total else 0.0 for v in row])
    return out


def receval_stats(output: RewardOutput) -> dict[str, float]:
    """Mean step index of the chain's minimum (absolute and relative) and mean per-step value."""
    mins, relative, values = [], [], []
    for detail in output.details or []:
        if not isinstance(detail, dict):
            continue
        steps = [float(v) for v in detail.get("step_values") or [] if v is not None and math.isfinite(float(v))]
        values.extend(steps)
        index = detail.get("min_step")
        if isinstance(index, int) and not isinstance(index, bool) and index >= 0:
            mins.append(index)
            relative.append(relative_position(index, len(detail.get("step_values") or [])))
    out = {}
    if mins:
        out["min_step_mean"] = sum(mins) / len(mins)
        out["min_step_relative_mean"] = sum(relative) / len(relative)
    if values:
        out["step_value_mean"] = sum(values) / len(values)
    return out


def receval_position_profile(output: RewardOutput, positions: int = 10) -> list[float | None]:
    """Mean per-step value at each step position 0..positions-1 (None where no chain is that long)."""
    sums, counts = [0.0] * positions, [0] * positions
    for detail in output.details or []:
        values = detail.get("step_values") if isinstance(detail, dict) else None
        for j, value in enumerate((values or [])[:positions]):
            if value is not None and math.isfinite(float(value)):
                sums[j] += float(value)
                counts[j] += 1
    return [s / c if c else None for s, c in zip(sums, counts)]


# --- one batch --------------------------------------------------------------------------------


def batch_scalars(
    types: dict[str, str], outputs: dict[str, RewardOutput], num_steps: list[int] | None = None
) -> dict[str, float]:
    """Every scalar diagnostic of one scored batch, keyed ``diagnostics/...``."""
    kinds = component_kinds(types, outputs)
    out: dict[str, float] = {}
    for pair, value in component_correlations({k: o.scores for k, o in outputs.items()}).items():
        out[f"{PREFIX}/correlation/{pair}"] = value
    for name, output in outputs.items():
        out[f"{PREFIX}/seconds/{name}"] = output.seconds
    accuracy, judges = first_of_kind(kinds, ACCURACY), names_of_kind(kinds, FIRST_ERROR)
    for judge in judges:
        records = first_error_records(outputs[judge], num_steps)
        prefixes = first_error_prefixes(judges, judge)
        for key, value in first_error_scalars(records).items():
            for prefix in prefixes:
                out[f"{prefix}/{key}"] = value
        if accuracy is not None:
            correct = [None if s is None else s >= 1.0 for s in outputs[accuracy].scores]
            stats = process_error_stats(correct, records)
            for key in ("process_error_rate", "reasoning_aware_accuracy", "inflation"):
                if stats[key] is None:
                    continue
                if judge == judges[0]:  # the top-level keys: the first judge (recipe order)
                    out[f"{PREFIX}/{key}"] = stats[key]
                if len(judges) > 1:
                    out[f"{PREFIX}/first_error/{judge}/{key}"] = stats[key]
    for name, kind in kinds.items():
        if kind == RECEVAL:
            for key, value in receval_stats(outputs[name]).items():
                out[f"{PREFIX}/{name}/{key}"] = value
        elif kind == TRACE:
            matrix = transition_counts(outputs[name])
            if matrix is not None:
                total = sum(map(sum, matrix))
                out[f"{PREFIX}/{name}/transitions"] = total
    return {k: float(v) for k, v in out.items() if v is not None and math.isfinite(v)}


def learning_signal(
    groups: list, correct: list[bool | None], records: list[FirstErrorRecord], totals: list[float | None]
) -> dict[str, float]:
    """What a process reward gives GRPO to learn from in one batch: the share of generation groups
    (``groups[i]``: sample i's group) holding both a sound and a flawed right answer (only there can
    a group-relative advantage tell them apart), and in those groups the mean total reward of the
    sound right answers minus that of the flawed ones, raw (``sound_minus_flawed_reward``) and over
    the group's standard deviation (``sound_minus_flawed_advantage``: the advantage gap under
    GRPO's per-group scaling)."""
    members: dict[Any, list[int]] = {}
    for i, group in enumerate(groups):
        members.setdefault(group, []).append(i)
    mixed, gaps, scaled = 0, [], []
    for indices in members.values():
        sound = [totals[i] for i in indices if correct[i] and records[i].index == -1 and totals[i] is not None]
        flawed = [
            totals[i]
            for i in indices
            if correct[i] and records[i].index is not None and records[i].index >= 0 and totals[i] is not None
        ]
        if not sound or not flawed:
            continue
        mixed += 1
        gap = sum(sound) / len(sound) - sum(flawed) / len(flawed)
        values = [totals[i] for i in indices if totals[i] is not None]
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / max(1, len(values) - 1))
        gaps.append(gap)
        if std > 0:
            scaled.append(gap / std)
    out = {f"{PREFIX}/signal/mixed_right_groups": mixed / len(members) if members else 0.0}
    if gaps:
        out[f"{PREFIX}/signal/sound_minus_flawed_reward"] = sum(gaps) / len(gaps)
    if scaled:
        out[f"{PREFIX}/signal/sound_minus_flawed_advantage"] = sum(scaled) / len(scaled)
    return out


def step_rows(batch: RewardBatch, outputs: dict[str, RewardOutput], types: dict[str, str]) -> list[dict[str, Any]]:
    """Per completion: its steps, each with the per-step scores of every component and a mark on
    the first error (for the completions table)."""
    kinds = component_kinds(types, outputs)
    judges = names_of_kind(kinds, FIRST_ERROR)
    records = {judge: first_error_records(outputs[judge]) for judge in judges}
    several = len(judges) > 1
    rows = []
    for i, segmentation in enumerate(batch.segmentations):
        lines = []
        for j, step in enumerate(segmentation.steps):
            scores = []
            for name, output in outputs.items():
                steps = output.step_scores[i] if output.step_scores is not None else None
                if steps is not None and j < len(steps):
                    scores.append(f"{name}={steps[j]:.3g}")
            marks = [
                f" <- FIRST ERROR{f' ({judge})' if several else ''}" for judge in judges if records[judge][i].index == j
            ]
            score_text = f" [{', '.join(scores)}]" if scores else ""
            lines.append(f"({j}){score_text}{''.join(marks)} {step.text}")
        verdicts = {}
        for judge in judges or [None]:
            index = records[judge][i].index if judge is not None else None
            column = f"first_error/{judge}" if several else "first_error"
            verdicts[column] = "" if judge is None else ("no verdict" if index is None else index)
        rows.append(
            {
                "question": batch.questions[i],
                "completion": batch.completions[i],
                "steps": "\n".join(lines),
                **verdicts,
                **{f"reward/{name}": output.scores[i] for name, output in outputs.items()},
            }
        )
    return rows


# --- score ranges (the histograms' axes, procrl validate's plots) ----------------------------------


def score_range(type_name: str | None, values: list[float]) -> tuple[float, float]:
    """The x range of a component's histogram: the score range its type declares
    (``RewardComponent.score_range``, widened to include every value: a fallback outside it),
    else the values' own range (a constant value gets a unit-wide range around it)."""
    finite = [v for v in values if math.isfinite(v)]
    info = component_info(str(type_name)) if type_name is not None else None
    known = info.score_range if info is not None else None
    if known is not None:
        return min([known[0], *finite]), max([known[1], *finite])
    if not finite:
        return 0.0, 1.0
    low, high = min(finite), max(finite)
    return (low - 0.5, high + 0.5) if high - low < 1e-12 else (low, high)
