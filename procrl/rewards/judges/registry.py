"""The first-error backends: recipe name -> "module:JudgeClass" (imported on first use, so that
naming a model-free backend never imports an HTTP client or a model loader).

A backend is its judge module, one line here and its tests. Its judge class describes itself:
``Settings`` (the dataclass of :mod:`procrl.rewards.judges.settings` holding exactly the options
the backend reads) and ``from_settings(settings, device)`` (the judge those settings make).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "backend_settings", "judge_class", "options_by_backend"]

BACKENDS: dict[str, str] = {
    "openai": "procrl.rewards.judges.openai:OpenAIJudge",
    "hf": "procrl.rewards.judges.hf:HFJudge",
    "prm": "procrl.rewards.judges.prm:PRMJudge",
    "arithmetic": "procrl.rewards.judges.arithmetic:ArithmeticJudge",
    "reference": "procrl.rewards.judges.reference:ReferenceJudge",
}
DEFAULT_BACKEND = "arithmetic"


def judge_class(backend: str) -> Any:
    """The judge class of a backend (its module imported now)."""
    module_name, _, attribute = BACKENDS[backend].partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def backend_settings(backend: str) -> type:
    """The settings dataclass of a backend."""
    return judge_class(backend).Settings


def options_by_backend() -> dict[str, list[str]]:
    """Backend -> the recipe keys its settings read (``backend`` included), in field order."""
    return {name: [f.name for f in dataclasses.fields(backend_settings(name)) if f.init] for name in BACKENDS}
