"""A safe arithmetic evaluator and the equation checks of the arithmetic first-error verifier.

No ``eval``: expressions are parsed with :mod:`ast` and only numbers, ``+ - * / // % **``,
unary signs and parentheses are evaluated, with bounds on size and exponent. Written math is
normalised first: ``x`` / ``×`` / ``·`` / ``⋅`` for multiplication, ``÷`` for division, ``−``
for minus, currency signs (``$ £ € ¥ ₹``) and thousands separators dropped, ``20%`` read as
``0.2``.

What a step claims and what is checked (REWARDS.md section 4c):

* GSM8K calculator annotations ``<<48/2=24>>``: the expression must evaluate to the result;
* inline equations ``48/2 = 24``: the left side is the arithmetic run before ``=`` and must
  contain an operator; the stated result is the first number after ``=`` (or the whole
  arithmetic run after it: chains ``3*2 = 6*4 = 24`` and ``a op b = c op d`` both hold when
  consistent). Results match up to the rounding the text shows (``10/3 = 3.33``).

How real models write it (the step is first rewritten into plain arithmetic, character for
character, so offsets stay valid):

* LaTeX: ``\\times \\cdot \\div``, ``\\frac{a}{b}`` (``\\dfrac``, ``\\tfrac``) as ``((a)/(b))``,
  ``\\left( \\right)``, ``^{2}``, ``\\text{..} \\mathrm{..} \\textbf{..} \\boxed{..}`` unwrapped,
  ``\\, \\! \\; \\quad ~ &`` as space (``1{,}000`` and ``1\\,000`` as thousands), ``\\$ \\%``,
  the math delimiters ``\\[ \\] \\( \\) $...$``;
* unicode ``× ÷ − · ⋅``; markdown emphasis ``**...**`` (``2**3`` stays a power); list bullets
  (``-``, ``*``, ``•``, ``1.``) at a line start; a chain continued on the next line
  (``= $80,000 + $120,000`` under ``New value = ...``); ``20 percent``; ``20% of 50``;
  ``3 times 4``;
* units and labels after a number, up to four words (``3500 pounds ÷ 2250 pounds per trip``,
  ``9 eggs * $2/egg``, ``3 \\text{ sprints} \\times 60 \\text{ meters/sprint}``,
  ``3 (for breakfast) + 4 (for muffins)``), read as blank when an operator, ``=`` or ``)``
  follows them; currency before it; an equation after a colon, a comma, a dash or a bullet
  (``Daily cost: $250 * 6 = $1500 per day``).

Precision first: a claim is flagged only when it is plainly a calculation and plainly wrong.
Never flagged:

* statements that are not calculations: a bare number on the left (``1 hour = 60 minutes``),
  a fragment of a longer expression (``X*1/4 = ...``, ``f(3) + 2 = ...``, ``\\sqrt{16} + 2``,
  ``6:00+48``), algebra (``2x + 3 = 7``, ``3 + 5 = 2x``, ``= 32 + x``), a single letter among
  the words after a number (a variable, not a unit), mixed numbers (``= 1 1/2``, ``5 and
  2/3``), spaced digits (``18 000``), a sum of ``2 million + 500,000``;
* a result that does not match when the text says why it may not: the written rounding
  (``= 33 (rounded)``, ``approximately``), an integer written for a division that is not whole
  (``25 / 4 = 6 boxes``: floor, ceiling or nearest), a sum of different units (``1 hour + 30
  minutes = 90 minutes``, ``$3 + 50 cents``), a conversion (``15 minutes * 4 = 1 hour``: a
  result in another unit of the same kind as an operand's), a multiplier word (``dozen``,
  ``thousand``), a percent added to a plain number (``80,000 + 150%``), an implicit product
  with a space (``12 (4 + 8)``). Those claims are dropped (not checked), not flagged.

Cost is linear in the text length: each rewrite is one regular-expression pass with bounded
matches; an arithmetic side is looked for at most :data:`MAX_SIDE_SCAN` characters from its
``=`` (a longer run of arithmetic characters is not a calculation: the claim is skipped, as the
evaluator refuses expressions over 200 characters anyway), and every check around a character
reads a bounded neighbourhood, never a copy of the text before or after it.

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
    "StatedNumber",
    "check_step",
    "evaluate",
    "find_claims",
    "first_wrong_step",
    "normalize_expression",
    "plain_arithmetic",
    "stated_numbers",
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
_TIMES_LETTER = re.compile(r"(?<=[\d)\s])[xX](?=[\s\d(.$£€¥₹])")
_IMPLICIT = re.compile(r"(?<=[\d)])\s*(?=\()|(?<=\))\s*(?=[\d(])")
_CURRENCY = "$£€¥₹"


def normalize_expression(text: str) -> str:
    """Written arithmetic -> a Python expression over numbers (raises on anything else)."""
    expression = text.strip()
    expression = expression.replace("\\times", "*").replace("\\cdot", "*").replace("\\div", "/")
    expression = expression.replace("×", "*").replace("·", "*").replace("⋅", "*").replace("∗", "*")
    expression = expression.replace("÷", "/").replace("−", "-").replace("–", "-").replace("^", "**")
    expression = expression.replace("\\$", "").replace("\\%", "%")
    for sign in _CURRENCY:
        expression = expression.replace(sign, "")
    expression = _TIMES_LETTER.sub("*", expression)
    expression = _THOUSANDS.sub("", expression)
    expression = _PERCENT.sub(r"(\1/100)", expression)
    expression = _IMPLICIT.sub("*", expression).strip()  # "2(3+4)" -> "2*(3+4)"
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
    24" states 6, "a = b + c" states b + c): either reading may hold. ``left`` and ``right``
    are the sides as read (units and LaTeX markup blanked); ``start``/``end`` (and ``equals``,
    the ``=``) are offsets into the step's text.
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
    equals: int | None = None  # offset of the claim's "="

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


# --- from real notation to plain arithmetic (same length: offsets stay valid) -----------------

_ANNOTATION = re.compile(r"<<([^<>]*?)=([^<>=]*)>>")


def _padded(replacement: str, length: int) -> str:
    return replacement.ljust(length)


def _latex_sign(match: re.Match) -> str:
    """A LaTeX sign as its plain character, padded to the command's length."""
    return _LATEX_SIGNS[match.group(0)].ljust(len(match.group(0)))


