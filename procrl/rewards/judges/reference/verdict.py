"""The engine (:func:`judge_steps`): every stated quantity checked in reading order by the quantity
rules, a flagged one named by the blame rules, a wrong final answer by the answer rules; and those
rules, each a small function whose docstring states it (the whole table, in order:
:data:`procrl.rewards.judges.reference.RULES`)."""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from dataclasses import field as dataclass_field

from procrl.rewards.judges.protocol import Verdict
from procrl.rewards.judges.reference.gold import (
    MAX_READ_CHARS,
    Reference,
    constant_factors,
    read_reference,
    regrouped_values,
)
from procrl.rewards.judges.reference.rule import Accept, Flag, Rule
from procrl.rewards.judges.reference.rules import (
    constant,
    constants,
    converted,
    known_target,
    known_value_link,
    look_ahead,
    matches,
    number_read_wrong,
    reached_without_it,
    slip_onto_path,
    solution_by_use,
    towards_answer,
)
from procrl.rewards.judges.reference.steps import Quantity, percent_readings, states_no_operation, step_quantities
from procrl.rewards.judges.reference.values import Values, derivable, rounded_as_written, uses, written_tolerance
from procrl.rewards.judges.reference_rules import ReferenceRules
from procrl.rewards.quantities.units import conversion_factors

DEFAULT_RULES = ReferenceRules()  # frozen, so one shared default is safe
# Bounds on work (every completion gets a verdict in bounded time; real GSM8K solutions state at most
# a few hundred quantities):
MAX_QUANTITIES = 1000  # quantities of a completion judged; a longer chain with no error among them: too_long


def stated_final_answer(completion: str | None) -> float | None:
    """The final answer a completion states explicitly (``#### N``, ``\\boxed{}``, "the answer is",
    a bold last line), or None: a last number alone is no statement of an answer (a solution cut
    short, a prefix, states none)."""
    from procrl.core.answers import extract_prediction

    value, rule = extract_prediction(completion or "")
    return None if rule in ("none", "last_number") else value


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")
_CONCLUSION = re.compile(
    r"\s*(?:so|therefore|thus|hence|in total|overall|altogether|finally)\b(?P<claim>.*)", re.IGNORECASE
)
_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")


def concluded_answer(completion: str | None) -> float | None:
    """The value a completion's closing sentence concludes with (few-shot replies, which state no
    answer line, end so: "So, Soledad needs to hike 185 miles per day.", "In total, Randy now has
    11 + 7 + 7 = 25 cookies."): the first number after its last "=", else its one number (two
    different numbers, or none: None). A weaker statement than :func:`stated_final_answer`, read only
    where that finds none: a solution cut short also ends on a conclusion, so the judge takes it only
    when it is off the gold's path."""
    from procrl.core.answers import parse_number

    if not completion:
        return None
    closing = _SENTENCE_END.split(completion.rstrip().rstrip(".!").rstrip())[-1]
    match = _CONCLUSION.match(closing)
    if match is None:
        return None
    claim = match.group("claim")
    if "=" in claim:
        claim = claim.rsplit("=", 1)[1]
        numbers = _DIGITS.findall(claim)[:1]
    else:
        numbers = _DIGITS.findall(claim)
    if len({number.replace(",", "") for number in numbers}) != 1:
        return None
    value = parse_number(numbers[0])
    return None if value is None else float(value)


