"""The reference first-error judge (``first_error: {backend: reference}``): no model; every
quantity a step states is checked against the question's numbers and the gold solution's
intermediate values; k = the first step stating a quantity that cannot be reached.

Why: the arithmetic judge only catches a calculation that is false. Most reasoning errors in
GSM8K-style solutions are a wrong operation on right numbers, a misread quantity or a skipped
condition: every equation is true, but the solution states a number the gold solution never
reaches (``9000 + 2000 = 11000`` for a gold ``9000 - 2000 = 7000``). GSM8K-style training data
carries every intermediate quantity of a sound solution (``<<48/2=24>>24``); this judge uses them.

**What a step states** is read with the arithmetic judge's reader (:mod:`procrl.rewards.quantities`:
LaTeX, unicode operators, markdown, bullets, currency, thousands separators, unit words): every
number it writes (:func:`~procrl.rewards.quantities.stated_numbers`; magnitudes, since a ``-`` may be an
operator or a dash; "Step 3" labels and years after "in"/"since"/... are not quantities) and
every calculation it shows (:func:`~procrl.rewards.quantities.find_claims`: the result of ``a op b = c``
or ``<<a op b=c>>`` with its operands).

**What is known** at a point of the completion:

* the question's numbers *Q*: digits, fractions (the value and both parts), percents (as written
  and over 100), number words ("three", "half", "a dozen", "twice"), and the constants 0, 1, 2,
  100; with ``units``, a conversion factor of the unit written after a number or of two units
  its step names ("60 minutes", "3 hours x 60 = 180 minutes", "7 days", "100 cents");
* the gold's path *G*: every number the gold solution states that the question does not
  (calculator results, results of its equations and its prose's numbers, fraction parts, the
  ``#### N`` or ``\\boxed{}`` answer); with ``percent`` what is left of or added to a share of
  the question (``100% - 30% = 70%``, ``1 - 1/3``); with ``regroup`` (off by default) the partial
  results of its calculations regrouped: runs of neighbouring terms or factors of one chain
  (``16 - 3 - 4`` also gives ``3 + 4 = 7``; operands that are earlier gold results are expanded
  first, so ``12 + 5`` after ``3 * 4 = 12`` is one chain) and a sum distributed over the factors
  it multiplies (``(5 + 3) * 2`` gives ``5 * 2`` and ``3 * 2``). For each gold value the judge
  keeps how the gold computes it: its operand values, and for a result among them whether it is
  one (a completion must have established it);
* what the completion established before it: every quantity accepted so far.

**The rule**, for each stated quantity in reading order; k = the step of the first one that is
not accepted:

1. ``check_arithmetic``: a calculation shown false is an error (what the arithmetic judge flags);
2. restatement: a known value (rounded as written, as a percent, or with ``units`` converted into
   the unit written after it from another unit its step names: "150 minutes" for 2.5 hours) is
   accepted;
3. on the gold's path: a value of *G* is accepted. It is *worked out* when it is the result of a
   true calculation whose operands are known, or when one of the gold's ways of computing it
   takes at most ``max_depth`` operations from known values, one of them a result the completion
   established (``max_depth`` 2: two gold calculations in one sentence). Otherwise it is a leap
   (the gold answer written first, or the answer of a one-step problem stated from the question's
   numbers alone): ``leap: accept`` (default) accepts it without counting it as checked,
   ``flag`` makes it an error;
4. off the gold's path (``off_path``): ``lookahead`` (default) accepts a value from which a later
   quantity of the completion reaches the gold's path: a calculation with it among its operands,
   or a value within ``max_depth`` operations (``+ - * /`` over pairs) of it and what is known
   there that the gold's own ways do not reach without it; recursively, so an alternative
   decomposition passes ("3 + 4 = 7 eggs", then "16 - 7 = 9 eggs"; "5 * 12 = 60 minutes", then
   "60 / 10 = 6") while a wrong operation on right numbers leads nowhere and is flagged where it is
   first stated. It also accepts a true calculation whose result is one operation with a number of
   the question from the gold's answer ("300 songs * 10 hours = 3000 hours" for a gold
   ``20 * 300 = 6000``, ``6000 * 10 = 60000``), whether or not a later step uses it: the error is
   then the later step that does not. ``derivable`` accepts any value within ``max_depth`` operations of known and
   gold values (the naive rule: it lets wrong operations on right numbers through); ``flag``
   flags every value off the path (the strict rule: it flags alternative decompositions).

Transformations (``transformations``, default ``[units, percent, rounding]``): ``units``,
``percent`` (also: a number written with ``%`` stands for its value over 100, on both sides),
``rounding`` (a value written with d decimals matches one that rounds or cuts to it; a whole
number matches the floor, ceiling or nearest whole of a non-whole value), ``regroup``. Measured
on real GSM8K solutions (docs/first-error.md "The reference judge"), ``regroup`` lets more wrong operations
through (its partial results coincide with wrong values) than it saves sound ones, which the
lookahead already accepts when they lead back to the path; it stays an option. Order of operands
needs no option: magnitudes are compared, so ``a - b`` and ``b - a`` state the same quantity.

**A wrong final answer is never "no error"**: when no quantity is flagged but the final answer
the completion states (``JudgeItem.answer``: its ``#### N``, ``\\boxed{}``, "the answer is" or bold
last line; a last number alone states none, so a solution cut short is judged by its quantities
alone) is not the gold's, a wrong step is named: the first value accepted off the gold's path (the chain left
the path there and came back to it by coincidence: "30 + 18 = 48", then "30 - 48 = -18", 18 a
gold value, the answer 18 against the gold's 12), else the first step whose calculation results
in the wrong answer ("30 / 10 = 3 small bags", 3 a number of the question), else the last step
stating it. Never the answer line (it is no step); when no step states the answer, or the chain
ends on the gold's answer (the answer line read is then a misread one: "our answer is 5/24 ...
so m + n = 29"), -1; a gold that is only a final answer stays no opinion (``no_reference``).
Rules that blame an earlier step for a flagged one (an operand restated in a second role, an
operand stated without a calculation, a step whose words commit to an operation, a plan step just
before) and a calculation landing on a question number by an operation the gold does not take
were measured on the development split and not adopted (docs/first-error.md).

**Bounded work**: a question and a gold solution are read to their first ``MAX_READ_CHARS``
characters (the gold's answer line wherever it is; the verdict's note says so), a completion to
its first ``MAX_QUANTITIES`` quantities (more, with no error among them: None, status
``too_long``, resolved by the fallback), the lookahead reads ``LOOKAHEAD_WINDOW`` quantities on
either side, and a gold calculation is expanded into a later one only up to ``_MAX_SUBSTITUTED``
numbers: the cost grows linearly with the text.

A step that states no quantity (prose, a plan) is neither an error nor checked. ``checked_steps``
counts the steps with a quantity worked out on the gold's path (or off it and leading back to
it): a chain with none (hedging, copying the question's numbers, stating the gold answer without
working it out) is ``unverified``, and the first-error component gives it ``unverified_score``
(default -1), never the 0 of a checked chain.

**No reference**: when the gold is only a final answer (no value beyond the question's numbers
and the answer, no calculation), there is nothing to check against: the verdict is None with
status ``no_reference`` (counted as ``failures/no_reference``), resolved by the component's
``fallback`` (``group_mean`` by default): a defined no-opinion, never the best score.

Simplified on purpose: magnitudes only; derivations are binary ``+ - * /``; algebra the gold
states in symbols (``16x + 80``) is read through its numbers only, so solutions of "what is x"
questions are flagged more often; a value equal to a question number is a restatement even when a
step reached it by a wrong calculation (only ``check_arithmetic`` sees that). Pure text in,
verdicts out; the gold's values are cached per (question, gold) pair.
"""

