"""The numbers a text states, read through the plain arithmetic (the reference judge reads them:
:mod:`procrl.rewards.judges.reference`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from procrl.rewards.quantities.notation import NEXT_WORD, plain_arithmetic
from procrl.rewards.quantities.units import unit_name

__all__ = ["StatedNumber", "stated_numbers"]

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
    :func:`find_claims`). No sign: a ``-`` may be an operator or a dash.

    Args:
        text: a step, a question or a gold solution.

    Returns:
        The numbers in reading order, each with its value, its text and offsets, its unit, whether
        it is a percent or currency, and a fraction's two parts.

    >>> [(n.value, n.unit) for n in stated_numbers("He walks 2.5 hours, 150 minutes, for $3.")]
    [(2.5, 'hour'), (150.0, 'minute'), (3.0, '$')]
    """
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
        word = NEXT_WORD.match(visible, match.end(), match.end() + 30)
        unit = units.get(match.end()) or (word.group(1) if word and word.group(1) != "$" else None)
        unit = unit_name(unit) if unit else ("$" if match.group("currency") else None)
        found.append(
            StatedNumber(
                match.start(),
                match.end(),
                value,
                visible[match.start() : match.end()].strip(),
                bool(match.group("percent")),
                bool(match.group("currency")),
                parts,
                unit,
            )
        )
    return found
