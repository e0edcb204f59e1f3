"""First-error judges: given a question and its steps, the earliest wrong step (or -1).

One module per backend, imported only when used:

* ``openai``: an OpenAI-compatible chat endpoint (vLLM ``serve``, TGI, OpenAI), async;
* ``hf``: an in-process Hugging Face causal LM, batched generation;
* ``prm``: a process reward model scoring every step in one forward pass;
* ``arithmetic``: no model; checks the calculations of every step;
* ``reference``: no model; checks the quantities every step states against the question's
  numbers and the gold solution's intermediate values.

Every judge maps a list of :class:`JudgeItem` to one :class:`Verdict` each and never raises for
a single sample: failures come back as a verdict with a failure ``status``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

__all__ = ["FAILURE_KINDS", "Judge", "JudgeItem", "Verdict", "build_judge"]

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
)


@dataclass(frozen=True)
class JudgeItem:
    """One solution to judge: the question, its steps, the gold answer (shown in reference mode)."""

    question: str | None
    steps: tuple[str, ...]
    gold: str | None = None


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

    def judge_sync(self, items: list[JudgeItem]) -> list[Verdict]:
        raise NotImplementedError

    async def judge(self, items: list[JudgeItem]) -> list[Verdict]:
        return await asyncio.to_thread(self.judge_sync, items)

    def stats(self) -> dict[str, float]:
        """Counters of the last call (e.g. retries, cache hits), logged as metrics."""
        return {}


def build_judge(settings: Any, device: Any = "cpu") -> Judge:
    """The judge a :class:`~procrl.rewards.first_error.FirstErrorReward` settings object names."""
    backend = settings.backend
    if backend == "arithmetic":
        from procrl.rewards.judges.arithmetic import ArithmeticJudge

        return ArithmeticJudge()
    if backend == "reference":
        from procrl.rewards.judges.reference import ReferenceJudge, ReferenceRules

        return ReferenceJudge(ReferenceRules(
            max_depth=settings.max_depth,
            transformations=tuple(settings.transformations),
            off_path=settings.off_path,
            leap=settings.leap,
            check_arithmetic=settings.check_arithmetic,
        ))
    if backend == "openai":
        from procrl.rewards.judges.openai import OpenAIJudge

        return OpenAIJudge(
            model=settings.model,
            base_url=settings.base_url,
            api_key_env=settings.api_key_env,
            concurrency=settings.concurrency,
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
            backoff_s=settings.backoff_s,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            reference=settings.reference,
            categories=settings.categories,
            cache_size=settings.cache_size,
        )
    if backend == "hf":
        from procrl.rewards.judges.hf import HFJudge

        return HFJudge(
            model=settings.model,
            device=device,
            batch_size=settings.batch_size,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            reference=settings.reference,
            categories=settings.categories,
            dtype=settings.dtype,
            trust_remote_code=settings.trust_remote_code,
            gguf_file=settings.gguf_file,
        )
    if backend == "prm":
        from procrl.rewards.judges.prm import PRMJudge

        return PRMJudge(
            model=settings.model,
            device=device,
            threshold=settings.threshold,
            batch_size=settings.batch_size,
            step_separator=settings.step_separator,
            dtype=settings.dtype,
            trust_remote_code=settings.trust_remote_code,
        )
    raise ValueError(f"unknown first-error backend {backend!r}")
