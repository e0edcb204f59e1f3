"""The calculations a step claims, and which of them are wrong: the arithmetic first-error
verifier (sides evaluated by :func:`~procrl.rewards.quantities.evaluate.evaluate`, no ``eval``).

What a step claims and what is checked (docs/spec.md section 4c):

* GSM8K calculator annotations ``<<48/2=24>>``: the expression must evaluate to the result;
* inline equations ``48/2 = 24``: the left side is the arithmetic run before ``=`` and must
  contain an operator; the stated result is the first number after ``=`` (or the whole
  arithmetic run after it: chains ``3*2 = 6*4 = 24``, ``a op b = c op d`` and parenthesised
  chains ``(-2 + 6 + 7) = (4 + 7) = 11`` hold when consistent). Results match up to the
  rounding the text shows (``10/3 = 3.33``); a decimal written rounded is also read as the
  repeating fraction it rounds (``150 x 0.67 = 100``, ``3.33 x 12 = 40``) and carries its
  rounding error into the result (``0.5667 x 100 = 56.67``);
* a name given a calculation and restated with its value on the next line (``Total cost =
  $4.00 x 12`` / ``Total cost = $48.00``; ``Tom's age = 17 + 6`` / ``Tom's age = 23``) claims
  that the calculation gives the value.

How real models write it (the step is first rewritten into plain arithmetic, character for
character, so offsets stay valid; :func:`plain_arithmetic`):

* LaTeX: ``\\times \\cdot \\div``, ``\\frac{a}{b}`` (``\\dfrac``, ``\\tfrac``) as ``((a)/(b))``,
  ``\\left( \\right)``, ``^{2}``, ``\\text{..} \\mathrm{..} \\textbf{..} \\boxed{..}`` unwrapped,
  ``\\, \\! \\; \\quad &`` as space (``1{,}000`` and ``1\\,000`` as thousands), ``\\$ \\%``,
  the math delimiters ``\\[ \\] \\( \\) $...$``;
* unicode ``× ÷ − · ⋅``; markdown emphasis ``**...**`` (``2**3`` stays a power); list bullets
  and labels (``-``, ``*``, ``•``, ``1.``, ``(2)``) at a line start; a chain continued on the
  next line (``= $40,000 + $20,000`` under ``New total = ...``); ``20 percent``; ``20% of
  50`` and ``2/3 of 90`` (a product); ``3 times 4``; ``2(11)``;
* units and labels after a number, up to four words (``4200 pounds ÷ 1500 pounds per trip``,
  ``7 eggs * $3/egg``, ``4 \\text{ laps} \\times 400 \\text{ meters/lap}``,
  ``2 (red bolts) + 3 (blue bolts)``, ``30"``), read as blank when an operator, ``=`` or
  ``)`` follows them; currency before it; an equation after a colon, a comma, a dash or a
  bullet (``Weekly cost: $150 * 4 = $600 per month``).

Precision first: a claim is flagged only when it is plainly a calculation and plainly wrong.
Never flagged:

* statements that are not calculations: a bare number on the left (``1 hour = 60 minutes``),
  a fragment of a longer expression (``X*1/4 = ...``, ``f(3) + 2 = ...``, ``\\sqrt{16} + 2``,
  ``half of (3 + 5)``, ``6:00+48``), algebra (``2x + 3 = 7``, ``3 + 5 = 2x``, ``= 32 + x``,
  ``= 4(B - 3)``, ``= 4 days / x days``), a single letter among the words after a number (a
  variable, not a unit), mixed numbers (``= 1 1/2``, ``5 and 2/3``), spaced digits (``18
  000``), a rate written without a space (``3 cups / 1 cup/8 limes``);
* a result that does not match when the text says why it may not: the written rounding
  (``= 33 (rounded)``, ``approximately``), a whole number written for a value that is not whole
  after a division or a decimal factor (``25 / 4 = 6 boxes``, ``0.3 x $46,153 = $13,845``:
  floor, ceiling or nearest; a unit of measure only the nearest: ``3/8 * 21 = 7 hours`` is
  flagged), large operands rounded in earlier steps (``$46,153 + $13,845 =
  $60,000``: off by at most one per operand and 0.01%), a sum of different units of measure
  (``1 hour + 30 minutes = 90 minutes``, ``$3 + 50 cents``; different count nouns are summed and
  checked: ``160 sheets + 80 comforters = 240``), a conversion (``15 minutes * 4 = 1 hour``: a
  result in another unit of the same kind, or off by a factor of a conversion of the kind its
  units are: ``12 x 25 cents = $3.00``, 100 for money; a money result off by 3 or 60 is a slip:
  ``150% of $2 = $1``), a right side that spells a unit out (``2/5 of 15 tens = 2/5 x 15 x
  $10``), a multiplier word (``2 dozen + 6``, ``2 million + 500,000``, ``= $1.5 million``), a
  percent added to a plain number (``80,000 + 150%``), an implicit product with a space
  (``12 (4 + 8)``), a size in a noun phrase (``the number of 2 x 6 boards = ...``). Those
  claims are dropped (not checked), not flagged.

Cost is linear in the text length: each rewrite is one regular-expression pass with bounded
matches; an arithmetic side is looked for at most :data:`MAX_SIDE_SCAN` characters from its
``=`` (a longer run of arithmetic characters is not a calculation: the claim is skipped, as the
evaluator refuses expressions over 200 characters anyway), and every check around a character
reads a bounded neighbourhood, never a copy of the text before or after it.

Everything here is pure text in, values out.
"""

