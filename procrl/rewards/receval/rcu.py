"""ReCEval's premise/conclusion split of a step into Reasoning Content Units (RCUs): pure text in,
an :class:`RCU` out, and the loader of a custom splitter named ``module:function``."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from procrl.rewards.quantities.results import EQUALS, state_results, states_number

__all__ = ["RCU", "letter_words", "load_rcu_splitter", "split_rcus"]


@dataclass(frozen=True)
class RCU:
    """A step's premises and conclusion."""

    premises: tuple[str, ...]
    conclusion: str


_CALCULATOR_NOTE = re.compile(r"<<[^<>]*>>")
# Conclusion markers; "so far", "so that", "even so", "or so", "so many/much" are not markers.
_CONCLUSION_MARKER = re.compile(
    r"(?<!\beven )(?<!\bor )\bso\b(?!\s+(?:far|that|many|much)\b)"
    r"|\b(?:therefore|thus|hence|which\s+means|this\s+means)\b",
    re.IGNORECASE,
)
# Per ReCEval, the clause after "because" / "since" is a premise of the step's conclusion.
_REASON_MARKER = re.compile(r"\b(?:because|since)\b", re.IGNORECASE)
# Where a clause ends: ";", a comma before a space (not "1,000"), a sentence end.
_CLAUSE_END = re.compile(r";|,(?=\s)|[.!?](?=\s|$)")
# " and " is tried only where a run of blanks starts ((?<!\s)): the leftmost match starts there
# anyway, and a run of 30,000 blanks is read once, not once per blank
_PREMISE_SEPARATOR = re.compile(r";|,\s*and\b|(?<!\s)\s+and\s+|\bbecause\b|\bsince\b", re.IGNORECASE)
_WORD = re.compile(r"(?<![\w$])[A-Za-z]+(?![\w])")


def _tidy(text: str) -> str:
    """A clause as an NLI text: single spaces, no dangling separators or final period."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,;:.!?%])", r"\1", text)
    return text.strip(" ,;:").rstrip(".!?").strip()


def _premises(text: str) -> list[str]:
    pieces = (_tidy(p) for p in _PREMISE_SEPARATOR.split(text))
    return [p for p in pieces if any(ch.isalnum() for ch in p)]


def letter_words(text: str) -> int:
    """Number of words made of letters only ("Jenny has $25" has 2; "80 sheep" has 1)."""
    return len(_WORD.findall(text))


def _clause_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The clause of ``text`` holding ``text[start:end]``: from the last clause end before it
    to the next one after it."""
    left = 0
    for match in _CLAUSE_END.finditer(text, 0, start):
        left = match.end()
    right = _CLAUSE_END.search(text, end)
    return left, right.start() if right else len(text)


def _reasons(text: str) -> tuple[str, list[str]]:
    """The step without its because/since clauses, and those clauses (premises)."""
    reasons: list[str] = []
    while True:
        match = _REASON_MARKER.search(text)
        if not match:
            return text, reasons
        end = _CLAUSE_END.search(text, match.end())
        marker = _CONCLUSION_MARKER.search(text, match.end())
        stop = min(m.start() for m in (end, marker) if m) if (end or marker) else len(text)
        reasons.append(text[match.end() : stop])
        text = text[: match.start()] + " " + text[stop:]


def split_rcus(step: str) -> RCU:
    """The default RCU split (docs/spec.md section 3; no SRL model): a conclusion that is a
    clause, never a bare number.

    GSM8K calculator notes ``<<a*b=c>>`` are dropped first (they repeat the visible equation).
    Clauses after *because* / *since* are premises (ReCEval). The conclusion is the clause after
    the last of {so, therefore, thus, hence, which means, this means} (not "so far", "so that",
    "even so"), else the clause holding the last ``= number`` result, else the whole step; in it,
    each calculation is replaced by its stated result ("She sold 48/2 = 24 clips in May" ->
    "She sold 24 clips in May") and becomes a premise. The rest of the step, split on ``;``,
    ``, and``, `` and ``, are premises. No trailing period on any RCU (they are joined with
    " and ").
    """
    text = _CALCULATOR_NOTE.sub("", step)
    text = EQUALS.sub(" = ", text).strip()
    text, reasons = _reasons(text)
    premises: list[str] = []
    markers = list(_CONCLUSION_MARKER.finditer(text))
    conclusion = ""
    if markers:
        last = markers[-1]
        clause = text[last.end() :]
        if any(ch.isalnum() for ch in clause):
            conclusion, equations = state_results(clause)
            premises += _premises(text[: last.start()]) + equations
    if not conclusion:
        results = [m for m in EQUALS.finditer(text) if states_number(text[m.end() :])]
        if results:
            last = results[-1]
            left, right = _clause_around(text, last.start(), last.end() + 1)
            conclusion, equations = state_results(text[left:right])
            premises += _premises(text[:left] + " ; " + text[right:]) + equations
    if not _tidy(conclusion):
        conclusion, equations = state_results(text)
        premises = equations
    premises = [_tidy(p) for p in reasons] + premises
    conclusion = _tidy(conclusion) or _tidy(step) or step
    return RCU(tuple(p for p in premises if any(ch.isalnum() for ch in p)), conclusion)


def load_rcu_splitter(reference: str) -> Callable[[str], RCU]:
    """The splitter named ``module:attr``: a callable step text -> RCU or (premises, conclusion)."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected 'package.module:function', got {reference!r}")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"cannot load RCU splitter {reference!r} ({error})") from None
    if not callable(target):
        raise ValueError(f"RCU splitter {reference!r} is not callable")

    def split(step: str) -> RCU:
        result = target(step)
        if isinstance(result, RCU):
            return result
        premises, conclusion = result
        return RCU(tuple(str(p) for p in premises), str(conclusion))

    return split
