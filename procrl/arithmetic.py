"""A safe arithmetic evaluator and the equation checks of the arithmetic first-error verifier.

No ``eval``: expressions are parsed with :mod:`ast` and only numbers, ``+ - * / // % **``,
unary signs and parentheses are evaluated, with bounds on size and exponent. Written math is
normalised first: ``x`` / ``×`` / ``·`` for multiplication, ``÷`` for division, ``$`` and
thousands separators dropped, ``20%`` read as ``0.2``.

What a step claims and what is checked (REWARDS.md section 4c):

* GSM8K calculator annotations ``<<48/2=24>>``: the expression must evaluate to the result;
* inline equations ``48/2 = 24``: the left side is the arithmetic run before ``=`` and must
  contain an operator; the stated result is the first number after ``=`` (or the whole
  arithmetic run after it: chains ``3*2 = 6*4 = 24`` and ``a op b = c op d`` both hold when
  consistent). Results match up to the rounding the text shows (``10/3 = 3.33``).
  Statements that are not calculations are skipped, never flagged: a bare number on the left
  (``1 hour = 60 minutes``, ``15% of $80 = ...``), a fragment of a longer expression
  (``X*1/4 = ...``, ``60 minutes x 3/4 = 45``), algebra (``2x + 3 = 7``), mixed numbers
  (``= 1 1/2``).

Cost is linear in the text length: an arithmetic side is looked for at most
:data:`MAX_SIDE_SCAN` characters from its ``=`` (a longer run of arithmetic characters is not a
calculation: the claim is skipped, as the evaluator refuses expressions over 200 characters
anyway), and every check around a character reads a bounded neighbourhood, never a copy of the
text before or after it.

Everything here is pure text in, values out.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from dataclasses import dataclass

__all__ = [
    "NotArithmeticError",
    "Claim",
    "check_step",
    "evaluate",
    "find_claims",
    "first_wrong_step",
    "normalize_expression",
    "values_match",
]


class NotArithmeticError(ValueError):
    """An expression that is not safe, simple arithmetic (or cannot be evaluated)."""


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_MAX_MAGNITUDE = 1e15
_MAX_EXPONENT = 64
_MAX_LENGTH = 200
MAX_SIDE_SCAN = 4 * _MAX_LENGTH  # characters scanned for one side of an equation


def _evaluate_node(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate_node(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate_node(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _evaluate_node(node.left)
        right = _evaluate_node(node.right)
        if isinstance(node.op, ast.Pow) and (abs(right) > _MAX_EXPONENT or (left == 0 and right < 0)):
            raise NotArithmeticError("exponent out of range")
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and right == 0:
            raise NotArithmeticError("division by zero")
        try:
            value = _BINARY[type(node.op)](left, right)
        except (OverflowError, ValueError, ZeroDivisionError) as error:
            raise NotArithmeticError(str(error)) from None
        if isinstance(value, complex) or not math.isfinite(value) or abs(value) > _MAX_MAGNITUDE:
            raise NotArithmeticError("value out of range")
        return value
    raise NotArithmeticError(f"not arithmetic: {type(node).__name__}")


# Thousands separators: "1,000" / "12,345,678" (a comma followed by exactly three digits).
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*%")
# "x" between two operands is multiplication ("0.2 x 50", "3x4", "(2)x(3)").
_TIMES_LETTER = re.compile(r"(?<=[\d)\s])[xX](?=[\s\d(.$])")
_IMPLICIT = re.compile(r"(?<=[\d)])\s*(?=\()|(?<=\))\s*(?=[\d(])")


def normalize_expression(text: str) -> str:
    """Written arithmetic -> a Python expression over numbers (raises on anything else)."""
    expression = text.strip()
    expression = expression.replace("\\times", "*").replace("\\cdot", "*").replace("\\div", "/")
    expression = expression.replace("×", "*").replace("·", "*").replace("⋅", "*").replace("∗", "*")
    expression = expression.replace("÷", "/").replace("−", "-").replace("–", "-").replace("^", "**")
    expression = expression.replace("\\$", "").replace("$", "").replace("\\%", "%")
    expression = _TIMES_LETTER.sub("*", expression)
    expression = _THOUSANDS.sub("", expression)
    expression = _PERCENT.sub(r"(\1/100)", expression)
    expression = _IMPLICIT.sub("*", expression)  # "2(3+4)" -> "2*(3+4)"
    if not expression or re.search(r"[^\d.+\-*/%() ]", expression):
        raise NotArithmeticError(f"not arithmetic: {text!r}")
    return expression


def evaluate(text: str) -> float:
    """Value of a written arithmetic expression; :class:`NotArithmeticError` if it is not one."""
    if len(text) > _MAX_LENGTH:
        raise NotArithmeticError("expression too long")
    expression = normalize_expression(text)
    if re.search(r"\d\s+[\d.]", expression):
        raise NotArithmeticError(f"two numbers without an operator: {text!r}")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise NotArithmeticError(f"cannot parse {text!r}") from None
    return _evaluate_node(tree)


def _decimals(text: str) -> int:
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
    decimals = _decimals(claimed_text)
    if decimals == 0:
        return False
    unit = 10.0 ** (-decimals)
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
    24" states 6, "a = b + c" states b + c): either reading may hold.
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

    @property
    def correct(self) -> bool:
        if _stated_matches(self.left_value, self.right, self.right_value):
            return True
        if self.right_expression_value is not None and values_match(self.left_value, self.right_expression_value):
            return True
        return False


def _stated_matches(computed: float, stated_text: str, stated_value: float) -> bool:
    if values_match(computed, stated_value, stated_text):
        return True
    if "%" in stated_text:  # "10/50*100 = 20%": the percent sign is a label, not a factor
        bare = stated_text.replace("\\%", "").replace("%", "")
        try:
            return values_match(computed, evaluate(bare), bare)
        except NotArithmeticError:
            return False
    return False


_ANNOTATION = re.compile(r"<<([^<>]*?)=([^<>=]*)>>")
# Characters of an arithmetic side: numbers, operators, parentheses, money, percent, spaces.
_SIDE_CHARS = set("0123456789.,+-*/xX×÷·−–^()$% \\")
_BINARY_START = set("+*/×÷·^xX")
_THREE_DIGITS = re.compile(r"\d{3}(?!\d)")
_STATED_NUMBER = re.compile(r"\s*-?\s*\\?\$?\s*(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?<=\d)\s*(?:\\?%)?")
_OPERATOR_RE = re.compile(r"[\d)%]\s*(?:\*\*|[+\-*/×÷·−–^xX])\s*[\d(.$]")
# "25 / 1/3": a tight fraction after a spaced operator is one number (25 / (1/3)).
_TIGHT_FRACTION = re.compile(r"(?<![\d.)/])(\d+(?:\.\d+)?/\d+(?:\.\d+)?)(?![\d.(/])")


# LaTeX and Markdown around equations, replaced by a sign (or blanked) with the same length
_LATEX_SIGNS = {"\\times": "×", "\\cdot": "·", "\\div": "÷"}
_LATEX_MARKUP = re.compile(r"\\times|\\cdot|\\div|\\[()\[\]]|\\,|(?<![\d)])\*\*(?=[\d(\\$])|(?<=[\d)%])\*\*(?![\d(])")


def _has_operator(text: str) -> bool:
    return bool(_OPERATOR_RE.search(text))


def _last_non_space(text: str, end: int) -> int:
    """Index of the last non-space character before ``end`` (-1 when there is none)."""
    index = end - 1
    while index >= 0 and text[index].isspace():
        index -= 1
    return index


def _scan_left(text: str, end: int) -> str:
    """The arithmetic expression ending at ``text[end]`` (the left side of an ``=``); empty
    when it is a fragment of something larger ("X*1/4 =", "60 days / (2/3) =") or longer than
    :data:`MAX_SIDE_SCAN` characters."""
    start = end
    limit = max(0, end - MAX_SIDE_SCAN)
    while start > 0 and text[start - 1] in _SIDE_CHARS and _side_char_ok(text, start - 1):
        if start == limit:
            return ""  # too long to be a calculation
        start -= 1
    side = text[start:end].strip().lstrip(",)%").strip()
    if not side or side[0] in _BINARY_START or (side[0] in "-−–" and side[1:2] == " "):
        return ""  # begins with a binary operator (or a dash): part of a longer expression
    last = _last_non_space(text, start)
    if last >= 0:
        before = text[last]
        lone_x = before in "xX" and (last == 0 or text[last - 1].isspace())
        if before in ",:/" or before.isdigit() or lone_x:
            return ""  # "14, 400 / 80", "6:00+48", "60 minutes x 3/4": the scan stopped mid-expression
    side = _drop_unmatched_parentheses(side)
    return side


def _scan_right(text: str, start: int) -> str:
    """The arithmetic run starting at ``text[start]`` (the right side of an ``=``); empty when
    it ends in a dangling operator (algebra: "= 32 + x")."""
    end = start
    limit = min(len(text), start + MAX_SIDE_SCAN)
    while end < len(text) and text[end] in _SIDE_CHARS and _side_char_ok(text, end):
        if end == limit:
            return ""  # too long to be a calculation
        end += 1
    side = text[start:end].rstrip().rstrip(",(").rstrip()
    if side.rstrip("$\\ ").endswith(tuple("+-−–*/×÷·^xX")):
        return ""
    return _drop_unmatched_parentheses(side.rstrip("$\\ "))


def _drop_unmatched_parentheses(text: str) -> str:
    """Remove parentheses without a partner at either end ("(3+4" -> "3+4", "7)" -> "7")."""
    opened = text.count("(") - text.count(")")
    start, end = 0, len(text)
    while opened != 0:
        if opened > 0 and start < end and text[start] == "(":
            start += 1
            opened -= 1
        elif opened < 0 and start < end and text[end - 1] == ")":
            end -= 1
            opened += 1
        else:
            return ""  # unbalanced inside: not a well-formed side
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
    return text[start:end]


def _side_char_ok(text: str, index: int) -> bool:
    """Context rules for characters that are arithmetic only in some places."""
    character = text[index]
    following = text[index + 1 : index + 2]
    if character in "xX":
        return _times_letter_at(text, index)
    if character == ",":  # thousands separator only: digit before, exactly three digits after
        return index > 0 and text[index - 1].isdigit() and _THREE_DIGITS.match(text, index + 1) is not None
    if character == ".":  # decimal point only (a full stop ends the side)
        return following.isdigit()
    return True


def _times_letter_at(text: str, index: int) -> bool:
    """``x`` at ``index`` is a multiplication sign (a standalone letter between operands)."""
    before = text[index - 1] if index > 0 else " "
    after = text[index + 1] if index + 1 < len(text) else " "
    if before.isalpha() or after.isalpha():
        return False
    left = _last_non_space(text, index)
    left_ok = left >= 0 and text[left] in "0123456789)%"
    right = index + 1
    while right < len(text) and text[right].isspace():
        right += 1
    right_ok = right < len(text) and text[right] in "0123456789($."
    return left_ok and right_ok


def _left_values(left: str) -> list[float]:
    """Readings of the left side: as written, and with tight fractions as single numbers."""
    values = [evaluate(left)]
    grouped = _TIGHT_FRACTION.sub(r"(\1)", left)
    if grouped != left:
        try:
            values.append(evaluate(grouped))
        except NotArithmeticError:
            pass
    return values


def find_claims(text: str) -> list[Claim]:
    """Every annotation and inline equation of ``text`` that is an arithmetic claim, in order.

    Claims whose sides cannot be evaluated are dropped (not arithmetic, not wrong). An inline
    equation counts only when its left side has an operator: ``1 hour = 60 minutes`` and
    ``15% of $80 = ...`` state no calculation.
    """
    claims: list[Claim] = []
    for match in _ANNOTATION.finditer(text):
        left, right = match.group(1), match.group(2)
        try:
            claims.append(Claim("annotation", left, right, match.start(), match.end(), evaluate(left), evaluate(right)))
        except NotArithmeticError:
            continue
    # Inline equations: the text with annotations blanked out (offsets stay valid).
    visible = _ANNOTATION.sub(lambda m: " " * len(m.group(0)), text)
    visible = _LATEX_MARKUP.sub(lambda m: _LATEX_SIGNS.get(m.group(0), "").ljust(len(m.group(0))), visible)
    for match in re.finditer(r"(?<![<>=!])=(?![=>])", visible):
        position = match.start()
        left = _scan_left(visible, position)
        if not left or not _has_operator(left):
            continue
        right_run = _scan_right(visible, position + 1)
        stated = _STATED_NUMBER.match(right_run) if right_run else None
        if not stated:
            continue
        right = stated.group(0).strip()
        after_run = position + 1 + len(right_run)
        if re.match(r" ?\d| and \(?\d", right_run[stated.end():] + visible[after_run : after_run + 8]):
            continue  # "1 1/2", "18 000", "5 and 2/3": a mixed number or spaced digits
        try:
            right_value = evaluate(right)
            left_readings = _left_values(left)
        except NotArithmeticError:
            continue
        expression, expression_value = None, None
        if right_run.strip() != right:
            try:
                expression, expression_value = right_run.strip(), evaluate(right_run)
            except NotArithmeticError:
                expression = None
        # the reading of the left side that agrees with the statement, if any
        left_value = next(
            (v for v in left_readings if _stated_matches(v, right, right_value)
             or (expression_value is not None and values_match(v, expression_value))),
            left_readings[0],
        )
        claims.append(
            Claim("equation", left, right, position - len(left), position + 1 + len(right_run),
                  left_value, right_value, expression, expression_value)
        )
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
