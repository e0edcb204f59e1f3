"""Format reward: 1.0 when the completion ends with a parseable answer line, else 0.0.

An answer line is the last non-empty line holding ``#### N``, ``The answer is N``, ``Answer:
N``, ``\\boxed{N}`` (``\\[`` / ``\\]`` lines around it included) or a bold number alone (the
same detection that strips the answer block from the reasoning; answer lines in a row at the
end, such as a chat model's repeated ``#### 48``, are one block), and the number in it must
parse (``accuracy``'s rules, first ``####`` first). An answer block of more than
:data:`MAX_ANSWER_STATEMENTS` answer lines is not the format: a model that loops on its answer
line until the token limit (SmolLM2-135M-Instruct's ``#### 4 = 4`` thirty times, or ``The
answer is 3.`` repeated) has not ended its answer, so it is not paid for one; one statement, or
two in different notations (``The answer is 18.`` then ``#### 18``), is.

A row whose answers are options or yes/no (``answer_kind`` ``choice`` / ``yes_no``,
:mod:`procrl.core.choices`) has its answer block found and read under its kind: ``The answer is
(B)``, ``**B**``, ``(B) reading``, ``Yes.``; a block naming two options states no answer.

``partial: true`` adds graded credit for completions that are not there yet (0.5 for an
answer marker such as ``####`` without a parseable number after it, 0.25 for a number on the
last line): a shaping signal that gives an untrained model a gradient; 1.0 stays reserved for
a proper answer line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from procrl.core.answers import extract_prediction
from procrl.core.choices import NUMBER, AnswerSpec, answer_block_start, predict
from procrl.core.config import field
from procrl.core.text import DISPLAY_DELIMITERS, answer_line_start
from procrl.rewards.protocol import RewardBatch, RewardComponent, RewardOutput

__all__ = ["MAX_ANSWER_STATEMENTS", "FormatReward", "answer_statements", "has_answer_line", "partial_format_score"]

MAX_ANSWER_STATEMENTS = 2


def answer_statements(completion: str, start: int) -> int:
    """How many answer statements end ``completion`` (its answer block begins at ``start``): the
    block's lines (``\\[`` / ``\\]`` / ``$$`` lines do not count), or, when the last statement is
    repeated more often in the completion (``The answer is 3. The answer is 3. ...`` on one
    line), that count."""
    lines = [
        line.strip()
        for line in completion[start:].splitlines()
        if line.strip() and not DISPLAY_DELIMITERS.fullmatch(line)
    ]
    if not lines:
        return 0
    return max(len(lines), completion.count(lines[-1]))


def has_answer_line(completion: str, require_reasoning: bool = False, spec: AnswerSpec = NUMBER) -> bool:
    """Whether ``completion`` ends with an answer block that states an answer of the row's kind
    (a number, one option, yes/no)."""
    if not isinstance(completion, str):
        return False
    start = answer_line_start(completion) if spec.kind == "number" else answer_block_start(completion, spec)
    if start is None:
        return False
    if answer_statements(completion, start) > MAX_ANSWER_STATEMENTS:
        return False  # looping on the answer line
    predicted, rule = (
        extract_prediction(completion[start:]) if spec.kind == "number" else predict(completion[start:], spec)
    )
    if predicted is None or rule == "last_number":
        return False
    return not require_reasoning or bool(completion[:start].strip())


_MARKER = re.compile(r"####|\\boxed|answer is|answer\s*:", re.IGNORECASE)
_DIGIT = re.compile(r"\d")


def partial_format_score(completion: str, require_reasoning: bool = False, spec: AnswerSpec = NUMBER) -> float:
    if has_answer_line(completion, require_reasoning, spec):
        return 1.0
    if not isinstance(completion, str):
        return 0.0
    if _MARKER.search(completion):
        return 0.5
    lines = completion.strip().splitlines()
    return 0.25 if lines and _DIGIT.search(lines[-1]) else 0.0


class FormatReward(RewardComponent):
    grades = "form"
    score_range = (0.0, 1.0)

    @dataclass
    class Settings:
        require_reasoning: bool = field(False, help="Also require some reasoning before the answer line.")
        partial: bool = field(False, help="Graded credit (0.5 answer marker, 0.25 number on the last line).")

    def score(self, batch: RewardBatch) -> RewardOutput:
        if self.settings.partial:
            scores = [
                partial_format_score(c, self.settings.require_reasoning, spec)
                for c, spec in zip(batch.completions, batch.answer_specs)
            ]
        else:
            scores = [
                1.0 if has_answer_line(c, self.settings.require_reasoning, spec) else 0.0
                for c, spec in zip(batch.completions, batch.answer_specs)
            ]
        return RewardOutput(scores=scores)
