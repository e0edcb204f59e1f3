"""procrl.core.numeric.mean: the one mean of measurements; "no values" is None, never a number."""

from __future__ import annotations

import math

import pytest

from procrl.core.numeric import mean


def test_mean_of_known_values_leaves_out_none_and_non_finite():
    assert mean([1.0, 2.0, 6.0]) == 3.0
    assert mean([1.0, None, 3.0, math.nan, math.inf]) == 2.0
    assert mean(v for v in (4, 5)) == 4.5  # any iterable, ints too
    assert mean([0.25]) == pytest.approx(0.25)


@pytest.mark.parametrize("values", [[], [None], [math.nan, None]])
def test_no_values_is_none_not_zero_or_nan(values):
    assert mean(values) is None
