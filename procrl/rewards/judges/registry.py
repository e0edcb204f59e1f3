"""The first-error backends: recipe name -> "module:JudgeClass" (imported on first use, so that
naming a model-free backend never imports an HTTP client or a model loader).

A backend is its judge module, one line here, its settings class and its tests. Its judge class
describes itself: ``Settings`` (the dataclass of :mod:`procrl.rewards.judges.settings` holding
exactly the options the backend reads), ``from_settings(settings, device)`` (the judge those
settings make) and what it is (:class:`~procrl.rewards.judges.protocol.Judge`'s attributes:
``model_free``, ``loads_model``, ``sends_requests``, ``needs_gold_solution``, ``reports_categories``,
``gives_step_scores``, ``answer_kinds``). Everything outside this module reads those attributes;
no code compares a backend's name (tests/test_first_error_backends.py checks both).

>>> sorted(BACKENDS) == sorted(options_by_backend())
True
>>> judge_class("arithmetic").model_free, judge_class("openai").sends_requests
(True, True)
>>> answer_kind_refusal("reference", "choice")
('checks the calculations of numeric answers', ['openai', 'hf'])
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "answer_kind_refusal",
    "backend_settings",
    "judge_class",
    "options_by_backend",
    "page_order",
]

BACKENDS: dict[str, str] = {
    "openai": "procrl.rewards.judges.openai:OpenAIJudge",
    "hf": "procrl.rewards.judges.hf:HFJudge",
    "prm": "procrl.rewards.judges.prm:PRMJudge",
    "arithmetic": "procrl.rewards.judges.arithmetic:ArithmeticJudge",
    "reference": "procrl.rewards.judges.reference:ReferenceJudge",
}
DEFAULT_BACKEND = "arithmetic"


def judge_class(backend: str) -> Any:
    """The judge class of a backend (its module imported now).

    Args:
        backend: a key of :data:`BACKENDS`.

    Returns:
        The :class:`~procrl.rewards.judges.protocol.Judge` subclass its line names.
    """
    module_name, _, attribute = BACKENDS[backend].partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def backend_settings(backend: str) -> type:
    """The settings dataclass of a backend (its judge class's ``Settings``)."""
    return judge_class(backend).Settings


def options_by_backend() -> dict[str, list[str]]:
    """Backend -> the recipe keys its settings read (``backend`` included), in field order."""
    return {name: [f.name for f in dataclasses.fields(backend_settings(name)) if f.init] for name in BACKENDS}


def answer_kind_refusal(backend: str, kind: str) -> tuple[str, list[str]] | None:
    """Whether a backend reads answers of ``kind`` (its judge's ``answer_kinds``).

    Args:
        backend: a key of :data:`BACKENDS`.
        kind: an answer kind (``number``, ``choice``, ``yes_no``).

    Returns:
        None when it does; else what it reads, in words, and the backends that declare ``kind``
        among their answer kinds (the ones to use instead), in registry order.
    """
    kinds = judge_class(backend).answer_kinds
    if kinds is None or kind in kinds:
        return None
    what = "checks the calculations of numeric answers" if kinds == ("number",) else f"reads {', '.join(kinds)} answers"
    others = [name for name in BACKENDS if kind in (judge_class(name).answer_kinds or ())]
    return what, others


def page_order() -> list[str]:
    """The backends in the order the docs list them: model-free judges first, then registry order."""
    return sorted(BACKENDS, key=lambda name: not judge_class(name).model_free)
