"""The numbers of ``procrl validate`` (pure functions: lists in, numbers out).

* :func:`auroc`: the probability that a sound solution scores higher than a flawed one, ties
  counted half (the Mann-Whitney U statistic over n_sound x n_flawed; the area under the ROC
  curve of :func:`roc_points`, whose tied scores make a diagonal segment).
  :func:`bootstrap_auroc`: its percentile interval over resamples drawn with replacement within
  each class (stratified, so every resample has both classes), from a seeded generator: the same
  call gives the same interval.
* :func:`processbench_metrics`: ProcessBench's acc_err (share of flawed samples whose first
  wrong step is found exactly), acc_cor (share of sound samples called error-free) and their
  harmonic mean F1; a sample without a verdict (None) counts as wrong in both.
  :func:`localisation_breakdown`: where the verdicts on flawed samples fall: exact, early, late
  (each with its distance in steps), none (no error found) or no verdict.
* :func:`map_label`: a first-error label given on the data's steps, moved onto procrl's steps
  by character offsets into the one text both segment: the first procrl step that overlaps the
  labelled data step. :func:`boundary_agreement`: how far the two segmentations agree.
* :func:`first_below` (a peer's localisation) is the PRM judge's own rule.

Simplified on purpose: plain percentile bootstrap intervals (no BCa correction), no DeLong test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from procrl.rewards.judges.prm import first_below as prm_first_below

__all__ = [
    "auroc",
    "bootstrap_auroc",
    "boundary_agreement",
    "first_below",
    "localisation_breakdown",
    "map_label",
    "processbench_metrics",
    "roc_points",
    "step_spans",
    "sweep_thresholds",
]

SWEEP = [round(0.05 * i, 2) for i in range(1, 20)]

BOOTSTRAP_RESAMPLES = 1000


def first_below(probabilities: list[float], threshold: float) -> int:
    """The PRM judge's rule (:func:`procrl.rewards.judges.prm.first_below`)."""

    return prm_first_below(probabilities, threshold)


def _codes(positive: Sequence[float], negative: Sequence[float]):
    """Both samples as integer ranks of their distinct values (equal scores, equal code)."""
    values = np.asarray(list(positive) + list(negative), dtype=float)
    distinct, codes = np.unique(values, return_inverse=True)
    return codes[: len(positive)], codes[len(positive) :], len(distinct)


def _auroc_rows(positive, negative, size: int):
    """AUROC of each row of ``positive`` (B x P codes) against the same row of ``negative``
    (B x N codes): rows are shifted to disjoint code ranges, so one sort and two searches count,
    for every positive, the negatives below it and equal to it in its own row."""
    rows, p = positive.shape
    n = negative.shape[1]
    offset = (np.arange(rows, dtype=np.int64) * size)[:, None]
    flat_negative = np.sort((negative + offset).ravel())
    flat_positive = (positive + offset).ravel()
    before = np.repeat(np.arange(rows, dtype=np.int64) * n, p)
    below = np.searchsorted(flat_negative, flat_positive, side="left") - before
    not_above = np.searchsorted(flat_negative, flat_positive, side="right") - before
    wins = (below + 0.5 * (not_above - below)).reshape(rows, p).sum(axis=1)
    return wins / (p * n)


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """P(a positive scores above a negative) + 0.5 P(tie); NaN when a class is empty."""
    if not positive or not negative:
        return math.nan
    pos, neg, size = _codes(positive, negative)
    return float(_auroc_rows(pos[None, :], neg[None, :], size)[0])


