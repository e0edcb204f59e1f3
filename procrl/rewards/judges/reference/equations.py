"""The value an equation in one unknown determines ("x + (x + 7) + (x + 7) + (x + 7) = 44": x =
5.75): a step that sets up an equation commits to its solution though it writes no number for it,
so a wrong set-up is wrong where it is written, not where the solution is first spelled out."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from procrl.rewards.quantities.evaluate import NotArithmeticError, evaluate
from procrl.rewards.quantities.notation import plain_arithmetic

# A side of an equation: arithmetic, with single letters; a word of two letters or more ends it.
_SIDE_CHARS = re.compile(r"[0-9A-Za-z.,+\-*/×÷·⋅∗−–^()$£€¥₹% \t]+")
_WORD = re.compile(r"[A-Za-z]{2,}")
_LETTER = re.compile(r"(?<![A-Za-z])[A-Za-z](?![A-Za-z])")
# "3 x 4": x between two operands is a product sign, not an unknown
_TIMES_X = re.compile(r"(?<=[\d)%])[ \t]*[xX][ \t]*(?=[\d($£€¥₹.])")
_NUMBER = re.compile(r"\d+(?:\.\d+)?|\.\d+")
_BARE_NUMBER = re.compile(r"[ \t]*[-−–]?[ \t]*[$£€¥₹]?[ \t]*\d[\d,]*(?:\.\d+)?[ \t]*%?[ \t]*")
_NOT_UNKNOWNS = frozenset("aI")  # an article, a pronoun
MAX_SIDE = 120  # characters of one side (longer: not an equation set up in a step)


@dataclass(frozen=True)
class Solution:
    end: int  # offset in the step just after the equation: it is read after the numbers it is written with
    value: float
    text: str  # the equation as written (plain)
    operands: tuple[float, ...]  # the numbers the equation is written with


def _side(piece: str, left: bool) -> str:
    """The arithmetic next to an ``=``: after the last word (left side) or before the first (right)."""
    words = list(_WORD.finditer(piece))
    if words:
        piece = piece[words[-1].end() :] if left else piece[: words[0].start()]
    return piece.strip().strip(".,").strip()  # the end of a sentence or a clause


def _value(side: str, unknown: str, value: float) -> float:
    expression = _LETTER.sub(lambda m: f"({value!r})" if m.group(0) == unknown else m.group(0), side)
    expression = re.sub(r"(?<=[\d)])\s*(?=\()", "*", expression)  # "2(x)" -> "2*(x)"
    return evaluate(expression)


def solve(left: str, right: str) -> tuple[str, float] | None:
    """The unknown and its value when ``left = right`` is linear in one letter with one solution."""
    left, right = _TIMES_X.sub(" * ", left), _TIMES_X.sub(" * ", right)
    letters = {m.group(0) for m in _LETTER.finditer(left + " " + right)}
    if len(letters) != 1:
        return None
    unknown = letters.pop()
    if unknown in _NOT_UNKNOWNS:
        return None
    try:
        f = [_value(left, unknown, v) - _value(right, unknown, v) for v in (1.0, 2.0, 3.0)]
    except (NotArithmeticError, ZeroDivisionError, OverflowError):
        return None
    slope = f[1] - f[0]
    if not math.isclose(f[2] - f[1], slope, rel_tol=1e-9, abs_tol=1e-9) or abs(slope) < 1e-12:
        return None  # not linear in it, or no single solution
    value = 1.0 - f[0] / slope
    return (unknown, value) if math.isfinite(value) else None


def solutions(step: str) -> list[Solution]:
    """The solutions of the equations in one unknown a step writes, in reading order. ``x = 14``
    (an unknown given a number) is no equation to solve: the number is stated."""
    visible, _ = plain_arithmetic(step)
    found = []
    for line in re.finditer(r"[^\n]+", visible):
        text = line.group(0)
        if "=" not in text:
            continue
        pieces = text.split("=")
        offsets = [line.start()]
        for piece in pieces[:-1]:
            offsets.append(offsets[-1] + len(piece) + 1)
        for i in range(len(pieces) - 1):
            before = _SIDE_CHARS.findall(pieces[i])
            after = _SIDE_CHARS.match(pieces[i + 1])
            if not before or after is None or not pieces[i].endswith(before[-1]):
                continue
            left, right = _side(before[-1], left=True), _side(after.group(0), left=False)
            if not left or not right or len(left) > MAX_SIDE or len(right) > MAX_SIDE:
                continue
            if (_LETTER.fullmatch(left) and _BARE_NUMBER.fullmatch(right)) or (
                _LETTER.fullmatch(right) and _BARE_NUMBER.fullmatch(left)
            ):
                continue
            solved = solve(left, right)
            if solved is None:
                continue
            operands = tuple(float(n.group(0)) for n in _NUMBER.finditer(left + " " + right.replace(",", "")))
            end = offsets[i + 1] + after.end()
            found.append(Solution(end, solved[1], f"{left} = {right}", operands))
    return found
