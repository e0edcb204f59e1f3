"""A recipe's ``rewards:`` mapping, validated: component specs, gates, fallbacks, the type lookup.

Each entry names a component (a built-in from :data:`procrl.rewards.registry.REWARDS`, or
``package.module:attribute``: a :class:`~procrl.rewards.protocol.RewardComponent` subclass, a
class, or a plain TRL-contract function), its ``weight``, an optional ``gate`` and its
``fallback`` (:mod:`procrl.rewards.fallback`); the rest are the component's own settings. Every
error is one line naming the key and the allowed values, raised before any model loads.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import logging
import math
from dataclasses import dataclass
from typing import Any

from procrl.core.config import ConfigError, field, from_dict, suggest
from procrl.rewards.fallback import GROUP_MEAN
from procrl.rewards.protocol import RewardComponent, _one_line, describe_component

logger = logging.getLogger(__name__)

__all__ = [
    "COMMON_KEYS",
    "ComponentSpec",
    "GateSettings",
    "check_answer_kind",
    "check_gate_cycles",
    "number_judges",
    "drop_unread_after_override",
    "parse_component",
    "parse_rewards",
    "resolve_type",
    "settings_from",
]


@dataclass
class GateSettings:
    on: str = field(help="Name of the component this one is gated on (e.g. 'accuracy').")
    min: float = field(1.0, help="The gate opens when the gating component's score is >= min.")
    value: float | None = field(0.0, help="Score given to samples whose gate is closed (null: no opinion).")


COMMON_KEYS = {"type", "weight", "gate", "fallback", "deadline_s"}
# Seconds one call of a custom component (``module:attribute``) may take before it is abandoned:
# long enough for a batch of model or API calls, short enough that a hang shows within a step.
# Built-ins bound their own work (caps, request timeouts) and have no deadline unless one is set.
CUSTOM_DEADLINE_S = 600.0


@dataclass
class ComponentSpec:
    """One entry of a recipe's ``rewards:`` mapping, validated."""

    name: str
    type: str
    weight: float
    gate: GateSettings | None
    fallback: float | str | None  # a number, "group_mean" (default) or None (TRL's no opinion)
    settings: Any  # the component's Settings instance, or a kwargs dict for plain functions
    target: Any  # the class or function
    deadline_s: float | None = None  # seconds a call may take (None: no deadline)


def resolve_type(type_name: str, path: str) -> Any:
    """A built-in name from the registry, or ``pkg.module:attr``."""
    from procrl.rewards.registry import REWARDS

    reference = REWARDS.get(type_name)
    if reference is None and ":" not in type_name:
        raise ConfigError(
            f"{path}: unknown reward {type_name!r}{suggest(type_name, REWARDS)}; "
            f"built-in rewards: {', '.join(sorted(REWARDS))}; or give type: 'package.module:attribute'"
        )
    module_name, _, attribute = (reference or type_name).partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"{path}: cannot import module {module_name!r} ({error})") from None
    except (Exception, SystemExit) as error:  # a module that fails at import (syntax error, raises)
        raise ConfigError(f"{path}: module {module_name!r} failed at import: {_one_line(error)}") from None
    try:
        target = getattr(module, attribute)
    except AttributeError:
        raise ConfigError(f"{path}: module {module_name!r} has no attribute {attribute!r}") from None
    if not callable(target):
        raise ConfigError(f"{path}: {type_name!r} is not callable")
    if reference is not None:  # a built-in says what it grades, its score range, its models (else: refused loudly)
        describe_component(target, f"{reference} (rewards type {type_name!r})", required=True)
    return target


