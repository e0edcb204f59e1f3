"""The reward API in one import, kept for custom rewards and existing code.

``from procrl.rewards.base import RewardBatch, RewardComponent, RewardOutput, ...`` keeps
working; the code lives in :mod:`procrl.rewards.protocol` (the component protocol and its
metadata), :mod:`procrl.rewards.spec` (a recipe's ``rewards:``, validated) and
:mod:`procrl.rewards.mix` (the reward mix, its failure policy and the TRL adapter).
"""

from __future__ import annotations

from procrl.rewards.mix import RewardMix, _finite, _loop_running, _run_in_thread
from procrl.rewards.protocol import (DIAGNOSTICS, GRADES, ComponentInfo, FunctionComponent, ModelRef, RewardBatch,
                                     RewardComponent, RewardOutput, RuntimeContext, _as_scores, _one_line,
                                     _prompt_text, completion_text, describe_component)
from procrl.rewards.registry import REWARDS, component_info
from procrl.rewards.spec import (COMMON_KEYS, ComponentSpec, GateSettings, _check_function_settings,
                                 check_gate_cycles, parse_component, parse_rewards, resolve_type)

__all__ = [
    "COMMON_KEYS",
    "REWARDS",
    "DIAGNOSTICS",
    "GRADES",
    "ComponentInfo",
    "ComponentSpec",
    "FunctionComponent",
    "GateSettings",
    "ModelRef",
    "RewardBatch",
    "RewardComponent",
    "RewardMix",
    "RewardOutput",
    "RuntimeContext",
    "check_gate_cycles",
    "completion_text",
    "component_info",
    "describe_component",
    "parse_component",
    "parse_rewards",
    "resolve_type",
]

_PRIVATE = (_as_scores, _check_function_settings, _finite, _loop_running, _one_line, _prompt_text, _run_in_thread)