from __future__ import annotations

import dataclasses
import math
import re

from procrl.rewards.quantities.evaluate import CURRENCY, NotArithmeticError, evaluate
from procrl.rewards.quantities.excuses import excused
from procrl.rewards.quantities.notation import ANNOTATION, plain_arithmetic
from procrl.rewards.quantities.scanner import MAX_SIDE_SCAN, has_operator, scan_left, scan_right
from procrl.rewards.quantities.values import Claim, stated_matches, values_match

__all__ = ["Claim", "check_step", "find_claims", "first_wrong_step"]

_STATED_NUMBER = re.compile(r"\s*-?\s*[$£€¥₹]?\s*(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?<=\d)\s*%?")
# "25 / 1/3": a tight fraction after a spaced operator is one number (25 / (1/3)).
_TIGHT_FRACTION = re.compile(r"(?<![\d.)/])(\d+(?:\.\d+)?/\d+(?:\.\d+)?)(?![\d.(/])")
# A decimal that is a repeating fraction rounded (or cut) to what is written: 0.67, 0.33,
# 1.3333, 3.33, 2.67, 1.5833. It is read as the fraction too ("120 x 0.67 = 80").
_DECIMAL = re.compile(r"(?<![\d.])(\d+)\.(\d{2,6})(?![\d.])")
_REPEATING_DENOMINATORS = (3, 6, 7, 9, 11, 12)


def _as_fraction(match: re.Match) -> str:
    written = float(match.group(0))
    step = 10.0 ** -len(match.group(2))
    for denominator in _REPEATING_DENOMINATORS:
        numerator = round(written * denominator)
        reduced = denominator // math.gcd(numerator, denominator)
        while reduced % 2 == 0:
            reduced //= 2
        if reduced % 5 == 0:
            reduced //= 5
        if reduced == 1:
            continue  # a terminating decimal (1/4, 3/2): written exactly, not rounded
        exact = numerator / denominator
        if abs(exact - written) <= step / 2 + 1e-12 or 0 <= exact - written < step:
            return f"({numerator}/{denominator})"
    return match.group(0)


def _readings(side: str, first: float | None = None) -> list[float]:
    """Values of a side: as written (``first`` when already known), with tight fractions as
    single numbers, with rounded repeating decimals as the fractions they round (each reading
    that evaluates)."""
    values = [evaluate(side) if first is None else first]
    variants = {_TIGHT_FRACTION.sub(r"(\1)", side)}
    exact = _DECIMAL.sub(_as_fraction, side)
    variants |= {exact, _TIGHT_FRACTION.sub(r"(\1)", exact)}
    for variant in variants - {side}:
        try:
            values.append(evaluate(variant))
        except NotArithmeticError:
            pass
    return values


def _rounding_tolerance(side: str) -> float:
    """Relative error carried by operands written rounded (each may be rounded or cut at its
    last digit): the sum of 10^-d / |x| over the decimals with three or more digits (0.6333,
    0.04167) and those that round a repeating fraction (0.67, 38.89); 1.05 or 0.21 are exact."""
    total = 0.0
    for match in _DECIMAL.finditer(side):
        written = float(match.group(0))
        if written and (len(match.group(2)) >= 3 or _as_fraction(match) != match.group(0)):
            total += 10.0 ** -len(match.group(2)) / abs(written)
    return min(total, 0.05)


