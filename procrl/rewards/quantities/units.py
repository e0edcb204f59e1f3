"""The one unit vocabulary of procrl's readers of quantities: every unit, how it is written, its
kind (dimension) and the conversions between units, and the words that scale a number.

The arithmetic judge reads a unit's kind (a result in another unit of the same kind, or off by a
conversion factor, is a conversion, not a slip: :mod:`~procrl.rewards.quantities.excuses`); the
reference judge reads a unit's name and its conversions (a quantity converted into another unit
its step names reaches the gold's path: :mod:`procrl.rewards.judges.reference`).
"""

from __future__ import annotations

import re

__all__ = [
    "CONVERSIONS",
    "EXCUSING_BY_KIND",
    "EXCUSING_FACTORS",
    "MULTIPLIER_WORDS",
    "UNITS",
    "UNIT_TOKEN",
    "canonical_unit",
    "conversion_factors",
    "dimension",
    "own_factors",
    "unit_name",
    "units_named",
]

# name -> (kind, other ways it is written). A kind of None: a count, not a measure ("12 items =
# 1 dozen" converts, but a count off by a factor is not read as a conversion).
UNITS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "second": ("time", ("sec", "secs")),
    "minute": ("time", ("min", "mins")),
    "hour": ("time", ("hr", "hrs")),
    "day": ("time", ()),
    "week": ("time", ("wk",)),
    "month": ("time", ()),
    "year": ("time", ("yr", "yrs")),
    "decade": ("time", ()),
    "century": ("time", ()),
    "inch": ("length", ()),
    "foot": ("length", ("feet", "ft")),
    "yard": ("length", ("yd",)),
    "mile": ("length", ("mi",)),
    "millimeter": ("length", ("mm",)),
    "centimeter": ("length", ("cm",)),
    "meter": ("length", ("metre",)),
    "kilometer": ("length", ("km", "kilometre")),
    "ounce": ("mass", ("oz",)),
    "pound": ("mass", ("lb", "lbs")),
    "ton": ("mass", ()),
    "tonne": ("mass", ()),
    "milligram": ("mass", ("mg",)),
    "gram": ("mass", ("g",)),
    "kilogram": ("mass", ("kg",)),
    "cup": ("volume", ()),
    "pint": ("volume", ("pt",)),
    "quart": ("volume", ("qt",)),
    "gallon": ("volume", ("gal",)),
    "milliliter": ("volume", ("ml",)),
    "liter": ("volume", ("l", "litre")),
    "tablespoon": ("volume", ("tbsp",)),
    "teaspoon": ("volume", ("tsp",)),
    "dollar": ("money", ("buck", "$")),
    "cent": ("money", ("penny", "pennie")),
    "nickel": ("money", ()),
    "dime": ("money", ()),
    "item": (None, ()),
    "dozen": (None, ()),
}
# Conversions between two units: how many of the first make one of the second.
CONVERSIONS = {
    ("second", "minute"): 60,
    ("minute", "hour"): 60,
    ("second", "hour"): 3600,
    ("hour", "day"): 24,
    ("minute", "day"): 1440,
    ("day", "week"): 7,
    ("hour", "week"): 168,
    ("week", "month"): 4,
    ("day", "month"): 30,
    ("month", "year"): 12,
    ("week", "year"): 52,
    ("day", "year"): 365,
    ("year", "decade"): 10,
    ("year", "century"): 100,
    ("inch", "foot"): 12,
    ("foot", "yard"): 3,
    ("inch", "yard"): 36,
    ("foot", "mile"): 5280,
    ("yard", "mile"): 1760,
    ("millimeter", "centimeter"): 10,
    ("centimeter", "meter"): 100,
    ("meter", "kilometer"): 1000,
    ("ounce", "pound"): 16,
    ("gram", "kilogram"): 1000,
    ("pound", "ton"): 2000,
    ("milligram", "gram"): 1000,
    ("cup", "pint"): 2,
    ("pint", "quart"): 2,
    ("quart", "gallon"): 4,
    ("cup", "quart"): 4,
    ("cup", "gallon"): 16,
    ("ounce", "cup"): 8,
    ("pint", "gallon"): 8,
    ("ounce", "gallon"): 128,
    ("milliliter", "liter"): 1000,
    ("cent", "dollar"): 100,
    ("item", "dozen"): 12,
}
# The conversions whose factor excuses a false calculation in units of a kind (a result off by
# exactly it is read as a conversion: "12 x 25 cents = $3.00"). Not those of 2, 4 or 8: a result
# doubled or halved is a common slip.
_EXCUSING = (
    ("second", "minute"),
    ("cent", "dollar"),
    ("meter", "kilometer"),
    ("inch", "foot"),
    ("ounce", "pound"),
    ("hour", "day"),
    ("day", "week"),
    ("second", "hour"),
    ("week", "year"),
    ("day", "year"),
    ("foot", "yard"),
    ("inch", "yard"),
    ("foot", "mile"),
    ("millimeter", "centimeter"),
)
EXCUSING_FACTORS = tuple(dict.fromkeys(CONVERSIONS[pair] for pair in _EXCUSING))
# The same, per kind of unit: a money result off by 3 (feet per yard) is no conversion.
EXCUSING_BY_KIND: dict[str, tuple[int, ...]] = {}
for _pair in _EXCUSING:
    _kind = UNITS[_pair[0]][0]
    EXCUSING_BY_KIND[_kind] = tuple(dict.fromkeys((*EXCUSING_BY_KIND.get(_kind, ()), CONVERSIONS[_pair])))