# LaTeX commands whose argument is text to keep (units, labels, a boxed result).
_LATEX_WRAPPER = re.compile(
    r"\\(?:text|textbf|textit|textrm|textnormal|mathrm|mathbf|mathit|mathsf|mbox|hbox|operatorname|boxed|fbox|"
    r"underline)\s*\{([^{}\n]{0,120})\}"
)
_LATEX_FRACTION = re.compile(r"\\[dt]?frac\s*\{([^{}\n]{1,120})\}\s*\{([^{}\n]{1,120})\}")
_LATEX_EXPONENT = re.compile(r"\^\{([^{}\n]{1,20})\}")
# 1{,}000 / 1\,000 / 1\!000 inside a number: a thousands separator (the digits move left).
_LATEX_THOUSANDS = re.compile(r"(?<=\d)(?:\{,\}|\\,|\\!)(?=\d{3}(?!\d))")
_LATEX_SIGNS = {
    "\\times": "×", "\\cdot": "·", "\\div": "÷", "\\ast": "*",
    "\\left(": "(", "\\right)": ")", "\\left[": "(", "\\right]": ")", "\\left.": "", "\\right.": "",
    "\\%": "%", "\\$": "$", "\\[": "", "\\]": "", "\\(": "", "\\)": "", "\\,": "", "\\!": "", "\\;": "",
    "\\:": "", "\\ ": "", "\\quad": "", "\\qquad": "", "\\displaystyle": "", "&": "",
}
_LATEX_SIGN = re.compile("|".join(re.escape(key) for key in sorted(_LATEX_SIGNS, key=len, reverse=True)))
# Markdown: bold / underline emphasis markers (a tight ``2**3`` is a power and stays).
_EMPHASIS = re.compile(r"(?<![\d)])\*\*|\*\*(?![\d(])|__")
# A list bullet or number at the start of a line.
_BULLET = re.compile(r"(?m)^[ \t]*(?:[-*•]|\d{1,3}[.)])(?=[ \t])")
# "New value = ...\n= $80,000 + ...": a chain continued on the next line.
_CONTINUATION = re.compile(r"\n[ \t]*(?==(?!=))")
_PERCENT_WORD = re.compile(r"(?<=\d)([ \t]?)percent\b", re.IGNORECASE)
_PERCENT_OF = re.compile(r"(?<=%)[ \t]+of(?=[ \t]+[$£€¥₹(]?\d|[ \t]+\([ \t]*[$£€¥₹]?\d)")
_TIMES_WORD = re.compile(r"(?<=[\d%)])[ \t]+times(?=[ \t]+[$£€¥₹]?\d)")