def _claim(text: str, visible: str, units: dict[int, str], left: str, left_start: int, position: int) -> Claim | None:
    """The claim that ``left`` (starting at ``left_start``) equals what follows the ``=`` at
    ``position``; None when the right side states no number or the claim is excused."""
    right_run = scan_right(visible, position + 1)
    if not right_run.strip():
        return None
    run_start = position + 1
    after_run = run_start + len(right_run)
    stated = _STATED_NUMBER.match(right_run)
    if stated:
        right = stated.group(0).strip()
        stated_length = stated.end()
    elif right_run.strip().startswith("("):  # "(-2 + 6 + 7) = (4 + 7)": the group is the result
        right, stated_length = right_run.strip(), len(right_run)
    else:
        return None
    if re.match(r"[ \t]?\d| and \(?\d", right_run[stated_length:] + visible[after_run : after_run + 8]):
        return None  # "1 1/2", "18 000", "5 and 2/3": a mixed number or spaced digits
    stated_end = run_start + len(right_run[:stated_length].rstrip())
    following = visible[stated_end : stated_end + 2]
    if following[:1] == "\\" or (following[:1].isalpha() and not following[1:2].isalpha()):
        return None  # "= 2x", "= 4\sqrt{2}": algebra, not a number
    proportion = r"(?:[ \t]*[A-Za-z][A-Za-z'’\-]*){1,3}[ \t]*(?:[+\-*/×÷·⋅∗−–^]|[xX][ \t])"
    if re.match(proportion, text[after_run : after_run + 80]):
        return None  # "= 4 days / x days", "= 6 people x 1 wall / x": a proportion, not a result
    try:
        right_value = evaluate(right)
        left_value = evaluate(left)
    except NotArithmeticError:
        return None
    expression, expression_value = None, None
    if right_run.strip() != right:
        try:
            expression, expression_value = right_run.strip(), evaluate(right_run)
        except NotArithmeticError:
            expression = None
    tolerance = _rounding_tolerance(left) + _rounding_tolerance(expression or right)
    claim = Claim(
        "equation",
        _shown(left),
        _shown(right),
        left_start,
        after_run,
        left_value,
        right_value,
        None if expression is None else _shown(expression),
        expression_value,
        tolerance,
        equals=position,
    )
    if claim.correct:  # as written: the usual case, no other reading needed
        return claim
    left_readings = _readings(left, left_value)
    if not stated:  # a group: its readings count like those of an expression
        agreeing = (r for r in _readings(right, right_value) if any(values_match(v, r) for v in left_readings))
        right_value = next(agreeing, right_value)
    expression_readings = _readings(expression, expression_value) if expression is not None else []
    # the readings of the two sides that agree with each other, if any
    left_value, expression_value = left_readings[0], expression_readings[0] if expression_readings else None
    for reading in left_readings:
        if stated_matches(reading, right, right_value):
            left_value = reading
            break
        agreeing = next((e for e in expression_readings if values_match(reading, e)), None)
        if agreeing is not None:
            left_value, expression_value = reading, agreeing
            break
    claim = dataclasses.replace(
        claim, left_value=left_value, right_value=right_value, right_expression_value=expression_value
    )
    if not claim.correct and excused(text, visible, claim, left, left_start, stated_end, units):
        return None
    return claim


def _shown(side: str) -> str:
    """A side as the claim shows it: spaces of blanked units and markup collapsed."""
    shown = " ".join(side.split()) if "  " in side or "\t" in side or "\n" in side else side.strip()
    if "$ " in shown or any(sign + " " in shown for sign in CURRENCY[1:]):
        for sign in CURRENCY:
            shown = shown.replace(sign + " ", sign)
    return shown


_EQUALS = re.compile(r"(?<![<>=!])=(?![=>])")
_LABEL_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9'’ \t()\-/.]{0,79}")


def _lines_of(visible: str, positions: list[int]):
    """``(position, line start, line end, equals on the line)`` for each ``=`` position, in
    one pass over the text (positions are sorted)."""
    out = []
    index, line_start = 0, 0
    while index < len(positions):
        newline = visible.find("\n", line_start)
        line_end = len(visible) if newline < 0 else newline
        on_line = []
        while index < len(positions) and positions[index] < line_end:
            if positions[index] >= line_start:
                on_line.append(positions[index])
            index += 1
        out += [(position, line_start, line_end, len(on_line)) for position in on_line]
        if newline < 0:
            break
        line_start = newline + 1
    return out


