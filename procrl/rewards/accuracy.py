"""Answer accuracy (REWARDS.md section 1): 1.0 when the completion's answer equals the gold one.

Prediction, first rule that matches wins: ``#### N``; the last ``\\boxed{...}``; ``answer is N``;
the last number in the completion. Numbers are normalised (``,`` ``$`` ``%`` and units dropped,
``72.0 == 72``, fractions, negatives) and compared with tolerance 1e-6; LaTeX that the plain
parser cannot read (``\\frac{3}{4}``, ``\\sqrt{2}``) goes through math-verify.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from fractions import Fraction

from procrl.config import field
from procrl.rewards.base import RewardBatch, RewardComponent, RewardOutput

__all__ = [
    "AccuracyReward",
    "answers_match",
    "extract_boxed",
    "extract_prediction",
    "parse_gold",
    "parse_number",
]

_NUMBER = re.compile(
    r"(?<![\w.])[-−]?\s?\$?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s?/\s?\d+(?:\.\d+)?)?(?![\d])"
    r"|(?<![\w.])[-−]?\.\d+"
)
_HASHES = re.compile(r"####\s*([^\n]*)")
_ANSWER_IS = re.compile(r"answer\s*(?:is|:|=)\s*:?\s*([^\n]*)", re.IGNORECASE)
_LATEX_FRAC = re.compile(r"^\\[dt]?frac\s*\{\s*(-?[\d.]+)\s*\}\s*\{\s*(-?[\d.]+)\s*\}$")


_BOX_GAP = frozenset("\\boxedfx ")  # what may stand between \boxed / \fbox and its brace


def extract_boxed(text: str) -> str | None:
    """Content of the last balanced ``\\boxed{...}`` (or ``\\fbox{...}``); None if there is none.
    Linear in the length of ``text`` (one pass matches every brace), also for thousands of
    unbalanced boxes."""
    position = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if position < 0:
        return None
    brace = text.find("{", position)
    if brace >= 0 and text[position:brace].strip("\\boxedfx ") == "":  # the usual case: the last box is balanced
        depth = 0
        for i in range(brace, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    return text[brace + 1 : i]
    closing: dict[int, int] = {}
    stack: list[int] = []
    for index, char in enumerate(text):
        if char == "{":
            stack.append(index)
        elif char == "}" and stack:
            closing[stack.pop()] = index
    gap_end = [0] * (len(text) + 1)  # gap_end[i]: first index >= i holding a character outside _BOX_GAP
    gap_end[len(text)] = len(text)
    for index in range(len(text) - 1, -1, -1):
        gap_end[index] = gap_end[index + 1] if text[index] in _BOX_GAP else index
    while position >= 0:
        brace = gap_end[position]
        if brace < len(text) and text[brace] == "{" and brace in closing:
            return text[brace + 1 : closing[brace]]
        # no brace right after it, or unbalanced: try an earlier box
        position = max(text.rfind("\\boxed", 0, position), text.rfind("\\fbox", 0, position))
    return None


def _number_value(token: str) -> float | None:
    token = token.replace("−", "-").replace("$", "").replace(",", "").replace(" ", "")
    try:
        if "/" in token:
            numerator, denominator = token.split("/", 1)
            value = Fraction(numerator) / Fraction(denominator)
            return float(value)
        return float(token)
    except (ValueError, ZeroDivisionError, ArithmeticError):
        return None


def _latex_value(text: str) -> float | None:
    """Numeric value of a LaTeX expression through math-verify (thread-safe: no signal timeout)."""
    if len(text) > 200:  # math-verify runs without a timeout off the main thread: bound the input
        return None
    try:
        from math_verify import parse

        logging.getLogger("math_verify").setLevel(logging.ERROR)  # silence its per-call timeout warning
        parsed = parse(f"${text}$", parsing_timeout=None)
    except Exception:
        return None
    for candidate in parsed:
        try:
            value = float(candidate)
        except (TypeError, ValueError):
            continue
        if math.isfinite(value):
            return value
    return None


def parse_number(text: str | None) -> float | None:
    """The first number in ``text`` after normalisation, or None.

    ``"$1,000.50"`` -> 1000.5, ``"-3"`` -> -3, ``"3/4"`` -> 0.75, ``"72.0 dollars"`` -> 72,
    ``"\\frac{3}{4}"`` -> 0.75, ``"50%"`` -> 50.
    """
    if text is None:
        return None
    text = str(text).strip()
    if not text:
        return None
    cleaned = text.replace("\\$", "$").replace("\\%", "%").replace("\\!", "").replace("{,}", ",")
    cleaned = cleaned.replace("\\,", "").replace("\\text{", "{")
    frac = _LATEX_FRAC.match(cleaned.strip().lstrip("-").strip())
    if frac:
        value = _number_value(f"{frac.group(1)}/{frac.group(2)}")
        if value is not None:
            return -value if cleaned.strip().startswith("-") else value
    if "\\" in cleaned:
        value = _latex_value(cleaned)
        if value is not None:
            return value
    match = _NUMBER.search(cleaned)
    if match:
        return _number_value(match.group(0))
    return None


def _last_number(text: str) -> float | None:
    matches = list(_NUMBER.finditer(text))
    return _number_value(matches[-1].group(0)) if matches else None


def extract_prediction(completion: str) -> tuple[float | None, str]:
    """The predicted number and the rule that found it (``none`` when nothing was found)."""
    if not isinstance(completion, str) or not completion.strip():
        return None, "none"
    rules = (
        ("hashes", lambda: (_HASHES.findall(completion) or [None])[-1]),
        ("boxed", lambda: extract_boxed(completion)),
        ("answer_is", lambda: (_ANSWER_IS.findall(completion) or [None])[-1]),
    )
    for rule, find in rules:  # first rule whose text parses wins
        value = parse_number(find())
        if value is not None:
            return value, rule
    value = _last_number(completion)
    if value is not None:
        return value, "last_number"
    return None, "none"


def parse_gold(answer: str | float | int | None) -> float | None:
    """Gold number from a GSM8K answer (text after ``#### ``) or a bare number."""
    if answer is None:
        return None
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        return float(answer) if math.isfinite(answer) else None
    text = str(answer)
    hashes = _HASHES.findall(text)
    if hashes:
        return parse_number(hashes[-1])
    return parse_number(text)


def answers_match(predicted: float | None, gold: float | None, tolerance: float = 1e-6) -> bool:
    """Equal within an absolute ``tolerance`` (REWARDS.md: 1e-6), with no relative slack (a
    relative 1e-9 let 1234567891 match 1234567890); two integers compare exactly."""
    if predicted is None or gold is None:
        return False
    if float(predicted).is_integer() and float(gold).is_integer():
        return abs(int(predicted) - int(gold)) <= tolerance  # integer arithmetic: exact
    return abs(predicted - gold) <= tolerance


class AccuracyReward(RewardComponent):
    """1.0 when the extracted answer equals the gold answer, else 0.0; None without a gold."""

    @dataclass
    class Settings:
        tolerance: float = field(1e-6, help="Absolute tolerance of the numeric comparison.")

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
            details.append({"predicted": predicted, "gold": gold, "rule": rule})
        n = max(len(batch), 1)
        metrics = {"no_answer_fraction": rules.get("none", 0) / n}
        return RewardOutput(scores=scores, details=details, metrics=metrics)
