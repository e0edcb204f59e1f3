"""The ``>>>`` examples in the docstrings of what a user imports or subclasses run, and say what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

# modules whose docstrings carry runnable examples
MODULES = [
    "procrl.core.config",
    "procrl.data.synthetic",
    "procrl.rewards.protocol",
    "procrl.rewards.registry",
    "procrl.rewards.quantities.claims",
    "procrl.rewards.quantities.numbers",
    "procrl.trainers.process_grpo",
    "procrl.rewards.judges.protocol",
    "procrl.rewards.judges.registry",
    "procrl.rewards.judges.reference",
    "procrl.rewards.judges.reference.verdict",
    "procrl.rewards.judges.reference_rules",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0