def parse_component(name: str, raw: Any, path: str) -> ComponentSpec:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of settings, got {type(raw).__name__} {raw!r}")
    type_name = raw.get("type", name)
    if not isinstance(type_name, str):
        raise ConfigError(f"{path}.type: expected a string, got {type_name!r}")
    target = resolve_type(type_name, f"{path}.type" if "type" in raw else path)
    weight = raw.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise ConfigError(f"{path}.weight: expected a number, got {type(weight).__name__} {weight!r}")
    if not math.isfinite(weight):
        raise ConfigError(f"{path}.weight: must be a finite number, got {weight!r}")
    gate = from_dict(GateSettings, raw["gate"], f"{path}.gate") if raw.get("gate") is not None else None
    fallback = raw.get("fallback", GROUP_MEAN)
    if (
        fallback is not None
        and fallback != GROUP_MEAN
        and (isinstance(fallback, bool) or not isinstance(fallback, (int, float)) or not math.isfinite(fallback))
    ):
        raise ConfigError(
            f"{path}.fallback: expected {GROUP_MEAN!r} (the default: the mean of the component's scores in the "
            f"sample's generation group), a finite number, or null, got {fallback!r}"
        )
    if isinstance(fallback, (int, float)):
        fallback = float(fallback)
    deadline_s = _deadline(raw, type_name, path)
    own = {k: v for k, v in raw.items() if k not in COMMON_KEYS}
    if inspect.isclass(target) and issubclass(target, RewardComponent):
        settings = settings_from(target.settings_class(own, path), own, path)
    else:
        _check_function_settings(target, own, path)
        settings = own
    return ComponentSpec(name, type_name, float(weight), gate, fallback, settings, target, deadline_s)


def settings_from(settings_class: type, own: dict[str, Any], path: str) -> Any:
    """A component's settings from its recipe keys (the common keys removed): an unknown key is
    refused with a suggestion among the known and the common keys."""
    known = [f.name for f in dataclasses.fields(settings_class) if f.init]
    for key in own:
        if key not in known:  # the suggestion looks at the common keys too: 'wieght' -> 'weight'
            raise ConfigError(
                f"{path}.{key}: unknown key{suggest(key, [*known, *sorted(COMMON_KEYS)])}; "
                f"known keys: {', '.join(sorted(known)) or 'none'}; common keys: {', '.join(sorted(COMMON_KEYS))}"
            )
    return from_dict(settings_class, own, path)


def drop_unread_after_override(name: str, component: dict[str, Any], key: str, keep: set[str]) -> list[str]:
    """After ``--set rewards.<name>.<key>=...``, which may choose other options (first_error's
    ``backend``): the options the component no longer reads are dropped from ``component`` (its
    recipe mapping, changed in place), except those in ``keep`` (set by an earlier ``--set``, so
    still refused if unread). Built-in components only; returns the dropped keys."""
    from procrl.rewards.registry import REWARDS, builtin_class

    type_name = component.get("type", name)
    if not isinstance(type_name, str) or type_name not in REWARDS:
        return []
    own = {k: v for k, v in component.items() if k not in COMMON_KEYS}
    dropped = [k for k in builtin_class(type_name).unread_after_override(own, key) if k not in keep]
    for k in dropped:
        del component[k]
    if dropped:
        logger.info(
            "rewards.%s.%s set by --set: dropped the recipe's %s (not read any more)", name, key, ", ".join(dropped)
        )
    return dropped


def _deadline(raw: dict, type_name: str, path: str) -> float | None:
    """``deadline_s``: a positive number of seconds, or null for none; by default
    :data:`CUSTOM_DEADLINE_S` for a custom component, none for a built-in."""
    from procrl.rewards.registry import REWARDS

    if "deadline_s" not in raw:
        return None if type_name in REWARDS else CUSTOM_DEADLINE_S
    value = raw["deadline_s"]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(
            f"{path}.deadline_s: expected a positive number of seconds, or null for no deadline, got {value!r}"
        )
    return float(value)


