"""Which rules of the reference judge apply, with their options (:class:`ReferenceRules`): the
judge's modules and the recipe's settings (:class:`procrl.rewards.judges.settings.ReferenceSettings`)
both read it, so it imports neither."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LEAP", "OFF_PATH", "TRANSFORMATIONS", "ReferenceRules"]

TRANSFORMATIONS = ("regroup", "units", "percent", "rounding")
OFF_PATH = ("lookahead", "derivable", "flag")
LEAP = ("accept", "flag")


@dataclass(frozen=True)
class ReferenceRules:
    """The reference judge's rules (:data:`procrl.rewards.judges.reference.RULES`) switched on or off,
    with their options; :class:`ReferenceSettings` carries them in a recipe.

    ``off`` names rules switched off; the other options switch some of them too (``transformations``
    leaves out ``units``, ``percent``, ``rounding``, ``regroup``; ``off_path`` picks ``lookahead``,
    ``derivable`` or neither; ``leap: flag`` is ``leap`` off; ``check_arithmetic: false`` is
    ``false_calculation`` off). :meth:`on` says whether one rule applies.

    >>> ReferenceRules().on("lookahead"), ReferenceRules().on("regroup")
    (True, False)
    >>> ReferenceRules(off=("closing_conclusion",)).on("closing_conclusion")
    False
    """

    max_depth: int = 1
    transformations: tuple[str, ...] = ("units", "percent", "rounding")  # regroup: measured worse (README)
    off_path: str = "lookahead"
    leap: str = "accept"
    check_arithmetic: bool = True
    off: tuple[str, ...] = ()

    def __post_init__(self):
        if self.max_depth not in (0, 1, 2):
            raise ValueError(f"max_depth must be 0, 1 or 2, got {self.max_depth}")
        unknown = set(self.transformations) - set(TRANSFORMATIONS)
        if unknown or self.off_path not in OFF_PATH or self.leap not in LEAP:
            raise ValueError(f"invalid reference rules {self}")
        # every rule the options switch off, named once, so that the judge asks one question: on(name)
        implied = {
            *(name for name in TRANSFORMATIONS if name not in self.transformations),
            *(() if self.off_path == "lookahead" else ("lookahead",)),
            *(() if self.off_path == "derivable" else ("derivable",)),
            *(() if self.leap == "accept" else ("leap",)),
            *(() if self.check_arithmetic else ("false_calculation",)),
        }
        object.__setattr__(self, "_off", frozenset(self.off) | implied)

    def on(self, name: str) -> bool:
        """Whether the rule ``name`` applies under these settings."""
        return name not in self._off