@dataclass
class Reading:
    """What the judge knows while it reads one completion (what the quantity rules look at).

    ``base``: the question's numbers and the constants; ``path``: the gold's path; ``known``: those and
    every value accepted so far; ``given`` / ``known_here``: ``base`` / ``known`` with the conversion
    factors of the units the current quantity's step names; ``calculated``: the current quantity is a
    true calculation whose operands are all known; ``derived``: the accepted values that are results."""

    reference: Reference
    rules: ReferenceRules
    steps: tuple[str, ...]
    base: Values
    path: Values
    known: Values
    accepted: list[tuple[Quantity, bool]] = dataclass_field(default_factory=list)
    derived: list[float] = dataclass_field(default_factory=list)
    checked: set[int] = dataclass_field(default_factory=set)
    off_path: list[Quantity] = dataclass_field(default_factory=list)
    given: Values | None = None
    known_here: Values | None = None
    calculated: bool = False

    def look_at(self, quantity: Quantity) -> None:
        """Prepare the context of ``quantity`` (``given``, ``known_here``, ``calculated``)."""
        factors = conversion_factors(None, quantity.named) if self.rules.on("units") else ()
        self.given, self.known_here = self.base, self.known
        if factors:
            self.given, self.known_here = self.base.copy(), self.known.copy()
            for factor in factors:
                self.given.add(factor)
                self.known_here.add(factor)
        self.calculated = (
            quantity.operands is not None
            and quantity.claim_correct is not False
            and all(self.known_here.has(o) for o in quantity.operands)
        )


def judge_steps(
    question: str | None,
    steps: tuple[str, ...],
    gold: str | None,
    rules: ReferenceRules = DEFAULT_RULES,
    answer: float | None = None,
    concluded: float | None = None,
) -> Verdict:
    """The verdict for one solution: the rules of :data:`~procrl.rewards.judges.reference.RULES` that
    ``rules`` switches on, stage by stage.

    Args:
        question: the problem's text (its numbers are known).
        steps: the completion's steps.
        gold: the gold solution (its intermediate values make the path).
        rules: which rules apply, with their options.
        answer: the final answer the completion states (None: none stated).
        concluded: the value its closing sentence concludes with (:func:`concluded_answer`).

    Returns:
        A :class:`Verdict`: the first wrong step (-1: none) with ``checked_steps`` and a note; or
        None with status ``no_reference`` (the gold is only an answer) or ``too_long``.

    >>> question = "Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4. She sells the rest at $2 each."
    >>> gold = "16 - 3 - 4 = <<16-3-4=9>>9 eggs.\\n9 * 2 = $<<9*2=18>>18\\n#### 18"
    >>> judge_steps(question, ("She uses 3 + 4 = 7 eggs.", "She sells 16 - 7 = 9 eggs.", "9 * 2 = $18."), gold).index
    -1
    >>> judge_steps(question, ("She uses 3 + 4 = 7 eggs.", "She has 16 + 7 = 23 eggs.", "23 * 2 = $46."), gold).index
    0
    """
    if rules.off:
        _check_names(tuple(rules.off))
    reference = read_reference(question, gold)
    if reference is None:
        return Verdict(None, status="no_reference", note="the gold has no intermediate values to check against")
    quantities: list[Quantity] = []
    for index, step in enumerate(steps):
        if len(quantities) > MAX_QUANTITIES:
            break  # the later steps are not read
        quantities += step_quantities(index, step)
    capped = len(quantities) > MAX_QUANTITIES
    quantities = quantities[:MAX_QUANTITIES]
    base = Values([*reference.question, *constants(rules)])
    path = reference.path(rules)
    for quantity in quantities:
        quantity.on_path = matches(quantity, path, rules)
    if rules.on("lookahead"):
        look_ahead(quantities, reference, base, rules, path)
    reading = Reading(reference, rules, steps, base, path, base.copy())
    judged = [rule for rule in QUANTITY_RULES if rules.on(rule.name)]
    for quantity in quantities:
        reading.look_at(quantity)
        decision = next((d for rule in judged if (d := rule.unit(quantity, reading)) is not None), None)
        if decision is None:  # no rule accepts it
            decision = Flag(LEAP if quantity.on_path else UNREACHABLE, "leap" if quantity.on_path else "unreachable")
        if isinstance(decision, Flag):
            return _blame(quantity, decision, reading)
        if decision.checked:
            reading.checked.add(quantity.step)
        if decision.off_path:
            reading.off_path.append(quantity)
        result = not matches(quantity, reading.given, rules) if decision.result is None else decision.result
        reading.accepted.append((quantity, result))
        reading.known.add(quantity.value)
        if result:
            reading.derived.append(quantity.value)
    if rules.on("closing_conclusion"):
        answer = closing_conclusion(answer, concluded, reading)
    wrong = answer is not None and reference.answer is not None and not _same_answer(answer, reference.answer)
    if wrong and quantities and not (rules.on("ends_on_gold_answer") and ends_on_gold_answer(quantities, reference)):
        return _wrong_answer(quantities, answer, reading)
    if capped:
        return Verdict(
            None, status="too_long", note=f"no error in the first {MAX_QUANTITIES} quantities; the rest is not judged"
        )
    return Verdict(-1, checked_steps=len(reading.checked), note=_CAPPED_NOTE if reference.capped else None)


