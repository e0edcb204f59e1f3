"""Magnitudes with float tolerance, and whether a value is a few ``+ - * /`` operations from known ones
(the reference judge's arithmetic over sets of values)."""

from __future__ import annotations

import bisect
import math

from procrl.rewards.quantities import decimals, values_match


class Values:
    """A set of magnitudes looked up with float tolerance (and, on request, rounding as written)."""

    def __init__(self, values=()):
        self._sorted: list[float] = []
        self.percents: list[float] = []  # question numbers written as percents
        for value in values:
            self.add(value)

    @classmethod
    def of_sorted(cls, values: list[float]) -> Values:
        """From magnitudes already sorted and distinct (no re-insertion: linear)."""
        made = cls()
        made._sorted = values
        return made

    def copy(self) -> Values:
        made = Values.of_sorted(list(self._sorted))
        made.percents = list(self.percents)
        return made

    def without(self, value: float) -> Values:
        """A copy without the members close to ``value``."""
        value = abs(value)
        return Values.of_sorted([v for v in self._sorted if not math.isclose(v, value, rel_tol=1e-9, abs_tol=1e-12)])

    def __len__(self) -> int:
        return len(self._sorted)

    def __iter__(self):
        return iter(self._sorted)

    def add(self, value: float) -> None:
        value = abs(value)
        if not math.isfinite(value):
            return
        index = bisect.bisect_left(self._sorted, value)
        if index < len(self._sorted) and math.isclose(self._sorted[index], value, rel_tol=1e-9, abs_tol=1e-12):
            return
        self._sorted.insert(index, value)

    def near(self, value: float, tolerance: float) -> list[float]:
        value = abs(value)
        low = bisect.bisect_left(self._sorted, value - tolerance)
        high = bisect.bisect_right(self._sorted, value + tolerance)
        return self._sorted[low:high]

    def has(self, value: float, tolerance: float | None = None) -> bool:
        value = abs(value)
        return bool(self.near(value, max(1e-6 * value, 1e-9) if tolerance is None else tolerance))

    def has_written(self, value: float, text: str, rounding: bool) -> bool:
        """``value`` as written in ``text`` equals a member, or (``rounding``) is one rounded as written
        (:func:`rounded_as_written`)."""
        return self.has(value) or (rounding and rounded_as_written(self, value, text))


def rounded_as_written(members: Values, value: float, text: str) -> bool:
    """Rule ``rounding``: a value written with d decimals matches one that rounds or cuts to it, and a
    whole number the floor, ceiling or nearest whole of a non-whole value.

    Example: "He needs 3 boxes" for the gold's 2.5 boxes (the ceiling); "$3.33 each" for 10/3.
    """
    places = decimals(text)
    window = 10.0**-places if places else 1.0
    for member in members.near(value, window + 1e-9):
        if places and values_match(member, abs(value), text.strip().lstrip("$£€¥₹ ")):
            return True
        if not places and not float(member).is_integer() and abs(value) in (math.floor(member), math.ceil(member)):
            return True
    return False


def written_tolerance(value: float, text: str | None = None) -> float:
    """How far a derivation may land from ``value`` as written (its rounding, else float noise)."""
    places = decimals(text) if text else 0
    if places:
        return 10.0**-places  # rounded or cut to the written decimals
    return max(1e-6 * abs(value), 1e-9)


def derivable(target: float, known: Values, depth: int, tolerance: float) -> bool:
    """``target`` = a op b (op in + - * /) with a, b known, or (depth 2) one more operation."""
    if depth <= 0:
        return False
    target = abs(target)
    for a in known:
        for b, slack in ((target - a, tolerance), (a - target, tolerance), (target + a, tolerance)):
            if b >= 0 and known.has(b, slack):
                return True
        if a:
            if known.has(target / a, tolerance / a):  # a * b
                return True
            if known.has(target * a, tolerance * a):  # b / a
                return True
            if target and known.has(a / target, a * tolerance / (target * target) + 1e-12):  # a / b
                return True
    if depth >= 2:
        for a in known:
            for inner, slack in ((target - a, tolerance), (a - target, tolerance), (target + a, tolerance)):
                if inner > 0 and derivable(inner, known, 1, slack):
                    return True
            if a:
                for inner, slack in ((target / a, tolerance / a), (target * a, tolerance * a)):
                    if inner > 0 and derivable(inner, known, 1, slack):
                        return True
    return False


def uses(value: float, target: float, known: Values, depth: int, tolerance: float) -> bool:
    """``target`` is reached from ``value`` and known values within ``depth`` operations, using ``value``."""
    if depth <= 0 or not value:
        return False
    target, value = abs(target), abs(value)
    firsts = []
    for a in [*known, value]:
        firsts += [value + a, abs(value - a), value * a, a / value] + ([value / a] if a else [])
    if any(abs(reached - target) <= tolerance for reached in firsts):
        return True
    if depth >= 2:
        if any(reached and uses(reached, target, known, 1, tolerance) for reached in firsts):
            return True  # (value op a) op b
        for inner, slack in (
            (target - value, tolerance),
            (value - target, tolerance),
            (target + value, tolerance),
            (target / value, tolerance / value),
            (target * value, tolerance * value),
        ):
            if inner > 0 and derivable(inner, known, 1, slack):
                return True  # (a op b) op value
    return False
