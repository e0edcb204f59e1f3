"""``procrl validate``'s figure, validate.png: per component, the total and each peer, the score
distribution of each class and the ROC curves."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

from procrl.evaluation.corpora import CLASS_LABELS, CLASSES, FLAWED_UNLABELLED, RIGHT_FLAWED, SOUND, WRONG
from procrl.evaluation.validate.metrics import auroc, roc_points
from procrl.evaluation.validate.report import MIN_CLASS
from procrl.evaluation.validate.scoring import Scored
from procrl.observe.plots import new_figure
from procrl.observe.stats import score_range

# Imported where used: matplotlib (seconds to load; procrl.observe.plots loads it with the first figure).
__all__ = ["plot_validation"]

_COLOURS = {SOUND: "#27ae60", RIGHT_FLAWED: "#e67e22", WRONG: "#c0392b", FLAWED_UNLABELLED: "#8e44ad"}


def plot_validation(items: list[Scored], report: dict[str, Any], peer_scores: dict[str, dict[str, Any]]):
    """Per component (and the total, and each peer): the score distribution of each class (share
    of the class per value: bars for a few discrete values, outlines of a 20-bin histogram
    otherwise), and below it the ROC curve sound vs flawed (dashed: among right answers)."""

    from matplotlib.patches import Patch

    panels: list[tuple[str, str | None, list[tuple[str, float]]]] = []
    for name, stats in report["components"].items():
        panels.append(
            (name, stats["type"], [(i.klass, i.rewards[name]) for i in items if i.rewards.get(name) is not None])
        )
    panels.append(("weighted total", None, [(i.klass, i.total) for i in items if i.total is not None]))
    for name, scores in peer_scores.items():
        values = [(i.klass, scores[i.solution.id]) for i in items if i.solution.id in scores]
        panels.append((f"peer: {name}", None, [(k, min(v) if isinstance(v, list) else v) for k, v in values]))
    columns = min(len(panels), 4)
    blocks = math.ceil(len(panels) / columns)
    with_roc = bool(report["classes"].get(SOUND)) and len(report["classes"]) > 1  # else no curve to draw
    per_block = 2 if with_roc else 1
    figure = new_figure(3.5 * columns, (6.0 if with_roc else 3.0) * blocks + 0.9)
    axes = figure.subplots(per_block * blocks, columns, squeeze=False)
    for index in range(blocks * columns):
        top = axes[per_block * (index // columns)][index % columns]
        bottom = axes[per_block * (index // columns) + 1][index % columns] if with_roc else None
        if index >= len(panels):
            top.set_axis_off()
            if bottom is not None:
                bottom.set_axis_off()
            continue
        name, type_name, pairs = panels[index]
        present = [k for k in CLASSES if any(c == k for c, _ in pairs)]
        sound_count = sum(1 for c, _ in pairs if c == SOUND)
        top.set_title("\n".join(textwrap.wrap(name, 30)) + f"\nn = {len(pairs)} ({sound_count} sound)", fontsize=9)
        values = [v for _, v in pairs]
        if not values:
            top.set_axis_off()
            top.text(0.5, 0.5, "no scores", ha="center", va="center", transform=top.transAxes)
        else:
            low, high = score_range(type_name, values)
            distinct = sorted(set(values))
            if len(distinct) <= 4 and all(float(v).is_integer() for v in distinct):  # 0/1, -1/0: bars side by side
                width = 0.8 / max(len(present), 1)
                for j, klass in enumerate(present):
                    members = [v for c, v in pairs if c == klass]
                    heights = [sum(1 for v in members if v == d) / len(members) for d in distinct]
                    positions = [x + (j - (len(present) - 1) / 2) * width for x in range(len(distinct))]
                    top.bar(positions, heights, width=width, color=_COLOURS[klass])
                top.set_xticks(range(len(distinct)), [f"{d:.3g}" for d in distinct])
                top.set_xlim(-0.6, len(distinct) - 0.4)
            else:
                bins = [low + (high - low) * b / 20 for b in range(21)] if high > low else 10
                for klass in present:
                    members = [v for c, v in pairs if c == klass]
                    weights = [1 / len(members)] * len(members)
                    top.hist(
                        members, bins=bins, weights=weights, histtype="stepfilled", alpha=0.18, color=_COLOURS[klass]
                    )
                    top.hist(members, bins=bins, weights=weights, histtype="step", linewidth=1.6, color=_COLOURS[klass])
            top.set_ylim(0, 1.05)
            top.set_xlabel("score")
            if index % columns == 0:
                top.set_ylabel("share of the class")
        if bottom is None:
            continue
        sound = [v for c, v in pairs if c == SOUND]
        flawed = [v for c, v in pairs if c != SOUND]
        right = [v for c, v in pairs if c == RIGHT_FLAWED]
        bottom.plot([0, 1], [0, 1], color="#bbbbbb", linewidth=1, linestyle=":")
        if sound and flawed:
            fpr, tpr = roc_points(sound, flawed)
            bottom.plot(fpr, tpr, color="#2c3e50", linewidth=1.8, label=f"sound vs flawed: {auroc(sound, flawed):.3f}")
            if len(sound) >= MIN_CLASS and len(right) >= MIN_CLASS:
                fpr, tpr = roc_points(sound, right)
                bottom.plot(
                    fpr,
                    tpr,
                    color=_COLOURS[RIGHT_FLAWED],
                    linewidth=1.4,
                    linestyle="--",
                    label=f"among right answers: {auroc(sound, right):.3f}",
                )
            bottom.legend(fontsize=7, loc="lower right", title="AUROC", title_fontsize=7)
        else:
            bottom.text(
                0.5,
                0.5,
                "no ROC curve:\n" + ("no sound solutions" if not sound else "no flawed solutions"),
                ha="center",
                va="center",
                fontsize=9,
                transform=bottom.transAxes,
            )
        bottom.set_xlim(0, 1)
        bottom.set_ylim(0, 1.02)
        bottom.set_aspect("equal")
        bottom.set_xlabel("flawed passed (FPR)")
        if index % columns == 0:
            bottom.set_ylabel("sound passed (TPR)")
    classes = [k for k in CLASSES if k in report["classes"]]
    figure.legend(
        handles=[Patch(color=_COLOURS[k], label=CLASS_LABELS[k]) for k in classes],
        loc="outside lower center",
        ncols=len(classes),
        fontsize=9,
        frameon=False,
    )
    data = ", ".join(Path(part).name for part in str(report.get("data")).split(", "))
    what = (
        "score per class (top), ROC sound vs flawed (bottom)"
        if with_roc
        else "score per class (one class of sound/flawed only: no ROC curves)"
    )
    figure.suptitle(f"{Path(str(report.get('recipe'))).name} on {textwrap.shorten(data, 90)}: {what}", fontsize=11)
    return figure