UNREACHABLE = "not reachable from the question and the gold solution"
LEAP = "a gold value stated before it can be worked out"
_CAPPED_NOTE = f"the question or the gold solution was read to its first {MAX_READ_CHARS} characters"


def _same_answer(answer: float, gold: float) -> bool:
    return math.isclose(abs(answer), abs(gold), rel_tol=1e-6, abs_tol=1e-9)


# -- each stated quantity: the first rule with a decision decides ----------------------------------------------------


def false_calculation(quantity: Quantity, reading: Reading) -> Flag | None:
    """Rule ``false_calculation`` (``check_arithmetic``): a calculation shown false is an error, what
    the arithmetic judge flags.

    Example: Janet's ducks: "She sells 16 - 7 = 8 eggs." (16 - 7 is 9).
    """
    return Flag("a false calculation", "false") if quantity.claim_correct is False else None


def restatement(quantity: Quantity, reading: Reading) -> Accept | None:
    """Rule ``restatement``: a known value (the question's numbers, the constants, what the completion
    accepted before; rounded as written, as a percent, or converted with ``units``) is accepted; it
    counts as checked when it is a true calculation from known values that the gold makes too.

    Example: Janet's ducks: "She has 16 eggs a day." restates the question; "That leaves 9 eggs."
    after "16 - 3 - 4 = 9" restates a result.
    """
    rules = reading.rules
    if not (
        matches(quantity, reading.known_here, rules)
        or constant(quantity, rules)
        or (quantity.fraction and reading.calculated)
    ):
        return None
    result = not matches(quantity, reading.given, rules) and reading.calculated
    return Accept(checked=reading.calculated and quantity.on_path, result=result)


def on_path(quantity: Quantity, reading: Reading) -> Accept | None:
    """Rule ``on_path``: a value of the gold's path is accepted and checked when it is worked out: the
    result of a true calculation whose operands are known, or one of the gold's ways of computing it
    takes at most ``max_depth`` operations from known values, one of them a result the completion
    established (``max_depth`` 2: two gold calculations in one sentence).

    Example: Isaias's chickens: "He sells 300 * 3/5 = 180 chickens." (the gold's 180 from the
    question's numbers), then "He makes 180 * $50 = $9000.".
    """
    if not quantity.on_path:
        return None
    rules = reading.rules
    if (
        reading.calculated
        or reading.reference.worked_out(quantity, reading.given, Values(reading.derived), rules, rules.max_depth)
        or any(
            uses(
                value,
                quantity.value,
                reading.known_here,
                min(rules.max_depth, 1),
                written_tolerance(quantity.value, quantity.text),
            )
            for value in reading.derived
        )
    ):
        return Accept(checked=True)
    return None


def leap(quantity: Quantity, reading: Reading) -> Accept | None:
    """Rule ``leap`` (``leap: accept``): a value of the gold's path stated before it can be worked out
    is accepted without counting as checked; switched off (``leap: flag``), it is the first error.

    Example: the gold answer written first: "The answer is $18. She sells 9 eggs at $2."
    """
    return Accept() if quantity.on_path else None


