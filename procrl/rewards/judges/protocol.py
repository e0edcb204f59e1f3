"""What every first-error judge speaks: :class:`JudgeItem` in, :class:`Verdict` out, the
:class:`Judge` base class and the failure kinds (the backends import this module, never the
package, so that the package's :func:`~procrl.rewards.judges.build_judge` can import them)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

__all__ = ["FAILURE_KINDS", "Judge", "JudgeItem", "Verdict"]

# Every failure kind a judge can report (logged each batch, zeros included).
FAILURE_KINDS = (
    "no_verdict",  # the reply has no \boxed{int}
    "out_of_range",  # \boxed{k} with k outside -1..n-1
    "timeout",  # the request timed out on every attempt
    "http_error",  # 429 / 5xx on every attempt, or another 4xx
    "connection_error",  # the server could not be reached on every attempt
    "bad_response",  # malformed JSON or an unexpected response shape
    "judge_error",  # an in-process judge raised (e.g. out of memory)
    "no_steps",  # the completion has no reasoning steps to judge
    "no_reference",  # reference judge: the gold is only a final answer (no intermediate values)
    "too_long",  # more text than the judge reads (reference judge: its quantity cap), or the segmentation's caps
)


@dataclass(frozen=True)
class JudgeItem:
    """One solution to judge: the question, its steps, the gold answer (shown in reference mode),
    the row's answer kind (``number``, ``choice``, ``yes_no``: the LLM judges' prompt), and the final
    answer the completion states, when it states one (the reference judge blames a step for a wrong one),
    or else the value its closing sentence concludes with (``concluded``: a weaker statement)."""

    question: str | None
    steps: tuple[str, ...]
    gold: str | None = None
    answer: float | None = None
    concluded: float | None = None
    kind: str = "number"


@dataclass
class Verdict:
    """A judge's answer for one item. ``index``: earliest wrong step, -1 none, None when the
    judge failed (``status`` names the failure kind, else ``ok``)."""

    index: int | None
    status: str = "ok"
    category: str | None = None
    step_probabilities: list[float] | None = None  # prm: positive-class probability per step
    note: str | None = None  # e.g. the judge reply, or the wrong calculation found
    checked_steps: int | None = None  # arithmetic: steps with a checkable calculation; reference: steps with progress

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Judge:
    """Base class: synchronous backends implement :meth:`judge_sync`; IO-bound ones override
    :meth:`judge`."""

    #: Judges with a threshold over per-step probabilities (meta-evaluation sweeps it).
    has_threshold = False

    #: The backend's options: a dataclass of :mod:`procrl.rewards.judges.settings`.
    Settings: type

    @classmethod
    def from_settings(cls, settings: Any, device: Any = "cpu") -> Judge:
        """The judge ``settings`` (a :attr:`Settings`) make; ``device``: where an in-process model runs."""
        raise NotImplementedError

    def judge_sync(self, items: list[JudgeItem]) -> list[Verdict]:
        raise NotImplementedError

    async def judge(self, items: list[JudgeItem]) -> list[Verdict]:
        return await asyncio.to_thread(self.judge_sync, items)

    def stats(self) -> dict[str, float]:
        """Counters of the last call (e.g. retries, cache hits), logged as metrics."""
        return {}