from __future__ import annotations

import ast
import bisect
import functools
import math
import re
from dataclasses import dataclass, field
from itertools import combinations

from procrl.rewards.judges.protocol import Judge, JudgeItem, Verdict
from procrl.rewards.judges.settings import TRANSFORMATIONS, ReferenceRules, ReferenceSettings
from procrl.rewards.quantities import (
    NotArithmeticError,
    decimals,
    evaluate,
    find_claims,
    normalize_expression,
    stated_numbers,
    values_match,
)
from procrl.rewards.quantities.units import canonical_unit, conversion_factors, own_factors, units_named

__all__ = ["Reference", "ReferenceJudge", "ReferenceRules", "TRANSFORMATIONS", "judge_steps", "read_reference"]

CONSTANTS = (0.0, 1.0, 2.0, 100.0)  # without a unit: what every solution may use (100: a percent's base)

DEFAULT_RULES = ReferenceRules()  # frozen, so one shared default is safe


_MAX_CHAIN = 8  # terms / factors of one gold calculation regrouped
# Bounds on work (every completion, question and gold gets a verdict in bounded time; real GSM8K
# solutions state at most a few hundred quantities, their golds and questions are under 2 KB):
MAX_QUANTITIES = 1000  # quantities of a completion judged; a longer chain with no error among them: too_long
MAX_READ_CHARS = 20_000  # characters of a question and of a gold solution read (the gold's answer line always)
_MAX_SUBSTITUTED = 2 * _MAX_CHAIN  # numbers of a gold calculation expanded into a later one
LOOKAHEAD_WINDOW = 32  # later quantities the lookahead reads from an off-path one, and earlier ones it uses
_MAX_PARTIALS = 4000  # regrouped partial results kept per gold solution

