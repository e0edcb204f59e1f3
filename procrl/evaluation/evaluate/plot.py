"""``procrl evaluate``'s PNG plots, written into the report's folder by its rule (procrl/core/folders.py)."""

from __future__ import annotations

import io
from pathlib import Path

from procrl.core.folders import write_file
from procrl.observe import plots
from procrl.observe import stats as diag
from procrl.rewards.protocol import RewardOutput

__all__ = ["write_plots"]


def write_plots(
    outputs: dict[str, RewardOutput],
    types: dict[str, str],
    directory: Path,
    judge: str | None = None,
    correct: list[bool | None] | None = None,
) -> list[str]:
    """PNG files written (component distributions always; first-error and TRACE when present)."""
    written = []

    def save(figure, name: str) -> None:  # rendered in memory, written into the folder by its rule
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", bbox_inches="tight")
        write_file(directory, name, buffer.getvalue())
        written.append(name)

    save(
        plots.plot_component_distributions({k: o.scores for k, o in outputs.items()}, types=types),
        "component_distributions.png",
    )
    kinds = diag.component_kinds(types, outputs)
    judge = diag.evaluation_judge(kinds, judge)
    if judge is not None:
        records = diag.first_error_records(outputs[judge])
        save(plots.plot_first_error_histogram(records, title=f"first error ({judge})"), "first_error_histogram.png")
        if correct is not None and diag.category_counts(records) is not None:
            counts = {"all": diag.category_counts(records), "right answer": diag.category_counts(records, correct)}
            save(plots.plot_error_categories(counts, title=f"error categories ({judge})"), "first_error_categories.png")
    traces = [n for n, k in kinds.items() if k == diag.TRACE and diag.transition_counts(outputs[n]) is not None]
    for i, name in enumerate(traces):
        file = "trace_transitions.png" if i == 0 else f"trace_transitions_{name}.png"
        save(
            plots.plot_transition_heatmap(
                diag.transition_counts(outputs[name]),
                outputs[name].extras.get("labels"),
                title=f"{name}: sentence label transitions",
            ),
            file,
        )
    return written
