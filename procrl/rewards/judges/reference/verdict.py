"""The first error: every stated quantity checked in reading order against what is known (the rule
of :mod:`procrl.rewards.judges.reference`), and a wrong final answer blamed on a step."""

from __future__ import annotations

import math
import re

from procrl.rewards.judges.protocol import Verdict
from procrl.rewards.judges.reference.gold import MAX_READ_CHARS, Reference, read_reference
from procrl.rewards.judges.reference.rules import CONSTANTS, constant, look_ahead, matches
from procrl.rewards.judges.reference.steps import Quantity, states_no_operation, step_quantities
from procrl.rewards.judges.reference.values import Values, derivable, uses, written_tolerance
from procrl.rewards.judges.settings import ReferenceRules
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


def judge_steps(
    question: str | None,
    steps: tuple[str, ...],
    gold: str | None,
    rules: ReferenceRules = DEFAULT_RULES,
    answer: float | None = None,
    concluded: float | None = None,
) -> Verdict:
    """The verdict for one solution (the rule of :mod:`procrl.rewards.judges.reference`); ``answer``:
    the final answer the completion states (None: none stated); ``concluded``: the value its closing
    sentence concludes with (:func:`concluded_answer`), taken as the answer when none is stated and
    it is neither a value of the gold's path nor a question number."""
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
    base = Values([*reference.question, *CONSTANTS])
    path = reference.path(rules)
    units = "units" in rules.transformations
    for quantity in quantities:
        quantity.on_path = matches(quantity, path, rules)
    if rules.off_path == "lookahead":
        look_ahead(quantities, reference, base, rules, path)
    accepted_so_far: list[tuple[Quantity, bool]] = []  # every quantity accepted, and whether it is a result
    derived: list[float] = []  # those that are results, not the question's numbers restated
    checked: set[int] = set()
    off_path: list[Quantity] = []  # accepted off the gold's path (they lead back to it)
    known_so_far = base.copy()  # the question's numbers, the constants and every value accepted so far
    for quantity in quantities:
        factors = conversion_factors(None, quantity.named) if units else ()
        given, known = base, known_so_far
        if factors:
            given, known = base.copy(), known_so_far.copy()
            for factor in factors:
                given.add(factor)
                known.add(factor)
        if rules.check_arithmetic and quantity.claim_correct is False:
            return _blame(quantity, accepted_so_far, steps, checked, "a false calculation")
        calculated = (
            quantity.operands is not None
            and quantity.claim_correct is not False
            and all(known.has(o) for o in quantity.operands)
        )
        accepted, result = True, not matches(quantity, given, rules)
        if matches(quantity, known, rules) or constant(quantity, rules) or (quantity.fraction and calculated):
            if calculated and quantity.on_path:
                checked.add(quantity.step)  # a calculation the gold makes too, landing on a known value
            result = result and calculated
        elif quantity.on_path:
            if (
                calculated
                or reference.worked_out(quantity, given, Values(derived), rules, rules.max_depth)
                or any(
                    uses(
                        value,
                        quantity.value,
                        known,
                        min(rules.max_depth, 1),
                        written_tolerance(quantity.value, quantity.text),
                    )
                    for value in derived
                )
            ):
                checked.add(quantity.step)
            elif rules.leap == "flag":
                return _flag(quantity, checked, "a gold value stated before it can be worked out")
        elif quantity.leads:
            off_path.append(quantity)
            if calculated or derivable(
                quantity.value, known, rules.max_depth, written_tolerance(quantity.value, quantity.text)
            ):
                checked.add(quantity.step)
        elif rules.off_path == "derivable" and derivable(
            quantity.value,
            Values([*known, *path]),
            max(rules.max_depth, 1),
            written_tolerance(quantity.value, quantity.text),
        ):
            off_path.append(quantity)
            checked.add(quantity.step)
        else:
            accepted = False
        if not accepted:
            why = "not reachable from the question and the gold solution"
            replaced = _replaced_operand(quantity, reference, base, accepted_so_far)
            if replaced is not None:
                return _flag(
                    replaced,
                    checked,
                    f"a result in the role of another gold value, which step {quantity.step} uses in the gold's "
                    f"calculation ({quantity.text[:40]}: {why})",
                )
            return _blame(quantity, accepted_so_far, steps, checked, why)
        accepted_so_far.append((quantity, result))
        known_so_far.add(quantity.value)
        if result:
            derived.append(quantity.value)
    if answer is None and concluded is not None and not path.has(concluded) and not base.has(concluded):
        answer = concluded  # a closing conclusion off the gold's path is the answer it states
    wrong = answer is not None and reference.answer is not None and not _same_answer(answer, reference.answer)
    # a chain ending on the gold's answer has a misread answer line, not a wrong step
    if wrong and quantities and not _same_answer(quantities[-1].value, reference.answer):
        return _wrong_answer(quantities, off_path, answer, checked)
    if capped:
        return Verdict(
            None, status="too_long", note=f"no error in the first {MAX_QUANTITIES} quantities; the rest is not judged"
        )
    return Verdict(-1, checked_steps=len(checked), note=_CAPPED_NOTE if reference.capped else None)


_CAPPED_NOTE = f"the question or the gold solution was read to its first {MAX_READ_CHARS} characters"


def _same_answer(answer: float, gold: float) -> bool:
    return math.isclose(abs(answer), abs(gold), rel_tol=1e-6, abs_tol=1e-9)


def _wrong_answer(quantities: list[Quantity], off_path: list[Quantity], answer: float, checked: set[int]) -> Verdict:
    """No step was flagged but the final answer is not the gold's: a wrong answer means a wrong
    step. The first value accepted off the gold's path (the chain left the path there and came
    back only by coincidence). Else the wrong answer is a value of the path taken as the answer
    (the chain stopped short, or ended on the wrong value): the equation it solves (the step that
    set it up), else the last calculation resulting in it (the one that commits it as the answer:
    "$300 - $150 = $150" after the right "$300/2 = $150"), else the last step stating it; never the
    answer line (it is no step). No step states it (the answer line alone has it): no error named."""
    if off_path:
        first = off_path[0]
        return _flag(first, checked, f"off the gold's path, and the final answer {answer:g} is not the gold's")
    stating = [q for q in quantities if _same_answer(q.value, answer)]
    if not stating:
        return Verdict(-1, checked_steps=len(checked))
    calculations = [q for q in stating if q.operands is not None and not q.fraction]
    solutions = [q for q in calculations if q.solved]
    chosen = solutions[0] if solutions else (calculations or stating)[-1]
    return _flag(chosen, checked, f"the final answer {answer:g}, not the gold's")


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


def _blame(
    quantity: Quantity, accepted: list[tuple[Quantity, bool]], steps: tuple[str, ...], checked: set[int], why: str
) -> Verdict:
    """The flagged quantity's step, or the step that gave one of its operands a second role: a
    result the completion computed, restated later in a step of its own with no calculation ("the
    value of the sapphires is still $6400", after 3 of the 8 were traded), then used by the flagged
    calculation. The restatement is where the chain went wrong; the flagged step only shows it."""
    restatement = _restated_operand(quantity, accepted, steps)
    if restatement is None:
        return _flag(quantity, checked, why)
    return _flag(
        restatement,
        checked,
        f"a result restated without a calculation, which step {quantity.step} uses ({quantity.text[:40]}: {why})",
    )


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