def bootstrap_auroc(
    positive: Sequence[float],
    negative: Sequence[float],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of :func:`auroc` over stratified resamples (NaN, NaN when a class is
    empty)."""
    if not positive or not negative:
        return math.nan, math.nan
    pos, neg, size = _codes(positive, negative)
    generator = np.random.default_rng(seed)
    values = []
    for start in range(0, resamples, 250):  # bounded memory for large samples
        rows = min(250, resamples - start)
        pick_pos = pos[generator.integers(0, len(pos), size=(rows, len(pos)))]
        pick_neg = neg[generator.integers(0, len(neg), size=(rows, len(neg)))]
        values.append(_auroc_rows(pick_pos, pick_neg, size))
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(np.concatenate(values), [tail, 100 - tail])
    return float(low), float(high)


def roc_points(positive: Sequence[float], negative: Sequence[float]) -> tuple[list[float], list[float]]:
    """(false positive rates, true positive rates) from (0, 0) to (1, 1), one point per distinct
    score, highest first (a positive is predicted when its score is >= the threshold)."""
    if not positive or not negative:
        return [], []
    thresholds = sorted(set(positive) | set(negative), reverse=True)
    pos, neg = sorted(positive), sorted(negative)
    fpr, tpr = [0.0], [0.0]
    for threshold in thresholds:
        tpr.append(sum(1 for v in pos if v >= threshold) / len(pos))
        fpr.append(sum(1 for v in neg if v >= threshold) / len(neg))
    return fpr, tpr


def _bucket(label: int) -> str:
    return str(label) if label < 4 else "4+"


def processbench_metrics(labels: list[int], predictions: list[int | None]) -> dict[str, Any]:
    """acc_err, acc_cor, f1 (fractions), counts, and a confusion summary by error position.
    ``labels[i]``: the first wrong step (-1: none); ``predictions[i]``: the judge's (None: no
    verdict, wrong either way)."""
    if len(labels) != len(predictions):
        raise ValueError("labels and predictions differ in length")
    errors = [(label, p) for label, p in zip(labels, predictions) if label != -1]
    corrects = [p for label, p in zip(labels, predictions) if label == -1]
    acc_err = sum(p == label for label, p in errors) / len(errors) if errors else math.nan
    acc_cor = sum(p == -1 for p in corrects) / len(corrects) if corrects else math.nan
    if errors and corrects:
        f1 = 2 * acc_err * acc_cor / (acc_err + acc_cor) if acc_err + acc_cor > 0 else 0.0
    else:
        f1 = math.nan
    by_position: dict[str, dict[str, int]] = {}
    for label, prediction in errors:
        row = by_position.setdefault(
            _bucket(label), {"n": 0, "exact": 0, "early": 0, "late": 0, "missed": 0, "no_verdict": 0}
        )
        row["n"] += 1
        if prediction is None:
            row["no_verdict"] += 1
        elif prediction == label:
            row["exact"] += 1
        elif prediction == -1:
            row["missed"] += 1
        elif prediction < label:
            row["early"] += 1
        else:
            row["late"] += 1
    correct_row = {
        "n": len(corrects),
        "correct": sum(p == -1 for p in corrects),
        "false_alarm": sum(p is not None and p >= 0 for p in corrects),
        "no_verdict": sum(p is None for p in corrects),
    }
    return {
        "n": len(labels),
        "n_error": len(errors),
        "n_correct": len(corrects),
        "acc_err": acc_err,
        "acc_cor": acc_cor,
        "f1": f1,
        "no_verdict": sum(p is None for p in predictions),
        "confusion": {"error_by_label": dict(sorted(by_position.items())), "all_correct": correct_row},
        "breakdown": localisation_breakdown(labels, predictions),
    }


def _distance(steps: int) -> str:
    return str(steps) if steps < 3 else "3+"


def localisation_breakdown(labels: list[int], predictions: list[int | None]) -> dict[str, Any]:
    """Counts over the flawed samples (label >= 0): ``exact`` (the labelled step), ``early`` and
    ``late`` (another step before or after it; ``early_by`` / ``late_by``: how many steps away,
    1, 2 or 3+), ``none`` (no error found: -1) and ``no_verdict`` (None)."""
    out: dict[str, Any] = {
        "n": 0,
        "exact": 0,
        "early": 0,
        "late": 0,
        "none": 0,
        "no_verdict": 0,
        "early_by": {"1": 0, "2": 0, "3+": 0},
        "late_by": {"1": 0, "2": 0, "3+": 0},
    }
    for label, prediction in zip(labels, predictions):
        if label < 0:
            continue
        out["n"] += 1
        if prediction is None:
            out["no_verdict"] += 1
        elif prediction == -1:
            out["none"] += 1
        elif prediction == label:
            out["exact"] += 1
        elif prediction < label:
            out["early"] += 1
            out["early_by"][_distance(label - prediction)] += 1
        else:
            out["late"] += 1
            out["late_by"][_distance(prediction - label)] += 1
    return out


def sweep_thresholds(labels: list[int], probabilities: list[list[float] | None], thresholds=SWEEP) -> dict[str, Any]:
    """F1 of a PRM at each threshold (k = first step below it) and the F1-best threshold."""
    rows = []
    for threshold in thresholds:
        predictions = [None if p is None else first_below(p, threshold) for p in probabilities]
        metrics = processbench_metrics(labels, predictions)
        rows.append(
            {"threshold": threshold, "f1": metrics["f1"], "acc_err": metrics["acc_err"], "acc_cor": metrics["acc_cor"]}
        )
    finite = [r for r in rows if not math.isnan(r["f1"])]
    best = max(finite, key=lambda r: r["f1"]) if finite else None
    return {"thresholds": rows, "best": best}


# --- the data's steps and procrl's -----------------------------------------------------------


def step_spans(
    steps: Sequence[str], separator: str, prefixes: Sequence[str] | None = None
) -> tuple[str, list[tuple[int, int]]]:
    """The steps joined into one text (``prefixes[i]`` written before step i, e.g. the
    ``Thought 3: `` a model wrote) and each step's span in it: from its first to its last
    non-space character (prefix included), ``end`` exclusive."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    position = 0
    for i, step in enumerate(steps):
        piece = (prefixes[i] if prefixes else "") + step
        if i:
            parts.append(separator)
            position += len(separator)
        left = len(piece) - len(piece.lstrip())
        right = len(piece.rstrip())
        start = position + left
        spans.append((start, max(start, position + right)))
        parts.append(piece)
        position += len(piece)
    return "".join(parts), spans


def map_label(
    label: int | None, data_spans: Sequence[tuple[int, int]], procrl_spans: Sequence[tuple[int, int]]
) -> int | None:
    """A first-error label on the data's steps as an index of procrl's steps: -1 stays -1; step
    k becomes the first procrl step overlapping data step k's span (procrl may have split it,
    or merged it with its neighbours). None when the label is None or no procrl step overlaps
    it (e.g. it lies in the trailing answer line, which procrl does not count as a step)."""
    if label is None:
        return None
    if label == -1:
        return -1
    if not 0 <= label < len(data_spans):
        raise ValueError(f"label {label} outside the {len(data_spans)} data steps")
    start, end = data_spans[label]
    for index, (a, b) in enumerate(procrl_spans):
        if a < end and start < b:
            return index
    return None


def boundary_agreement(
    data_spans: Sequence[tuple[int, int]], procrl_spans: Sequence[tuple[int, int]], reasoning_end: int
) -> dict[str, int | bool]:
    """Step boundaries (where a step other than the first starts) of the data and of procrl,
    within procrl's reasoning (before ``reasoning_end``: the trailing answer line is no step to
    procrl by design): how many each has, how many coincide, and whether the sets are equal."""
    data = {a for a, _ in data_spans[1:] if a < reasoning_end}
    ours = {a for a, _ in procrl_spans[1:]}
    return {"data": len(data), "procrl": len(ours), "matched": len(data & ours), "identical": data == ours}
