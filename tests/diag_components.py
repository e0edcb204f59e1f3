"""Deterministic stand-ins for model-backed components, for the diagnostics tests only.

They report exactly what the real TRACE / first-error / ReCEval components report (the shapes
procrl.diagnostics reads) but decide with simple text rules, so a training run on CPU exercises
the whole diagnostics path without a tagger, a judge or an NLI model.
"""

from __future__ import annotations

import re

from procrl.rewards.base import RewardBatch, RewardComponent, RewardOutput

LABELS = ["Claim", "Data/Evidence", "Warrant", "Backing", "Qualifier", "Rebuttal", "Monitoring", "Evaluation"]
EQUATION = re.compile(r"(-?\d+(?:\.\d+)?)\s*([+\-*/x])\s*(-?\d+(?:\.\d+)?)\s*=\s*(-?\d+(?:\.\d+)?)")


def rule_label(sentence: str) -> int:
    """Claim for conclusions, Data/Evidence for sentences with numbers, else Monitoring."""
    lowered = sentence.lower()
    if any(word in lowered for word in ("so ", "therefore", "answer", "total")):
        return 0
    if re.search(r"\d", sentence):
        return 1
    return 6


class RuleTrace(RewardComponent):
    """TRACE-shaped output: transition counts (8x8) over rule labels of the sentences."""

    def score(self, batch: RewardBatch) -> RewardOutput:
        counts = [[0] * 8 for _ in range(8)]
        scores = []
        for segmentation in batch.segmentations:
            labels = [rule_label(s.text) for s in segmentation.sentences]
            for previous, following in zip(labels, labels[1:]):
                counts[previous][following] += 1
            scores.append(sum(label != 6 for label in labels) / len(labels) if labels else 0.0)
        return RewardOutput(scores=scores, extras={"transition_counts": counts, "labels": list(LABELS)},
                            metrics={"state_validity": sum(scores) / max(len(scores), 1)})


def wrong_equation_step(steps: list[str]) -> int:
    """Index of the first step with a wrong ``a op b = c``; -1 when none."""
    for index, text in enumerate(steps):
        for a, op, b, c in EQUATION.findall(text):
            a, b, c = float(a), float(b), float(c)
            value = {"+": a + b, "-": a - b, "*": a * b, "x": a * b, "/": a / b if b else float("nan")}[op]
            if abs(value - c) > 1e-6:
                return index
    return -1


class RuleFirstError(RewardComponent):
    """First-error-shaped output from checking equations (position reward, dense -1 at k)."""

    def score(self, batch: RewardBatch) -> RewardOutput:
        scores, details, step_scores = [], [], []
        for segmentation in batch.segmentations:
            steps = [s.text for s in segmentation.steps]
            k = wrong_equation_step(steps)
            n = len(steps)
            scores.append(-(n - k) / n if k >= 0 else 0.0)
            details.append({"index": k, "num_steps": n, "category": None, "verdict": "rule"})
            step_scores.append([-1.0 if j == k else 0.0 for j in range(n)])
        return RewardOutput(scores=scores, details=details, step_scores=step_scores)
