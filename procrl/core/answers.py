"""Answer parsing (docs/spec.md section 1): the number a completion states as its answer, the gold
answer's number, and whether they match. Shared by the accuracy component, the format and
first-error components, the judges, evaluation and the held-out evaluation.

Prediction, first rule that matches wins:

1. ``#### N``: the FIRST one whose text starts with a number (GSM8K's own convention, as in
   grade-school-math's ``extract_answer``: the solution ends at its first answer line, so a chat
   model that repeats ``#### 48`` until its token limit, or cuts the last copy short, is read as
   48; a markdown heading ``#### Step 3: ...`` or ``#### 1. Total`` is not an answer); a
   ``####`` line holding an equation states its result (``#### 72 * 16 = 1080`` -> 1080);
2. the LAST ``\\boxed{...}`` (MATH's convention: intermediate results may be boxed, the final
   one is boxed last; ``\\boxed{\\$12,500}``, ``$\\boxed{42}$``);
3. the LAST ``answer is N`` / ``Answer: N`` (``**Answer: 18**``, ``The final answer is $18.``):
   the number it starts with, the result after its last ``=``, or, when it goes on as a sentence
   (``Final Answer: The total cost of 12 gallons is $33.00.``), the first number after the
   sentence's last ``is`` / ``are`` / ``was`` / ``equals`` (else its last number);
4. a bold number on the last non-empty line (``... is **64** dollars for 16 glasses``);
5. the last number in the completion (``so she spends a total of 26 hours.``).

So with several answer lines the first ``####`` wins over everything, a box over an ``answer
is``; a completion that states several different answers is read as one of them, never as
"any of them" (hedging does not pay). Numbers are normalised (``,`` ``$`` ``%`` and units
dropped, ``72.0 == 72``, fractions, negatives) and compared with tolerance 1e-6; LaTeX that the
plain parser cannot read (``\\frac{3}{4}``, ``\\sqrt{2}``) goes through math-verify.

A parsed number is a :class:`Number`: a float (what every consumer computes with) that also
carries the exact decimal value it was written as. The comparison uses the exact values, so
integers of any length compare exactly (``2**53 + 1`` is not ``2**53``, though their floats are
equal; a 401-digit answer, whose float is ``inf``, equals its gold); digits are never converted
to a Python ``int`` (no 4,300-digit limit).
"""

from __future__ import annotations

import decimal
import logging
import math
import re
from decimal import Decimal

__all__ = [
    "Number",
    "answers_match",
    "exact_value",
    "json_number",
    "last_answer_statement",
    "extract_boxed",
    "extract_prediction",
    "parse_gold",
    "parse_number",
]

_NUMBER = re.compile(
    r"(?<![\w.])[-−]?\s?\$?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s?/\s?\d+(?:\.\d+)?)?(?![\d])"
    r"|(?<![\w.])[-−]?\.\d+"
)
_HASHES = re.compile(r"####[ \t]*([^\n]*)")
# what follows '####' in an answer line: a number ('**', '$' and '\\$' allowed before it), not a
# numbered heading ("#### 1. Calculate the cost", "#### Step 3: Total")
# Each run of blanks (or of blanks, stars, colons, parentheses) is taken whole, atomically
# ("(?=(?P<a>...*))(?P=a)": a lookahead's match is never given back), so that the runs next to each
# other are not tried in every split: one pass over "**" and 30,000 spaces, not a cubic search.
# Nothing they could give back is something a later part needs.
_HASHES_ANSWER = re.compile(
    r"(?:\*\*)?(?=(?P<a>[ \t]*))(?P=a)(?:\\?\$)?(?=(?P<b>[ \t]*))(?P=b)[-−]?[ \t]?(?:\d|\.\d|\\[dt]?frac)"
    r"(?![\d,]*[.:)][ \t]+[A-Za-z])"
)
_COPULA = re.compile(r"\b(?:is|are|was|were|equals|will be)\b")
_BOLD = re.compile(r"\*\*([^*\n]{1,200})\*\*")
_STARTS_WITH_NUMBER = re.compile(
    r"(?=(?P<a>[\s*:(]*))(?P=a)(?:\\\(|\\\[|\$)?(?=(?P<b>[\s*]*))(?P=b)(?:\\?\$)?(?=(?P<c>\s*))(?P=c)[-−]?\s?"
    r"(?:\d|\.\d|\\[dt]?frac)"
)
_ANSWER_IS = re.compile(r"answer\s*(?:is|:|=)\s*:?\s*", re.IGNORECASE)
_LATEX_FRAC = re.compile(r"^\\[dt]?frac\s*\{\s*(-?[\d.]+)\s*\}\s*\{\s*(-?[\d.]+)\s*\}$")


