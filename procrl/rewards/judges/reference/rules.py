"""The rules of what is known (constants, unit conversions) and the lookahead: whether a value off
the gold's path leads back to it. Each rule is a small function whose docstring states it; the
table of all rules, in order: :data:`procrl.rewards.judges.reference.RULES`."""

from __future__ import annotations

import math

from procrl.rewards.judges.reference.gold import Reference
from procrl.rewards.judges.reference.steps import Quantity, readings
from procrl.rewards.judges.reference.values import Values, uses, written_tolerance
from procrl.rewards.judges.reference_rules import ReferenceRules
from procrl.rewards.quantities.units import conversion_factors, own_factors

CONSTANTS = (0.0, 1.0, 2.0, 100.0)  # without a unit: what every solution may use (100: a percent's base)
# quantities the lookahead reads after an off-path one, and earlier ones it uses (bounded work)
LOOKAHEAD_WINDOW = 32


# -- what is known -----------------------------------------------------------------------------------------------------


def constants(rules: ReferenceRules) -> tuple[float, ...]:
    """Rule ``constants``: 0, 1, 2 and 100 are known to every solution, without a unit (100: a
    percent's base; 2: halves and doubles).

    Example: Kylar's "every second glass" solution "16 / 2 = 8 cheaper glasses" divides by a 2 the
    question writes only as "second".
    """
    return CONSTANTS if rules.on("constants") else ()


def converted(quantity: Quantity, values: Values) -> bool:
    """Rule ``units``: a quantity converted into the unit written after it from another unit its step
    names is the value it converts ("150 minutes" for 2.5 hours), and the conversion factor of its
    unit or of two units its step names is known ("60 minutes", "7 days", "100 cents").

    Example: Tracy's wire "4 feet long" cut into "pieces 6 inches long": "Each piece is 6 inches,
    which is 0.5 feet." states the question's 6 inches in feet; "4 x 12 = 48 inches" uses the 12
    inches of a foot.
    """
    for factor in conversion_factors(quantity.unit, quantity.named):
        if values.has(quantity.value * factor) or values.has(quantity.value / factor):
            return True
    return False


def matches(quantity: Quantity, values: Values, rules: ReferenceRules) -> bool:
    """The quantity (as written, rounded as written, as a percent) is one of ``values``, or
    (``units``) one of them converted into the unit written after it."""
    rounding = rules.on("rounding")
    for value in readings(quantity, rules):
        if values.has_written(value, quantity.text, rounding):
            return True
    return rules.on("units") and bool(quantity.unit) and converted(quantity, values)


def constant(quantity: Quantity, rules: ReferenceRules) -> bool:
    """0, 1, 2, 100 (``constants``), and (``units``) a conversion factor of its unit or of two units
    its step names ("60 minutes", "3 hours * 60 = 180 minutes", "7 days")."""
    if any(math.isclose(quantity.value, c) for c in constants(rules)):
        return True
    if not rules.on("units"):
        return False
    named = quantity.named | ({quantity.unit} if quantity.unit else frozenset())
    own = own_factors(quantity.unit)
    return any(math.isclose(quantity.value, f) for f in own + conversion_factors(None, named))


# -- the lookahead -----------------------------------------------------------------------------------------------------


def look_ahead(
    quantities: list[Quantity], reference: Reference, base: Values, rules: ReferenceRules, path: Values
) -> None:
    """Rule ``lookahead``: a value off the gold's path is accepted when a later quantity reaches the
    path from it: a calculation with it among its operands, or a value within ``max_depth``
    operations (``+ - * /`` over pairs) of it and what is known there. Recursively, so an alternative
    decomposition passes while a wrong operation on right numbers leads nowhere and is flagged where
    it is first stated.

    Example: Janet's ducks (gold ``16 - 3 - 4 = 9``): "She uses 3 + 4 = 7 eggs.", then "She sells
    16 - 7 = 9 eggs.": 7 is off the path and leads back to 9; "She has 16 + 7 = 23 eggs" instead
    leads nowhere, and the 7 is the error.

    Marks ``quantity.leads`` (backwards, so that a chain of several off-path values ending on the
    gold's path is marked whole). ``base``: the question's numbers and the constants; ``path``: the
    gold's path under ``rules`` (``reference.path(rules)``, which the caller has already built).
    """
    windows: dict[int, tuple[Values, Values]] = {}  # per later quantity: the ones just before it (+ the question's)
    known_valued = [base.has(q.value) or constant(q, rules) for q in quantities]
    solutions_by_use = rules.on("solution_by_use")

    def earlier_than(index: int) -> tuple[Values, Values]:
        if index not in windows:
            # a solution is no number the text writes: a later number is reached through it only by a use of it
            window = [
                q.value
                for q in quantities[max(0, index - LOOKAHEAD_WINDOW) : index]
                if not (solutions_by_use and solution_by_use(q))
            ]
            windows[index] = Values(window), Values([*reference.question, *window])
        return windows[index]

    for position in range(len(quantities) - 1, -1, -1):
        quantity = quantities[position]
        if quantity.on_path:
            continue
        link_only = rules.on("known_value_link") and known_value_link(known_valued[position])
        if link_only and quantity.operands is None:
            continue
        for index in range(position + 1, min(len(quantities), position + 1 + LOOKAHEAD_WINDOW)):
            later = quantities[index]
            if not (later.on_path or later.leads or (rules.on("slip_onto_path") and slip_onto_path(later, path))):
                continue
            if later.operands is not None:
                if rules.on("number_read_wrong") and number_read_wrong(quantity, later, known_valued[index]):
                    continue
                if any(math.isclose(o, quantity.value, rel_tol=1e-9) for o in later.operands):
                    quantity.leads = True
                    break
                continue
            if rules.max_depth < 1 or link_only or (solutions_by_use and solution_by_use(quantity)):
                continue
            if rules.on("known_target") and known_target(quantity, known_valued[index]):
                continue
            earlier, with_question = earlier_than(index)
            earlier = earlier.without(quantity.value)
            if rules.on("reached_without_it") and reached_without_it(later, reference, base, earlier, rules):
                continue
            # with the question's numbers and earlier quantities, not the constants: "10 - 1 = 9"
            # would let any value next to a gold one through
            before = with_question.without(quantity.value)
            if uses(quantity.value, later.value, before, rules.max_depth, written_tolerance(later.value, later.text)):
                quantity.leads = True
                break
        if not quantity.leads and not link_only and rules.on("towards_answer") and towards_answer(quantity, reference):
            quantity.leads = True