# Units and labels after a number: up to four words (a word may carry "/unit"), or a
# parenthetical label, followed by an operator, '=' or ')'.
_WORD = r"[A-Za-z][A-Za-z'’\-]{0,24}(?:[ \t]*/[ \t]*[A-Za-z][A-Za-z\-]{0,24})?"
_LABEL = r"\([ \t]*[A-Za-z][A-Za-z '’,\-]{0,40}\)"
_PIECE = rf"(?:{_WORD}|{_LABEL})"
_UNIT_RUN = re.compile(
    rf"(?<=[\d%)])[ \t]*(?:/[ \t]*)?({_PIECE}(?:[ \t]+{_PIECE}){{0,3}})"
    r"(?=[ \t]*(?:=|\)|(?:[+\-*×÷·⋅∗−–^]|[xX]|(?<=[ \t])/)[ \t]*[\d($£€¥₹.]))"
)
# Words that make a run prose, not a unit ("3 apples and 4 ...", "5 so 2 + ...").
_NOT_UNIT_WORDS = frozenset(
    "is are was were be so then and or but that which who to the we he she it they this these there "
    "equals equal gives give makes make plus minus times divided multiplied by than if when because "
    "since thus therefore hence".split()
)
# Words that scale the number: a sum or a result with one of them is not checked when it does not hold.
_MULTIPLIER_WORDS = frozenset(
    "dozen dozens hundred hundreds thousand thousands million millions billion billions trillion k m bn "
    "score gross pair pairs half quarter quarters".split()
)


def _unit_name(run: str) -> str | None:
    """A comparable name for a unit run: labels in parentheses dropped, words singular, lower case."""
    words = re.sub(r"\([^()]*\)", " ", run).lower().replace("’", "'").split()
    if not words:
        return None
    singular = []
    for word in words:
        if len(word) > 3 and re.search(r"(?:ch|sh|x|ss)es$", word):
            word = word[:-2]
        elif len(word) > 3 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 2 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        singular.append(word)
    return " ".join(singular)


# Units of the same kind (a result in another unit of the same kind is a conversion).
_DIMENSIONS = {
    **dict.fromkeys("second sec minute min hour hr day week month year decade century".split(), "time"),
    **dict.fromkeys("inch foot feet ft yard yd mile mi cm mm meter metre km kilometer kilometre".split(), "length"),
    **dict.fromkeys("ounce oz pound lb gram kg kilogram mg ton tonne".split(), "mass"),
    **dict.fromkeys("cup pint quart gallon liter litre ml milliliter tablespoon teaspoon tbsp tsp".split(), "volume"),
    **dict.fromkeys("dollar cent penny pennie nickel dime buck $".split(), "money"),
}


def _dimension(unit: str | None) -> str | None:
    if not unit:
        return None
    return _DIMENSIONS.get(unit.split()[0].split("/")[0])


