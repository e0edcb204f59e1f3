"""What a rule of the reference judge is (:class:`Rule`), and what a rule on one stated quantity
decides (:class:`Accept`, :class:`Flag`). The rules themselves: :data:`~procrl.rewards.judges.reference.RULES`."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["STAGES", "Accept", "Flag", "Rule"]

Stage = Literal["reading", "lookahead", "quantity", "blame", "answer"]
#: Where a rule acts, in the order the judge goes through them.
STAGES: dict[str, str] = {
    "reading": "what is known, and what the gold's path holds",
    "lookahead": "whether a value off the gold's path leads back to it",
    "quantity": "each stated quantity in reading order: accepted, or the first error",
    "blame": "the step named for a flagged quantity",
    "answer": "a wrong final answer with no quantity flagged: the step named",
}


@dataclass(frozen=True)
class Rule:
    """One rule: its ``name`` (what a recipe's ``rules_off`` and :meth:`ReferenceRules.on` use), the
    ``stage`` it acts at, and ``unit``: the function that applies it, whose docstring states the rule
    with one real example (``statement``); ``option``: the recipe option that also switches it, if any."""

    name: str
    stage: Stage
    unit: Callable
    option: str | None = None
    default_on: bool = True

    @property
    def statement(self) -> str:
        """The rule in words, with its example (the unit's docstring)."""
        return inspect.cleandoc(self.unit.__doc__ or "")

    @property
    def summary(self) -> str:
        """What the rule says, in one clause: its statement's first sentence without the name, up to the
        first semicolon, in Markdown's code quotes."""
        first = " ".join(self.statement.split("\n\n")[0].split())
        first = re.sub(r"^Rule ``\w+``(?: \([^)]*\))?: ", "", first)
        depth = 0
        for position, char in enumerate(first):  # up to the first ";" or ". " outside parentheses
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and (char == ";" or first.startswith(". ", position)):
                first = first[:position]
                break
        return first.rstrip(".").replace("``", "`")


@dataclass(frozen=True)
class Accept:
    """A quantity accepted. ``checked``: worked out (its step counts as checked); ``off_path``: off the
    gold's path (a wrong final answer is blamed on the first such); ``result``: False when it only
    restates what is known (None: a result unless it restates the question or a constant)."""

    checked: bool = False
    off_path: bool = False
    result: bool | None = None


@dataclass(frozen=True)
class Flag:
    """A quantity not accepted: the first error, ``why`` in the verdict's note; ``kind`` says which
    blame rules may name an earlier step instead (``false``: a false calculation; ``unreachable``:
    a value nothing reaches; ``leap``: none)."""

    why: str
    kind: Literal["false", "unreachable", "leap"] = "unreachable"
