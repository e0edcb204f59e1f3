"""Answer accuracy (docs/spec.md section 1): 1.0 when the completion's answer equals the gold one.
How the answer is read (``####``, ``\\boxed``, ``answer is``, ...) and compared: :mod:`procrl.core.answers`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from procrl.core.answers import (answers_match, extract_boxed, extract_prediction, json_number, parse_gold,
                                 parse_number)
from procrl.core.config import ConfigError, field
from procrl.rewards.base import RewardBatch, RewardComponent, RewardOutput

__all__ = [
    "AccuracyReward",
    "answers_match",
    "extract_boxed",
    "extract_prediction",
    "parse_gold",
    "parse_number",
]


class AccuracyReward(RewardComponent):
    """1.0 when the extracted answer equals the gold answer, else 0.0; None without a gold."""

    grades = "answer"
    score_range = (0.0, 1.0)
    diagnostics = ("accuracy",)

    @dataclass
    class Settings:
        tolerance: float = field(1e-6, help="Absolute tolerance of the numeric comparison (>= 0; 0: equal exactly).")

        def validate(self, path: str) -> None:
            if not math.isfinite(self.tolerance) or self.tolerance < 0:  # a negative one matches nothing, not even 7 = 7
                raise ConfigError(f"{path}.tolerance: must be a finite number >= 0, got {self.tolerance}")

    def score(self, batch: RewardBatch) -> RewardOutput:
        scores: list[float | None] = []
        details = []
        rules: dict[str, int] = {}
        for completion, gold_text in zip(batch.completions, batch.golds):
            predicted, rule = extract_prediction(completion)
            gold = parse_gold(gold_text)
            rules[rule] = rules.get(rule, 0) + 1
            if gold is None:
                scores.append(None)
            else:
                scores.append(1.0 if answers_match(predicted, gold, self.settings.tolerance) else 0.0)
            details.append({"predicted": json_number(predicted), "gold": json_number(gold), "rule": rule})
        n = max(len(batch), 1)
        metrics = {"no_answer_fraction": rules.get("none", 0) / n}
        return RewardOutput(scores=scores, details=details, metrics=metrics)
