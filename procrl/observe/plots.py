"""Process diagnostics, the figures: matplotlib Figures of the numbers of
:mod:`procrl.observe.stats` (first-error histogram, TRACE transition heatmap, one histogram per
reward component), logged to W&B during training (:mod:`procrl.observe.callback`) and written as
PNG files by ``procrl evaluate`` and ``procrl validate``.

No pyplot state (each figure has its own Agg canvas), so plotting is safe off the main thread.
"""

from __future__ import annotations

import io
import math
import textwrap

from procrl.observe.stats import (
    RELATIVE_BINS,
    TRACE_LABELS,
    FirstErrorRecord,
    histogram,
    relative_position,
    row_normalized,
    score_range,
)

__all__ = [
    "figure_png",
    "new_figure",
    "plot_component_distributions",
    "plot_error_categories",
    "plot_first_error_histogram",
    "plot_transition_heatmap",
]

# --- plots (matplotlib Figures, no pyplot state: safe off the main thread) ----------------------
#
# Readable on degenerate data too: each component's scores on its own fixed range, a "constant
# value X" note, explicit "no errors found" / "no verdicts" / "no transitions" text instead of
# empty axes, and a constrained layout so that titles never overlap.

_PANELS_PER_ROW = 4


def new_figure(width: float, height: float):
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
    figure = new_figure(width, 1.8)
    axis = figure.subplots()
    axis.set_axis_off()
    axis.text(0.5, 0.5, message, ha="center", va="center", fontsize=11, wrap=True, transform=axis.transAxes)
    figure.suptitle(title)
    return figure


def _note(axis, text: str) -> None:
    axis.text(
        0.5,
        0.95,
        text,
        ha="center",
        va="top",
        fontsize=8,
        transform=axis.transAxes,
        bbox={"boxstyle": "round", "facecolor": "#fdf2d0", "edgecolor": "#c9a227"},
    )


def _integer_y(axis) -> None:
    from matplotlib.ticker import MaxNLocator

    axis.yaxis.set_major_locator(MaxNLocator(integer=True))


def plot_first_error_histogram(records: list[FirstErrorRecord], title: str = "first error position"):
    """Two panels: the first wrong step's index, and its position relative to the chain length
    (on [0, 1]); a sentence instead when no completion was judged or none has an error."""
    found = [r for r in records if r.index is not None and r.index >= 0]
    judged = sum(r.index is not None for r in records)
    unjudged = len(records) - judged
    if not records:
        return _message_figure(title, "no completions judged")
    if not judged:
        return _message_figure(
            title,
            f"no verdicts: the judge gave none for the {len(records)} completions\n"
            "(e.g. completions without steps, or a judge failure)",
        )
    if not found:
        extra = f"; {unjudged} without a verdict" if unjudged else ""
        return _message_figure(title, f"no errors found: all {judged} judged completions have no wrong step{extra}")
    figure = new_figure(9, 3.4)
    absolute, relative = figure.subplots(1, 2)
    top = max(max(r.index for r in found), 4)  # at least steps 0..4 on the axis
    absolute.bar(
        range(top + 1), histogram([r.index for r in found], [i - 0.5 for i in range(top + 2)]), color="#c0392b"
    )
    absolute.set_xlim(-0.6, top + 0.6)
    absolute.set_xticks(range(0, top + 1, max(1, (top + 1) // 10)))
    absolute.set_xlabel("first wrong step (index)")
    absolute.set_ylabel("completions")
    edges = [i / RELATIVE_BINS for i in range(RELATIVE_BINS + 1)]
    relative.bar(
        [(a + b) / 2 for a, b in zip(edges, edges[1:])],
        histogram([relative_position(r.index, r.num_steps) for r in found], edges),
        width=1 / RELATIVE_BINS * 0.9,
        color="#e67e22",
    )
    relative.set_xlim(0.0, 1.0)
    relative.set_xticks(edges)
    relative.set_xlabel("relative position (index / number of steps)")
    for axis in (absolute, relative):
        _integer_y(axis)
    extra = f", {unjudged} without a verdict" if unjudged else ""
    figure.suptitle(f"{title}: errors in {len(found)} of {judged} judged completions{extra}")
    return figure


def plot_error_categories(counts: dict[str, dict[str, int]], title: str = "error categories"):
    """Errors found per category (ReTraceQA's Misinterpretation / Hallucination / Reasoning, and
    ``none`` when the judge named none), one bar group per population (``all``, ``right answer``)."""
    populations = [name for name, values in counts.items() if values]
    if not populations:
        return _message_figure(title, "the judge named no error category")
    categories = list(counts[populations[0]])
    figure = new_figure(7, 3.4)
    axis = figure.subplots()
    width = 0.8 / len(populations)
    for offset, (name, color) in enumerate(zip(populations, ("#c0392b", "#e67e22", "#2980b9"))):
        axis.bar(
            [i + offset * width for i in range(len(categories))],
            [counts[name][c] for c in categories],
            width,
            label=name,
            color=color,
        )
    axis.set_xticks([i + width * (len(populations) - 1) / 2 for i in range(len(categories))])
    axis.set_xticklabels(categories)
    axis.set_ylabel("errors found")
    axis.legend()
    _integer_y(axis)
    figure.suptitle(title)
    return figure


def plot_transition_heatmap(
    matrix: list[list[float]], labels: list[str] | None = None, title: str = "TRACE transitions"
):
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
    figure = new_figure(6.6, 5.8)
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
                axes.text(
                    c,
                    r,
                    f"{int(count)}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black" if shares[r][c] > 0.6 else "white",
                )
    figure.colorbar(image, ax=axes, label="share of the row")
    note = "; grey rows: label never followed by another" if empty_rows else ""
    axes.set_title(f"{title}\n{total} transitions{note}", fontsize=10)
    return figure


def plot_component_distributions(
    scores: dict[str, list[float | None]], title: str = "reward components", types: dict[str, str] | None = None
):
    """One histogram per component on its declared score range (:func:`~procrl.observe.stats.score_range`), with the
    mean dashed; None = no opinion, counted in the panel title; a note on a constant component, a
    sentence for one without any score."""
    if not scores:
        return _message_figure(title, "no reward components")
    names = list(scores)
    columns = min(len(names), _PANELS_PER_ROW)
    rows = math.ceil(len(names) / columns)
    figure = new_figure(3.3 * columns, 2.7 * rows + 0.5)
    axes = figure.subplots(rows, columns, squeeze=False)
    flat = [axis for row in axes for axis in row]
    for axis in flat[len(names) :]:
        axis.set_axis_off()
    for i, (axis, name) in enumerate(zip(flat, names)):
        values = scores.get(name, [])
        present = [float(v) for v in values if v is not None]
        type_name = (types or {}).get(name, name)
        # name and type on lines of their own, wrapped: neighbouring titles never run into each other
        label = "\n".join(
            textwrap.wrap(name, 32, break_on_hyphens=False)
            + ([] if type_name == name else textwrap.wrap(f"({type_name})", 32))
        )
        low, high = score_range(type_name, present)
        width = (high - low) / 20  # 21 bins centred on low, low + width, ..., high
        axis.set_xlim(low - width, high + width)
        axis.set_xlabel("score")
        if i % columns == 0:
            axis.set_ylabel("completions")
        if not present:
            axis.set_yticks([])
            axis.text(
                0.5,
                0.5,
                f"no scores\n(all {len(values)} none)",
                ha="center",
                va="center",
                fontsize=9,
                transform=axis.transAxes,
            )
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