def plain_arithmetic(text: str) -> tuple[str, dict[int, str]]:
    """``text`` rewritten into the plain arithmetic the equation scanner reads, character for
    character (same length): LaTeX, markdown and bullets out, unit words after numbers blanked.
    Also returns the blanked units: offset just after the number -> the unit run as written."""
    visible = _ANNOTATION.sub(lambda m: " " * len(m.group(0)), text)
    if "\\" in visible or "&" in visible or "{" in visible:
        for _ in range(2):  # \boxed{\text{18}}: the inner command first
            visible = _LATEX_WRAPPER.sub(lambda m: " " * (m.start(1) - m.start()) + m.group(1) + " ", visible)
        visible = _latex_thousands(visible)
        for _ in range(2):  # \frac{1}{\frac{2}{3}}
            visible = _LATEX_FRACTION.sub(
                lambda m: _padded(f"(({m.group(1)})/({m.group(2)}))", len(m.group(0))), visible
            )
        visible = _LATEX_EXPONENT.sub(lambda m: "^(" + m.group(1) + ")", visible)
        visible = _LATEX_SIGN.sub(_latex_sign, visible)
    if "*" in visible or "_" in visible:
        visible = _EMPHASIS.sub(lambda m: "  ", visible)
    visible = _BULLET.sub(lambda m: " " * len(m.group(0)), visible)
    if "\n" in visible:
        visible = _CONTINUATION.sub(lambda m: " " * len(m.group(0)), visible)
    visible = _PERCENT_WORD.sub(lambda m: "%".ljust(len(m.group(0))), visible)
    visible = _PERCENT_OF.sub(lambda m: " ×".ljust(len(m.group(0))), visible)
    visible = _TIMES_WORD.sub(lambda m: " ×".ljust(len(m.group(0))), visible)
    units: dict[int, str] = {}

    def blank_unit(match: re.Match) -> str:
        run = match.group(1)
        words = re.sub(r"\([^()]*\)", " ", run).replace("/", " ").lower().split()
        for index, word in enumerate(words):
            if word in _NOT_UNIT_WORDS:
                return match.group(0)
            if len(word) == 1 and not (word == "a" and index < len(words) - 1):
                return match.group(0)  # a single letter is a variable ("2x + 3"), not a unit
        units[match.start()] = run
        return " " * len(match.group(0))

    visible = _UNIT_RUN.sub(blank_unit, visible)
    return visible, units


def _latex_thousands(text: str) -> str:
    """``1{,}000`` / ``1\\,000`` -> ``1,000`` with the digits moved left (same length)."""
    out, last = [], 0
    for match in _LATEX_THOUSANDS.finditer(text):
        # the separator goes, a comma comes, the next three digits shift left, spaces fill up
        out.append(text[last : match.start()])
        out.append("," + text[match.end() : match.end() + 3] + " " * (len(match.group(0)) - 1))
        last = match.end() + 3
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


# --- the equation scanner ----------------------------------------------------------------------

# Characters of an arithmetic side: numbers, operators, parentheses, money, percent, spaces.
_SIDE_CHARS = set("0123456789.,+-*/xX×÷·⋅∗−–^()$£€¥₹% \t")
_BINARY_START = set("+*/×÷·⋅∗^xX")
_THREE_DIGITS = re.compile(r"\d{3}(?!\d)")
_STATED_NUMBER = re.compile(r"\s*-?\s*[$£€¥₹]?\s*(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?<=\d)\s*%?")
_OPERATOR_RE = re.compile(r"[\d)%]\s*(?:\*\*|[+\-*/×÷·⋅∗−–^xX])\s*[\d(.$£€¥₹]")
# "25 / 1/3": a tight fraction after a spaced operator is one number (25 / (1/3)).
_TIGHT_FRACTION = re.compile(r"(?<![\d.)/])(\d+(?:\.\d+)?/\d+(?:\.\d+)?)(?![\d.(/])")
_NUMBER_END = re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)?%?")
# Words after a result that say it is not exact.
_ROUNDED = re.compile(r"round|approx|about|roughly|nearly|almost|estimat|≈|~|truncat", re.I)


def _has_operator(text: str) -> bool:
    return bool(_OPERATOR_RE.search(text))


def _last_non_space(text: str, end: int) -> int:
    """Index of the last non-space character before ``end`` (-1 when there is none)."""
    index = end - 1
    while index >= 0 and text[index] in " \t":
        index -= 1
    return index


def _word_before(text: str, index: int) -> str:
    """The word ending just before ``index`` (spaces skipped; at most 12 characters read)."""
    end = _last_non_space(text, index) + 1
    start = end
    while start > 0 and end - start < 12 and text[start - 1].isalpha():
        start -= 1
    return text[start:end].lower()


