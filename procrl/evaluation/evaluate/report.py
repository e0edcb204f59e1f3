"""The numbers of ``procrl evaluate``'s report.json (pure): accuracies with their standard errors, pass@k and
maj@k, component statistics, first-error, TRACE and ReCEval summaries, and the reward-hacking watch's behaviour."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from procrl.core.choices import NUMBER, gold_answer, predict
from procrl.core.text import segment_batch
from procrl.observe import stats as diag
from procrl.observe.eval_metrics import SampleOutcome, summarize
from procrl.observe.hacking import behaviour, process_totals
from procrl.rewards.protocol import RewardOutput

__all__ = ["ACCURACY_KEYS", "behaviour_summary", "build_report", "sample_outcomes"]


def _stats(values: list[float | None]) -> dict[str, Any]:
    present = [v for v in values if v is not None]
    if not present:
        return {"mean": None, "std": None, "min": None, "max": None, "n_scored": 0, "none": len(values)}
    mean = sum(present) / len(present)
    std = math.sqrt(sum((v - mean) ** 2 for v in present) / len(present))
    return {
        "mean": mean,
        "std": std,
        "min": min(present),
        "max": max(present),
        "n_scored": len(present),
        "none": len(values) - len(present),
    }


ACCURACY_KEYS = ("answer_accuracy", "reasoning_aware_accuracy", "inflation", "process_error_rate")


def sample_outcomes(
    accuracy_scores: list[float | None],
    records: list | None,
    completions: list[str],
    num_samples: int = 1,
    specs: list | None = None,
) -> list[SampleOutcome]:
    """Per completion: its problem (completions grouped by problem, ``num_samples`` each), answer
    right or not, the judge's verdict and the predicted answer (for majority voting: a number, an
    option label, yes/no as a bool; ``specs``: each completion's answer spec)."""

    return [
        SampleOutcome(
            problem=i // num_samples,
            correct=None if score is None else score >= 1.0,
            verdict=records[i].index if records is not None else None,
            answer=predict(completions[i], specs[i] if specs else NUMBER)[0],
        )
        for i, score in enumerate(accuracy_scores)
    ]