def known_value_link(known_valued: bool) -> bool:
    """Rule ``known_value_link``: a quantity whose value is known (a number of the question, a
    constant) leads back only as a link of a chain: a result landing on it does when a later
    calculation uses it; a bare known number never does (it is accepted as known, and nothing
    reaches the path through it). Returns whether the quantity is such a link.

    Example: a therapy bill: "12 sessions x 2 hours = 24 hours" lands on 24, the hours of a day;
    "24 hours x 125 dollars/hour = 3000 dollars" uses it and reaches the gold's 3000, so 12 and 24
    lead back.
    """
    return known_valued


def solution_by_use(quantity: Quantity) -> bool:
    """Rule ``solution_by_use``: the solution of an equation the step sets up leads back only when a
    later calculation uses it: it reaches the numbers of its own equation, and it is no number the
    text writes for a later value to be reached through.

    Example: "4x + 21 = 44" states x = 5.75: a later 44 or 21 is not reached "from" 5.75.
    """
    return quantity.solved


def slip_onto_path(later: Quantity, path: Values) -> bool:
    """Rule ``slip_onto_path``: a false calculation whose own value is on the gold's path counts as
    reaching the path: the chain into it was right, and the slip is its own error (flagged there).

    Example: Janet's ducks: "She uses 3 + 4 = 7 eggs.", "She sells 16 - 7 = 8 eggs.": the 7 leads to
    the gold's 9 (16 - 7 is 9), and the error is the slip "= 8" (MR-GSM8K's "160 + 80 + 320 + 640 =
    1280" for the gold's 1200 likewise).
    """
    return later.claim_correct is False and later.worked is not None and path.has(later.worked)


def number_read_wrong(quantity: Quantity, later: Quantity, later_known: bool) -> bool:
    """Rule ``number_read_wrong``: a bare number that a later calculation off the path uses to land on
    a known value is a number read wrong, not a decomposition: it leads nowhere.

    Example: the question's "Chloe has 21 stickers": "Then she has 11 + 10 = 21 stickers." misreads
    21 and lands on it; 11 is the error, not a step of the way to the gold's 31.
    """
    return not later.on_path and quantity.operands is None and later_known


def known_target(quantity: Quantity, later_known: bool) -> bool:
    """Rule ``known_target``: a later value that is a constant or a number of the question restated is
    one operation from anything, so reaching it leads nowhere; unless the step calculates with an
    unknown (an algebra step's coefficients keep the benefit of the doubt).

    Example: "50 km/h x 3 days = 150 km", then "x 100": 150 - 50 = 100 reaches the constant 100, which
    is no way back to the gold's path; "\\frac{2x - 6}{6}" keeps it.
    """
    return later_known and not quantity.symbolic


def reached_without_it(
    later: Quantity, reference: Reference, base: Values, earlier: Values, rules: ReferenceRules
) -> bool:
    """Rule ``reached_without_it``: a later gold value that the gold's own ways reach from what is
    known without the off-path value does not make that value lead back.

    Example: Isaias's chickens: "He sells 300 * 3/5 = 180 chickens.", "He makes 180 * $50 = $9000.",
    "$9000 + $2000 = $11000": 11000 is not made a decomposition by a later 7000, which the gold
    reaches from 9000 and 2000 alone.
    """
    return later.on_path and reference.worked_out(later, base, earlier, rules, 1)


def towards_answer(quantity: Quantity, reference: Reference) -> bool:
    """Rule ``towards_answer``: a true calculation off the gold's path whose result is one operation
    with a number of the question from the gold's answer is a decomposition the gold does not write,
    whether or not a later step uses it (the error is then the later step that does not).

    Example: "300 songs * 10 hours = 3000 hours" for a gold ``20 * 300 = 6000``, ``6000 * 10 = 60000``:
    the 20 playlists of the question make 60000 from it.
    """
    if quantity.operands is None or quantity.fraction or quantity.claim_correct is False or reference.answer is None:
        return False
    return uses(quantity.value, reference.answer, reference.question, 1, written_tolerance(reference.answer))