def _check_function_settings(target: Any, own: dict[str, Any], path: str) -> None:
    """A plain function takes its settings as keyword arguments (``**kwargs`` swallows any name):
    a key the function does not name that is a near-miss of a common key is a typo, not a setting."""
    try:
        parameters = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return
    for key in own:
        if key in parameters:
            continue
        hint = suggest(key, sorted(COMMON_KEYS))
        if hint and not str(key).startswith(tuple(COMMON_KEYS)):
            raise ConfigError(f"{path}.{key}: unknown key{hint}; common keys: {', '.join(sorted(COMMON_KEYS))}")


def parse_rewards(raw: Any, path: str = "rewards") -> list[ComponentSpec]:
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{path}: expected a non-empty mapping of component name -> settings")
    # `name: false` drops a component (handy as `--set rewards.<name>=false`)
    specs = [parse_component(str(name), value, f"{path}.{name}") for name, value in raw.items() if value is not False]
    if not specs:
        raise ConfigError(f"{path}: every component is disabled; keep at least one")
    if all(spec.weight == 0 for spec in specs):
        raise ConfigError(
            f"{path}: every component has weight 0 ({', '.join(f'{path}.{s.name}.weight' for s in specs)}),"
            " so every sample's "
            f"reward would be 0 and there is nothing to learn; give at least one component a non-zero weight"
        )
    names = [s.name for s in specs]
    for spec in specs:
        if spec.gate is not None:
            if spec.gate.on not in names:
                raise ConfigError(
                    f"{path}.{spec.name}.gate.on: no component named {spec.gate.on!r}{suggest(spec.gate.on, names)}; "
                    f"components: {', '.join(names)}"
                )
            if spec.gate.on == spec.name:
                raise ConfigError(f"{path}.{spec.name}.gate.on: a component cannot gate itself")
    check_gate_cycles(specs, path)
    return specs


def check_gate_cycles(specs: list[ComponentSpec], path: str = "rewards") -> None:
    """Refuse gates that wait on each other (``format`` gated on ``trace``, ``trace`` on
    ``format``, or longer cycles): each component would wait for the other's score forever.
    Each component has at most one gate, so following ``gate.on`` from each one either ends or
    comes back to a component already on the path."""
    gates = {s.name: s.gate.on for s in specs if s.gate is not None}
    for start in gates:
        chain = [start]
        while chain[-1] in gates:
            following = gates[chain[-1]]
            if following in chain:
                cycle = chain[chain.index(following) :] + [following]
                raise ConfigError(
                    f"{path}.{cycle[0]}.gate.on: gate cycle {' -> '.join(cycle)}: each of these components would wait "
                    f"for the other's score forever; gate them on a component outside the cycle, or drop "
                    f"one gate"
                )
            chain.append(following)


def number_judges(specs) -> list[tuple[str, str]]:
    """``(name, backend)`` of the mix's first-error components whose judge reads numeric answers only."""
    from procrl.rewards.first_error import FirstErrorReward
    from procrl.rewards.judges.registry import judge_class

    return [
        (s.name, s.settings.backend)
        for s in specs
        if inspect.isclass(s.target)
        and issubclass(s.target, FirstErrorReward)
        and judge_class(s.settings.backend).answer_kinds == ("number",)
    ]


def check_answer_kind(kind: str | None, specs, where: str = "data.answer_kind") -> None:
    """Refuse, in one line, a judge that does not read answers of ``kind`` (the model-free judges
    check numbers: on choice or yes/no answers they have nothing to check and would give every
    completion its ``unverified_score``)."""
    from procrl.rewards.first_error import FirstErrorReward
    from procrl.rewards.judges.registry import answer_kind_refusal

    if kind in (None, "number"):
        return
    for s in specs:
        if not (inspect.isclass(s.target) and issubclass(s.target, FirstErrorReward)):
            continue
        refusal = answer_kind_refusal(s.settings.backend, kind)
        if refusal is not None:
            what, others = refusal
            instead = " or ".join(map(repr, others))
            raise ConfigError(
                f"rewards.{s.name}.backend: {s.settings.backend!r} {what}, but the "
                f"answers are {kind} ({where}); use backend {instead} (an LLM judge), or drop it"
            )
