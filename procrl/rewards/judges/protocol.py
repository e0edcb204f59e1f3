"""What every first-error judge speaks: :class:`JudgeItem` in, :class:`Verdict` out, the
:class:`Judge` base class and the failure kinds (the backends import this module, never the
package, so that the package's :func:`~procrl.rewards.judges.build_judge` can import them)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

__all__ = ["FAILURE_KINDS", "REQUEST_FAILURES", "Judge", "JudgeItem", "Verdict"]

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


# judge failures where no verdict came back at all (not a reply without a verdict): the sample's
# details carry what failed
REQUEST_FAILURES = ("timeout", "http_error", "connection_error", "bad_response", "judge_error")


class Judge:
    """Base class: synchronous backends implement :meth:`judge_sync`; IO-bound ones override
    :meth:`judge`.

    A backend describes itself with the class attributes below; the first_error component,
    ``procrl validate`` and the recipe reference read them, never the backend's name, so a new
    backend is its module, one line of :data:`procrl.rewards.judges.registry.BACKENDS`, its
    settings class and its tests.

    Example (a backend that flags nothing, declared model-free):

    >>> from dataclasses import dataclass
    >>> from typing import Literal
    >>> from procrl.rewards.judges.settings import ModelFreeSettings
    >>> @dataclass
    ... class LenientSettings(ModelFreeSettings):
    ...     backend: Literal["lenient"] = "lenient"
    >>> class LenientJudge(Judge):
    ...     Settings = LenientSettings
    ...     model_free = True
    ...     @classmethod
    ...     def from_settings(cls, settings, device="cpu"):
    ...         return cls()
    ...     def judge_sync(self, items):
    ...         return [Verdict(-1, checked_steps=len(item.steps)) for item in items]
    >>> LenientJudge().judge_sync([JudgeItem("2 + 2?", ("2 + 2 = 4",))])
    [Verdict(index=-1, status='ok', category=None, step_probabilities=None, note=None, checked_steps=1)]
    """

    #: The backend's options: a dataclass of :mod:`procrl.rewards.judges.settings`.
    Settings: type

    #: No model: the judge checks numbers itself. It reports ``checked_steps`` (a chain in which it
    #: checked nothing is ``unverified``), reads only numeric answers (:attr:`answer_kinds`) and its
    #: settings hold ``unverified_score``.
    model_free = False
    #: Loads a model into this process (its settings hold ``model``, ``dtype`` and maybe ``gguf_file``):
    #: the launcher places it and ``procrl check`` looks for it.
    loads_model = False
    #: Sends requests to a server (its settings hold ``base_url``): ``procrl check`` reaches it.
    sends_requests = False
    #: Needs the whole gold *solution* (its intermediate values), and the final answer the completion
    #: states (``JudgeItem.answer`` / ``concluded``); other judges see what their ``reference`` option shows.
    needs_gold_solution = False
    #: Reports ReTraceQA's error categories when its settings ask for them (``categories: true``).
    reports_categories = False
    #: Gives a probability per step (``Verdict.step_probabilities``) compared with a ``threshold``:
    #: ``procrl validate`` sweeps the threshold.
    gives_step_scores = False
    #: The answer kinds it reads (``number``, ``choice``, ``yes_no``); None: it does not look at the
    #: answer, so every kind. A recipe whose answers are another kind is refused.
    answer_kinds: tuple[str, ...] | None = None
    #: The detail key of a verdict's note on a judged sample (None: the note is not kept; a request
    #: failure's note is always kept, as ``error``).
    note_detail: str | None = None

    @classmethod
    def note_details(cls, verdict: Verdict) -> dict[str, str]:
        """What of ``verdict.note`` goes into the sample's details.

        Args:
            verdict: the judge's verdict on one sample.

        Returns:
            ``{note_detail: note}`` for a judged sample when the backend keeps its note,
            ``{"error": note}`` for a request failure (what failed: the model did not load, HTTP 401),
            else ``{}``.
        """
        if verdict.note is None:
            return {}
        if verdict.ok and cls.note_detail is not None:
            return {cls.note_detail: verdict.note}
        return {"error": verdict.note} if verdict.status in REQUEST_FAILURES else {}

    @classmethod
    def stated_answers(cls, completion: str | None) -> tuple[float | None, float | None]:
        """For a judge that :attr:`needs_gold_solution`: the final answer ``completion`` states and,
        when it states none, the value its closing sentence concludes with.

        Args:
            completion: the completion's text.

        Returns:
            ``(answer, concluded)``; ``(None, None)`` for judges that do not read the answer.
        """
        return None, None

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