def leads_back(quantity: Quantity, reading: Reading) -> Accept | None:
    """Rule ``leads_back``: a value off the gold's path that the lookahead found leading back to it is
    accepted (checked when worked out from known values).

    Example: Isaias's chickens: "Selling all 300 chickens at $50 would bring 300 * 50 = $15000.", then
    "15000 * 3/5 = $9000": 15000 is no gold value, and 9000 is.
    """
    if not quantity.leads:
        return None
    rules = reading.rules
    checked = reading.calculated or derivable(
        quantity.value, reading.known_here, rules.max_depth, written_tolerance(quantity.value, quantity.text)
    )
    return Accept(checked=checked, off_path=True)


def derivable_value(quantity: Quantity, reading: Reading) -> Accept | None:
    """Rule ``derivable`` (``off_path: derivable``, off by default): any value within ``max_depth``
    operations of known and gold values is accepted: the naive rule, which lets wrong operations on
    right numbers through.

    Example: Isaias's chickens: "$9000 + $2000 = $11000" (the gold subtracts) is accepted under it.
    """
    if quantity.on_path:
        return None
    rules = reading.rules
    if derivable(
        quantity.value,
        Values([*reading.known_here, *reading.path]),
        max(rules.max_depth, 1),
        written_tolerance(quantity.value, quantity.text),
    ):
        return Accept(checked=True, off_path=True)
    return None


# -- the step named for a flagged quantity ---------------------------------------------------------------------------


def result_in_another_role(quantity: Quantity, flag: Flag, reading: Reading) -> tuple[Quantity, str] | None:
    """Rule ``result_in_another_role``: when the flagged calculation is one of the gold's, by the same
    operation, with one operand replaced by a result the completion stated earlier, the last step
    stating that result is named; not when the replaced operand is a question number or a constant
    (the calculation is then the error), nor when the completion computed it by one of the gold's
    own ways (it stands in its right role there).

    Example: "80 - 18 = 62" for the gold's "80 - 54 = 26", after "6 + 6 + 6 = 18" for what all the
    lawns paid: the step stating 18 is named.
    """
    if flag.kind != "unreachable":
        return None
    replaced = _replaced_operand(quantity, reading.reference, reading.base, reading.accepted)
    if replaced is None:
        return None
    why = (
        f"a result in the role of another gold value, which step {quantity.step} uses in the gold's "
        f"calculation ({quantity.text[:40]}: {flag.why})"
    )
    return replaced, why


def restated_result(quantity: Quantity, flag: Flag, reading: Reading) -> tuple[Quantity, str] | None:
    """Rule ``restated_result``: when the flagged quantity is a calculation one of whose operands is a
    result the completion computed and then restated in a later step with no calculation and no
    operation word (not a conclusion opening with "so", "therefore", "thus", "hence"), the restating
    step is named: the result took a second role there.

    Example: "The value of the sapphires is still $6400.", after 3 of the 8 were traded, then a
    calculation with 6400: the restating step is named.
    """
    if flag.kind == "leap":
        return None
    restatement = _restated_operand(quantity, reading.accepted, reading.steps)
    if restatement is None:
        return None
    why = f"a result restated without a calculation, which step {quantity.step} uses ({quantity.text[:40]}: {flag.why})"
    return restatement, why


# -- a wrong final answer with no quantity flagged -------------------------------------------------------------------


def closing_conclusion(answer: float | None, concluded: float | None, reading: Reading) -> float | None:
    """Rule ``closing_conclusion``: when the completion states no final answer, the value its closing
    sentence concludes with is taken as its answer, if it is neither a value of the gold's path nor a
    question number (a solution cut short also ends on a conclusion).

    Example: a few-shot reply ending "So, Soledad needs to hike 185 miles per day." with no answer line.
    """
    if answer is None and concluded is not None and not reading.path.has(concluded) and not reading.base.has(concluded):
        return concluded
    return answer


