"""Format reward: 1.0 when the completion ends with a parseable answer line, else 0.0.

An answer line is the last non-empty line holding ``#### N``, ``The answer is N``, ``Answer:
N``, ``\\boxed{N}`` (``\\[`` / ``\\]`` lines around it included) or a bold number alone (the
same detection that strips the answer block from the reasoning; answer lines in a row at the
end, such as a chat model's repeated ``#### 48``, are one block), and the number in it must
parse (``accuracy``'s rules, first ``####`` first).

``partial: true`` adds graded credit for completions that are not there yet (0.5 for an
answer marker such as ``####`` without a parseable number after it, 0.25 for a number on the
last line): a shaping signal that gives an untrained model a gradient; 1.0 stays reserved for
a proper answer line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from procrl.config import field
from procrl.rewards.accuracy import extract_prediction
from procrl.rewards.base import RewardBatch, RewardComponent, RewardOutput
from procrl.text import answer_line_start

__all__ = ["FormatReward", "has_answer_line", "partial_format_score"]


def has_answer_line(completion: str, require_reasoning: bool = False) -> bool:
    if not isinstance(completion, str):
        return False
    start = answer_line_start(completion)
    if start is None:
        return False
    predicted, rule = extract_prediction(completion[start:])
    if predicted is None or rule == "last_number":
        return False
    return not require_reasoning or bool(completion[:start].strip())


_MARKER = re.compile(r"####|\\boxed|answer is|answer\s*:", re.IGNORECASE)
_DIGIT = re.compile(r"\d")


def partial_format_score(completion: str, require_reasoning: bool = False) -> float:
    if has_answer_line(completion, require_reasoning):
        return 1.0
    if not isinstance(completion, str):
        return 0.0
    if _MARKER.search(completion):
        return 0.5
    lines = completion.strip().splitlines()
    return 0.25 if lines and _DIGIT.search(lines[-1]) else 0.0


class FormatReward(RewardComponent):
    @dataclass
    class Settings:
        require_reasoning: bool = field(False, help="Also require some reasoning before the answer line.")
        partial: bool = field(False, help="Graded credit (0.5 answer marker, 0.25 number on the last line).")

    def score(self, batch: RewardBatch) -> RewardOutput:
        if self.settings.partial:
            scores = [partial_format_score(c, self.settings.require_reasoning) for c in batch.completions]
        else:
            scores = [1.0 if has_answer_line(c, self.settings.require_reasoning) else 0.0 for c in batch.completions]
        return RewardOutput(scores=scores)
