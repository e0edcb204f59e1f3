"""Whether a stated quantity is known: a restatement (as written, rounded, as a percent, converted),
a constant, or an off-path value from which a later quantity reaches the gold's path (the lookahead)."""

from __future__ import annotations

import math

from procrl.rewards.judges.reference.gold import Reference
from procrl.rewards.judges.reference.steps import Quantity, readings
from procrl.rewards.judges.reference.values import Values, uses, written_tolerance
from procrl.rewards.judges.settings import ReferenceRules
from procrl.rewards.quantities.units import conversion_factors, own_factors

CONSTANTS = (0.0, 1.0, 2.0, 100.0)  # without a unit: what every solution may use (100: a percent's base)
# quantities the lookahead reads after an off-path one, and earlier ones it uses (bounded work)
LOOKAHEAD_WINDOW = 32


def matches(quantity: Quantity, values: Values, rules: ReferenceRules) -> bool:
    """The quantity (as written, rounded as written, as a percent) is one of ``values``, or
    (``units``) one of them converted into the unit written after it."""
    rounding = "rounding" in rules.transformations
    for value in readings(quantity, rules):
        if values.has_written(value, quantity.text, rounding):
            return True
    if "units" in rules.transformations and quantity.unit:
        for factor in conversion_factors(quantity.unit, quantity.named):  # "150 minutes" for 2.5 hours
            if values.has(quantity.value * factor) or values.has(quantity.value / factor):
                return True
    return False


def constant(quantity: Quantity, rules: ReferenceRules) -> bool:
    """0, 1, 2, 100, and (``units``) a conversion factor of its unit or of two units its step
    names ("60 minutes", "3 hours * 60 = 180 minutes", "7 days")."""
    if any(math.isclose(quantity.value, c) for c in CONSTANTS):
        return True
    if "units" not in rules.transformations:
        return False
    named = quantity.named | ({quantity.unit} if quantity.unit else frozenset())
    own = own_factors(quantity.unit)
    return any(math.isclose(quantity.value, f) for f in own + conversion_factors(None, named))


def look_ahead(
    quantities: list[Quantity], reference: Reference, base: Values, rules: ReferenceRules, path: Values
) -> None:
    """Mark the off-path quantities from which a later quantity reaches a gold value (backwards,
    so that a chain of several off-path values ending on the gold's path is marked whole): the
    later one is a calculation with it among its operands, or (max_depth >= 1) within max_depth
    operations of it and the values known there, and not worked out without it. ``path``: the
    gold's path under ``rules`` (``reference.path(rules)``, which the caller has already built)."""
    windows: dict[int, tuple[Values, Values]] = {}  # per later quantity: the ones just before it (+ the question's)
    # a result that lands on a known value ("12 sessions x 2 hours = 24 hours", 24 hours a day) is
    # accepted as known; it is still a link of a chain that a later calculation carries on
    known_valued = [base.has(q.value) or constant(q, rules) for q in quantities]

    def earlier_than(index: int) -> tuple[Values, Values]:
        if index not in windows:
            # a solution is no number the text writes: a later number is reached through it only by a use of it
            window = [q.value for q in quantities[max(0, index - LOOKAHEAD_WINDOW) : index] if not q.solved]
            windows[index] = Values(window), Values([*reference.question, *window])
        return windows[index]

    for position in range(len(quantities) - 1, -1, -1):
        quantity = quantities[position]
        if quantity.on_path:
            continue
        link_only = known_valued[position]
        if link_only and quantity.operands is None:
            continue
        for index in range(position + 1, min(len(quantities), position + 1 + LOOKAHEAD_WINDOW)):
            later = quantities[index]
            if not (later.on_path or later.leads or _slip_onto_path(later, path)):
                continue
            if later.operands is not None:
                if not later.on_path and quantity.operands is None and known_valued[index]:
                    continue  # "11 + 10 = 21", 21 the question's: a number read wrong, not a decomposition
                if any(math.isclose(o, quantity.value, rel_tol=1e-9) for o in later.operands):
                    quantity.leads = True
                    break
                continue
            if rules.max_depth < 1 or link_only or quantity.solved:
                continue  # a solution reaches the numbers of its own equation: only a use of it counts
            if known_valued[index] and not quantity.symbolic:
                # 100 or a question number restated is one operation from anything ("150 - 50 = 100"):
                # no way back to the path; an algebra step's coefficients keep the benefit of the doubt
                continue
            earlier, with_question = earlier_than(index)
            earlier = earlier.without(quantity.value)
            if later.on_path and reference.worked_out(later, base, earlier, rules, 1):
                continue  # reached without it
            # with the question's numbers and earlier quantities, not the constants: "10 - 1 = 9"
            # would let any value next to a gold one through
            before = with_question.without(quantity.value)
            if uses(quantity.value, later.value, before, rules.max_depth, written_tolerance(later.value, later.text)):
                quantity.leads = True
                break
        if not quantity.leads and not link_only and _towards_answer(quantity, reference):
            quantity.leads = True


def _slip_onto_path(quantity: Quantity, path: Values) -> bool:
    """A false calculation whose own value is on the gold's path ("160 + 80 + 320 + 640 = 1280" for
    the gold's 1200): the chain into it was right and the slip is its own (it is flagged there)."""
    return quantity.claim_correct is False and quantity.worked is not None and path.has(quantity.worked)


def _towards_answer(quantity: Quantity, reference: Reference) -> bool:
    """A true calculation off the gold's path whose result is one operation with a number of the
    question away from the gold's answer ("300 songs * 10 hours = 3000 hours", then 20 playlists
    make 60000): a decomposition the gold does not write, whether or not a later step uses it."""
    if quantity.operands is None or quantity.fraction or quantity.claim_correct is False or reference.answer is None:
        return False
    return uses(quantity.value, reference.answer, reference.question, 1, written_tolerance(reference.answer))