def ends_on_gold_answer(quantities: list[Quantity], reference: Reference) -> bool:
    """Rule ``ends_on_gold_answer``: a chain whose last quantity is the gold's answer has a misread
    answer line, not a wrong step: no step is named.

    Example: "... our answer is 5/24 ... so m + n = 29" where the last quantity is the gold's 29.
    """
    return _same_answer(quantities[-1].value, reference.answer)


def _wrong_answer(quantities: list[Quantity], answer: float, reading: Reading) -> Verdict:
    """No quantity was flagged but the final answer is not the gold's: a wrong answer means a wrong
    step, the one the first answer rule that applies names; never the answer line (it is no step).
    No rule names one (no step states the answer): no error named."""
    stating = [q for q in quantities if _same_answer(q.value, answer)]
    for rule in NAMING_RULES:
        if reading.rules.on(rule.name):
            named = rule.unit(stating, answer, reading)
            if named is not None:
                return _flag(named[0], reading.checked, named[1])
    return Verdict(-1, checked_steps=len(reading.checked))


def first_off_path(stating: list[Quantity], answer: float, reading: Reading) -> tuple[Quantity, str] | None:
    """Rule ``first_off_path``: with a wrong final answer, the first value accepted off the gold's path
    is named: the chain left the path there and came back to it by coincidence.

    Example: "30 + 18 = 48", then "30 - 48 = -18", 18 a gold value, and the answer 18 against the
    gold's 12: the step stating 48 is named.
    """
    if not reading.off_path:
        return None
    return reading.off_path[0], f"off the gold's path, and the final answer {answer:g} is not the gold's"


def _calculations(stating: list[Quantity]) -> list[Quantity]:
    return [q for q in stating if q.operands is not None and not q.fraction]


def answer_equation(stating: list[Quantity], answer: float, reading: Reading) -> tuple[Quantity, str] | None:
    """Rule ``answer_equation``: a wrong answer that solves an equation of the completion names the
    step setting that equation up.

    Example: "x - $15 = $0" sets up the wrong answer 15: that step is named.
    """
    solutions = [q for q in _calculations(stating) if q.solved]
    return (solutions[0], f"the final answer {answer:g}, not the gold's") if solutions else None


def answer_calculation(stating: list[Quantity], answer: float, reading: Reading) -> tuple[Quantity, str] | None:
    """Rule ``answer_calculation``: a wrong answer that a calculation results in names the last such
    step: the one that commits it as the answer.

    Example: "$300 - $150 = $150" after the right "$300/2 = $150" (a value of the path taken as the
    answer): the subtraction's step is named.
    """
    calculations = _calculations(stating)
    return (calculations[-1], f"the final answer {answer:g}, not the gold's") if calculations else None


def answer_statement(stating: list[Quantity], answer: float, reading: Reading) -> tuple[Quantity, str] | None:
    """Rule ``answer_statement``: else the last step stating the wrong answer is named.

    Example: "She has 3 small bags." stating the wrong answer 3 (a number of the question) after the
    right steps: that step is named.
    """
    return (stating[-1], f"the final answer {answer:g}, not the gold's") if stating else None


def _replaced_operand(
    quantity: Quantity, reference: Reference, base: Values, accepted: list[tuple[Quantity, bool]]
) -> Quantity | None:
    """A calculation off the gold's path that is one of the gold's calculations with one operand
    replaced by a result the completion stated earlier ("80 - 18 = 62" for the gold's "80 - 54 = 26",
    after "6 + 6 + 6 = 18" for what all the lawns paid): the calculation is the right one and the
    replaced operand is where the chain went wrong, so the step stating it (the last one before) is
    named. Not when the replaced operand is a question number or a constant (restating the question
    is no error: the calculation is), nor when the completion computed it the gold's own way (then
    it stands in its right role and the calculation using it is the error). ``base``: the question's
    numbers and the constants."""
    if quantity.operands is None or quantity.fraction or quantity.solved or len(quantity.operands) < 2:
        return None
    result = quantity.worked if quantity.worked is not None else quantity.value
    replaced = {
        value
        for derivation in reference.derivations
        if len(derivation.operands) == len(quantity.operands) and reference.gold.has(derivation.value)
        for value, gold_operands in [_one_replaced(quantity.operands, derivation.operands)]
        if value is not None and _same_operation(quantity.operands, result, gold_operands, derivation.value)
    }
    for value in sorted(replaced):
        if base.has(value):
            continue
        stating = [q for q, _ in accepted if q.step < quantity.step and math.isclose(q.value, value, rel_tol=1e-6)]
        if stating and not any(_computed_the_gold_way(q, reference) for q in stating):
            return stating[-1]
    return None


