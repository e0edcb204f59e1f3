"""What a completion's step states: its quantities in reading order, each with the operands of the
calculation it results from, its unit and the units its step names."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from procrl.rewards.judges.reference.equations import solutions
from procrl.rewards.judges.reference_rules import ReferenceRules
from procrl.rewards.quantities import Claim, find_claims, stated_numbers, values_match
from procrl.rewards.quantities.units import canonical_unit, units_named


@dataclass
class Quantity:
    step: int
    value: float
    text: str
    operands: tuple[float, ...] | None = None  # a calculation's result: the numbers of its left side
    claim_correct: bool | None = None
    worked: float | None = None  # a calculation's own value (its left side), what a false result should be
    percent: bool = False
    unit: str | None = None  # the unit written after it, as a name of units.UNITS
    named: frozenset[str] = frozenset()  # the units its step names
    fraction: bool = False  # "3/5", "\\frac{3}{5}": ``operands`` are its two parts
    solved: bool = False  # the solution of an equation in one unknown the step sets up
    on_path: bool = False  # a gold value (or a transformation of one)
    leads: bool = False  # lookahead: a later quantity reaches a gold value from it
    symbolic: bool = False  # its step calculates with an unknown ("2x - 2", "\\frac{x}{3}")


STEP_LABEL = re.compile(r"(?i)\bstep\s*$")


def step_quantities(index: int, step: str) -> list[Quantity]:
    """The quantities of one step in reading order: its numbers, a calculation's result carrying
    its operands (annotations, blanked in the text, placed where they stand)."""
    numbers = stated_numbers(step)
    starts = [n.start for n in numbers]
    claims = find_claims(step)
    named = units_named(step)
    results: dict[int, Quantity] = {}
    placed: list[tuple[int, Quantity]] = []
    for claim in claims:
        if claim.kind == "annotation":
            inside = stated_numbers(claim.left)
            operands = tuple(n.value for n in inside) + tuple(p for n in inside if n.parts for p in n.parts)
            placed.append((claim.start, _result(index, claim, claim.right, operands)))
            continue
        equals = claim.equals if claim.equals is not None else claim.start
        # the numbers are in reading order: a claim's are found by bisection (linear in a long step)
        inside = numbers[bisect.bisect_left(starts, claim.start) : bisect.bisect_left(starts, equals)]
        after = bisect.bisect_right(starts, equals)
        result = numbers[after] if after < len(numbers) and numbers[after].start < claim.end else None
        operands = tuple(n.value for n in inside) + tuple(p for n in inside if n.parts for p in n.parts)
        if result is not None and result.start not in results:
            results[result.start] = _result(index, claim, result.text, operands)
    for number in numbers:
        if STEP_LABEL.search(step, max(0, number.start - 8), number.start):
            continue  # "Step 3:", a label, not a quantity
        if _YEAR.match(number.text) and _YEAR_BEFORE.search(step, max(0, number.start - 12), number.start):
            continue  # "in 2008": a date
        quantity = results.get(number.start) or Quantity(index, number.value, number.text)
        if quantity.operands is None and number.parts:
            quantity.operands, quantity.fraction = number.parts, True  # "3/5 of them": a fraction of its parts
        quantity.percent, quantity.unit, quantity.named = (
            number.percent,
            canonical_unit(number.unit) or ("dollar" if number.currency else None),
            named,
        )
        if number.percent:
            quantity.text = quantity.text.rstrip("% ")
        placed.append((number.start, quantity))
    for solution in solutions(step):  # "4x + 21 = 44" commits to x = 5.75
        placed.append(
            (solution.end, Quantity(index, abs(solution.value), solution.text, solution.operands, solved=True))
        )
    placed.sort(key=lambda item: item[0])
    symbolic = bool(_SYMBOLIC.search(step))
    for _, quantity in placed:
        quantity.symbolic = symbolic
    return [quantity for _, quantity in placed]


def _result(index: int, claim: Claim, text: str, operands: tuple[float, ...]) -> Quantity:
    """The quantity a calculation states: its result, with its operands and its own value. A
    result the whole run after "=" states ("1/4 * 2 = 1/2", "2/30 = 1/15") is that run's value,
    not the first number of it."""
    stated = claim.right_value
    whole = claim.right_expression_value
    if whole is not None and not values_match(claim.left_value, stated, text) and values_match(claim.left_value, whole):
        stated = whole
    return Quantity(index, abs(stated), text, operands, claim.correct, abs(claim.left_value))


# an unknown calculated with: a single letter next to a digit, an operator or a LaTeX fraction's brace
_SYMBOLIC = re.compile(r"(?<![A-Za-z\\])(?:\d[a-zA-Z]|[a-zA-Z]\s*[-+*/^=])(?![A-Za-z])|\\frac\{\s*\d*\s*[a-zA-Z]\s*\}")
_YEAR = re.compile(r"(?:1[89]|20)\d\d$")
_YEAR_BEFORE = re.compile(r"(?i)\b(?:in|of|year|since|until|by|from|to|after|before|[a-z]+ \d{1,2},)\s*$")


# a sign or a word of arithmetic: a step with none states its values without working them out
_OPERATION = re.compile(
    r"[=+×÷*/^]|\\(?:times|div|frac|cdot)|(?<=\d)\s*[-x]\s*(?=[\d$])"
    r"|\b(?:divided?|divides|dividing|multipl\w*|subtract\w*|add|adds|adding|added|sum|plus|minus|times|product)\b",
    re.IGNORECASE,
)


_CONCLUSION = re.compile(r"^\W*(?:therefore|so|thus|hence)\b", re.IGNORECASE)


def states_no_operation(step: str) -> bool:
    """The step shows no calculation and names no operation: it only states values ("The value of
    the sapphires is still $6400."); a conclusion ("Therefore, the smallest angle is 30 degrees.")
    sums up the steps before it and is not counted."""
    return not _OPERATION.search(step) and not _CONCLUSION.match(step)


def readings(quantity: Quantity, rules: ReferenceRules) -> list[float]:
    """The values a stated quantity may stand for: as written, and (rule ``percent``) a percent as a
    fraction too."""
    if quantity.percent and rules.on("percent"):
        return percent_readings(quantity)
    return [quantity.value]


def percent_readings(quantity: Quantity) -> list[float]:
    """Rule ``percent``: a number written with ``%`` also stands for its value over 100, on both sides;
    what is left of or added to a share of the question is on the gold's path (``100% - 30% = 70%``,
    ``1 - 1/3``).

    Example: Kylar's "every second glass costs only 60% of the price": "60% of $5 = $3" reaches the
    gold's ``60/100 * 5 = 3``.
    """
    return [quantity.value, quantity.value / 100]
