"""The value an equation in one unknown determines ("x + (x + 7) + (x + 7) + (x + 7) = 44": x =
5.75): a step that sets up an equation commits to its solution though it writes no number for it,
so a wrong set-up is wrong where it is written, not where the solution is first spelled out."""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass

from procrl.rewards.quantities.evaluate import NotArithmeticError, evaluate
from procrl.rewards.quantities.notation import plain_arithmetic

# A side of an equation: arithmetic, with single letters; a word of two letters or more ends it.
_SIDE = frozenset("0123456789.,+-*/×÷·⋅∗−–^()$£€¥₹% \t") | frozenset(string.ascii_letters)
_WORD = re.compile(r"[A-Za-z]{2,}")
_LETTER = re.compile(r"(?<![A-Za-z])[A-Za-z](?![A-Za-z])")
# "3 x 4": x between two operands is a product sign, not an unknown
_TIMES_X = re.compile(r"(?<=[\d)%])[ \t]*[xX][ \t]*(?=[\d($£€¥₹.])")
_NUMBER = re.compile(r"\d+(?:\.\d+)?|\.\d+")
_EQUALS = re.compile(r"(?<![<>!=])=(?!=)")
# Next to a side, these make it a fragment of a larger expression: "a_1 + 3d = 200", "6C5 = 6!",
# "\\sin (2y) = 1/3", "x^2"; or a function applied ("g(6) = 7").
_FRAGMENT_BEFORE = frozenset("_^\\{}")
_FRAGMENT_AFTER = frozenset("_^!({\\")
_NOT_AN_UNKNOWN = re.compile(r"(?<![A-Za-z])[A-Za-z](?=[\d(_^])")  # "C5", "g(6)", "a_1"
# two terms with no sign between them ("1200x = 1500000 \\] \\[ x = ..."); a LaTeX fraction's padding
# before its factor ("\\frac{3}{4}M") is none
_JUXTAPOSED = re.compile(r"\w[ \t]+[\w(]|\)[ \t]+\d")
_NOT_UNKNOWNS = frozenset("aI")  # an article, a pronoun
MAX_SIDE = 120  # characters of one side (longer: not an equation set up in a step)


@dataclass(frozen=True)
class Solution:
    end: int  # offset in the step just after the equation: it is read after the numbers it is written with
    value: float
    text: str  # the equation as written (plain)
    operands: tuple[float, ...]  # the numbers the equation is written with


def _bounds(text: str, at: int, left: bool) -> tuple[int, int] | None:
    """The side of the ``=`` at ``at`` (left: ending there; right: starting there) as offsets into
    ``text``: arithmetic after the last word before it, or before the first word after it, without
    the punctuation that ends a clause or a math span; None when it is empty, too long or part of a
    larger expression."""
    if left:
        start = at
        while start > 0 and text[start - 1] in _SIDE and at - start <= MAX_SIDE:
            start -= 1
        words = list(_WORD.finditer(text, start, at))
        a, b = (words[-1].end() if words else start), at
    else:
        stop = at
        while stop < len(text) and text[stop] in _SIDE and stop - at <= MAX_SIDE:
            stop += 1
        word = _WORD.search(text, at, stop)
        a, b = at, (word.start() if word else stop)
    while a < b and text[a] in " \t$":
        a += 1
    while b > a and text[b - 1] in " \t.,$":
        b -= 1
    if a == b or b - a > MAX_SIDE:
        return None
    if left and words and text[a] == "(" and not text[words[-1].end() : a].strip():
        return None  # "\\sin (2y) = 1/3": a function applied
    if (a > 0 and (text[a - 1] in _FRAGMENT_BEFORE or text[a - 1].isalnum())) or (
        b < len(text) and (text[b] in _FRAGMENT_AFTER or text[b].isalnum())
    ):
        return None
    return a, b


def _value(side: str, unknown: str, value: float) -> float:
    expression = _LETTER.sub(lambda m: f"({value!r})" if m.group(0) == unknown else m.group(0), side)
    return evaluate(expression)  # its normalisation makes "2(x)" a product


def solve(left: str, right: str) -> tuple[str, float] | None:
    """The unknown and its value when ``left = right`` is linear in one letter with one solution."""
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
    """The solutions of the equations in one unknown a step writes, in reading order. An unknown
    given a value (``x = 14``, ``x = 28/2``) is no equation to solve: the value is stated or
    computed, and read as such."""
    visible, _ = plain_arithmetic(step)
    found = []
    for line in re.finditer(r"[^\n]+", visible):
        text = line.group(0)
        for equals in _EQUALS.finditer(text):
            left, right = _bounds(text, equals.start(), left=True), _bounds(text, equals.end(), left=False)
            if left is None or right is None:
                continue
            sides = [text[left[0] : left[1]], text[right[0] : right[1]]]
            if any(_LETTER.fullmatch(side) or _NOT_AN_UNKNOWN.search(side) for side in sides):
                continue
            sides = [_TIMES_X.sub(" * ", side) for side in sides]
            if any(_JUXTAPOSED.search(side) for side in sides):
                continue
            solved = solve(*sides)
            if solved is None:
                continue
            operands = tuple(float(n.group(0)) for n in _NUMBER.finditer(" ".join(sides).replace(",", "")))
            found.append(Solution(line.start() + right[1], solved[1], " = ".join(sides), operands))
    return found
