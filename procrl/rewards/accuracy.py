"""Answer accuracy (docs/spec.md section 1): 1.0 when the completion's answer equals the gold one.
How a number is read (``####``, ``\\boxed``, ``answer is``, ...) and compared: :mod:`procrl.core.answers`;
an option letter or a yes/no (rows whose ``answer_kind`` is ``choice`` or ``yes_no``):
:mod:`procrl.core.choices`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from procrl.core.answers import answers_match, extract_boxed, extract_prediction, json_number, parse_gold, parse_number
from procrl.core.choices import gold_answer, predict
from procrl.core.config import ConfigError, field
from procrl.rewards.protocol import RewardBatch, RewardComponent, RewardOutput

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
        tolerance: float = field(
            1e-6,
            help="Absolute tolerance of the numeric comparison (>= 0; 0: equal exactly), compared in exact "
            "decimal arithmetic, so integers of any length compare exactly. A negative one is refused (it would match "
            "nothing, not even 7 = 7).",
        )

        def validate(self, path: str) -> None:
            if (
                not math.isfinite(self.tolerance) or self.tolerance < 0
            ):  # a negative one matches nothing, not even 7 = 7
                raise ConfigError(f"{path}.tolerance: must be a finite number >= 0, got {self.tolerance}")

    def score(self, batch: RewardBatch) -> RewardOutput:
        scores: list[float | None] = []
        details = []
        rules: dict[str, int] = {}
        for completion, gold_text, spec in zip(batch.completions, batch.golds, batch.answer_specs):
            predicted, rule = predict(completion, spec)
            gold = gold_answer(gold_text, spec)
            rules[rule] = rules.get(rule, 0) + 1
            if gold is None:
                scores.append(None)
            elif spec.kind == "number":
                scores.append(1.0 if answers_match(predicted, gold, self.settings.tolerance) else 0.0)
            else:  # an option label, or True/False for yes/no; "ambiguous" (two options named) reads as None
                scores.append(1.0 if predicted is not None and predicted == gold else 0.0)
            if spec.kind == "number":
                details.append({"predicted": json_number(predicted), "gold": json_number(gold), "rule": rule})
            else:
                details.append({"predicted": predicted, "gold": gold, "rule": rule, **_kind(spec)})
        n = max(len(batch), 1)
        metrics = {"no_answer_fraction": rules.get("none", 0) / n}
        if rules.get("ambiguous"):
            metrics["ambiguous_fraction"] = rules["ambiguous"] / n
        return RewardOutput(scores=scores, details=details, metrics=metrics)


def _kind(spec) -> dict:
    return {} if spec.kind == "number" else {"answer_kind": spec.kind}