def _scan_left(text: str, end: int) -> tuple[str, int]:
    """The arithmetic expression ending at ``text[end]`` (the left side of an ``=``) and its
    start; empty when it is a fragment of something larger ("X*1/4 =", "f(3) + 2 =") or longer
    than :data:`MAX_SIDE_SCAN` characters."""
    start = end
    limit = max(0, end - MAX_SIDE_SCAN)
    while start > 0 and text[start - 1] in _SIDE_CHARS and _side_char_ok(text, start - 1):
        if start == limit:
            return "", end  # too long to be a calculation
        start -= 1
    raw = text[start:end]
    side = raw.strip().lstrip(",)%").strip()
    if not side or side[0] in _BINARY_START or (side[0] in "-−–" and side[1:2] in (" ", "\t")):
        return "", end  # begins with a binary operator (or a dash): part of a longer expression
    side_start = start + raw.index(side[0])
    last = _last_non_space(text, start)
    if last >= 0:
        before = text[last]
        adjacent = last == side_start - 1
        lone_x = before in "xX" and (last == 0 or text[last - 1].isspace())
        if before.isdigit() or (before in "/_^{}\\." and adjacent) or lone_x:
            return "", end  # "60 minutes x 3/4", "\sqrt{16} + 2": the scan stopped mid-expression
        if before.isalpha() and adjacent:
            return "", end  # "x2 + 3", "f(3) + 2": a variable or a function, not a calculation
        if before in ",:" and (adjacent or (last > 0 and text[last - 1].isdigit())):
            return "", end  # "14, 400 / 80", "6:00+48"; "Daily cost: $250 * 6" is read
        if side[0] == "(" and _word_before(text, side_start) == "of":
            return "", end  # "half of (3 + 5)": a fraction of the group, not the group
    inner_start, inner_end = _matched_span(side)
    return side[inner_start:inner_end], side_start + inner_start


def _scan_right(text: str, start: int) -> str:
    """The arithmetic run starting at ``text[start]`` (the right side of an ``=``); empty when
    it goes on into something that is not arithmetic (algebra: "= 32 + x", "= 2(x - 4)",
    "= 2 x x")."""
    end = start
    limit = min(len(text), start + MAX_SIDE_SCAN)
    while end < len(text) and text[end] in _SIDE_CHARS and _side_char_ok(text, end):
        if end == limit:
            return ""  # too long to be a calculation
        end += 1
    side = text[start:end].rstrip()
    if side.endswith("/") and text[end : end + 1].isalpha():
        side = side[:-1].rstrip()  # "$100/month": a rate, the slash is the unit's
    if side.endswith("(") or (text[end : end + 1] in ("x", "X") and _word_before(text, end + 1) == "x"):
        return ""  # "= 2(A - 4)", "= 2 x x": a product with a variable
    side = side.rstrip(",").rstrip()
    if side.rstrip(_CURRENCY + " \t").endswith(tuple("+-−–*/×÷·⋅∗^xX")):
        return ""
    return _drop_unmatched_parentheses(side.rstrip(_CURRENCY + " \t"))


def _drop_unmatched_parentheses(text: str) -> str:
    """Remove parentheses without a partner at either end ("(3+4" -> "3+4", "7)" -> "7")."""
    start, end = _matched_span(text)
    return text[start:end]


def _matched_span(text: str) -> tuple[int, int]:
    """``(start, end)`` of ``text`` without unmatched parentheses at either end; ``(0, 0)``
    when it is unbalanced inside."""
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
            return 0, 0  # unbalanced inside: not a well-formed side
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
    return start, end


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
    while right < len(text) and text[right] in " \t":
        right += 1
    right_ok = right < len(text) and text[right] in "0123456789($.£€¥₹"
    return left_ok and right_ok


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


def _readings(side: str) -> list[float]:
    """Values of a side: as written, with tight fractions as single numbers, with rounded
    repeating decimals as the fractions they round (each reading that evaluates)."""
    values = [evaluate(side)]
    variants = {_TIGHT_FRACTION.sub(r"(\1)", side)}
    exact = _DECIMAL.sub(_as_fraction, side)
    variants |= {exact, _TIGHT_FRACTION.sub(r"(\1)", exact)}
    for variant in variants - {side}:
        try:
            values.append(evaluate(variant))
        except NotArithmeticError:
            pass
    return values


