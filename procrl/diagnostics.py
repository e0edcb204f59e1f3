"""Process diagnostics: what the reward mix saw in a batch, as metrics, tables and plots.

Pure functions turn the mix's per-batch :class:`RewardOutput` objects into numbers
(``batch_scalars``), per-completion rows (``step_rows``) and figures (``plot_*``); the
:class:`DiagnosticsCallback` wires them into training: it observes every scored batch through
``RewardMix.batch_observers`` (scalars go through TRL's ``log_metric``, so they are averaged per
logging step and land in ``trainer_state.json`` and W&B like TRL's own metrics), and at each
logging step it adds the reward components' share of the step time and, when W&B is active,
logs the first-error histogram, the TRACE transition heatmap and a completions table. It also
keeps the reward-hacking watch (``procrl/hacking.py``): ``diagnostics/hacking_suspect`` and the
``diagnostics/behaviour/*`` means it is judged on (steps, length, process reward).

Components are recognised by the shape of what they report (names are free in a recipe):
``accuracy``: spec type ``accuracy`` (1.0 right, 0.0 wrong); first error: details carrying
``index`` (-1 = no error) and ``num_steps``; TRACE: extras ``transition_counts`` (8x8, rows =
previous label) and ``labels``; ReCEval: details carrying ``min_step`` and ``step_values``.
"""

from __future__ import annotations

import io
import logging
import math
import textwrap
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from procrl.rewards.base import RewardBatch, RewardOutput
from procrl.rewards.registry import component_info

logger = logging.getLogger(__name__)

