"""``--set key.path=value`` overrides of a recipe, each value read as YAML."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from procrl.core import yaml_core
from procrl.core.config import ConfigError
from procrl.core.redaction import redact_argv, register_secrets

__all__ = ["apply_overrides"]


def _parse_scalar(text: str, override: str) -> Any:
    """A ``--set`` value, read by the recipes' own YAML loader (YAML 1.2 core schema); text
    that is not valid YAML stays a string."""
    try:
        return yaml_core.load(text) if text.strip() else ""
    except yaml_core.YAMLSizeError as error:
        shown = override if len(override) <= 80 else override[:60] + f"... ({len(override):,} characters)"
        raise ConfigError(f"--set {shown!r}: {error}") from None
    except yaml_core.DuplicateKeyError as error:
        raise ConfigError(f"--set {override!r}: {error.problem}") from None
    except yaml.YAMLError:
        return text


def apply_overrides(raw: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key.path=value`` overrides (value parsed as YAML) to a copy of ``raw``."""
    result = copy.deepcopy(raw)
    redact_argv(overrides or [])  # registers secret values given as --set KEY=VALUE (error messages redact them)
    overridden: set[tuple[str, ...]] = set()
    for override in overrides or []:
        if "=" not in override:
            raise ConfigError(f"--set {override!r}: expected key.path=value")
        key, _, text = override.partition("=")
        parts = [p for p in key.strip().split(".")]
        if len(parts) > yaml_core.MAX_DEPTH:  # the recipe's own nesting cap: a deeper key is no recipe's
            raise ConfigError(
                f"--set {key[:60]!r}...: a key of {len(parts):,} parts; a recipe nests at most "
                f"{yaml_core.MAX_DEPTH} levels deep"
            )
        if not all(parts):
            raise ConfigError(f"--set {override!r}: empty key segment in {key!r}")
        node = result
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                where = ".".join(parts[: i + 1])
                raise ConfigError(f"--set {override!r}: {where} is a {type(child).__name__}, not a mapping")
            node = child
        node[parts[-1]] = _parse_scalar(text, override)
        if len(parts) == 3 and parts[0] == "rewards":  # e.g. a new backend: the file's options for the former go
            from procrl.rewards.spec import drop_unread_after_override

            keep = {p[2] for p in overridden if len(p) == 3 and p[:2] == tuple(parts[:2])}
            drop_unread_after_override(parts[1], node, parts[2], keep)
        overridden.add(tuple(parts))
    register_secrets(result)
    return result
