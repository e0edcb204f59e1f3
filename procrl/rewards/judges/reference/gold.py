"""The gold solution read into its path of values: the question's numbers (digits, number words),
every value the gold states or computes, how it computes each one (its derivations), its answer."""

from __future__ import annotations

import ast
import functools
import math
import re
from dataclasses import dataclass, field
from itertools import combinations

from procrl.rewards.judges.reference.steps import STEP_LABEL, Quantity, readings
from procrl.rewards.judges.reference.values import Values
from procrl.rewards.judges.reference_rules import ReferenceRules
from procrl.rewards.quantities import NotArithmeticError, evaluate, find_claims, normalize_expression, stated_numbers
from procrl.rewards.quantities.units import CONVERSIONS

_MAX_CHAIN = 8  # terms / factors of one gold calculation regrouped
# Bounds on work (the cost grows linearly with the gold; real GSM8K golds and questions are under 2 KB):
MAX_READ_CHARS = 20_000  # characters of a question and of a gold solution read (the gold's answer line always)
_MAX_SUBSTITUTED = 2 * _MAX_CHAIN  # numbers of a gold calculation expanded into a later one
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


def question_numbers(question: str | None) -> Values:
    """The question's numbers: digits (fractions with both parts, percents as written), number words."""
    values = Values()
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
        self.regrouped = Values()
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

    def __init__(self, trees: list[tuple[float, ast.AST]], question: Values):
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

    question: Values
    gold: Values
    regrouped: Values
    derivations: list[Derivation]
    answer: float | None
    shares: Values = field(default_factory=Values)  # what is left of (or added to) a share of the question
    # conversion factors the gold calculates with and never computes ("180/60"): constants, not values of its path
    unit_factors: Values = field(default_factory=Values)
    capped: bool = False  # the question or the gold was read to its first MAX_READ_CHARS characters

    def path(self, rules: ReferenceRules) -> Values:
        """The gold's path under ``rules``: its values (less the conversion factors it only calculates
        with, rule ``factor_as_constant``), with ``regroup`` its regrouped partial results, with
        ``percent`` what is left of a share of the question."""
        factors = constant_factors(self) if rules.on("factor_as_constant") else Values()
        return Values(
            [
                *(v for v in self.gold if not factors.has(v)),
                *(regrouped_values(self) if rules.on("regroup") else ()),
                *(self.shares if rules.on("percent") else ()),
            ]
        )

    def worked_out(
        self, quantity: Quantity, base: Values, established: Values, rules: ReferenceRules, depth: int
    ) -> bool:
        """One of the gold's ways of computing the quantity's value takes at most ``depth``
        operations from what is known: plain numbers known (``base``: the question's, constants;
        or ``established``), results established by the completion (``depth`` 2: or worked out in
        turn from known values in one operation)."""
        if depth <= 0:
            return False
        rounding = rules.on("rounding")
        regroup = rules.on("regroup")
        for derivation in self.derivations:
            if len(derivation.operands) - 1 > depth or (not regroup and not self.gold.has(derivation.value)):
                continue
            if not any(established.has(o) for o in derivation.operands):
                continue  # from the question's numbers alone: a leap (the answer of a one-step problem)
            if not any(
                _close_written(derivation.value, reading, quantity.text, rounding)
                for reading in readings(quantity, rules)
            ):
                continue
            if all(
                self._operand_known(o, composite, base, established, depth)
                for o, composite in zip(derivation.operands, derivation.composite)
            ):
                return True
        return False

    def _operand_known(self, operand: float, composite: bool, base: Values, established: Values, depth: int) -> bool:
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


def constant_factors(reference: Reference) -> Values:
    """Rule ``factor_as_constant``: a conversion factor of 12 or more that a gold calculation is
    written with, and that the gold never computes nor writes after "=", is a constant there, not a
    value of its path (the smaller factors are also counts a question implies in words: octuplets,
    a cow's 4 legs; they stay).

    Example: a reading plan whose gold converts "180/60 = 3 hours": "She reads and writes 30 + 30 =
    60 pages a week." lands on 60 by coincidence and is flagged.
    """
    return reference.unit_factors


def regrouped_values(reference: Reference) -> Values:
    """Rule ``regroup`` (off by default: on real solutions it lets more wrong operations through than
    the lookahead needs): the partial results of the gold's calculations regrouped are on its path:
    runs of neighbouring terms or factors of one chain (operands that are earlier gold results are
    expanded first) and a sum distributed over the factors it multiplies.

    Example: Janet's ducks: the gold's ``16 - 3 - 4`` also gives ``3 + 4 = 7``.
    """
    return reference.regrouped


def _close_written(value: float, stated: float, text: str, rounding: bool) -> bool:
    return Values([value]).has_written(stated, text, rounding)


# A conversion factor the gold only calculates with (60 in "180/60 = 3 hours") is a constant, and a completion's
# "30 + 30 = 60 pages" lands on it by coincidence. The factors below 12 (2, 3, 4, 8, 10) are also the
# counts a question implies ("octuplets", a cow's 4 legs): those stay on the path.
_UNIT_FACTORS = frozenset(float(f) for f in CONVERSIONS.values() if f >= 12)
_AFTER_EQUALS = re.compile(r"=\s*\\?\$?\s*$")
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
    values = Values()
    for number in numbers:
        if STEP_LABEL.search(body, max(0, number.start - 8), number.start):
            continue
        readings = (number.value, number.value / 100) if number.percent else (number.value,)
        for value in readings + (number.parts or ()):
            if not asked.has(value):
                values.add(value)
    claims = find_claims(body)
    collected = _Gold()
    shares = Values()  # "100% - 30% = 70%", "1 - 1/3 = 2/3": what is left of a share, or added to it
    for whole, share in [(1.0, v) for v in asked if 0 < v < 1] + [(100.0, v) for v in asked.percents if 0 < v < 100]:
        shares.add(whole - share)
        shares.add(whole + share)
    trees: list[tuple[float, ast.AST]] = []
    computed = Values()  # what the gold's calculations result in
    operands = Values()  # the numbers the gold's calculations are written with
    for claim in claims:
        tree = _tree(claim.left)
        if not isinstance(tree, ast.BinOp):
            continue  # "<<30=30>>": a restatement, not a calculation
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
                operands.add(float(node.value))
        values.add(claim.right_value)
        computed.add(claim.right_value)
        tree = _Substitute(trees, asked).visit(tree)
        collected.walk(tree)
        if _leaves(tree) <= _MAX_SUBSTITUTED:
            trees.append((abs(claim.right_value), tree))  # a larger one is not expanded into later ones
    intermediates = [v for v in values if answer is None or not math.isclose(v, abs(answer), rel_tol=1e-9)]
    if not intermediates and not claims:
        return None  # a bare answer: no intermediate value to check a step against
    if answer is not None:
        values.add(answer)
        computed.add(answer)
    for number in numbers:  # a result written after "=" without the calculator's note ("3x = 12")
        if _AFTER_EQUALS.search(body, max(0, number.start - 6), number.start):
            computed.add(number.value)
    unit_factors = Values(v for v in values if v in _UNIT_FACTORS and operands.has(v) and not computed.has(v))
    return Reference(
        asked,
        values,
        collected.regrouped,
        collected.derivations,
        answer,
        shares,
        unit_factors,
        capped or bool(question and len(question) > MAX_READ_CHARS),
    )