def _operand_units(left: str, start: int, units: dict[int, str]) -> list[str | None]:
    """The unit of each number of a left side (currency before it counts as ``$``)."""
    found = []
    for match in _NUMBER_END.finditer(left):
        unit = units.get(start + match.end())
        before = left[max(0, match.start() - 2) : match.start()].strip()
        if unit is None and before[-1:] and before[-1] in _CURRENCY:
            unit = "$"
        found.append(_unit_name(unit) if unit else None)
    for index, character in enumerate(left):  # a unit after a parenthesised group
        if character == ")" and units.get(start + index + 1):
            found.append(_unit_name(units[start + index + 1]))
    return found


_NEXT_WORD = re.compile(r"[ \t]*([A-Za-z$][A-Za-z]{0,24})")


def _result_unit(visible: str, stated: str, position: int, units: dict[int, str]) -> str | None:
    """The unit of a stated result: the blanked run or the next word after it, else its currency."""
    if position in units:
        return _unit_name(units[position])
    match = _NEXT_WORD.match(visible, position, position + 30)
    if match:
        return _unit_name(match.group(1))
    return "$" if stated.lstrip("-− \t")[:1] in _CURRENCY else None


# Ratios between units of the same kind: a result off by exactly one of them is a conversion.
_CONVERSION_FACTORS = (60, 100, 1000, 12, 16, 24, 7, 3600, 52, 365, 3, 36, 5280, 10)


def _excused(text: str, visible: str, claim: Claim, left: str, left_start: int, stated_end: int, units: dict[int, str]) -> bool:
    """True when a claim that does not hold may still be right as written: rounding, units of
    different kinds, a conversion, a multiplier word, a percent added to a number (module
    docstring). Such a claim is dropped, not flagged. ``left`` is the left side as scanned
    (it starts at ``left_start`` of ``visible``)."""
    line_end = text.find("\n", stated_end, stated_end + 40)
    tail = text[stated_end : line_end if line_end >= 0 else stated_end + 40]
    if _ROUNDED.search(tail) or _ROUNDED.search(text[max(0, left_start - 25) : left_start]):
        return True  # "= 33 (rounded)", "approximately 3500 / 2250 = 1.5"
    value, stated = claim.left_value, claim.right_value
    if ("/" in left or "÷" in left) and float(stated).is_integer() and not float(value).is_integer():
        if stated in (math.floor(value), math.ceil(value), round(value)):
            return True  # "25 / 4 = 6 boxes": a whole number of something
    operand_units = _operand_units(left, left_start, units)
    named = {unit for unit in operand_units if unit}
    if {word for unit in named for word in unit.replace("/", " ").split()} & _MULTIPLIER_WORDS:
        return True  # "2 dozen + 6 = 30", "2 million + 500,000"
    additive = bool(re.search(r"[\d)%][ \t]*[+\-−–][ \t]*[\d($£€¥₹.]", left))
    if additive and len(named) > 1:
        return True  # "1 hour + 30 minutes = 90 minutes", "$3 + 50 cents"
    percents = [bool(sign) for sign in re.findall(r"\d[\d,]*(?:\.\d+)?([ \t]*%)?", left)]
    if additive and any(percents) and not all(percents):
        return True  # "80,000 + 150%": a percent of something
    result = _result_unit(visible, claim.right, stated_end, units)
    kind = _dimension(result)
    if kind and any(_dimension(unit) == kind and unit.split()[0] != result.split()[0] for unit in named):
        return True  # "15 minutes * 4 = 1 hour": a conversion
    if kind or any(_dimension(unit) for unit in named):
        targets = [stated] + ([claim.right_expression_value] if claim.right_expression_value is not None else [])
        for target in targets:
            if value and target and any(
                math.isclose(abs(value / target), factor, rel_tol=1e-6) or math.isclose(abs(target / value), factor, rel_tol=1e-6)
                for factor in _CONVERSION_FACTORS
            ):
                return True  # "10 x 25 cents = $2.50", "700 x 5 cents = 700 x 0.05"
    if re.search(r"[\d)][ \t]+\(", left):
        return True  # "12 (4 + 8)": a product, or a number and its explanation
    if (
        re.fullmatch(r"\d+[ \t]*[xX×][ \t]*\d+", left.strip())
        and left_start + len(left) in units
        and _word_before(visible, left_start) in ("of", "many", "the", "a", "each", "per", "with", "for")
    ):
        return True  # "the number of 2 x 4 pieces = ...": a size, not a product
    return False