def _paired(operands: tuple[float, ...], gold_operands: tuple[float, ...]) -> tuple[list[float | None], list[float]]:
    """Each operand's counterpart among the gold's (None where none is left; each pairs once), and
    the gold's operands left over."""
    rest = list(gold_operands)
    aligned: list[float | None] = []
    for operand in operands:
        hit = next((i for i, g in enumerate(rest) if math.isclose(g, operand, rel_tol=1e-6)), None)
        aligned.append(None if hit is None else rest.pop(hit))
    return aligned, rest


def _one_replaced(operands: tuple[float, ...], gold_operands: tuple[float, ...]) -> tuple[float | None, tuple]:
    """The one operand with no counterpart among the gold's, and the gold's operands in the order of
    the completion's (the gold's left-over operand where that one stands); (None, ()) unless exactly one."""
    aligned, rest = _paired(operands, gold_operands)
    if aligned.count(None) != 1:
        return None, ()
    position = aligned.index(None)
    aligned[position] = rest[0]
    return operands[position], tuple(aligned)


_OPERATIONS = (
    lambda a, b: a + b,
    lambda a, b: a - b,
    lambda a, b: b - a,
    lambda a, b: a * b,
    lambda a, b: a / b if b else math.nan,
    lambda a, b: b / a if a else math.nan,
)


def _same_operation(operands: tuple[float, ...], result: float, gold_operands: tuple, gold_result: float) -> bool:
    """One operation gives both results ("14000 - 1600" is no replaced "3.5 * 1600"): for two operands
    any of + - * / in either order, for more a sum or a product."""

    def both(op) -> bool:
        return math.isclose(op(*operands), result, rel_tol=1e-6) and math.isclose(
            op(*gold_operands), gold_result, rel_tol=1e-6
        )

    if len(operands) == 2:
        return any(both(op) for op in _OPERATIONS)
    return any(both(lambda *xs, op=op: op(xs)) for op in (math.fsum, math.prod))


def _computed_the_gold_way(quantity: Quantity, reference: Reference) -> bool:
    """Its operands include all of one of the gold's ways to its value (a fraction's numerator and
    denominator come with it: "3/5 * 300" has the operands 0.6, 300, 3 and 5)."""
    return quantity.operands is not None and any(
        math.isclose(d.value, quantity.value, rel_tol=1e-6) and None not in _paired(d.operands, quantity.operands)[0]
        for d in reference.derivations
    )


def _blame(quantity: Quantity, flag: Flag, reading: Reading) -> Verdict:
    """The verdict for a flagged quantity: its step, or the earlier step a blame rule names."""
    for rule in BLAME_RULES:
        if reading.rules.on(rule.name):
            named = rule.unit(quantity, flag, reading)
            if named is not None:
                return _flag(named[0], reading.checked, named[1])
    return _flag(quantity, reading.checked, flag.why)


def _restated_operand(
    quantity: Quantity, accepted: list[tuple[Quantity, bool]], steps: tuple[str, ...]
) -> Quantity | None:
    if quantity.operands is None or quantity.fraction or quantity.solved:
        return None  # an equation's numbers are what it is written with, not results it uses
    blamed = []
    for operand in quantity.operands:
        same = [(q, result) for q, result in accepted if q.step < quantity.step and math.isclose(q.value, operand)]
        computed = next((q.step for q, result in same if result), None)
        if computed is None:
            continue  # a question number or a constant restated: its role is the question's
        restated = [q for q, result in same if not result and q.step > computed and states_no_operation(steps[q.step])]
        if restated:
            blamed.append(restated[-1])
    return min(blamed, key=lambda q: q.step, default=None)