# Number words of questions ("three", "half", "a dozen"): their values count as question numbers.
_UNITS_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS_WORDS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_OTHER_WORDS = {
    "hundred": (100,),
    "thousand": (1000,),
    "million": (1e6,),
    "dozen": (12,),
    "dozens": (12,),
    "score": (20,),
    "half": (0.5, 2),
    "halves": (0.5, 2),
    "twice": (2,),
    "double": (2,),
    "doubles": (2,),
    "triple": (3,),
    "triples": (3,),
    "thrice": (3,),
    "quadruple": (4,),
    "quarter": (0.25, 4),
    "quarters": (0.25, 4),
    "third": (1 / 3, 3),
    "thirds": (1 / 3, 3),
    "fourth": (0.25, 4),
    "fourths": (0.25, 4),
    "fifth": (0.2, 5),
    "fifths": (0.2, 5),
    "sixth": (1 / 6, 6),
    "eighth": (0.125, 8),
    "tenth": (0.1, 10),
    "pair": (2,),
    "pairs": (2,),
    "week": (7,),
    "weekly": (7,),
    "fortnight": (14,),
    "percent": (100,),
}
_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)?")


# --- values with tolerance ---------------------------------------------------------------------


class _Values:
    """A set of magnitudes looked up with float tolerance (and, on request, rounding as written)."""

    def __init__(self, values=()):
        self._sorted: list[float] = []
        self.percents: list[float] = []  # question numbers written as percents
        for value in values:
            self.add(value)

    @classmethod
    def of_sorted(cls, values: list[float]) -> _Values:
        """From magnitudes already sorted and distinct (no re-insertion: linear)."""
        made = cls()
        made._sorted = values
        return made

    def copy(self) -> _Values:
        made = _Values.of_sorted(list(self._sorted))
        made.percents = list(self.percents)
        return made

    def without(self, value: float) -> _Values:
        """A copy without the members close to ``value``."""
        value = abs(value)
        return _Values.of_sorted([v for v in self._sorted if not math.isclose(v, value, rel_tol=1e-9, abs_tol=1e-12)])

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
        """``value`` as written in ``text`` equals a member, or (``rounding``) is one rounded or cut
        to the decimals shown, or a whole number next to a non-whole member."""
        if self.has(value):
            return True
        if not rounding:
            return False
        places = decimals(text)
        window = 10.0**-places if places else 1.0
        for member in self.near(value, window + 1e-9):
            if places and values_match(member, abs(value), text.strip().lstrip("$£€¥₹ ")):
                return True
            if not places and not float(member).is_integer() and abs(value) in (math.floor(member), math.ceil(member)):
                return True
        return False


def _tolerance(value: float, text: str | None = None) -> float:
    """How far a derivation may land from ``value`` as written (its rounding, else float noise)."""
    places = decimals(text) if text else 0
    if places:
        return 10.0**-places  # rounded or cut to the written decimals
    return max(1e-6 * abs(value), 1e-9)


def _derivable(target: float, known: _Values, depth: int, tolerance: float) -> bool:
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
                if inner > 0 and _derivable(inner, known, 1, slack):
                    return True
            if a:
                for inner, slack in ((target / a, tolerance / a), (target * a, tolerance * a)):
                    if inner > 0 and _derivable(inner, known, 1, slack):
                        return True
    return False


def _uses(value: float, target: float, known: _Values, depth: int, tolerance: float) -> bool:
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
        if any(reached and _uses(reached, target, known, 1, tolerance) for reached in firsts):
            return True  # (value op a) op b
        for inner, slack in (
            (target - value, tolerance),
            (value - target, tolerance),
            (target + value, tolerance),
            (target / value, tolerance / value),
            (target * value, tolerance * value),
        ):
            if inner > 0 and _derivable(inner, known, 1, slack):
                return True  # (a op b) op value
    return False


# --- the gold's values -------------------------------------------------------------------------


def question_numbers(question: str | None) -> _Values:
    """The question's numbers: digits (fractions with both parts, percents as written), number words."""
    values = _Values()
    if not question:
        return values
    question = question[:MAX_READ_CHARS]
    for number in stated_numbers(question):
        values.add(number.value)
        if number.percent:
            values.add(number.value / 100)
            values.percents.append(number.value)
        if number.parts:
            values.add(number.parts[0])
            values.add(number.parts[1])
    for match in _WORD.finditer(question):
        word = match.group(0).lower()
        if "-" in word:
            tens, _, unit = word.partition("-")
            if tens in _TENS_WORDS and unit in _UNITS_WORDS:
                values.add(_TENS_WORDS[tens] + _UNITS_WORDS[unit])
                continue
        if word in _UNITS_WORDS:
            values.add(_UNITS_WORDS[word])
        elif word in _TENS_WORDS:
            values.add(_TENS_WORDS[word])
        for value in _OTHER_WORDS.get(word, ()):
            values.add(value)
    return values