def build_report(
    outputs: dict[str, RewardOutput],
    types: dict[str, str],
    weights: dict[str, float],
    accuracy_scores: list[float | None],
    accuracy_source: str,
    completions: list[str] | None = None,
    golds: list[str] | None = None,
    num_samples: int = 1,
    judge: str | None = None,
    specs: list | None = None,
) -> dict[str, Any]:
    """The numbers of ``report.json`` from the merged outputs of every component: completions are
    grouped by problem, ``num_samples`` each; ``golds`` (one per problem) enable maj@k; ``judge``:
    the first-error component deciding reasoning-aware accuracy (default: the first); ``specs``:
    each problem's answer spec (:mod:`procrl.core.choices`; default: numbers)."""

    kinds = diag.component_kinds(types, outputs)
    judge = diag.evaluation_judge(kinds, judge)
    records = diag.first_error_records(outputs[judge]) if judge is not None else None
    correct = [None if s is None else s >= 1.0 for s in accuracy_scores]
    stats = diag.process_error_stats(correct, records)
    problem_specs = specs or [NUMBER] * (len(golds) if golds is not None else 0)
    sample_specs = [spec for spec in problem_specs for _ in range(num_samples)] if specs else None
    outcomes = sample_outcomes(
        accuracy_scores, records, completions or [""] * len(accuracy_scores), num_samples, sample_specs
    )
    summary = summarize(
        outcomes,
        judged=judge is not None,
        golds=[gold_answer(g, spec) for g, spec in zip(golds, problem_specs)]
        if golds is not None and completions is not None
        else None,
    )
    notes = []
    if judge is None:
        notes.append("no first_error component in the recipe: reasoning-aware accuracies and inflation are null")
    elif len([n for n, k in kinds.items() if k == diag.FIRST_ERROR]) > 1:
        notes.append(f"several first-error components; reasoning-aware accuracy uses {judge!r}")
    if judge is not None and weights.get(judge):
        notes.append(
            f"the evaluation judge {judge!r} is in the trained mix (weight {weights[judge]:g}): a policy trained "
            "on it is graded by it; name another with data.eval_judge or --judge"
        )
    report: dict[str, Any] = {
        "n": summary["problems"],
        "num_samples": num_samples,
        "completions": summary["completions"],
    }
    for key in ACCURACY_KEYS:
        report[key] = summary.get(key)
        report[f"{key}_stderr"] = summary.get(f"{key}_stderr")
    report["sampled"] = {k: v for k, v in summary.items() if "@" in k}  # pass@k, maj@k and their errors
    report.update(
        {
            "accuracy_source": accuracy_source,
            "first_error_component": judge,
            "evaluation_judge": None
            if judge is None
            else {
                "component": judge,
                "type": types.get(judge),
                "weight": weights.get(judge),
                "trained_on": bool(weights.get(judge)),
            },
            "first_error_unjudged": None
            if stats["first_error_unjudged"] is None
            else int(stats["first_error_unjudged"]),
            "components": {},
            "correlations": diag.component_correlations({k: o.scores for k, o in outputs.items()}),
            "notes": notes,
        }
    )
    for name, output in outputs.items():
        report["components"][name] = {
            "type": types.get(name),
            "weight": weights.get(name),
            **_stats(output.scores),
            "metrics": dict(output.metrics),
            "failures": dict(output.failures),
            "seconds": output.seconds,
        }
    totals = [
        sum(weights[k] * o.scores[i] for k, o in outputs.items() if o.scores[i] is not None)
        if any(o.scores[i] is not None for o in outputs.values())
        else None
        for i in range(len(accuracy_scores))
    ]
    report["reward"] = _stats(totals)
    if records is not None:
        found = [r for r in records if r.index is not None and r.index >= 0]
        top = max([r.index for r in found], default=-1)
        edges = [i / diag.RELATIVE_BINS for i in range(diag.RELATIVE_BINS + 1)]
        report["first_error"] = {
            **diag.first_error_scalars(records),
            "index_histogram": diag.histogram([r.index for r in found], [i - 0.5 for i in range(top + 2)]),
            "relative_histogram": diag.histogram([diag.relative_position(r.index, r.num_steps) for r in found], edges),
            "relative_bin_edges": edges,
        }
        categories = diag.category_counts(records)
        if categories is not None:  # ReTraceQA's error categories: every error found, and those behind a right answer
            report["first_error"]["categories"] = {
                "all": categories,
                "right_answer": diag.category_counts(records, correct),
            }
    for name, kind in kinds.items():
        if kind == diag.TRACE:
            output = outputs[name]
            scored = sorted(v for v in output.scores if v is not None)
            report.setdefault("trace", {})[name] = {
                # TRACE's distribution over the completions: a constant score moves no GRPO advantage
                "score_histogram": diag.histogram(scored, TRACE_BIN_EDGES),
                "score_bin_edges": TRACE_BIN_EDGES,
                "score_quartiles": np.quantile(scored, [0.0, 0.25, 0.5, 0.75, 1.0]).tolist() if scored else None,
                "state_validity": output.metrics.get("state_validity"),
                "transition_coherence": output.metrics.get("transition_coherence"),
                "element_share": {
                    k.split("/", 1)[1]: v for k, v in output.metrics.items() if k.startswith("element_share/")
                },
                "labels": output.extras.get("labels") or diag.TRACE_LABELS,
                "transition_counts": output.extras.get("transition_counts"),
            }
        elif kind == diag.RECEVAL:
            report.setdefault("receval", {})[name] = {
                **diag.receval_stats(outputs[name]),
                "step_value_by_position": diag.receval_position_profile(outputs[name]),
            }
    return report


TRACE_BIN_EDGES = [round(i / 10, 1) for i in range(11)]


def behaviour_summary(
    outputs: dict[str, RewardOutput],
    weights: dict[str, float],
    types: dict[str, str],
    completions: list[str],
    accuracy: list[float | None],
    records: list | None,
) -> dict[str, float | None]:
    """What the reward-hacking watch compares (``procrl/observe/hacking.py``): mean steps per completion
    (the first-error judge's count, else procrl's step segmentation), mean length in characters,
    mean process reward (weighted components other than accuracy and format) and accuracy."""

    if records is not None:
        num_steps = [r.num_steps for r in records]
    else:
        num_steps = [len(s.steps) for s in segment_batch(completions)]
    totals = process_totals({n: o.scores for n, o in outputs.items()}, types, weights)
    summary = behaviour(completions, num_steps, totals, accuracy)
    return {
        "mean_steps": summary.steps,
        "mean_length": summary.length,
        "process_reward": summary.process_reward,
        "accuracy": summary.accuracy,
    }
