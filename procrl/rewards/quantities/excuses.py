"""Why a calculation that does not hold may still be right as written (rounding, units of
different kinds, a conversion, a multiplier word, a percent added to a number, a product or a
size written with a space): such a claim is dropped, not flagged (:mod:`~procrl.rewards.quantities.claims`)."""

from __future__ import annotations

import math
import re

from procrl.rewards.quantities.evaluate import CURRENCY
from procrl.rewards.quantities.notation import NEXT_WORD
from procrl.rewards.quantities.scanner import word_before
from procrl.rewards.quantities.units import EXCUSING_BY_KIND, MULTIPLIER_WORDS, dimension, unit_name
from procrl.rewards.quantities.values import Claim, stated_matches

__all__ = ["NUMBER_END", "excused"]

NUMBER_END = re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)?%?")
# Words after a result that say it is not exact.
_ROUNDED = re.compile(r"round|approx|about|roughly|nearly|almost|estimat|≈|~|truncat", re.I)


def _operand_units(left: str, start: int, units: dict[int, str]) -> list[str | None]:
    """The unit of each number of a left side (currency before it counts as ``$``)."""
    found = []
    for match in NUMBER_END.finditer(left):
        unit = units.get(start + match.end())
        before = left[max(0, match.start() - 2) : match.start()].strip()
        if unit is None and before[-1:] and before[-1] in CURRENCY:
            unit = "$"
        found.append(unit_name(unit) if unit else None)
    for index, character in enumerate(left):  # a unit after a parenthesised group
        if character == ")" and units.get(start + index + 1):
            found.append(unit_name(units[start + index + 1]))
    return found


def _result_unit(visible: str, stated: str, position: int, units: dict[int, str]) -> str | None:
    """The unit of a stated result: the blanked run or the next word after it, else its currency."""
    if position in units:
        return unit_name(units[position])
    match = NEXT_WORD.match(visible, position, position + 30)
    if match:
        return unit_name(match.group(1))
    return "$" if stated.lstrip("-− \t")[:1] in CURRENCY else None


# Words before "2 x 4 pieces" that make it a size in a noun phrase, not a product.
_NOUN_PHRASE_WORDS = frozenset(
    "of many the a an each per with for from in on at to by into all these those his her their its our my your".split()
)


def excused(
    text: str, visible: str, claim: Claim, left: str, left_start: int, stated_end: int, units: dict[int, str]
) -> bool:
    """True when a claim that does not hold may still be right as written: rounding, units of
    different kinds, a conversion, a multiplier word, a percent added to a number (the list:
    :mod:`~procrl.rewards.quantities.claims`). Such a claim is dropped, not flagged. ``left`` is the left side as
    scanned (it starts at ``left_start`` of ``visible``)."""
    line_end = text.find("\n", stated_end, stated_end + 40)
    tail = text[stated_end : line_end if line_end >= 0 else stated_end + 40]
    if _ROUNDED.search(tail) or _ROUNDED.search(text[max(0, left_start - 25) : left_start]):
        return True  # "= 33 (rounded)", "approximately 4200 / 1500 = 2.7"
    value, stated = claim.left_value, claim.right_value
    result = _result_unit(visible, claim.right, stated_end, units)
    divides = "/" in left or "÷" in left or re.search(r"\d\.\d", left)
    if divides and float(stated).is_integer() and not float(value).is_integer():
        measure = dimension(result) not in (None, "money")
        if stated == round(value) or (not measure and stated in (math.floor(value), math.ceil(value))):
            return True  # "25 / 4 = 6 boxes", "0.3 x $46,153 = $13,845": a whole number written
    operands = len(re.findall(r"\d[\d,]*(?:\.\d+)?", left))
    if stated and abs(value - stated) <= operands and abs(value - stated) <= 1e-4 * abs(stated):
        return True  # "$46,153 + $13,845 = $60,000": operands rounded in earlier steps
    operand_units = _operand_units(left, left_start, units)
    named = {unit for unit in operand_units if unit}
    if {word for unit in named for word in unit.replace("/", " ").split()} & MULTIPLIER_WORDS:
        return True  # "2 dozen + 6 = 30", "2 million + 500,000"
    additive = bool(re.search(r"[\d)%][ \t]*[+\-−–][ \t]*[\d($£€¥₹.]", left))
    if additive and len({unit for unit in named if dimension(unit)}) > 1:
        return True  # "1 hour + 30 minutes = 90 minutes", "$3 + 50 cents" (units of measure, not count nouns)
    percents = [bool(sign) for sign in re.findall(r"\d[\d,]*(?:\.\d+)?([ \t]*%)?", left)]
    if additive and any(percents) and not all(percents):
        return True  # "80,000 + 150%": a percent of something
    if result and result.split()[0] in MULTIPLIER_WORDS:
        return True  # "500,000 * 3 = $1.5 million"
    kind = dimension(result)
    base = result.split()[0].split("/")[0] if result else None
    if kind and any(dimension(unit) == kind and unit.split()[0].split("/")[0] != base for unit in named):
        return True  # "15 minutes * 4 = 1 hour": a conversion
    if named and claim.right_expression is not None and not stated_matches(value, claim.right, stated):
        if len(NUMBER_END.findall(claim.right_expression)) > operands:
            return True  # "2/5 of 15 tens = 2/5 x 15 x $10": the right side spells a unit out
    kinds = {kind} | {dimension(unit) for unit in named}
    factors = tuple(f for k in kinds if k for f in EXCUSING_BY_KIND.get(k, ()))
    if factors:
        targets = [stated] + ([claim.right_expression_value] if claim.right_expression_value is not None else [])
        for target in targets:
            if (
                value
                and target
                and any(
                    math.isclose(abs(value / target), factor, rel_tol=1e-6)
                    or math.isclose(abs(target / value), factor, rel_tol=1e-6)
                    for factor in factors
                )
            ):
                return True  # "12 x 25 cents = $3.00", "600 x 5 cents = 600 x 0.05"
    if re.search(r"[\d)][ \t]+\(|\)[ \t]+[\d$£€¥₹.]", left):
        return True  # "12 (4 + 8)", "(2) 5 + 3": a product, or a number and its explanation or label
    if (
        re.fullmatch(r"\d+(?:[ \t]*[xX×][ \t]*\d+){1,2}", left.strip())
        and left_start + len(left) in units
        and word_before(visible, left_start) in _NOUN_PHRASE_WORDS
    ):
        return True  # "the number of 2 x 6 boards = ...": a size, not a product
    return False