def _tree(expression: str) -> ast.AST | None:
    try:
        return ast.parse(normalize_expression(expression), mode="eval").body
    except (NotArithmeticError, SyntaxError, ValueError, RecursionError):
        return None


def _value(node: ast.AST) -> float | None:
    try:
        return abs(evaluate(ast.unparse(node)))  # the arithmetic judge's bounded evaluator
    except (NotArithmeticError, ValueError, RecursionError):
        return None


def _flatten(node: ast.AST, kind: str, sign: int = 1) -> list[tuple[int, ast.AST]]:
    """Terms (kind "sum": ``(sign, node)``) or factors ("product": ``(exponent, node)``) of a chain."""
    if isinstance(node, ast.BinOp):
        if kind == "sum" and isinstance(node.op, (ast.Add, ast.Sub)):
            right = sign if isinstance(node.op, ast.Add) else -sign
            return _flatten(node.left, kind, sign) + _flatten(node.right, kind, right)
        if kind == "product" and isinstance(node.op, (ast.Mult, ast.Div)):
            right = sign if isinstance(node.op, ast.Mult) else -sign
            return _flatten(node.left, kind, sign) + _flatten(node.right, kind, right)
    return [(sign, node)]


def _combine(kind: str, chosen: tuple[tuple[int, float], ...]) -> float | None:
    """The value of some items of a chain: a signed sum, or a product (divisors alone: their
    product, "48 / 2 / 3" divides by 2 * 3 = 6)."""
    if kind == "sum":
        return abs(sum(sign * value for sign, value in chosen))
    if all(sign < 0 for sign, _ in chosen):
        return math.prod(value for _, value in chosen)
    if any(sign < 0 and not value for sign, value in chosen):
        return None
    return abs(math.prod(value if sign > 0 else 1 / value for sign, value in chosen))