# Words that scale the number: a sum or a result with one of them is not checked when it does not hold.
MULTIPLIER_WORDS = frozenset(
    "dozen dozens hundred hundreds thousand thousands million millions billion billions trillion k m bn "
    "score gross pair pairs half quarter quarters".split()
)

_WRITTEN = {written: name for name, (_, spellings) in UNITS.items() for written in (name, *spellings)}
_KIND_OF_WRITTEN = {written: UNITS[name][0] for written, name in _WRITTEN.items() if UNITS[name][0]}
# A unit word as a token of a step ("minutes", "babies/mink") and as a word of a text ("$" too).
_LETTERS = "[A-Za-z]+"
UNIT_TOKEN = re.compile(rf"{_LETTERS}(?:/{_LETTERS})?")
_UNIT_OR_CURRENCY = re.compile(rf"{_LETTERS}|\$")


def unit_name(run: str) -> str | None:
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


def dimension(unit: str | None) -> str | None:
    """The kind of a unit run's first word as :func:`unit_name` gives it ("minute", "lb", "$")."""
    if not unit:
        return None
    return _KIND_OF_WRITTEN.get(unit.split()[0].split("/")[0])


def canonical_unit(word: str | None) -> str | None:
    """A unit word as one name of :data:`UNITS` ("hours" -> "hour", "lbs" -> "pound"), or None."""
    if not word:
        return None
    word = word.lower().split()[0].split("/")[0]
    for candidate in (
        word,
        word[:-1] if word.endswith("s") else None,
        word[:-2] if word.endswith("es") else None,
        word[:-3] + "y" if word.endswith("ies") else None,
    ):
        if candidate and candidate in _WRITTEN:
            return _WRITTEN[candidate]
    return None


def units_named(text: str) -> frozenset[str]:
    """The units a text names, as names of :data:`UNITS`."""
    return frozenset(unit for unit in map(canonical_unit, _UNIT_OR_CURRENCY.findall(text)) if unit)


def conversion_factors(unit: str | None, named: frozenset[str]) -> list[float]:
    """Conversion factors between ``unit`` (None: any unit) and the other units ``named``."""
    return [
        float(factor)
        for (a, b), factor in CONVERSIONS.items()
        if (a in named and b in named and unit is None) or (unit in (a, b) and ({a, b} - {unit}) <= named)
    ]


def own_factors(unit: str | None) -> list[float]:
    """The factors of every conversion of ``unit``."""
    return [float(factor) for pair, factor in CONVERSIONS.items() if unit in pair]
