"""Whether a computed value is what a text states: rounding as written, a percent sign as a label;
and :class:`Claim`, one checked statement of a step."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from procrl.rewards.quantities.evaluate import NotArithmeticError, evaluate

__all__ = ["Claim", "decimals", "stated_matches", "values_match"]


def decimals(text: str) -> int:
    """The decimals a number is written with ("3.25" and "12.5%": 2 and 1; "40": 0)."""
    match = re.search(r"\.(\d+)\s*%?\s*$", text.strip())
    return len(match.group(1)) if match else 0


def values_match(computed: float, claimed: float, claimed_text: str = "") -> bool:
    """True when ``claimed`` states ``computed``, allowing for the rounding the text shows.

    ``10/3 = 3.33`` and ``10/3 = 3.3`` match, ``2/3 = 0.67`` (rounded) and ``2/3 = 0.66``
    (truncated) match, ``10/3 = 3.4`` and ``7/2 = 3`` do not (an integer claim must be exact
    up to float noise).
    """
    if math.isclose(computed, claimed, rel_tol=1e-6, abs_tol=1e-9):
        return True
    places = decimals(claimed_text)
    if places == 0:
        return False
    unit = 10.0 ** (-places)
    slack = 1e-9 * max(1.0, abs(computed))
    if abs(computed - claimed) <= unit / 2 + slack:  # rounded to the written decimals
        return True
    # truncated to the written decimals (toward zero)
    same_sign = (computed >= 0) == (claimed >= 0)
    return same_sign and abs(claimed) - slack <= abs(computed) < abs(claimed) + unit + slack


@dataclass(frozen=True)
class Claim:
    """One checked statement: the value of ``left`` should be what ``right`` states.

    ``kind`` is ``annotation`` (``<<left=right>>``) or ``equation`` (inline ``left = right``).
    For an equation, ``right`` is the stated result (the first number after ``=``) and
    ``right_expression`` the whole arithmetic run after it when that is longer ("3*2 = 6*4 =
    24" states 6, "a = b + c" states b + c): either reading may hold. ``tolerance`` is the
    relative error that operands written rounded carry (``0.5667 x 100 = 56.67``; 0 when none
    is). ``left`` and ``right`` are the sides as read (units and LaTeX markup blanked);
    ``start``/``end`` (and ``equals``, the ``=``) are offsets into the step's text.
    """

    kind: str
    left: str
    right: str
    start: int
    end: int
    left_value: float
    right_value: float
    right_expression: str | None = None
    right_expression_value: float | None = None
    tolerance: float = 0.0
    equals: int | None = None  # offset of the claim's "="

    @property
    def correct(self) -> bool:
        if stated_matches(self.left_value, self.right, self.right_value):
            return True
        if self.right_expression_value is not None and values_match(self.left_value, self.right_expression_value):
            return True
        if self.tolerance:  # operands written rounded ("0.5667 x 100 = 56.67"): their error carries
            targets = [self.right_value]
            if self.right_expression_value is not None:
                targets.append(self.right_expression_value)
            return any(math.isclose(self.left_value, target, rel_tol=self.tolerance) for target in targets)
        return False


def stated_matches(computed: float, stated_text: str, stated_value: float) -> bool:
    if values_match(computed, stated_value, stated_text):
        return True
    if "%" in stated_text:  # "10/50*100 = 20%": the percent sign is a label, not a factor
        bare = stated_text.replace("\\%", "").replace("%", "")
        try:
            return values_match(computed, evaluate(bare), bare)
        except NotArithmeticError:
            return False
    return False