class _Gold:
    """The gold's values being collected: results, regrouped partial results and, for each, the
    operand values it is computed from (its derivations)."""

    def __init__(self):
        self.regrouped = _Values()
        self.derivations: list[Derivation] = []

    def add(self, value: float, operands, regrouped: bool) -> None:
        """``operands``: ``(value, leaves)`` pairs (leaves: the numbers of the question or the gold
        an operand is computed from; one for a plain number)."""
        if regrouped:
            self.regrouped.add(value)
        if len(self.derivations) < _MAX_PARTIALS:
            self.derivations.append(
                Derivation(abs(value), tuple(abs(v) for v, _ in operands), tuple(n > 1 for _, n in operands))
            )

    def walk(self, node: ast.AST) -> None:
        """Record ``node``'s chain (its value from its items, and with regrouping every sub-chain
        from its items and from any split of them in two), then the items' own chains."""
        if not isinstance(node, ast.BinOp) or len(self.derivations) >= _MAX_PARTIALS:
            return
        kind = "sum" if isinstance(node.op, (ast.Add, ast.Sub)) else "product"
        items = _flatten(node, kind)
        values = [(sign, _value(child)) for sign, child in items]
        if any(v is None for _, v in values):
            return
        leaves = [_leaves(child) for _, child in items]
        whole = _combine(kind, tuple(values))
        if whole is not None:
            self.add(whole, tuple(zip((v for _, v in values), leaves)), regrouped=False)
        if len(values) <= _MAX_CHAIN:
            for size in range(2, len(values) + 1):
                # runs of neighbouring items: "16 - 3 - 4" gives 13 and 3 + 4 = 7 (all subsets would
                # also give 16 - 4 = 12 and, on longer chains, many coincidences: measured worse)
                for start in range(len(values) - size + 1):
                    chosen, counts = tuple(values[start : start + size]), leaves[start : start + size]
                    value = _combine(kind, chosen)
                    if value is None:
                        continue
                    if size < len(values):
                        self.add(value, tuple(zip((v for _, v in chosen), counts)), regrouped=True)
                    for cut in range(1, size // 2 + 1):
                        for part in combinations(range(size), cut):
                            rest_part = [i for i in range(size) if i not in part]
                            first = _combine(kind, tuple(chosen[i] for i in part))
                            rest = _combine(kind, tuple(chosen[i] for i in rest_part))
                            if first is not None and rest is not None:
                                self.add(
                                    value,
                                    ((first, sum(counts[i] for i in part)), (rest, sum(counts[i] for i in rest_part))),
                                    regrouped=size < len(values),
                                )
        if kind == "product":  # (a + b) * c: a * c and b * c (a sum's terms over the other factors)
            for index, (sign, child) in enumerate(items):
                terms = _flatten(child, "sum")
                others = [(s, v) for j, (s, v) in enumerate(values) if j != index]
                factor = _combine(kind, tuple(others)) if others else None
                if sign < 0 or len(terms) < 2 or factor is None or all(s < 0 for s, _ in others):
                    continue
                spread = sum(n for j, n in enumerate(leaves) if j != index)
                for _, term in terms:
                    term_value = _value(term)
                    if term_value is not None:
                        self.add(term_value * factor, ((term_value, _leaves(term)), (factor, spread)), regrouped=True)
        for _, child in items:
            self.walk(child)


def _leaves(node: ast.AST) -> int:
    return sum(isinstance(child, ast.Constant) for child in ast.walk(node))


@dataclass(frozen=True)
class Derivation:
    """One way the gold (or a regrouping of it) computes ``value``: from ``operands``; an operand
    that is ``composite`` is itself a result (a completion must have established it)."""

    value: float
    operands: tuple[float, ...]
    composite: tuple[bool, ...]


class _Substitute(ast.NodeTransformer):
    """Operands that are earlier gold results (not question numbers) become their calculations."""

    def __init__(self, trees: list[tuple[float, ast.AST]], question: _Values):
        self.trees, self.question = trees, question

    def visit_Constant(self, node):
        if isinstance(node.value, (int, float)) and not self.question.has(node.value):
            for value, tree in reversed(self.trees):
                if math.isclose(value, abs(node.value), rel_tol=1e-9, abs_tol=1e-9):
                    return tree
        return node


@dataclass
class Reference:
    """What the gold solution gives: the question's numbers, the gold's values (``gold``: stated
    by it; ``regrouped``: partial results of its calculations regrouped), for each how the gold
    computes it (``derivations``: value, operand values), and its answer."""

    question: _Values
    gold: _Values
    regrouped: _Values
    derivations: list[Derivation]
    answer: float | None
    shares: _Values = field(default_factory=_Values)  # what is left of (or added to) a share of the question
    capped: bool = False  # the question or the gold was read to its first MAX_READ_CHARS characters

    def path(self, rules: ReferenceRules) -> _Values:
        return _Values(
            [
                *self.gold,
                *(self.regrouped if "regroup" in rules.transformations else ()),
                *(self.shares if "percent" in rules.transformations else ()),
            ]
        )

    def worked_out(
        self, quantity: _Quantity, base: _Values, established: _Values, rules: ReferenceRules, depth: int
    ) -> bool:
        """One of the gold's ways of computing the quantity's value takes at most ``depth``
        operations from what is known: plain numbers known (``base``: the question's, constants;
        or ``established``), results established by the completion (``depth`` 2: or worked out in
        turn from known values in one operation)."""
        if depth <= 0:
            return False
        rounding = "rounding" in rules.transformations
        regroup = "regroup" in rules.transformations
        for derivation in self.derivations:
            if len(derivation.operands) - 1 > depth or (not regroup and not self.gold.has(derivation.value)):
                continue
            if not any(established.has(o) for o in derivation.operands):
                continue  # from the question's numbers alone: a leap (the answer of a one-step problem)
            if not any(
                _close_written(derivation.value, reading, quantity.text, rounding)
                for reading in _readings(quantity, rules)
            ):
                continue
            if all(
                self._operand_known(o, composite, base, established, depth)
                for o, composite in zip(derivation.operands, derivation.composite)
            ):
                return True
        return False

    def _operand_known(self, operand: float, composite: bool, base: _Values, established: _Values, depth: int) -> bool:
        if established.has(operand) or (not composite and base.has(operand)):
            return True
        return (
            depth >= 2
            and composite
            and any(
                math.isclose(r.value, operand, rel_tol=1e-6)
                and len(r.operands) == 2
                and all(established.has(o) or (not c and base.has(o)) for o, c in zip(r.operands, r.composite))
                for r in self.derivations
            )
        )


def _close_written(value: float, stated: float, text: str, rounding: bool) -> bool:
    return _Values([value]).has_written(stated, text, rounding)


_GOLD_ANSWER = re.compile(r"####\s*([^\n]*)")


@functools.lru_cache(maxsize=4096)
def read_reference(question: str | None, gold: str | None) -> Reference | None:
    """The gold's values, or None when the gold is only a final answer (nothing to check against)."""
    from procrl.core.answers import extract_boxed, parse_number

    if not gold or not str(gold).strip():
        return None
    text = str(gold)
    asked = question_numbers(question)
    answer_text = (_GOLD_ANSWER.findall(text) or [None])[-1]
    answer = parse_number(answer_text) if answer_text is not None else parse_number(extract_boxed(text))
    body = _GOLD_ANSWER.split(text, maxsplit=1)[0] if answer_text is not None else text
    capped = len(body) > MAX_READ_CHARS
    body = body[:MAX_READ_CHARS]
    numbers = stated_numbers(body)
    if (
        answer is None
        and len(numbers) == 1
        and not re.search(r"[A-Za-z\d]", body[: numbers[0].start] + body[numbers[0].end :])
    ):
        return None  # a bare answer ("18", "$1,500")
    values = _Values()
    for number in numbers:
        if _STEP_LABEL.search(body, max(0, number.start - 8), number.start):
            continue
        readings = (number.value, number.value / 100) if number.percent else (number.value,)
        for value in readings + (number.parts or ()):
            if not asked.has(value):
                values.add(value)
    claims = find_claims(body)
    collected = _Gold()
    shares = _Values()  # "100% - 30% = 70%", "1 - 1/3 = 2/3": what is left of a share, or added to it
    for whole, share in [(1.0, v) for v in asked if 0 < v < 1] + [(100.0, v) for v in asked.percents if 0 < v < 100]:
        shares.add(whole - share)
        shares.add(whole + share)
    trees: list[tuple[float, ast.AST]] = []
    for claim in claims:
        tree = _tree(claim.left)
        if not isinstance(tree, ast.BinOp):
            continue  # "<<30=30>>": a restatement, not a calculation
        values.add(claim.right_value)
        tree = _Substitute(trees, asked).visit(tree)
        collected.walk(tree)
        if _leaves(tree) <= _MAX_SUBSTITUTED:
            trees.append((abs(claim.right_value), tree))  # a larger one is not expanded into later ones
    intermediates = [v for v in values if answer is None or not math.isclose(v, abs(answer), rel_tol=1e-9)]
    if not intermediates and not claims:
        return None  # a bare answer: no intermediate value to check a step against
    if answer is not None:
        values.add(answer)
    return Reference(
        asked,
        values,
        collected.regrouped,
        collected.derivations,
        answer,
        shares,
        capped or bool(question and len(question) > MAX_READ_CHARS),
    )


# --- the completion ----------------------------------------------------------------------------


@dataclass
class _Quantity:
    step: int
    value: float
    text: str
    operands: tuple[float, ...] | None = None  # a calculation's result: the numbers of its left side
    claim_correct: bool | None = None
    percent: bool = False
    unit: str | None = None  # the unit written after it, as a name of units.UNITS
    named: frozenset[str] = frozenset()  # the units its step names
    fraction: bool = False  # "3/5", "\\frac{3}{5}": ``operands`` are its two parts
    on_path: bool = False  # a gold value (or a transformation of one)
    leads: bool = False  # lookahead: a later quantity reaches a gold value from it


_STEP_LABEL = re.compile(r"(?i)\bstep\s*$")


def _step_quantities(index: int, step: str) -> list[_Quantity]:
    """The quantities of one step in reading order: its numbers, a calculation's result carrying
    its operands (annotations, blanked in the text, placed where they stand)."""
    numbers = stated_numbers(step)
    starts = [n.start for n in numbers]
    claims = find_claims(step)
    named = units_named(step)
    results: dict[int, _Quantity] = {}
    placed: list[tuple[int, _Quantity]] = []
    for claim in claims:
        if claim.kind == "annotation":
            inside = stated_numbers(claim.left)
            operands = tuple(n.value for n in inside) + tuple(p for n in inside if n.parts for p in n.parts)
            placed.append((claim.start, _Quantity(index, abs(claim.right_value), claim.right, operands, claim.correct)))
            continue
        equals = claim.equals if claim.equals is not None else claim.start
        # the numbers are in reading order: a claim's are found by bisection (linear in a long step)
        inside = numbers[bisect.bisect_left(starts, claim.start) : bisect.bisect_left(starts, equals)]
        after = bisect.bisect_right(starts, equals)
        result = numbers[after] if after < len(numbers) and numbers[after].start < claim.end else None
        operands = tuple(n.value for n in inside) + tuple(p for n in inside if n.parts for p in n.parts)
        if result is not None and result.start not in results:
            results[result.start] = _Quantity(index, abs(claim.right_value), result.text, operands, claim.correct)
    for number in numbers:
        if _STEP_LABEL.search(step, max(0, number.start - 8), number.start):
            continue  # "Step 3:", a label, not a quantity
        if _YEAR.match(number.text) and _YEAR_BEFORE.search(step, max(0, number.start - 12), number.start):
            continue  # "in 2008": a date
        quantity = results.get(number.start) or _Quantity(index, number.value, number.text)
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
    placed.sort(key=lambda item: item[0])
    return [quantity for _, quantity in placed]


_YEAR = re.compile(r"(?:1[89]|20)\d\d$")
_YEAR_BEFORE = re.compile(r"(?i)\b(?:in|of|year|since|until|by|from|to|after|before|[a-z]+ \d{1,2},)\s*$")


def _readings(quantity: _Quantity, rules: ReferenceRules) -> list[float]:
    """The values a stated quantity may stand for: as written, and a percent as a fraction too."""
    if quantity.percent and "percent" in rules.transformations:
        return [quantity.value, quantity.value / 100]
    return [quantity.value]


def _matches(quantity: _Quantity, values: _Values, rules: ReferenceRules) -> bool:
    """The quantity (as written, rounded as written, as a percent) is one of ``values``, or
    (``units``) one of them converted into the unit written after it."""
    rounding = "rounding" in rules.transformations
    for value in _readings(quantity, rules):
        if values.has_written(value, quantity.text, rounding):
            return True
    if "units" in rules.transformations and quantity.unit:
        for factor in conversion_factors(quantity.unit, quantity.named):  # "150 minutes" for 2.5 hours
            if values.has(quantity.value * factor) or values.has(quantity.value / factor):
                return True
    return False


def _constant(quantity: _Quantity, rules: ReferenceRules) -> bool:
    """0, 1, 2, 100, and (``units``) a conversion factor of its unit or of two units its step
    names ("60 minutes", "3 hours * 60 = 180 minutes", "7 days")."""
    if any(math.isclose(quantity.value, c) for c in CONSTANTS):
        return True
    if "units" not in rules.transformations:
        return False
    named = quantity.named | ({quantity.unit} if quantity.unit else frozenset())
    own = own_factors(quantity.unit)
    return any(math.isclose(quantity.value, f) for f in own + conversion_factors(None, named))


def stated_final_answer(completion: str | None) -> float | None:
    """The final answer a completion states explicitly (``#### N``, ``\\boxed{}``, "the answer is",
    a bold last line), or None: a last number alone is no statement of an answer (a solution cut
    short, a prefix, states none)."""
    from procrl.core.answers import extract_prediction

    value, rule = extract_prediction(completion or "")
    return None if rule in ("none", "last_number") else value


def judge_steps(
    question: str | None,
    steps: tuple[str, ...],
    gold: str | None,
    rules: ReferenceRules = DEFAULT_RULES,
    answer: float | None = None,
) -> Verdict:
    """The verdict for one solution (module docstring); ``answer``: the final answer the
    completion states (None: none stated)."""
    reference = read_reference(question, gold)
    if reference is None:
        return Verdict(None, status="no_reference", note="the gold has no intermediate values to check against")
    quantities: list[_Quantity] = []
    for index, step in enumerate(steps):
        if len(quantities) > MAX_QUANTITIES:
            break  # the later steps are not read
        quantities += _step_quantities(index, step)
    capped = len(quantities) > MAX_QUANTITIES
    quantities = quantities[:MAX_QUANTITIES]
    base = _Values([*reference.question, *CONSTANTS])
    path = reference.path(rules)
    units = "units" in rules.transformations
    for quantity in quantities:
        quantity.on_path = _matches(quantity, path, rules)
    if rules.off_path == "lookahead":
        _look_ahead(quantities, reference, base, rules)
    established: list[float] = []  # every value accepted so far
    derived: list[float] = []  # those that are results, not the question's numbers restated
    checked: set[int] = set()
    off_path: list[_Quantity] = []  # accepted off the gold's path (they lead back to it)
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
            return _flag(quantity, checked, "a false calculation")
        calculated = (
            quantity.operands is not None
            and quantity.claim_correct is not False
            and all(known.has(o) for o in quantity.operands)
        )
        accepted, result = True, not _matches(quantity, given, rules)
        if _matches(quantity, known, rules) or _constant(quantity, rules) or (quantity.fraction and calculated):
            if calculated and quantity.on_path:
                checked.add(quantity.step)  # a calculation the gold makes too, landing on a known value
            result = result and calculated
        elif quantity.on_path:
            if (
                calculated
                or reference.worked_out(quantity, given, _Values(derived), rules, rules.max_depth)
                or any(
                    _uses(
                        value, quantity.value, known, min(rules.max_depth, 1), _tolerance(quantity.value, quantity.text)
                    )
                    for value in derived
                )
            ):
                checked.add(quantity.step)
            elif rules.leap == "flag":
                return _flag(quantity, checked, "a gold value stated before it can be worked out")
        elif quantity.leads:
            off_path.append(quantity)
            if calculated or _derivable(
                quantity.value, known, rules.max_depth, _tolerance(quantity.value, quantity.text)
            ):
                checked.add(quantity.step)
        elif rules.off_path == "derivable" and _derivable(
            quantity.value, _Values([*known, *path]), max(rules.max_depth, 1), _tolerance(quantity.value, quantity.text)
        ):
            off_path.append(quantity)
            checked.add(quantity.step)
        else:
            accepted = False
        if not accepted:
            return _flag(quantity, checked, "not reachable from the question and the gold solution")
        established.append(quantity.value)
        known_so_far.add(quantity.value)
        if result:
            derived.append(quantity.value)
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


def _wrong_answer(quantities: list[_Quantity], off_path: list[_Quantity], answer: float, checked: set[int]) -> Verdict:
    """No step was flagged but the final answer is not the gold's: a wrong answer means a wrong
    step. The first value accepted off the gold's path (the chain left the path there and came
    back only by coincidence), else the first step whose calculation results in the wrong answer,
    else the last step stating it; never the answer line (it is no step). No step states it (the
    answer line alone has it): no error named."""
    if off_path:
        first = off_path[0]
        return _flag(first, checked, f"off the gold's path, and the final answer {answer:g} is not the gold's")
    stating = [q for q in quantities if _same_answer(q.value, answer)]
    chosen = next((q for q in stating if q.operands is not None and not q.fraction), stating[-1] if stating else None)
    if chosen is None:
        return Verdict(-1, checked_steps=len(checked))
    return _flag(chosen, checked, f"the final answer {answer:g}, not the gold's")


def _flag(quantity: _Quantity, checked: set[int], why: str) -> Verdict:
    return Verdict(
        quantity.step,
        note=f"step {quantity.step} states {quantity.text[:80]}: {why}",
        checked_steps=len(checked | {quantity.step}),
    )


def _look_ahead(quantities: list[_Quantity], reference: Reference, base: _Values, rules: ReferenceRules) -> None:
    """Mark the off-path quantities from which a later quantity reaches a gold value (backwards,
    so that a chain of several off-path values ending on the gold's path is marked whole): the
    later one is a calculation with it among its operands, or (max_depth >= 1) within max_depth
    operations of it and the values known there, and not worked out without it."""
    windows: dict[int, tuple[_Values, _Values]] = {}  # per later quantity: the ones just before it (+ the question's)

    def earlier_than(index: int) -> tuple[_Values, _Values]:
        if index not in windows:
            window = [q.value for q in quantities[max(0, index - LOOKAHEAD_WINDOW) : index]]
            windows[index] = _Values(window), _Values([*reference.question, *window])
        return windows[index]

    for position in range(len(quantities) - 1, -1, -1):
        quantity = quantities[position]
        if quantity.on_path or base.has(quantity.value) or _constant(quantity, rules):
            continue
        for index in range(position + 1, min(len(quantities), position + 1 + LOOKAHEAD_WINDOW)):
            later = quantities[index]
            if not (later.on_path or later.leads):
                continue
            if later.operands is not None:
                if any(math.isclose(o, quantity.value, rel_tol=1e-9) for o in later.operands):
                    quantity.leads = True
                    break
                continue
            if rules.max_depth < 1:
                continue
            earlier, with_question = earlier_than(index)
            earlier = earlier.without(quantity.value)
            if later.on_path and reference.worked_out(later, base, earlier, rules, 1):
                continue  # reached without it
            # with the question's numbers and earlier quantities, not the constants: "10 - 1 = 9"
            # would let any value next to a gold one through
            before = with_question.without(quantity.value)
            if _uses(quantity.value, later.value, before, rules.max_depth, _tolerance(later.value, later.text)):
                quantity.leads = True
                break
        if not quantity.leads and _towards_answer(quantity, reference):
            quantity.leads = True


def _towards_answer(quantity: _Quantity, reference: Reference) -> bool:
    """A true calculation off the gold's path whose result is one operation with a number of the
    question away from the gold's answer ("300 songs * 10 hours = 3000 hours", then 20 playlists
    make 60000): a decomposition the gold does not write, whether or not a later step uses it."""
    if quantity.operands is None or quantity.fraction or quantity.claim_correct is False or reference.answer is None:
        return False
    return _uses(quantity.value, reference.answer, reference.question, 1, _tolerance(reference.answer))


class ReferenceJudge(Judge):
    """First error = the first step stating a quantity unreachable from the question and the gold
    solution (module docstring). Needs the gold *solution* (``JudgeItem.gold``)."""

    Settings = ReferenceSettings

    @classmethod
    def from_settings(cls, settings: ReferenceSettings, device=None) -> ReferenceJudge:
        return cls(settings.rules())

    def __init__(self, rules: ReferenceRules = DEFAULT_RULES):
        self.rules = rules

    def judge_one(self, item: JudgeItem) -> Verdict:
        return judge_steps(item.question, tuple(item.steps), item.gold, self.rules, item.answer)

    def judge_sync(self, items: list[JudgeItem]) -> list[Verdict]:
        return [self.judge_one(item) for item in items]

    async def judge(self, items: list[JudgeItem]) -> list[Verdict]:
        return self.judge_sync(items)  # pure CPU work: no thread hop
