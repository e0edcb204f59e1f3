"""Scoring ``procrl evaluate``'s completions: the recipe's mix in batches, the batches' outputs merged into one
per component, and the per-sample answer accuracy (pure but for the components' own models)."""

from __future__ import annotations

import math
from typing import Any

from procrl.observe import stats as diag
from procrl.rewards.accuracy import AccuracyReward
from procrl.rewards.mix import RewardMix
from procrl.rewards.protocol import RewardBatch, RewardOutput

__all__ = ["accuracy_scores", "aggregate_outputs", "score_completions"]


def aggregate_outputs(chunks: list[dict[str, RewardOutput]]) -> dict[str, RewardOutput]:
    """One output per component over several scored batches: per-sample lists concatenated,
    transition counts summed, batch metrics averaged weighted by batch size."""
    merged: dict[str, RewardOutput] = {}
    for name in chunks[0] if chunks else []:
        parts = [chunk[name] for chunk in chunks]
        sizes = [len(p.scores) for p in parts]
        scores = [s for p in parts for s in p.scores]
        details = None
        if any(p.details is not None for p in parts):
            details = [d for p, n in zip(parts, sizes) for d in (p.details if p.details is not None else [None] * n)]
        step_scores = None
        if any(p.step_scores is not None for p in parts):
            step_scores = [
                s for p, n in zip(parts, sizes) for s in (p.step_scores if p.step_scores is not None else [None] * n)
            ]
        metrics: dict[str, float] = {}
        for key in dict.fromkeys(k for p in parts for k in p.metrics):  # first-seen order: the same every run
            weighted = [
                (p.metrics[key], n)
                for p, n in zip(parts, sizes)
                if key in p.metrics and p.metrics[key] is not None and math.isfinite(p.metrics[key])
            ]
            if weighted:
                metrics[key] = sum(v * n for v, n in weighted) / sum(n for _, n in weighted)
        failures: dict[str, int] = {}
        for p in parts:
            for kind, count in p.failures.items():
                failures[kind] = failures.get(kind, 0) + count
        extras: dict[str, Any] = {}
        total = None
        for p in parts:
            matrix = diag.transition_counts(p) if "transition_counts" in p.extras else None
            if matrix is not None:
                total = diag.add_matrices(total, matrix)
                extras["labels"] = p.extras.get("labels")
        if total is not None:
            extras["transition_counts"] = total
        merged[name] = RewardOutput(
            scores=scores,
            step_scores=step_scores,
            metrics=metrics,
            details=details,
            failures=failures,
            extras=extras,
            seconds=sum(p.seconds for p in parts),
        )
    return merged


def score_completions(
    mix: RewardMix, questions, completions, golds, batch_size: int = 64, columns: dict[str, list] | None = None
):
    """Score with the mix in batches; returns the merged outputs. ``columns``: more per-sample
    columns the rewards read (``answer_kind``, ``choices``)."""
    chunks = []
    for start in range(0, len(completions), batch_size):
        part = {key: values[start : start + batch_size] for key, values in (columns or {}).items()}
        batch = RewardBatch.from_texts(
            completions[start : start + batch_size],
            questions[start : start + batch_size],
            golds[start : start + batch_size],
            **part,
        )
        chunks.append(mix.score_all(batch))
    return aggregate_outputs(chunks)


def accuracy_scores(outputs, types, questions, completions, golds, columns=None) -> tuple[list[float | None], str]:
    kinds = diag.component_kinds(types, outputs)
    name = next((n for n, k in kinds.items() if k == diag.ACCURACY), None)
    if name is not None:
        return outputs[name].scores, f"component {name!r}"

    component = AccuracyReward(AccuracyReward.Settings(), name="accuracy")
    batch = RewardBatch.from_texts(completions, questions, golds, **(columns or {}))
    return component.score(batch).scores, "accuracy (default settings; not in the recipe)"