def _statement_label(visible: str, position: int, line_start: int) -> str | None:
    """The name before the ``=`` of a one-``=`` line ("Total cost = ...", "Tom's age = ..."),
    after any lead-in ending in ``:`` ``,`` ``.``; None when it is not a name."""
    head = visible[max(line_start, position - 200) : position]
    label = re.split(r"[:;,!?]|\.(?=\s)", head)[-1]
    if position - 200 > line_start and len(label) == len(head):
        return None  # no lead-in boundary within reach: a long line, not a name
    label = " ".join(label.split()).lower()
    return label if label and _LABEL_TEXT.fullmatch(label) else None


def _restated_claims(text: str, visible: str, units: dict[int, str], positions: list[int]) -> list[Claim]:
    """``Total cost = $3.00 x 10`` then, on the next line, ``Total cost = $30.00``: a name given
    a calculation and at once restated with its value is a claim (calculation = value)."""
    claims = []
    previous = None  # (label, line end, left, left start) of the last named calculation
    for position, line_start, line_end, equals in _lines_of(visible, positions):
        label = _statement_label(visible, position, line_start) if equals == 1 else None
        if label is None or line_end - position > MAX_SIDE_SCAN:
            previous = None
            continue
        restated = previous is not None and previous[0] == label and line_start - previous[1] < 400
        if restated and not visible[previous[1] : line_start].strip():
            claim = _claim(text, visible, units, previous[2], previous[3], position)
            if claim is not None:
                claims.append(claim)
        previous = None
        run = scan_right(visible, position + 1)
        rest = visible[position + 1 + len(run) : line_end]
        if run and has_operator(run) and not re.search(r"[\d=]", rest):  # "= 900 miles / 3 hours"
            try:
                evaluate(run)
            except NotArithmeticError:
                continue
            previous = (label, line_end, run.strip(), position + 1 + (len(run) - len(run.lstrip())))
    return claims


def find_claims(text: str) -> list[Claim]:
    """Every annotation and inline equation of ``text`` that is an arithmetic claim, in order.

    Claims whose sides cannot be evaluated are dropped (not arithmetic, not wrong), and so are
    claims that do not hold where the text says why they may not (rounding, units, module
    docstring). An inline equation counts only when its left side has an operator: ``1 hour =
    60 minutes`` and ``15% of the $80 = ...`` state no calculation; a name given a calculation
    and restated with its value on the next line (``Total = 17 + 6`` / ``Total = 23``) is one.

    Args:
        text: a step, or any text (LaTeX, markdown, units and currency are read).

    Returns:
        The claims in reading order, each with its sides, their values, its offsets in ``text``
        and whether it holds (``correct``).

    >>> [(c.left, c.right, c.correct) for c in find_claims("She sells 16 - 3 - 4 = 9 eggs and makes 9 * $2 = $20.")]
    [('16 - 3 - 4', '9', True), ('9 * $2', '$20', False)]
    """
    claims: list[Claim] = []
    for match in ANNOTATION.finditer(text):
        left, right = match.group(1), match.group(2)
        try:
            claims.append(
                Claim(
                    "annotation",
                    left,
                    right,
                    match.start(),
                    match.end(),
                    evaluate(left),
                    evaluate(right),
                    equals=match.start(2) - 1,
                )
            )
        except NotArithmeticError:
            continue
    if "=" not in text:
        return claims
    visible, units = plain_arithmetic(text)
    positions = [match.start() for match in _EQUALS.finditer(visible)]
    for position in positions:
        left, left_start = scan_left(visible, position)
        if not left or not has_operator(left):
            continue
        claim = _claim(text, visible, units, left, left_start, position)
        if claim is not None:
            claims.append(claim)
    claims += _restated_claims(text, visible, units, positions)
    claims.sort(key=lambda c: c.start)
    return claims


def check_step(text: str) -> list[Claim]:
    """The wrong claims of one step (empty when every arithmetic claim holds)."""
    return [claim for claim in find_claims(text) if not claim.correct]


def first_wrong_step(steps: list[str]) -> int:
    """Index of the first step with a wrong arithmetic claim, or -1."""
    for index, step in enumerate(steps):
        if check_step(step):
            return index
    return -1


# --- the numbers a text states (the reference judge reads them: procrl/rewards/judges/reference/) ---

# A number as the scanner reads it: currency before it, thousands separators, decimals, a percent
# sign, a tight fraction ("3/5", "((3)/(5))" from \\frac); not a piece of a word or of a longer
