"""A safe arithmetic evaluator and the equation checks of the arithmetic first-error verifier.

No ``eval``: expressions are parsed with :mod:`ast` and only numbers, ``+ - * / // % **``,
unary signs and parentheses are evaluated, with bounds on size and exponent. Written math is
normalised first: ``x`` / ``×`` / ``·`` / ``⋅`` for multiplication, ``÷`` for division, ``−``
for minus, currency signs (``$ £ € ¥ ₹``) and thousands separators dropped, ``20%`` read as
``0.2``.

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
  floor, ceiling or nearest), large operands rounded in earlier steps (``$46,153 + $13,845 =
  $60,000``: off by at most one per operand and 0.01%), a sum of different units (``1 hour +
  30 minutes = 90 minutes``, ``$3 + 50 cents``), a conversion (``15 minutes * 4 = 1 hour``: a
  result in another unit of the same kind, or off by a unit factor such as 60 or 100: ``12 x
  25 cents = $3.00``), a right side that spells a unit out (``2/5 of 15 tens = 2/5 x 15 x
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


_PLAIN_NUMBER = re.compile(r"[ \t]*(-?)[ \t]*[$£€¥₹]?[ \t]*(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?[ \t]*")


def evaluate(text: str) -> float:
    """Value of a written arithmetic expression; :class:`NotArithmeticError` if it is not one."""
    if len(text) > _MAX_LENGTH:
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
    24" states 6, "a = b + c" states b + c): either reading may hold. ``tolerance`` is the
    relative error that operands written rounded carry (``0.5667 x 100 = 56.67``; 0 when none
    is). ``left`` and ``right`` are the sides as read (units and LaTeX markup blanked);
    ``start``/``end`` (and ``equals``, the ``=``) are offsets into the step's text.
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
    tolerance: float = 0.0
    equals: int | None = None  # offset of the claim's "="

    @property
    def correct(self) -> bool:
        if _stated_matches(self.left_value, self.right, self.right_value):
            return True
        if self.right_expression_value is not None and values_match(self.left_value, self.right_expression_value):
            return True
        if self.tolerance:  # operands written rounded ("0.5667 x 100 = 56.67"): their error carries
            targets = [self.right_value] + ([self.right_expression_value] if self.right_expression_value is not None else [])
            return any(math.isclose(self.left_value, target, rel_tol=self.tolerance) for target in targets)
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
_LATEX_THOUSANDS = re.compile(r"\{,\}|\\,|\\!")
_LATEX_NUMBER = re.compile(r"(?<![\d.])\d{1,3}(?:(?:\{,\}|\\,|\\!|,)\d{3})+(?!\d)")
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
_BULLET = re.compile(r"(?m)^[ \t]*(?:[-*•]|\d{1,3}[.)]|\(\d{1,3}\)|\([a-z]\))(?=[ \t])")
# "New total = ...\n= $40,000 + ...": a chain continued on the next line.
_CONTINUATION = re.compile(r"\n[ \t]*(?==(?!=))")
_PERCENT_WORD = re.compile(r"(?<=\d)([ \t]?)percent\b", re.IGNORECASE)
_PERCENT_OF = re.compile(r"(?<=%)[ \t]+of(?=[ \t]+[$£€¥₹(]?\d|[ \t]+\([ \t]*[$£€¥₹]?\d)")
# "2/3 of 90", "\frac{2}{3} of 90" (a fraction of a number): 'of' is a product there too.
_FRACTION_OF = re.compile(r"(?:(?<![\d.])\d+/\d+|\(\(\d+\)/\(\d+\)\))[ \t]+(of)(?=[ \t]+[$£€¥₹]?\d)")
_TIMES_WORD = re.compile(r"(?<=[\d%)])[ \t]+times(?=[ \t]+[$£€¥₹]?\d)")

# Units and labels after a number: up to four words (a word may carry "/unit"), or a
# parenthetical label, followed by an operator, '=' or ')'.
_WORD = r"[A-Za-z][A-Za-z'’\-]{0,24}(?![A-Za-z'’\-])(?:[ \t]*/[ \t]*[A-Za-z][A-Za-z\-]{0,24}(?![A-Za-z\-]))?"
_LABEL = r"\([ \t]*[A-Za-z][A-Za-z '’,\-]{0,40}\)"
_PIECE = rf"(?:{_WORD}|{_LABEL}|(?<=\d)[\"″'′])"  # 36" (inches), 5' (feet)
_UNIT_RUN = re.compile(
    rf"(?<=[\d%)])[ \t]*(?:/[ \t]*)?({_PIECE}(?:[ \t]+{_PIECE}){{0,3}})"
    r"(?=[ \t]*(?:=|\)|(?:[+\-*×÷·⋅∗−–^]|(?<![A-Za-z])[xX]|(?<=[ \t])/)[ \t]*(?:[\d($£€¥₹]|\.\d)))"
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
    words = re.sub(r"\([^()]*\)", " ", run).lower().replace("’", "'").replace("/", " / ").split()
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
    return " ".join(singular).replace(" / ", "/")


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
    visible = _FRACTION_OF.sub(lambda m: m.group(0)[: m.start(1) - m.start()] + "× ", visible)
    visible = _TIMES_WORD.sub(lambda m: " ×".ljust(len(m.group(0))), visible)
    units: dict[int, str] = {}

    def blank_unit(match: re.Match) -> str:
        run = match.group(1)
        if run.startswith("(") and "/" in match.group(0)[: match.start(1) - match.start()]:
            return match.group(0)  # "/(x dollars)": a division by a group, not a rate
        words = re.sub(r"\([^()]*\)", " ", run).replace("/", " ").lower().split()
        inside = " ".join(re.findall(r"\(([^()]*)\)", run)).lower().split()
        if any(len(word) == 1 and word.isalpha() and word != "a" for word in inside):
            return match.group(0)  # "(x dollars)": a variable inside, algebra
        for index, word in enumerate(words):
            if word in _NOT_UNIT_WORDS:
                return match.group(0)
            if len(word) == 1 and word.isalpha() and not (word == "a" and index < len(words) - 1):
                return match.group(0)  # a single letter is a variable ("2x + 3"), not a unit
        units[match.start()] = run
        return " " * len(match.group(0))

    visible = _UNIT_RUN.sub(blank_unit, visible)
    return visible, units


def _latex_thousands(text: str) -> str:
    """``1{,}000`` / ``1\\,000`` / ``1{,}000{,}000`` -> ``1,000`` with the digits moved left and
    the spaces after the number (same length)."""
    if "{,}" not in text and "\\," not in text and "\\!" not in text:
        return text
    return _LATEX_NUMBER.sub(lambda m: _LATEX_THOUSANDS.sub(",", m.group(0)).ljust(len(m.group(0))), text)


# --- the equation scanner ----------------------------------------------------------------------

# Characters of an arithmetic side: numbers, operators, parentheses, money, percent, spaces.
_SIDE_CHARS = set("0123456789.,+-*/xX×÷·⋅∗−–^()$£€¥₹% \t")
_BINARY_START = set("+*/×÷·⋅∗^xX")
_THREE_DIGITS = re.compile(r"\d{3}(?!\d)")
_STATED_NUMBER = re.compile(r"\s*-?\s*[$£€¥₹]?\s*(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?<=\d)\s*%?")
_OPERATOR_RE = re.compile(r"[\d)%]\s*(?:\*\*|[+\-*/×÷·⋅∗−–^xX])\s*[\d(.$£€¥₹]")
# "25 / 1/3": a tight fraction after a spaced operator is one number (25 / (1/3)).
_TIGHT_FRACTION = re.compile(r"(?<![\d.)/])(\d+(?:\.\d+)?/\d+(?:\.\d+)?)(?![\d.(/])")
_TIGHT_PRODUCT = re.compile(r"\d\(\s*[\d$.]")  # "2(11)": a product
_NUMBER_END = re.compile(r"\d(?:[\d,]*\d)?(?:\.\d+)?%?")
# Words after a result that say it is not exact.
_ROUNDED = re.compile(r"round|approx|about|roughly|nearly|almost|estimat|≈|~|truncat", re.I)


def _has_operator(text: str) -> bool:
    return bool(_OPERATOR_RE.search(text) or _TIGHT_PRODUCT.search(text))


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
        if (before == ":" and adjacent) or (before == "," and (adjacent or (last > 0 and text[last - 1].isdigit()))):
            return "", end  # "14, 400 / 80", "6:00+48"; "Weekly cost: $150 * 4", "to 7: 7 + 10" are read
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
        side = side[:-1].rstrip()  # "$80/month": a rate, the slash is the unit's
    if side.endswith("(") or (text[end : end + 1] in ("x", "X") and _word_before(text, end + 1) == "x"):
        return ""  # "= 4(B - 3)", "= 3 x x": a product with a variable
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


# Words before "2 x 4 pieces" that make it a size in a noun phrase, not a product.
_NOUN_PHRASE_WORDS = frozenset(
    "of many the a an each per with for from in on at to by into all these those his her their its our my your".split()
)
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
        return True  # "= 33 (rounded)", "approximately 4200 / 1500 = 2.7"
    value, stated = claim.left_value, claim.right_value
    divides = "/" in left or "÷" in left or re.search(r"\d\.\d", left)
    if divides and float(stated).is_integer() and not float(value).is_integer():
        if stated in (math.floor(value), math.ceil(value), round(value)):
            return True  # "25 / 4 = 6 boxes", "0.3 x $46,153 = $13,845": a whole number written
    operands = len(re.findall(r"\d[\d,]*(?:\.\d+)?", left))
    if stated and abs(value - stated) <= operands and abs(value - stated) <= 1e-4 * abs(stated):
        return True  # "$46,153 + $13,845 = $60,000": operands rounded in earlier steps
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
    if result and result.split()[0] in _MULTIPLIER_WORDS:
        return True  # "500,000 * 3 = $1.5 million"
    kind = _dimension(result)
    base = result.split()[0].split("/")[0] if result else None
    if kind and any(_dimension(unit) == kind and unit.split()[0].split("/")[0] != base for unit in named):
        return True  # "15 minutes * 4 = 1 hour": a conversion
    if named and claim.right_expression is not None and not _stated_matches(value, claim.right, stated):
        if len(_NUMBER_END.findall(claim.right_expression)) > operands:
            return True  # "2/5 of 15 tens = 2/5 x 15 x $10": the right side spells a unit out
    if kind or any(_dimension(unit) for unit in named):
        targets = [stated] + ([claim.right_expression_value] if claim.right_expression_value is not None else [])
        for target in targets:
            if value and target and any(
                math.isclose(abs(value / target), factor, rel_tol=1e-6) or math.isclose(abs(target / value), factor, rel_tol=1e-6)
                for factor in _CONVERSION_FACTORS
            ):
                return True  # "12 x 25 cents = $3.00", "600 x 5 cents = 600 x 0.05"
    if re.search(r"[\d)][ \t]+\(|\)[ \t]+[\d$£€¥₹.]", left):
        return True  # "12 (4 + 8)", "(2) 5 + 3": a product, or a number and its explanation or label
    if (
        re.fullmatch(r"\d+(?:[ \t]*[xX×][ \t]*\d+){1,2}", left.strip())
        and left_start + len(left) in units
        and _word_before(visible, left_start) in _NOUN_PHRASE_WORDS
    ):
        return True  # "the number of 2 x 6 boards = ...": a size, not a product
    return False


def _claim(text: str, visible: str, units: dict[int, str], left: str, left_start: int, position: int) -> Claim | None:
    """The claim that ``left`` (starting at ``left_start``) equals what follows the ``=`` at
    ``position``; None when the right side states no number or the claim is excused."""
    right_run = _scan_right(visible, position + 1)
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
    if re.match(r"(?:[ \t]*[A-Za-z][A-Za-z'’\-]*){1,3}[ \t]*(?:[+\-*/×÷·⋅∗−–^]|[xX][ \t])", text[after_run : after_run + 80]):
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
    claim = Claim("equation", _shown(left), _shown(right), left_start, after_run, left_value, right_value,
                  None if expression is None else _shown(expression), expression_value, tolerance, equals=position)
    if claim.correct:  # as written: the usual case, no other reading needed
        return claim
    left_readings = _readings(left, left_value)
    if not stated:  # a group: its readings count like those of an expression
        right_value = next((r for r in _readings(right, right_value) if any(values_match(v, r) for v in left_readings)), right_value)
    expression_readings = _readings(expression, expression_value) if expression is not None else []
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
                  None if expression is None else _shown(expression), expression_value, tolerance, equals=position)
    if not claim.correct and _excused(text, visible, claim, left, left_start, stated_end, units):
        return None
    return claim


def _shown(side: str) -> str:
    """A side as the claim shows it: spaces of blanked units and markup collapsed."""
    shown = " ".join(side.split()) if "  " in side or "\t" in side or "\n" in side else side.strip()
    if "$ " in shown or any(sign + " " in shown for sign in _CURRENCY[1:]):
        for sign in _CURRENCY:
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
        if previous is not None and previous[0] == label and line_start - previous[1] < 400 and not visible[previous[1] : line_start].strip():
            claim = _claim(text, visible, units, previous[2], previous[3], position)
            if claim is not None:
                claims.append(claim)
        previous = None
        run = _scan_right(visible, position + 1)
        rest = visible[position + 1 + len(run) : line_end]
        if run and _has_operator(run) and not re.search(r"[\d=]", rest):  # "= 900 miles / 3 hours"
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
_NUMBER_TEXT = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+"
_STATED = re.compile(
    rf"(?<![\w.,/])(?P<currency>[$£€¥₹][ \t]?)?(?:\(\((?P<top>{_NUMBER_TEXT})\)/\((?P<bottom>{_NUMBER_TEXT})\)\)"
    rf"|(?P<number>{_NUMBER_TEXT})(?:/(?P<denominator>\d+)(?![\d.]))?)(?![\d.]\d|,\d{{3}})"
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
        word = _NEXT_WORD.match(visible, match.end(), match.end() + 30)
        unit = units.get(match.end()) or (word.group(1) if word and word.group(1) != "$" else None)
        unit = _unit_name(unit) if unit else ("$" if match.group("currency") else None)
        found.append(StatedNumber(match.start(), match.end(), value, visible[match.start() : match.end()].strip(),
                                  bool(match.group("percent")), bool(match.group("currency")), parts, unit))
    return found
