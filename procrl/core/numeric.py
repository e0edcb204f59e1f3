"""Small numeric helpers shared across layers (imports nothing of procrl).

``mean`` is the one mean of a list of measurements: "no values" is None, never 0, 1 or NaN,
so that a missing measurement cannot pass for a score (a reward of 0 is a verdict; a metric of
NaN silently vanishes from some consumers and poisons others).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["mean"]


def mean(values: Iterable[float | None]) -> float | None:
    """The mean of the known values: None and non-finite values (no opinion, a failed
    measurement) are left out; None when no value is left."""
    known = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return sum(known) / len(known) if known else None