def _flag(quantity: Quantity, checked: set[int], why: str) -> Verdict:
    return Verdict(
        quantity.step,
        note=f"step {quantity.step} states {quantity.text[:80]}: {why}",
        checked_steps=len(checked | {quantity.step}),
    )


# the rules of each stage, in the order they apply (an option that also switches one: ``option``)
QUANTITY_RULES = (
    Rule("false_calculation", "quantity", false_calculation, "check_arithmetic"),
    Rule("restatement", "quantity", restatement),
    Rule("on_path", "quantity", on_path),
    Rule("leap", "quantity", leap, "leap"),
    Rule("leads_back", "quantity", leads_back),
    Rule("derivable", "quantity", derivable_value, "off_path", default_on=False),
)
BLAME_RULES = (
    Rule("result_in_another_role", "blame", result_in_another_role),
    Rule("restated_result", "blame", restated_result),
)
NAMING_RULES = (  # the answer rules that name a step, tried in order
    Rule("first_off_path", "answer", first_off_path),
    Rule("answer_equation", "answer", answer_equation),
    Rule("answer_calculation", "answer", answer_calculation),
    Rule("answer_statement", "answer", answer_statement),
)
ANSWER_RULES = (
    Rule("closing_conclusion", "answer", closing_conclusion),
    Rule("ends_on_gold_answer", "answer", ends_on_gold_answer),
    *NAMING_RULES,
)
READING_RULES = (
    Rule("constants", "reading", constants),
    Rule("units", "reading", converted, "transformations"),
    Rule("percent", "reading", percent_readings, "transformations"),
    Rule("rounding", "reading", rounded_as_written, "transformations"),
    Rule("regroup", "reading", regrouped_values, "transformations", default_on=False),
    Rule("factor_as_constant", "reading", constant_factors),
)
LOOKAHEAD_RULES = (
    Rule("lookahead", "lookahead", look_ahead, "off_path"),
    Rule("known_value_link", "lookahead", known_value_link),
    Rule("solution_by_use", "lookahead", solution_by_use),
    Rule("slip_onto_path", "lookahead", slip_onto_path),
    Rule("number_read_wrong", "lookahead", number_read_wrong),
    Rule("known_target", "lookahead", known_target),
    Rule("reached_without_it", "lookahead", reached_without_it),
    Rule("towards_answer", "lookahead", towards_answer),
)

#: Every rule, in the order the judge applies them (stages: :data:`procrl.rewards.judges.reference.rule.STAGES`).
RULES: tuple[Rule, ...] = (*READING_RULES, *LOOKAHEAD_RULES, *QUANTITY_RULES, *BLAME_RULES, *ANSWER_RULES)
RULE_NAMES: tuple[str, ...] = tuple(rule.name for rule in RULES)


@functools.lru_cache(maxsize=64)
def _check_names(off: tuple[str, ...]) -> None:
    """Refuse a rule switched off that the table does not name (a typo would switch nothing off)."""
    unknown = [name for name in off if name not in RULE_NAMES]
    if unknown:
        raise ValueError(f"unknown reference rule {unknown[0]!r} (RULES: {', '.join(RULE_NAMES)})")


def rules_table() -> str:
    """The table as Markdown: stage, rule, default, the option that also switches it, and what it says."""
    lines = ["| stage | rule | default | option | what it says |", "|---|---|---|---|---|"]
    for rule in RULES:
        option = f"`{rule.option}`" if rule.option else ""
        lines.append(
            f"| {rule.stage} | `{rule.name}` | {'on' if rule.default_on else 'off'} | {option} | "
            f"{rule.summary.replace('|', '/')} |"
        )
    return "\n".join(lines) + "\n"
