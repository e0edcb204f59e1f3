"""A clause with each calculation replaced by the result it states ("He made a profit of 80000 -
10000 = $70,000" -> "He made a profit of $70,000"), and the calculations: what ReCEval's
premise/conclusion split reads (:func:`procrl.rewards.receval.rcu.split_rcus`). Token-based: the
calculation is the run of numbers, operators and unit words between them that ends at an ``=``
followed by a number."""

from __future__ import annotations

import re

from procrl.rewards.quantities.units import UNIT_TOKEN

__all__ = ["EQUALS", "states_number", "state_results"]

EQUALS = re.compile(r"(?<![<>=!])\s*=\s*(?!=)")
_NUMBER_TOKEN = re.compile(r"^[-−(]?\$?[-−]?(?:\d|\.\d)")
_OPERATOR_TOKEN = re.compile(r"^(?:[-+*/x×÷^−]|\*\*)$")


def states_number(text: str) -> bool:
    """``text`` starts with a number (what follows an ``=`` that states a result)."""
    return bool(_NUMBER_TOKEN.match(text))


def _math_token(token: str) -> bool:
    tight = re.search(r"\d[*/x×÷+^-]|[*/x×÷+^(]\d", token)  # "48/2", "(3"
    return bool(_NUMBER_TOKEN.match(token) or _OPERATOR_TOKEN.match(token) or tight)


def _expression_start(tokens: list[str]) -> int:
    """Index of the first token of the arithmetic expression that ends the token list (the
    left side of an ``=``): numbers, operators, and unit words between them ("30 minks * 6
    babies/mink"); ``len(tokens)`` when the list does not end in one."""
    start = len(tokens)
    while start > 0:
        token = tokens[start - 1].strip(",")
        if _math_token(token):
            start -= 1
            continue
        # a unit word inside the expression: a number before it, an operator (or the "=") after
        before_number = start >= 2 and _NUMBER_TOKEN.match(tokens[start - 2])
        after_ok = start == len(tokens) or _OPERATOR_TOKEN.match(tokens[start]) or tokens[start][:1] in "*/x×÷+-"
        if UNIT_TOKEN.fullmatch(token) and before_number and after_ok:
            start -= 1
            continue
        break
    # a run that is one bare number with no operator is a quantity, not a calculation ("1 hour = 60 minutes")
    run = tokens[start:]
    if not any(_OPERATOR_TOKEN.match(t) or re.search(r"[*/x×÷+^(]", t) or re.search(r"\d-\d", t) for t in run):
        return len(tokens)
    return start


def state_results(clause: str) -> tuple[str, list[str]]:
    """The clause with every calculation replaced by its stated result, and the calculations
    (``a op b = c``, in reading order)."""
    equations: list[str] = []
    while True:
        matches = [m for m in EQUALS.finditer(clause) if _NUMBER_TOKEN.match(clause[m.end() :])]
        changed = False
        for match in reversed(matches):
            before = clause[: match.start()]
            tokens = before.split()
            first = _expression_start(tokens)
            if first == len(tokens):
                continue
            kept = " ".join(tokens[:first])
            expression = " ".join(tokens[first:])
            result = re.match(r"\S+", clause[match.end() :]).group(0)
            equations.append(f"{expression} = {result.rstrip('.,;:')}")
            clause = (kept + " " if kept else "") + clause[match.end() :]
            changed = True
            break
        if not changed:
            return clause, list(reversed(equations))
