"""What a component's "no opinion" becomes (docs/spec.md section 0, the integrity rule).

A component returns None for a sample it has no opinion on: a judge that timed out or gave no
verdict, a model that failed, a closed gate with ``value: null``, a missing gold answer. TRL
turns None into NaN and ``nansum``s it to 0, which is the *best* score of a penalty in [-1, 0]:
a policy would be paid for making the judge fail. So every None is resolved by the component's
``fallback`` before it reaches a total:

* ``group_mean`` (the default): the mean of that component's scores in the sample's generation
  group (the completions of one prompt: TRL's blocks of ``num_generations``, PPO's rows with
  the same prompt), so the failure gives the sample no
  advantage either way within its group; when no member of the group has a score, the mean over
  the whole batch (PPO's outcome is not group-normalised, so a group in which every judge call
  failed must not get 0 either); when the batch has no score at all, None stays (every sample of
  the batch then gets the same 0 from this component, as in TRL).
* a number: that score (e.g. ``-1.0``: a failure counts as an error).
* ``null``: None stays None (TRL's nansum: 0). Only for a component whose 0 is neutral.

Where the groups are known: TRL's GRPO after it gathers the rewards of all processes
(:class:`procrl.trainers.grpo.ProcrlGRPOTrainer`), procrl's PPO on the gathered rollout scores,
``procrl score`` with every row its own group (and its own batch: rows are separate problems).
Pure functions, lists in, lists out.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

__all__ = ["GROUP_MEAN", "FallbackResult", "consecutive_groups", "fill_group_mean", "resolve_fallback"]

GROUP_MEAN = "group_mean"


@dataclass(frozen=True)
class FallbackResult:
    """The resolved scores and how many None were filled from the group, from the batch, or
    left unresolved (no score anywhere)."""

    scores: list[float | None]
    from_group: int = 0
    from_batch: int = 0
    unresolved: int = 0

    def metrics(self, name: str) -> dict[str, float]:
        """What the trainers log per batch: ``rewards/<name>/fallback/filled`` (no-opinion scores
        filled from the group or the batch) and ``.../unresolved`` (left None)."""
        return {
            f"rewards/{name}/fallback/filled": float(self.from_group + self.from_batch),
            f"rewards/{name}/fallback/unresolved": float(self.unresolved),
        }


def _present(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def consecutive_groups(n: int, group_size: int) -> list[int]:
    """Group ids of ``n`` samples in TRL's order: blocks of ``group_size`` consecutive samples."""
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    if n % group_size:
        raise ValueError(f"{n} scores are not whole groups of {group_size}")
    return [i // group_size for i in range(n)]


def fill_group_mean(
    scores: Sequence[float | None], groups: Sequence[Hashable], batch_level: bool = True
) -> FallbackResult:
    """Each None (or NaN) becomes the mean of the scores of its group (``groups[i]`` is the
    group id of sample i); a group without any score takes the batch mean when ``batch_level``,
    else stays None."""
    if len(groups) != len(scores):
        raise ValueError(f"{len(scores)} scores but {len(groups)} group ids")
    values = [float(v) if _present(v) else None for v in scores]
    present = [v for v in values if v is not None]
    batch_mean = sum(present) / len(present) if present else None
    members: dict[Hashable, list[float]] = {}
    for value, group in zip(values, groups):
        members.setdefault(group, [])
        if value is not None:
            members[group].append(value)
    means = {group: sum(v) / len(v) for group, v in members.items() if v}
    out: list[float | None] = list(values)
    from_group = from_batch = unresolved = 0
    for i, (value, group) in enumerate(zip(values, groups)):
        if value is not None:
            continue
        if group in means:
            out[i] = means[group]
            from_group += 1
        elif batch_level and batch_mean is not None:
            out[i] = batch_mean
            from_batch += 1
        else:
            unresolved += 1
    return FallbackResult(out, from_group, from_batch, unresolved)


def resolve_fallback(
    scores: Sequence[float | None], fallback: float | str | None, groups: Sequence[Hashable], batch_level: bool = True
) -> FallbackResult:
    """Apply one component's ``fallback`` to its scores (see the module docstring)."""
    if fallback == GROUP_MEAN:
        return fill_group_mean(scores, groups, batch_level)
    values = [float(v) if _present(v) else None for v in scores]
    if fallback is None:
        return FallbackResult(values, unresolved=sum(v is None for v in values))
    filled = [float(fallback) if v is None else v for v in values]
    return FallbackResult(filled)
