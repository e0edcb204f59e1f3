"""The built-in reward components: recipe name -> "module:Class" (imported on first use, so
that naming a light component never imports a heavy one).

A built-in is its module, one line here and its tests; what it grades, its score range, its
models and its diagnostics are class attributes of the component
(:class:`procrl.rewards.protocol.RewardComponent`), read through :func:`component_info`.

>>> builtin_class("accuracy").__name__
'AccuracyReward'
>>> info = component_info("first_error")
>>> info.grades, info.score_range
('reasoning', (-1.0, 0.0))
"""

from __future__ import annotations

import importlib
from typing import Any

from procrl.rewards.protocol import ComponentInfo
from procrl.rewards.protocol import describe_component as _info_of

__all__ = ["REWARDS", "builtin_class", "component_info"]

REWARDS: dict[str, str] = {
    "accuracy": "procrl.rewards.accuracy:AccuracyReward",
    "format": "procrl.rewards.format:FormatReward",
    "first_error": "procrl.rewards.first_error:FirstErrorReward",
    "trace": "procrl.rewards.trace:TraceReward",
    "receval_correctness": "procrl.rewards.receval.components:ReCEvalCorrectness",
    "receval_informativeness": "procrl.rewards.receval.components:ReCEvalInformativeness",
}


def builtin_class(type_name: str) -> Any:
    """The class of a built-in component (its module imported now), checked.

    Args:
        type_name: a key of :data:`REWARDS` (a recipe's ``type:``).

    Returns:
        The component class. A built-in that leaves out what it grades or its score range is a
        TypeError naming the attribute.
    """
    module_name, _, attribute = REWARDS[type_name].partition(":")
    target = getattr(importlib.import_module(module_name), attribute)
    _info_of(target, f"{REWARDS[type_name]} (rewards type {type_name!r})", required=True)
    return target


def component_info(type_name: Any) -> ComponentInfo | None:
    """What the component of a recipe ``type:`` says about itself.

    Args:
        type_name: a built-in name, a ``package.module:attribute`` reference, or the class /
            function itself.

    Returns:
        Its :class:`~procrl.rewards.protocol.ComponentInfo` (what it grades, its score range, its
        models, its diagnostics); None when the type is not a known component (an unknown name, a
        module that cannot be imported).
    """
    if not isinstance(type_name, str):
        return _info_of(type_name) if callable(type_name) else None
    if type_name in REWARDS:
        return _info_of(builtin_class(type_name), required=True)
    module_name, colon, attribute = type_name.partition(":")
    if not colon:
        return None
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except Exception:  # noqa: BLE001 - not importable here: nothing is known about it
        return None
    return _info_of(target, type_name) if callable(target) else None