def _claim(text: str, visible: str, units: dict[int, str], left: str, left_start: int, position: int) -> Claim | None:
    """The claim that ``left`` (starting at ``left_start``) equals what follows the ``=`` at
    ``position``; None when the right side states no number or the claim is excused."""
    right_run = _scan_right(visible, position + 1)
    stated = _STATED_NUMBER.match(right_run) if right_run else None
    if not stated:
        return None
    right = stated.group(0).strip()
    run_start = position + 1
    after_run = run_start + len(right_run)
    if re.match(r"[ \t]?\d| and \(?\d", right_run[stated.end():] + visible[after_run : after_run + 8]):
        return None  # "1 1/2", "18 000", "5 and 2/3": a mixed number or spaced digits
    stated_end = run_start + len(right_run[: stated.end()].rstrip())
    following = visible[stated_end : stated_end + 2]
    if following[:1] == "\\" or (following[:1].isalpha() and not following[1:2].isalpha()):
        return None  # "= 2x", "= 4\sqrt{2}": algebra, not a number
    if right_run.strip() == right and re.match(
        r"(?:[ \t]*[A-Za-z][A-Za-z'’\-]*){1,3}[ \t]*(?:[+\-*/×÷·⋅∗−–^]|[xX][ \t])", text[stated_end : stated_end + 80]
    ):
        return None  # "= 5 days / x days", "= 459 blinks / x minutes": a proportion, not a result
    try:
        right_value = evaluate(right)
        left_readings = _readings(left)
    except NotArithmeticError:
        return None
    expression, expression_readings = None, []
    if right_run.strip() != right:
        try:
            expression, expression_readings = right_run.strip(), _readings(right_run)
        except NotArithmeticError:
            expression = None
    # the readings of the two sides that agree with each other, if any
    left_value, expression_value = left_readings[0], expression_readings[0] if expression_readings else None
    for reading in left_readings:
        if _stated_matches(reading, right, right_value):
            left_value = reading
            break
        agreeing = next((e for e in expression_readings if values_match(reading, e)), None)
        if agreeing is not None:
            left_value, expression_value = reading, agreeing
            break
    claim = Claim("equation", _shown(left), _shown(right), left_start, after_run, left_value, right_value,
                  None if expression is None else _shown(expression), expression_value, position)
    if not claim.correct and _excused(text, visible, claim, left, left_start, stated_end, units):
        return None
    return claim


def _shown(side: str) -> str:
    """A side as the claim shows it: spaces of blanked units and markup collapsed."""
    shown = " ".join(side.split())
    for sign in _CURRENCY:
        shown = shown.replace(sign + " ", sign)
    return shown


_EQUALS = re.compile(r"(?<![<>=!])=(?![=>])")
_LABEL_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9'’ \t()\-/.]{0,79}")


def _statement(visible: str, position: int) -> tuple[str, int, int] | None:
    """``(label, line start, line end)`` when the ``=`` at ``position`` is the only one of its
    line and what stands before it is a name ("Total cost = ...", "Joan's age = ..."); else None."""
    line_start = visible.rfind("\n", max(0, position - 200), position) + 1
    if line_start == 0 and position > 200:
        return None
    line_end = visible.find("\n", position, position + MAX_SIDE_SCAN)
    line_end = len(visible) if line_end < 0 else line_end
    if "=" in visible[line_start:position] or "=" in visible[position + 1 : line_end]:
        return None
    label = " ".join(visible[line_start:position].split()).lower().rstrip(":")
    if not label or not _LABEL_TEXT.fullmatch(label):
        return None
    return label, line_start, line_end


def _restated_claims(text: str, visible: str, units: dict[int, str], positions: list[int]) -> list[Claim]:
    """``Total cost = $3.00 x 10`` then, on the next line, ``Total cost = $30.00``: a name given
    a calculation and at once restated with its value is a claim (calculation = value)."""
    claims = []
    previous = None  # (label, line end, left, left start) of the last named calculation
    for position in positions:
        statement = _statement(visible, position)
        if statement is None:
            previous = None
            continue
        label, line_start, line_end = statement
        if previous is not None and previous[0] == label and not visible[previous[1] : line_start].strip():
            claim = _claim(text, visible, units, previous[2], previous[3], position)
            if claim is not None:
                claims.append(claim)
        previous = None
        run = _scan_right(visible, position + 1)
        if run and _has_operator(run) and not visible[position + 1 + len(run) : line_end].strip(" \t.,;$"):
            left_start = position + 1 + (len(run) - len(run.lstrip()))
            try:
                evaluate(run)
            except NotArithmeticError:
                continue
            previous = (label, line_end, run.strip(), left_start)
    return claims


