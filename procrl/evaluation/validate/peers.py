"""``procrl validate --peer NAME=FILE``: published per-sample scores ``{"id", "scores"}`` read and
checked (one line per bad row) before anything is scored."""

from __future__ import annotations

import json
import math
from typing import Any

from procrl.core.config import ConfigError
from procrl.core.jsonl import iter_records

__all__ = ["parse_peer_options", "read_peer"]


def _peer_step_score(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        return float(sum(value[1:]))  # class probabilities [invalid, neutral, positive]: validity = the rest
    return None


def read_peer(paths: str | list[str]) -> dict[str, float | list[float]]:
    """id -> a scalar or a per-step list, from JSON lines / a JSON array of ``{"id", "scores"}``
    (``scores`` may also be a JSON string of them, as some published files hold; ``{"rid", ...}``
    rows are ReasonEval's scores of its reference solutions, validate's ``rid-N`` rows); several
    files are one peer's scores of different rows."""

    scores: dict[str, float | list[float]] = {}
    for path in [paths] if isinstance(paths, str) else paths:
        _read_peer_file(path, scores, iter_records)
    return scores


def _read_peer_file(path: str, scores: dict, iter_records) -> None:
    before = len(scores)
    for number, (line, value) in enumerate(iter_records(path, "--peer"), 1):
        where = f"{path}:{number}" + (f" (line {line})" if line != number else "")
        if isinstance(value, dict) and "id" not in value and "rid" in value:
            value = {**value, "id": f"rid-{value['rid']}"}  # ReasonEval's scores of its reference solutions
        if not isinstance(value, dict) or "id" not in value or "scores" not in value:
            raise ConfigError(f"{where}: expected an object with 'id' and 'scores'")
        if str(value["id"]) in scores:
            raise ConfigError(f"{where}: id {value['id']!r} appears twice")
        raw = value["scores"]
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError:
                raise ConfigError(f"{where}: 'scores' is a string that is not JSON") from None
        if isinstance(raw, list):
            steps = [_peer_step_score(v) for v in raw]
            if not steps or any(v is None for v in steps):
                raise ConfigError(
                    f"{where}: 'scores' must be a number, or a non-empty list of numbers (or of class "
                    "probability lists) per step"
                )
            scores[str(value["id"])] = steps
        else:
            single = _peer_step_score(raw)
            if single is None:
                raise ConfigError(f"{where}: 'scores' must be a number or a list per step, got {raw!r}")
            scores[str(value["id"])] = single
    if len(scores) == before:
        raise ConfigError(f"--peer: {path} holds no rows")


def parse_peer_options(values: list[str]) -> list[tuple[str, list[str]]]:
    """``NAME=FILE`` options as (name, files): a name given again adds a file to that peer."""
    peers: dict[str, list[str]] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"--peer: expected NAME=FILE, got {value!r}")
        peers.setdefault(name, []).append(path)
    return list(peers.items())