_BOX_GAP = frozenset("\\boxedfx ")  # what may stand between \boxed / \fbox and its brace


def extract_boxed(text: str) -> str | None:
    """Content of the last balanced ``\\boxed{...}`` (or ``\\fbox{...}``); None if there is none.
    Linear in the length of ``text`` (one pass matches every brace), also for thousands of
    unbalanced boxes."""
    position = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if position < 0:
        return None
    brace = text.find("{", position)
    if brace >= 0 and set(text[position:brace]) <= _BOX_GAP:  # the usual case: the last box is balanced
        depth = 0
        for i in range(brace, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    return text[brace + 1 : i]
    closing: dict[int, int] = {}
    stack: list[int] = []
    for index, char in enumerate(text):
        if char == "{":
            stack.append(index)
        elif char == "}" and stack:
            closing[stack.pop()] = index
    gap_end = [0] * (len(text) + 1)  # gap_end[i]: first index >= i holding a character outside _BOX_GAP
    gap_end[len(text)] = len(text)
    for index in range(len(text) - 1, -1, -1):
        gap_end[index] = gap_end[index + 1] if text[index] in _BOX_GAP else index
    while position >= 0:
        brace = gap_end[position]
        if brace < len(text) and text[brace] == "{" and brace in closing:
            return text[brace + 1 : closing[brace]]
        # no brace right after it, or unbalanced: try an earlier box
        position = max(text.rfind("\\boxed", 0, position), text.rfind("\\fbox", 0, position))
    return None


class Number(float):
    """A parsed number: its float value for arithmetic, its exact decimal value in ``exact``
    (integers of any length stay exact; a number past float's range is ``inf`` as a float)."""

    exact: Decimal

    def __new__(cls, exact: Decimal) -> Number:
        number = super().__new__(cls, float(exact))  # float(Decimal) rounds; inf past float's range, never raises
        number.exact = exact
        return number

    def __neg__(self) -> Number:
        return Number(-self.exact)

    def __reduce__(self):
        return Number, (self.exact,)


def _quotient(numerator: Decimal, denominator: Decimal) -> Decimal:
    """``numerator / denominator``: exact when it terminates within the digits given plus 28
    (``3/4``, ``1/8``), else to 28 more significant digits (``1/3``)."""
    digits = len(numerator.as_tuple().digits) + len(denominator.as_tuple().digits) + 28
    context = decimal.Context(prec=digits, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
    return context.divide(numerator, denominator)


def _number_value(token: str) -> Number | None:
    token = token.replace("−", "-").replace("$", "").replace(",", "").replace(" ", "")
    try:
        if "/" in token:
            numerator, denominator = (Decimal(part) for part in token.split("/", 1))
            if not denominator:
                return None
            return Number(_quotient(numerator, denominator))
        return Number(Decimal(token))
    except (ValueError, ArithmeticError):  # decimal.InvalidOperation is an ArithmeticError
        return None


def _float_number(value: float) -> Number | None:
    """A float (math-verify's value, a numeric gold) as a Number: the exact value of its shortest
    repr (the float 0.1 is the 0.1 it was written as); None when not finite."""
    if not math.isfinite(value):
        return None
    return Number(Decimal(repr(float(value))))


def _latex_value(text: str) -> Number | None:
    """Numeric value of a LaTeX expression through math-verify (thread-safe: no signal timeout)."""
    if len(text) > 200:  # math-verify runs without a timeout off the main thread: bound the input
        return None
    try:
        from math_verify import parse

        logging.getLogger("math_verify").setLevel(logging.ERROR)  # silence its per-call timeout warning
        parsed = parse(f"${text}$", parsing_timeout=None)
    except Exception:
        return None
    for candidate in parsed:
        try:
            value = float(candidate)
        except (TypeError, ValueError):
            continue
        if math.isfinite(value):
            return _float_number(value)
    return None


def parse_number(text: str | None) -> Number | None:
    """The first number in ``text`` after normalisation, or None.

    ``"$1,000.50"`` -> 1000.5, ``"-3"`` -> -3, ``"3/4"`` -> 0.75, ``"72.0 dollars"`` -> 72,
    ``"\\frac{3}{4}"`` -> 0.75, ``"50%"`` -> 50.
    """
    if text is None:
        return None
    text = str(text).strip()
    if not text:
        return None
    cleaned = text.replace("\\$", "$").replace("\\%", "%").replace("\\!", "").replace("{,}", ",")
    cleaned = cleaned.replace("\\,", "").replace("\\text{", "{")
    frac = _LATEX_FRAC.match(cleaned.strip().lstrip("-").strip())
    if frac:
        value = _number_value(f"{frac.group(1)}/{frac.group(2)}")
        if value is not None:
            return -value if cleaned.strip().startswith("-") else value  # Number.__neg__ keeps it exact
    if "\\" in cleaned:
        value = _latex_value(cleaned)
        if value is not None:
            return value
    match = _NUMBER.search(cleaned)
    if match:
        whole = _expression_at(cleaned, match)
        if whole is not None:  # the number is part of a power: the answer is the expression, never its prefix
            return _evaluate(whole)
        return _number_value(match.group(0))
    return None


# an arithmetic expression written without LaTeX commands: digits, operators, brackets, spaces
_EXPRESSION = re.compile(r"[\d.,+\-−*/×·^(){}\[\] \t]*")
_MAX_DIGITS = 10_000  # a power with a longer result is not evaluated (2^{10^9} would take the machine)


def _expression_at(text: str, match: re.Match) -> str | None:
    """The whole arithmetic expression the number ``match`` starts (opening brackets before it
    included), when it holds a power (``^``, ``**``): ``2^{10}``, ``(-2)^{2}``, ``3 * 10^3``; None
    when it holds none (the number stands for itself, as before)."""
    start = match.start()
    while start > 0 and text[start - 1] in "({[ \t":
        start -= 1
    expression = _EXPRESSION.match(text, start).group(0).strip().rstrip(".,")
    # markdown bold closing an answer (``**Answer: 18**``) is no operator: a power needs an operand after it
    expression = re.sub(r"\*+$", "", expression).strip()
    if "^" not in expression and not re.search(r"\*\*\s*[\d(\[{+\-−]", expression):
        return None
    return expression


def _evaluate(expression: str) -> Number | None:
    """The exact value of an arithmetic expression (``+ - * / × · ^ **``, brackets, integer
    powers), or None when it is not one or its value is too long to compute."""
    tokens = re.findall(r"\d[\d,]*(?:\.\d+)?|\.\d+|\*\*|[-−+*/×·^(){}\[\]]", expression)
    if "".join(tokens) != re.sub(r"\s+", "", expression):
        return None
    tokens = ["^" if t == "**" else "-" if t == "−" else "*" if t in "×·" else t for t in tokens]
    tokens = ["(" if t in "{[" else ")" if t in "}]" else t for t in tokens]
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        position += 1
        return tokens[position - 1]

    def atom() -> Decimal:
        token = take() if peek() is not None else None
        if token == "(":
            value = total()
            if take() != ")":
                raise ValueError("unbalanced")
            return value
        if token == "-":
            return -power()
        if token == "+":
            return power()
        if token is None or not (token[0].isdigit() or token[0] == "."):
            raise ValueError("not a number")
        if "," in token and not re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", token):
            raise ValueError("a list, not a number")
        return Decimal(token.replace(",", ""))

    def power() -> Decimal:
        base = atom()
        if peek() != "^":
            return base
        take()
        exponent = power()  # right-associative: 2^3^2 = 2^9
        if exponent != exponent.to_integral_value() or abs(exponent) > _MAX_DIGITS:
            raise ValueError("not an integer power")
        if base and (abs(base.adjusted()) + 1) * abs(exponent) > _MAX_DIGITS:
            raise ValueError("too long")
        if not base and exponent < 0:
            raise ZeroDivisionError
        if exponent >= 0:
            return _EXACT.power(base, int(exponent))
        return _quotient(Decimal(1), _EXACT.power(base, -int(exponent)))

    def product() -> Decimal:
        value = power()
        while peek() in ("*", "/"):
            if take() == "*":
                value = _EXACT.multiply(value, power())
            else:
                divisor = power()
                if not divisor:
                    raise ZeroDivisionError
                value = _quotient(value, divisor)
        return value

    def total() -> Decimal:
        value = product()
        while peek() in ("+", "-"):
            value = _EXACT.add(value, product()) if take() == "+" else _EXACT.subtract(value, product())
        return value

    try:
        value = total()
    except (ValueError, ArithmeticError, IndexError, RecursionError):
        return None
    return Number(value) if position == len(tokens) else None


def _last_number(text: str) -> Number | None:
    matches = list(_NUMBER.finditer(text))
    return _number_value(matches[-1].group(0)) if matches else None


def last_answer_statement(completion: str) -> str | None:
    """What follows the last ``answer is`` / ``answer:`` / ``answer =``, to the end of its line
    (rule 3: "The answer is 3. No wait, the answer is 4." states 4)."""
    matches = list(_ANSWER_IS.finditer(completion))
    if not matches:
        return None
    last = matches[-1]
    end = completion.find("\n", last.end())
    return completion[last.end() : end if end >= 0 else len(completion)]


def _first_hashes(completion: str) -> str | None:
    """Text of the first ``#### N`` answer line (rule 1)."""
    for match in _HASHES.finditer(completion):
        if _HASHES_ANSWER.match(match.group(1)):
            return match.group(1)
    return None


def _hashes_value(text: str | None) -> Number | None:
    """The number a ``####`` line states: its result when it holds an equation (a chat model's
    ``#### 72 * 16 = 1080`` states 1080, not 72; ``#### 4 =`` cut at the token limit states 4),
    else the number it starts with."""
    if text is None:
        return None
    if "=" in text:
        for side in reversed(text.split("=")):
            if side.strip():
                return parse_number(side)
        return None
    return parse_number(text)


def _stated_answer(text: str | None) -> Number | None:
    """The number an ``answer is ...`` / bold statement gives (rules 3 and 4): the result after
    its last ``=``, the number it starts with, or the last number of the sentence it is."""
    if text is None:
        return None
    text = text.replace("\\$", "$")
    if "=" in text:
        return parse_number(text.rsplit("=", 1)[1])
    if _STARTS_WITH_NUMBER.match(text):
        return parse_number(text)
    sentence = re.split(r"(?<=[.!?])\s+(?=[A-Z])", text.strip(), maxsplit=1)[0].replace("\\", " ")
    verbs = list(_COPULA.finditer(sentence))  # "... the total cost of 12 gallons is $33.00."
    if verbs:
        value = parse_number(sentence[verbs[-1].end() :])
        if value is not None:
            return value
    return _last_number(sentence)


def _last_line_bold(completion: str) -> str | None:
    """The last bold span holding a digit on the last non-empty line (rule 4)."""
    lines = completion.rstrip().rsplit("\n", 1)
    spans = [span for span in _BOLD.findall(lines[-1]) if re.search(r"\d", span)]
    return spans[-1] if spans else None


def extract_prediction(completion: str) -> tuple[Number | None, str]:
    """The predicted number and the rule that found it (``none`` when nothing was found)."""
    if not isinstance(completion, str) or not completion.strip():
        return None, "none"
    rules = (
        ("hashes", lambda: _hashes_value(_first_hashes(completion))),
        ("boxed", lambda: parse_number(extract_boxed(completion))),
        ("answer_is", lambda: _stated_answer(last_answer_statement(completion))),
        ("bold", lambda: _stated_answer(_last_line_bold(completion))),
    )
    for rule, find in rules:  # first rule whose text parses wins
        value = find()
        if value is not None:
            return value, rule
    value = _last_number(completion)
    if value is not None:
        return value, "last_number"
    return None, "none"


def parse_gold(answer: str | float | int | None) -> Number | None:
    """Gold number from a GSM8K answer (text after ``#### ``) or a bare number."""
    if answer is None:
        return None
    if isinstance(answer, int) and not isinstance(answer, bool):
        return Number(Decimal(answer))  # exact: no conversion to text, no digit limit
    if isinstance(answer, float):
        return _float_number(answer)
    text = str(answer)
    hashes = _HASHES.findall(text)
    if hashes:
        return parse_number(hashes[-1])
    return parse_number(text)


def exact_value(number: float | int | Decimal | None) -> Decimal | None:
    """The exact value of a number: a Number's ``exact``; a float's shortest repr; an int as it
    is; None for None and non-finite values."""
    if number is None or isinstance(number, bool):
        return None
    if isinstance(number, Number):
        return number.exact
    if isinstance(number, Decimal):
        return number if number.is_finite() else None
    if isinstance(number, int):
        return Decimal(number)
    return Decimal(repr(float(number))) if math.isfinite(number) else None


def json_number(number: float | None) -> int | float | str | None:
    """A parsed number for a report: an integer as a JSON integer (``2**53 + 1`` stays itself; its
    float would read as ``2**53``), one too long for Python to print as a number as its digits
    (a string), anything else as its float."""
    exact = exact_value(number)
    if exact is None:
        return None
    if exact == exact.to_integral_value(context=_EXACT):
        digits = exact.adjusted() + 1
        return int(exact) if digits <= 4000 else str(exact.quantize(Decimal(1), context=_EXACT))
    return float(number)


# Subtraction and absolute value with no rounding: the difference of two numbers of any length
# is exact (it has at most as many digits as the longer of them).
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def answers_match(predicted: float | None, gold: float | None, tolerance: float = 1e-6) -> bool:
    """Equal within an absolute ``tolerance`` (docs/spec.md: 1e-6), with no relative slack (a
    relative 1e-9 would let 1234567891 match 1234567890), in exact decimal arithmetic: integers compare
    exactly whatever their length (``2**53 + 1`` is not ``2**53``)."""
    predicted_value, gold_value = exact_value(predicted), exact_value(gold)
    if predicted_value is None or gold_value is None:
        return False
    difference = _EXACT.abs(_EXACT.subtract(predicted_value, gold_value))
    return difference <= exact_value(tolerance)