def find_claims(text: str) -> list[Claim]:
    """Every annotation and inline equation of ``text`` that is an arithmetic claim, in order.

    Claims whose sides cannot be evaluated are dropped (not arithmetic, not wrong), and so are
    claims that do not hold where the text says why they may not (rounding, units, module
    docstring). An inline equation counts only when its left side has an operator: ``1 hour =
    60 minutes`` and ``15% of the $80 = ...`` state no calculation; a name given a calculation
    and restated with its value on the next line (``Total = 20 + 5`` / ``Total = 25``) is one.
    """
    claims: list[Claim] = []
    for match in _ANNOTATION.finditer(text):
        left, right = match.group(1), match.group(2)
        try:
            claims.append(Claim("annotation", left, right, match.start(), match.end(), evaluate(left), evaluate(right),
                                equals=match.start(2) - 1))
        except NotArithmeticError:
            continue
    if "=" not in text:
        return claims
    visible, units = plain_arithmetic(text)
    positions = [match.start() for match in _EQUALS.finditer(visible)]
    for position in positions:
        left, left_start = _scan_left(visible, position)
        if not left or not _has_operator(left):
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


# --- the numbers a text states (the reference judge reads them: procrl/rewards/judges/reference.py) ---

# A number as the scanner reads it: currency before it, thousands separators, decimals, a percent
# sign, a tight fraction ("3/5", "((3)/(5))" from \\frac); not a piece of a word or of a longer
# number ("x2", "v1.5", "3.4.1"), not an ordinal ("2nd").
_PLAIN_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+"
_STATED = re.compile(
    rf"(?<![\w.,/])(?P<currency>[$£€¥₹][ \t]?)?(?:\(\((?P<top>{_PLAIN_NUMBER})\)/\((?P<bottom>{_PLAIN_NUMBER})\)\)"
    rf"|(?P<number>{_PLAIN_NUMBER})(?:/(?P<denominator>\d+)(?![\d.]))?)(?![\d.]\d|,\d{{3}})"
    r"(?P<percent>[ \t]?%)?(?!(?:st|nd|rd|th)\b)"
)


@dataclass(frozen=True)
class StatedNumber:
    """One number of a text: ``value`` as written (``20%`` is 20 with ``percent``; ``$1,500`` is
    1500 with ``currency``; ``3/5`` and ``\\frac{3}{5}`` are 0.6 with ``parts`` (3, 5)),
    ``start``/``end`` offsets into the text, ``text`` as :func:`plain_arithmetic` shows it;
    ``unit``: the word after it (singular, lower case; ``$`` for currency), if any."""

    start: int
    end: int
    value: float
    text: str
    percent: bool = False
    currency: bool = False
    parts: tuple[float, float] | None = None
    unit: str | None = None


def _number(written: str) -> float:
    return float(written.replace(",", ""))


def stated_numbers(text: str) -> list[StatedNumber]:
    """Every number ``text`` states, in order, read through :func:`plain_arithmetic` (LaTeX,
    markdown, bullets, unit words out; calculator annotations blanked, so read their claims with
    :func:`find_claims`). No sign: a ``-`` may be an operator or a dash."""
    visible, units = plain_arithmetic(text)
    found = []
    for match in _STATED.finditer(visible):
        top = match.group("top") or match.group("number")
        bottom = match.group("bottom") or match.group("denominator")
        value = _number(top)
        parts = None
        if bottom is not None:
            parts = (value, _number(bottom))
            if parts[1] == 0:
                continue
            value = parts[0] / parts[1]
        unit = _result_unit(visible, "", match.end(), units) or ("$" if match.group("currency") else None)
        found.append(StatedNumber(match.start(), match.end(), value, visible[match.start() : match.end()].strip(),
                                  bool(match.group("percent")), bool(match.group("currency")), parts, unit))
    return found