__all__ = [
    "DiagnosticsCallback",
    "DiagnosticsWindow",
    "RELATIVE_BINS",
    "TRACE_LABELS",
    "batch_scalars",
    "evaluation_judge",
    "component_correlations",
    "component_kinds",
    "first_error_records",
    "histogram",
    "pearson",
    "plot_component_distributions",
    "plot_first_error_histogram",
    "plot_transition_heatmap",
    "process_error_stats",
    "receval_position_profile",
    "receval_stats",
    "relative_position",
    "row_normalized",
    "score_range",
    "step_rows",
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


def _first(kinds: dict[str, str], kind: str) -> str | None:
    return next((name for name, k in kinds.items() if k == kind), None)


def _all(kinds: dict[str, str], kind: str) -> list[str]:
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
            records.append(FirstErrorRecord(index, steps))
    return records


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
        return {"answer_accuracy": answer_accuracy, "reasoning_aware_accuracy": None, "inflation": None,
                "process_error_rate": None, "first_error_unjudged": None}
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


def batch_scalars(types: dict[str, str], outputs: dict[str, RewardOutput], num_steps: list[int] | None = None) -> dict[str, float]:
    """Every scalar diagnostic of one scored batch, keyed ``diagnostics/...``."""
    kinds = component_kinds(types, outputs)
    out: dict[str, float] = {}
    for pair, value in component_correlations({k: o.scores for k, o in outputs.items()}).items():
        out[f"{PREFIX}/correlation/{pair}"] = value
    for name, output in outputs.items():
        out[f"{PREFIX}/seconds/{name}"] = output.seconds
    accuracy, judges = _first(kinds, ACCURACY), _all(kinds, FIRST_ERROR)
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


def step_rows(batch: RewardBatch, outputs: dict[str, RewardOutput], types: dict[str, str]) -> list[dict[str, Any]]:
    """Per completion: its steps, each with the per-step scores of every component and a mark on
    the first error (for the completions table)."""
    kinds = component_kinds(types, outputs)
    judges = _all(kinds, FIRST_ERROR)
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
            marks = [f" <- FIRST ERROR{f' ({judge})' if several else ''}" for judge in judges if records[judge][i].index == j]
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


# --- plots (matplotlib Figures, no pyplot state: safe off the main thread) ----------------------
#
# Readable on degenerate data too: each component's scores on its own fixed range, a "constant
# value X" note, explicit "no errors found" / "no verdicts" / "no transitions" text instead of
# empty axes, and a constrained layout so that titles never overlap.

_PANELS_PER_ROW = 4


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def figure_png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


def _message_figure(title: str, message: str, width: float = 7.0):
    """A titled figure that says in words why there is nothing to draw."""
    figure = _figure(width, 1.8)
    axis = figure.subplots()
    axis.set_axis_off()
    axis.text(0.5, 0.5, message, ha="center", va="center", fontsize=11, wrap=True, transform=axis.transAxes)
    figure.suptitle(title)
    return figure


def _note(axis, text: str) -> None:
    axis.text(0.5, 0.95, text, ha="center", va="top", fontsize=8, transform=axis.transAxes,
              bbox={"boxstyle": "round", "facecolor": "#fdf2d0", "edgecolor": "#c9a227"})


def _integer_y(axis) -> None:
    from matplotlib.ticker import MaxNLocator

    axis.yaxis.set_major_locator(MaxNLocator(integer=True))


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


def plot_first_error_histogram(records: list[FirstErrorRecord], title: str = "first error position"):
    """Two panels: the first wrong step's index, and its position relative to the chain length
    (on [0, 1]); a sentence instead when no completion was judged or none has an error."""
    found = [r for r in records if r.index is not None and r.index >= 0]
    judged = sum(r.index is not None for r in records)
    unjudged = len(records) - judged
    if not records:
        return _message_figure(title, "no completions judged")
    if not judged:
        return _message_figure(title, f"no verdicts: the judge gave none for the {len(records)} completions\n"
                                      "(e.g. completions without steps, or a judge failure)")
    if not found:
        extra = f"; {unjudged} without a verdict" if unjudged else ""
        return _message_figure(title, f"no errors found: all {judged} judged completions have no wrong step{extra}")
    figure = _figure(9, 3.4)
    absolute, relative = figure.subplots(1, 2)
    top = max(max(r.index for r in found), 4)  # at least steps 0..4 on the axis
    absolute.bar(range(top + 1), histogram([r.index for r in found], [i - 0.5 for i in range(top + 2)]), color="#c0392b")
    absolute.set_xlim(-0.6, top + 0.6)
    absolute.set_xticks(range(0, top + 1, max(1, (top + 1) // 10)))
    absolute.set_xlabel("first wrong step (index)")
    absolute.set_ylabel("completions")
    edges = [i / RELATIVE_BINS for i in range(RELATIVE_BINS + 1)]
    relative.bar([(a + b) / 2 for a, b in zip(edges, edges[1:])], histogram([relative_position(r.index, r.num_steps) for r in found], edges),
                 width=1 / RELATIVE_BINS * 0.9, color="#e67e22")
    relative.set_xlim(0.0, 1.0)
    relative.set_xticks(edges)
    relative.set_xlabel("relative position (index / number of steps)")
    for axis in (absolute, relative):
        _integer_y(axis)
    extra = f", {unjudged} without a verdict" if unjudged else ""
    figure.suptitle(f"{title}: errors in {len(found)} of {judged} judged completions{extra}")
    return figure


def plot_transition_heatmap(matrix: list[list[float]], labels: list[str] | None = None, title: str = "TRACE transitions"):
    """Row-normalised transition matrix (previous label -> next label), counts in each cell;
    rows of labels never followed by another are grey; a sentence instead when there is no
    transition at all."""
    total = int(sum(map(sum, matrix)))
    if total == 0:
        return _message_figure(title, "no transitions: no completion has two consecutive labelled sentences")
    import numpy

    labels = labels or TRACE_LABELS[: len(matrix)]
    shares = row_normalized(matrix)
    empty_rows = [r for r, row in enumerate(matrix) if not sum(row)]
    masked = numpy.ma.masked_array(shares, mask=[[r in empty_rows] * len(row) for r, row in enumerate(matrix)])
    figure = _figure(6.6, 5.8)
    axes = figure.subplots()
    import matplotlib

    colormap = matplotlib.colormaps["viridis"].with_extremes(bad="#d5d5d5")
    image = axes.imshow(masked, cmap=colormap, vmin=0.0, vmax=1.0)
    axes.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    axes.set_yticks(range(len(labels)), labels)
    axes.set_xlabel("next sentence's label")
    axes.set_ylabel("previous sentence's label")
    for r, row in enumerate(matrix):
        for c, count in enumerate(row):
            if count:
                axes.text(c, r, f"{int(count)}", ha="center", va="center", fontsize=7,
                          color="black" if shares[r][c] > 0.6 else "white")
    figure.colorbar(image, ax=axes, label="share of the row")
    note = "; grey rows: label never followed by another" if empty_rows else ""
    axes.set_title(f"{title}\n{total} transitions{note}", fontsize=10)
    return figure


def plot_component_distributions(scores: dict[str, list[float | None]], title: str = "reward components",
                                 types: dict[str, str] | None = None):
    """One histogram per component on its declared score range (:func:`score_range`), with the mean
    dashed; None = no opinion, counted in the panel title; a note on a constant component, a
    sentence for one without any score."""
    if not scores:
        return _message_figure(title, "no reward components")
    names = list(scores)
    columns = min(len(names), _PANELS_PER_ROW)
    rows = math.ceil(len(names) / columns)
    figure = _figure(3.3 * columns, 2.7 * rows + 0.5)
    axes = figure.subplots(rows, columns, squeeze=False)
    flat = [axis for row in axes for axis in row]
    for axis in flat[len(names):]:
        axis.set_axis_off()
    for i, (axis, name) in enumerate(zip(flat, names)):
        values = scores.get(name, [])
        present = [float(v) for v in values if v is not None]
        type_name = (types or {}).get(name, name)
        # name and type on lines of their own, wrapped: neighbouring titles never run into each other
        label = "\n".join(textwrap.wrap(name, 32, break_on_hyphens=False)
                          + ([] if type_name == name else textwrap.wrap(f"({type_name})", 32)))
        low, high = score_range(type_name, present)
        width = (high - low) / 20  # 21 bins centred on low, low + width, ..., high
        axis.set_xlim(low - width, high + width)
        axis.set_xlabel("score")
        if i % columns == 0:
            axis.set_ylabel("completions")
        if not present:
            axis.set_yticks([])
            axis.text(0.5, 0.5, f"no scores\n(all {len(values)} none)", ha="center", va="center", fontsize=9,
                      transform=axis.transAxes)
            axis.set_title(f"{label}\nnone={len(values)}", fontsize=9)
            continue
        counts, _, _ = axis.hist(present, bins=[low + width * (j - 0.5) for j in range(22)], color="#2980b9")
        mean = sum(present) / len(present)
        axis.axvline(mean, color="#34495e", linestyle="--", linewidth=1)
        _integer_y(axis)
        if max(present) - min(present) < 1e-12:
            axis.set_ylim(0, max(counts) * 1.35)  # room for the note above the bar
            _note(axis, f"constant value {present[0]:.4g}")
        axis.set_title(f"{label}\nn={len(present)}, none={len(values) - len(present)}, mean {mean:.3g}", fontsize=9)
    figure.suptitle(title)
    return figure


# --- training: accumulate per logging window, log at each logging step ---------------------------


TABLE_ROWS = 16  # most recent completions shown in each W&B completions table
PLOT_TIME_BUDGET = 0.02  # plots and tables may take at most this share of the training wall time
FIRST_PLOT_ESTIMATE_S = 1.0  # what a round of plots is assumed to cost before one has been timed


@dataclass
class DiagnosticsWindow:
    """What accumulates between two W&B plots (plots need more than one batch's worth)."""

    first_errors: dict[str, list[FirstErrorRecord]] = field(default_factory=dict)  # per first-error component
    transitions: dict[str, list[list[float]]] = field(default_factory=dict)
    labels: dict[str, list[str]] = field(default_factory=dict)
    rows: deque = field(default_factory=lambda: deque(maxlen=TABLE_ROWS))

    def add(self, types: dict[str, str], batch: RewardBatch, outputs: dict[str, RewardOutput], keep_rows: bool) -> None:
        kinds = component_kinds(types, outputs)
        for judge in _all(kinds, FIRST_ERROR):
            self.first_errors.setdefault(judge, []).extend(first_error_records(outputs[judge]))
        for name, kind in kinds.items():
            if kind == TRACE and (matrix := transition_counts(outputs[name])) is not None:
                self.transitions[name] = add_matrices(self.transitions.get(name), matrix)
                self.labels[name] = list(outputs[name].extras.get("labels") or TRACE_LABELS[: len(matrix)])
        if keep_rows:
            self.rows.extend(step_rows(batch, outputs, types)[-TABLE_ROWS:])


class _DiagnosticsCallback:
    """Observes the reward mix's batches and logs the diagnostics (``logging.diagnostics``).

    :meth:`attach` adds the batch observer to the mix; pass the callback to the trainer. Scalars
    of each batch go through TRL's ``log_metric``; at each logging step
    ``diagnostics/time_share/<name>`` (reward time over step time in the window) is added to the
    log record. With W&B active on the main process, first-error histograms are logged at every
    logging step; the rendered plots (first-error histogram, TRACE heatmap) and the completions
    table whenever one more round of them (its cost estimated from the last one) keeps their
    total under ``PLOT_TIME_BUDGET`` of the wall time so far, and
    once more at the end of training, so that they never cost more than a few percent.
    """

    def __init__(self, types: dict[str, str], weights: dict[str, float] | None = None):
        from procrl.observe.hacking import BehaviourTracker

        self.types = dict(types)
        self.weights = dict(weights or {})
        self._behaviour = BehaviourTracker()
        self._lock = threading.Lock()
        self._window = DiagnosticsWindow()
        self._reward_seconds: dict[str, float] = {}
        self._last_step = 0
        self._keep_rows = False  # set once W&B is known to be active (the table is only for W&B)
        self._started = time.perf_counter()
        self._plot_seconds = 0.0
        self._plot_estimate = FIRST_PLOT_ESTIMATE_S
        self._overhead_seconds = 0.0
        self.wandb_logged: list[str] = []  # keys sent to W&B (read by tests and benchmarks)

    @classmethod
    def attach(cls, mix) -> "_DiagnosticsCallback":
        callback = cls({name: spec.type for name, spec in mix.specs.items()},
                       {name: spec.weight for name, spec in mix.specs.items()})
        mix.batch_observers.append(callback.observe)
        return callback

    def _wandb_active(self, args) -> Any:
        if not args.report_to or "wandb" not in args.report_to:
            return None
        try:
            import wandb
        except ImportError:
            return None
        return wandb if wandb.run is not None else None

    def observe(self, batch: RewardBatch, outputs: dict[str, RewardOutput],
                log_metric: Callable[[str, float], None] | None, log_extra: Callable[[str, list], None] | None) -> None:
        """Called by the mix once every component has scored a batch."""
        started = time.perf_counter()
        kinds = component_kinds(self.types, outputs)
        judges = _all(kinds, FIRST_ERROR)
        # step counts only matter for a judge that leaves num_steps out; segmenting costs spaCy time
        num_steps = [len(s.steps) for s in batch.segmentations] if judges else None
        if log_metric is not None:
            for key, value in batch_scalars(self.types, outputs, num_steps).items():
                log_metric(key, value)
        if log_extra is not None:
            for judge in judges:
                column = f"first_error/{judge}" if len(judges) > 1 else "first_error"
                log_extra(column, [r.index for r in first_error_records(outputs[judge], num_steps)])
        watch = self._batch_behaviour(batch, outputs, kinds, num_steps)
        with self._lock:
            self._behaviour.add(watch)
            for name, output in outputs.items():
                self._reward_seconds[name] = self._reward_seconds.get(name, 0.0) + output.seconds
            if kinds or self._keep_rows:
                self._window.add(self.types, batch, outputs, keep_rows=self._keep_rows)
            self._overhead_seconds += time.perf_counter() - started

    def _batch_behaviour(self, batch: RewardBatch, outputs: dict[str, RewardOutput], kinds: dict[str, str],
                         num_steps: list[int] | None):
        """This batch's steps, length, process reward and accuracy for the reward-hacking watch."""
        from procrl.observe.hacking import behaviour, process_totals

        if num_steps is None and "segmentations" in batch.__dict__:  # only when a component segmented already
            num_steps = [len(s.steps) for s in batch.segmentations]
        totals = process_totals({n: o.scores for n, o in outputs.items()}, self.types, self.weights)
        accuracy = _first(kinds, ACCURACY)
        return behaviour(batch.completions, num_steps, totals, outputs[accuracy].scores if accuracy else None)

    def on_train_begin(self, args, state, control, **kwargs):
        self._last_step = state.global_step
        self._started = time.perf_counter()
        self._keep_rows = self._wandb_active(args) is not None and state.is_world_process_zero

    def on_log(self, args, state, control, logs=None, **kwargs):
        with self._lock:
            reward_seconds, self._reward_seconds = self._reward_seconds, {}
            overhead, self._overhead_seconds = self._overhead_seconds, 0.0
        steps = max(state.global_step - self._last_step, 1)
        self._last_step = state.global_step
        with self._lock:
            added: dict[str, float] = self._behaviour.scalars(PREFIX)
        step_time = (logs or {}).get("step_time")
        if step_time:
            for name, seconds in reward_seconds.items():
                added[f"{PREFIX}/time_share/{name}"] = seconds / (step_time * steps)
            # what the diagnostics themselves cost: observing this window's batches plus the
            # previous logging step's W&B work, over this window's step time
            added[f"{PREFIX}/overhead_share"] = overhead / (step_time * steps)
        if added and logs is not None:
            logs.update(added)
            # the Trainer appended a copy of ``logs`` to log_history just before calling us
            if state.log_history and state.log_history[-1].get("step") == state.global_step:
                state.log_history[-1].update(added)
        elapsed = time.perf_counter() - self._started
        plots = self._plot_seconds + self._plot_estimate <= PLOT_TIME_BUDGET * elapsed
        self._log_wandb(args, state, added, plots=plots)

    def on_train_end(self, args, state, control, **kwargs):
        self._log_wandb(args, state, {}, plots=True)

    def _log_wandb(self, args, state, scalars: dict[str, float], plots: bool) -> None:
        wandb = self._wandb_active(args)
        if wandb is None or not state.is_world_process_zero:
            return
        started = time.perf_counter()
        try:
            payload = self._wandb_payload(wandb, scalars, plots, state.global_step)
            if payload:
                payload["train/global_step"] = state.global_step
                wandb.log(payload)
                self.wandb_logged.extend(k for k in payload if k not in self.wandb_logged)
        except Exception as error:  # diagnostics must never stop training
            logger.warning("diagnostics: W&B logging failed: %s: %s", type(error).__name__, error)
        spent = time.perf_counter() - started
        with self._lock:
            self._overhead_seconds += spent
        if plots:
            self._plot_seconds += spent
            self._plot_estimate = spent

    def _wandb_payload(self, wandb, scalars: dict[str, float], plots: bool, step: int) -> dict[str, Any]:
        # same key names as transformers' WandbCallback gives the scalars logged through the trainer
        payload: dict[str, Any] = {f"train/{k}": v for k, v in scalars.items()}
        with self._lock:
            window = self._window
            if plots:
                self._window = DiagnosticsWindow()
        judges = list(window.first_errors)
        # one judge: diagnostics/first_error/...; several: diagnostics/first_error/<name>/... each
        prefixes = {judge: f"{PREFIX}/first_error" + (f"/{judge}" if len(judges) > 1 else "") for judge in judges}
        for judge, records in window.first_errors.items():
            found = [r for r in records if r.index is not None and r.index >= 0]
            if found:
                payload[f"train/{prefixes[judge]}/index_hist"] = wandb.Histogram([r.index for r in found])
                payload[f"train/{prefixes[judge]}/relative_hist"] = wandb.Histogram(
                    [relative_position(r.index, r.num_steps) for r in found])
        if not plots:
            return payload
        from PIL import Image

        for judge, records in window.first_errors.items():
            if records:
                title = f"{judge if len(judges) > 1 else 'first error'} (to step {step})"
                figure = plot_first_error_histogram(records, title=title)
                payload[f"train/{prefixes[judge]}/histogram"] = wandb.Image(Image.open(io.BytesIO(figure_png(figure))))
        for name, matrix in window.transitions.items():
            figure = plot_transition_heatmap(matrix, window.labels.get(name), title=f"{name}: transitions (to step {step})")
            payload[f"train/{PREFIX}/{name}/transition_heatmap"] = wandb.Image(Image.open(io.BytesIO(figure_png(figure))))
        if window.rows:
            columns = list(window.rows[-1])
            table = wandb.Table(columns=["step", *columns])
            for row in window.rows:
                table.add_data(step, *[_table_value(row.get(c)) for c in columns])
            payload[f"train/{PREFIX}/completions"] = table
        return payload


def _table_value(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


_callback_class: type | None = None


def __getattr__(name: str) -> Any:
    # DiagnosticsCallback subclasses transformers' TrainerCallback; built on first use so that
    # importing this module (procrl evaluate, the CLI) does not import transformers
    global _callback_class
    if name == "DiagnosticsCallback":
        if _callback_class is None:
            from transformers import TrainerCallback

            _callback_class = type("DiagnosticsCallback", (_DiagnosticsCallback, TrainerCallback),
                                   {"__doc__": _DiagnosticsCallback.__doc__, "__module__": __name__})
        return _callback_class
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
