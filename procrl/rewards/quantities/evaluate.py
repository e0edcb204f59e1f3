"""A safe arithmetic evaluator: written arithmetic in, a value out, or :class:`NotArithmeticError`.

No ``eval``: expressions are parsed with :mod:`ast` and only numbers, ``+ - * / // % **``,
unary signs and parentheses are evaluated, with bounds on size and exponent. Written math is
normalised first: ``x`` / ``×`` / ``·`` / ``⋅`` for multiplication, ``÷`` for division, ``−``
for minus, currency signs (``$ £ € ¥ ₹``) and thousands separators dropped, ``20%`` read as
``0.2``.
"""

from __future__ import annotations

import ast
import math
import operator
import re

__all__ = ["CURRENCY", "MAX_LENGTH", "NotArithmeticError", "evaluate", "normalize_expression"]


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
MAX_LENGTH = 200


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
# tried only where a run of digits starts ((?<!\d)): the leftmost match starts there anyway, and a
# long run of digits without "%" is read once, not once per digit
_PERCENT = re.compile(r"(?<!\d)(\d+(?:\.\d+)?|\.\d+)\s*%")
# "x" between two operands is multiplication ("0.2 x 50", "3x4", "(2)x(3)").
_TIMES_LETTER = re.compile(r"(?<=[\d)\s])[xX](?=[\s\d(.$£€¥₹])")
_IMPLICIT = re.compile(r"(?<=[\d)])\s*(?=\()|(?<=\))\s*(?=[\d(])")
CURRENCY = "$£€¥₹"


def normalize_expression(text: str) -> str:
    """Written arithmetic -> a Python expression over numbers (raises on anything else)."""
    expression = text.strip()
    expression = expression.replace("\\times", "*").replace("\\cdot", "*").replace("\\div", "/")
    expression = expression.replace("×", "*").replace("·", "*").replace("⋅", "*").replace("∗", "*")
    expression = expression.replace("÷", "/").replace("−", "-").replace("–", "-").replace("^", "**")
    expression = expression.replace("\\$", "").replace("\\%", "%")
    for sign in CURRENCY:
        expression = expression.replace(sign, "")
    expression = _TIMES_LETTER.sub("*", expression)
    expression = _THOUSANDS.sub("", expression)
    expression = _PERCENT.sub(r"(\1/100)", expression)
    expression = _IMPLICIT.sub("*", expression).strip()  # "2(3+4)" -> "2*(3+4)"
    if not expression or re.search(r"[^\d.+\-*/%() ]", expression):
        raise NotArithmeticError(f"not arithmetic: {text!r}")
    return expression


_PLAIN_NUMBER = re.compile(r"[ \t]*(-?)[ \t]*[$£€¥₹]?[ \t]*(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?[ \t]*")


def evaluate(text: str) -> float:
    """Value of a written arithmetic expression; :class:`NotArithmeticError` if it is not one."""
    if len(text) > MAX_LENGTH:
        raise NotArithmeticError("expression too long")
    plain = _PLAIN_NUMBER.fullmatch(text)
    if plain:  # a stated result, most of the time: no parser needed
        value = float(plain.group(2).replace(",", "") + (plain.group(3) or ""))
        if value > _MAX_MAGNITUDE:
            raise NotArithmeticError("value out of range")
        return -value if plain.group(1) else value
    expression = normalize_expression(text)
    if re.search(r"\d\s+[\d.]", expression):
        raise NotArithmeticError(f"two numbers without an operator: {text!r}")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise NotArithmeticError(f"cannot parse {text!r}") from None
    return _evaluate_node(tree)
