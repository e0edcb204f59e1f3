"""The engine for quantities in prose (procrl.rewards.quantities): the one unit vocabulary, and the
stated results ReCEval's split reads. The claims and the evaluator are tested through the
arithmetic judge (test_first_error.py, test_real_text.py) and the reference judge."""

import re
from pathlib import Path

import pytest

from procrl.rewards.quantities import decimals
from procrl.rewards.quantities.results import state_results
from procrl.rewards.quantities.units import (
    CONVERSIONS,
    EXCUSING_BY_KIND,
    EXCUSING_FACTORS,
    UNITS,
    canonical_unit,
    conversion_factors,
    dimension,
    own_factors,
    unit_name,
    units_named,
)

PACKAGE = Path(__file__).resolve().parents[1] / "procrl"


@pytest.mark.parametrize(
    "word, unit",
    [
        ("hours", "hour"),
        ("lbs", "pound"),
        ("feet", "foot"),
        ("pennies", "cent"),
        ("Minutes/day", "minute"),
        ("$", "dollar"),
        ("kilometres", "kilometer"),
        ("apples", None),
        ("", None),
    ],
)
def test_canonical_unit(word, unit):
    assert canonical_unit(word) == unit


def test_unit_names_and_kinds():
    assert unit_name("boxes (red)") == "box" and unit_name("babies/mink") == "baby/mink"
    assert (dimension("lb"), dimension("minute"), dimension("dollar/hour"), dimension("$")) == (
        "mass",
        "time",
        "money",
        "money",
    )
    assert dimension("item") is None and dimension("dozen") is None  # counts: a factor off is not a conversion
    assert dimension("apple") is None and dimension(None) is None


def test_conversions():
    assert conversion_factors("minute", frozenset({"hour", "day"})) == [60.0, 1440.0]
    assert conversion_factors(None, frozenset({"hour", "day"})) == [24.0]
    assert own_factors("dozen") == [12.0] and own_factors(None) == []
    assert units_named("3 hours at $5 an hour, 2 feet") == {"hour", "dollar", "foot"}
    assert all(a in UNITS and b in UNITS for a, b in CONVERSIONS)
    assert EXCUSING_FACTORS == (60, 100, 1000, 12, 16, 24, 7, 3600, 52, 365, 3, 36, 5280, 10)
    assert EXCUSING_BY_KIND == {
        "time": (60, 24, 7, 3600, 52, 365),
        "money": (100,),
        "length": (1000, 12, 3, 36, 5280, 10),
        "mass": (16,),
    }


@pytest.mark.parametrize(
    "text, correct",
    [
        ("12 x 25 cents = $3.00", []),  # cents to dollars: a conversion
        ("2 hours x 3 = 360 minutes", []),
        ("5 feet x 4 = 60 inches", []),
        # a money result off by 3 (feet per yard) or 60 (minutes per hour) is a slip, not a conversion
        ("150% of $2 = $1", [False]),
        ("4 x $15 = $1", [False]),
        ("150% of $2 = 0.5 x $2 = $1", [False, True]),  # Llama-3.2-3B, a GSM8K test solution
    ],
)
def test_a_conversion_factor_excuses_only_within_its_kind(text, correct):
    from procrl.rewards.quantities import find_claims

    assert [c.correct for c in find_claims(text)] == correct


@pytest.mark.parametrize(
    "text, correct",
    [
        ("25 / 4 = 6 boxes", []),  # a count: floor, ceiling or nearest
        ("25 / 4 = 7 boxes", []),
        ("0.3 x $46,153 = $13,845", []),  # money: whole dollars
        ("10 / 3 = 3 hours", []),  # a measure rounded to the nearest whole
        ("3/8 * 21 = 7 hours", [False]),  # 7.875 hours is no 7: a measure is not floored
        ("25 / 4 = 5 boxes", [False]),
    ],
)
def test_a_whole_number_for_a_division_is_floor_or_ceiling_only_for_counts_and_money(text, correct):
    from procrl.rewards.quantities import find_claims

    assert [c.correct for c in find_claims(text)] == correct


def test_one_unit_vocabulary():
    """No other module of procrl spells out a unit table (a second vocabulary would drift)."""
    vocabulary = PACKAGE / "rewards" / "quantities" / "units.py"
    tables = [
        path
        for path in PACKAGE.rglob("*.py")
        if path != vocabulary and re.search(r"[\"'](?:kilogram|milliliter)[\"']", path.read_text())
    ]
    assert tables == []


@pytest.mark.parametrize("text, places", [("3.25", 2), ("12.5%", 1), ("40", 0), ("$1,500.00 ", 2)])
def test_decimals(text, places):
    assert decimals(text) == places


@pytest.mark.parametrize(
    "clause, stated, equations",
    [
        ("He made a profit of 80000 - 10000 = $70,000", "He made a profit of $70,000", ["80000 - 10000 = $70,000"]),
        ("30 minks * 6 babies/mink = 180 babies", "180 babies", ["30 minks * 6 babies/mink = 180"]),
        ("She sold 48/2 = 24 clips in May", "She sold 24 clips in May", ["48/2 = 24"]),
        ("1 hour = 60 minutes", "1 hour = 60 minutes", []),  # a quantity, not a calculation
    ],
)
def test_state_results(clause, stated, equations):
    assert state_results(clause) == (stated, equations)


@pytest.mark.parametrize(
    "abbreviated, spelled",
    [("5 gal * 4 = 80 qt", "5 gallons * 4 = 80 quarts"), ("3 tbsp * 2 = 18 tsp", "3 tablespoons * 2 = 18 teaspoons")],
)
def test_a_unit_reads_the_same_abbreviated_or_spelled_out(abbreviated, spelled):
    """A result in another unit of the same kind is a conversion, not a slip, however the units are written."""
    from procrl.rewards.quantities import find_claims

    assert find_claims(spelled) == [] and find_claims(abbreviated) == []
    assert [c.correct for c in find_claims("5 gal * 4 = 21 gal")] == [False]  # same unit: a slip
