"""First-error judge reward (docs/spec.md section 4): a judge names the earliest wrong step k of a
completion (-1 when every step is correct) and the reward penalises it.

Penalty from k over n steps: ``flat`` (default) -1 when an error is found, else 0; ``position``
-(n - k)/n (an early error costs more than a late one; padding the chain with trivial steps
before the error shrinks it, which is why it is not the default); ``correct_only`` the flat
penalty only when the final answer is right (correct answer, flawed reasoning), else 0. Dense
per-step scores: 0 before k, -1 at k, 0 after.

What it gives when it has no opinion (the integrity rule: a completion without reasoning, or
whose reasoning could not be checked, never scores better than one whose reasoning was checked
and found correct, 0):

* no reasoning steps (an answer alone): ``no_steps_score`` (default -1), no step scores;
  counted as ``failures/no_steps``;
* arithmetic backend, no step holding a checkable calculation (hedging, prose without numbers),
  or reference backend, no step working out a quantity of the gold's path (hedging, the
  question's numbers copied, the gold answer stated without working): ``unverified``
  (details), ``unverified_score`` (default -1), on the last step as a step score;
  ``checked_steps`` per completion in the details;
* a judge failure (no verdict / unparseable reply, out-of-range index, timeout, HTTP or
  connection error, bad response, in-process model error; for the reference judge a gold that is
  only a final answer, ``no_reference``): None, counted per kind, resolved by
  the component's ``fallback`` (default ``group_mean``: the mean of this component's scores in
  the completion's generation group, so the failure gives no advantage either way);
* ``correct_only`` without a gold answer: None (the same fallback); with a wrong answer 0.

The judge sees the shared segmentation's steps (``batch.segmentations[i].steps``), so its k
indexes the same steps as every other component and as dense credit; reference-based LLM
judges see the gold *final answer* (``reference: answer``, as ReTraceQA), or the whole gold
solution (``reference: solution``). Backends: :mod:`procrl.rewards.judges` (one line each in
:data:`procrl.rewards.judges.registry.BACKENDS`; each reads only its own settings class,
:mod:`procrl.rewards.judges.settings`). Every failure kind
is reported each batch, zeros included, so the logged curves exist from step one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import threading
from typing import Literal

from procrl.core.choices import NUMBER, AnswerSpec, answer_correct, gold_text
from procrl.core.config import ConfigError, check_value
from procrl.rewards.judges import FAILURE_KINDS, Judge, JudgeItem, Verdict, build_judge
from procrl.rewards.judges.prompt import CATEGORIES, build_prompt, parse_verdict
from procrl.rewards.judges.registry import (
    BACKENDS,
    DEFAULT_BACKEND,
    answer_kind_refusal,
    backend_settings,
    judge_class,
    options_by_backend,
)
from procrl.rewards.protocol import ModelRef, RewardBatch, RewardComponent, RewardOutput

__all__ = [
    "FirstErrorReward",
    "build_prompt",
    "first_error_penalty",
    "first_error_step_scores",
    "parse_verdict",
]


def first_error_penalty(
    index: int, num_steps: int, penalty: str = "flat", answer_correct: bool | None = None
) -> float | None:
    """The reward for a first error at ``index`` (-1: none) among ``num_steps`` steps.

    ``correct_only`` needs ``answer_correct``; without it (no gold answer) there is no opinion
    (None).
    """
    if num_steps <= 0:
        raise ValueError("num_steps must be positive")
    if not -1 <= index < num_steps:
        raise ValueError(f"first-error index {index} outside -1..{num_steps - 1}")
    if penalty == "correct_only":
        if answer_correct is None:
            return None
        if not answer_correct:
            return 0.0
        penalty = "flat"
    if index == -1:
        return 0.0
    if penalty == "position":
        return -(num_steps - index) / num_steps
    if penalty == "flat":
        return -1.0
    raise ValueError(f"unknown penalty {penalty!r}")


def first_error_step_scores(index: int, num_steps: int) -> list[float]:
    """Dense credit: 0 before the first error, -1 at it, 0 after (all 0 when index is -1)."""
    return [-1.0 if step == index else 0.0 for step in range(num_steps)]


def unchecked_score(score: float, penalty: str, answer_correct: bool | None) -> float | None:
    """``no_steps_score`` / ``unverified_score`` under the penalty mode: as given, except that
    ``correct_only`` applies it only to a right answer (0 for a wrong one, None without gold)."""
    if penalty != "correct_only":
        return score
    if answer_correct is None:
        return None
    return score if answer_correct else 0.0


def reference_text(gold: str | None, reference: bool | str) -> str | None:
    """What a reference-based judge is shown: nothing (``false``), the gold final answer
    (``answer`` or ``true``: the text after the last ``####`` of a GSM8K answer, or the gold as
    given when it is a bare answer), or the whole gold solution (``solution``)."""
    if gold is None or reference is False:
        return None
    text = str(gold).strip()
    if reference == "solution":
        return text
    return text.rsplit("####", 1)[-1].strip() if "####" in text else text


def _only(backends: list[str]) -> str:
    if len(backends) == 1:
        return f"only backend {backends[0]!r} does"
    return f"only backends {', '.join(map(repr, backends))} do"


class FirstErrorReward(RewardComponent):
    """Penalise the earliest wrong step found by a judge (LLM, PRM or arithmetic verifier)."""

    grades = "reasoning"
    score_range = (-1.0, 0.0)
    uses_model = True  # backend hf / prm
    uses_network = True  # backend openai
    diagnostics = ("first_error",)

    Settings = backend_settings(DEFAULT_BACKEND)  # a recipe's ``backend:`` picks its own (settings_class)

    @classmethod
    def settings_class(cls, own: dict, path: str) -> type:
        """The settings of the backend ``own`` names (:mod:`procrl.rewards.judges.settings`); an option
        that backend does not read is refused, naming the backends that do."""
        backend = check_value(f"{path}.backend", own.get("backend", DEFAULT_BACKEND), Literal[tuple(BACKENDS)])
        settings_class = backend_settings(backend)
        own_options = {f.name for f in dataclasses.fields(settings_class)}
        for key in (key for key in own if key not in own_options):  # the other backends load only here
            readers = [name for name, options in options_by_backend().items() if key in options]
            if readers:
                raise ConfigError(f"{path}.{key}: backend {backend!r} does not read {key}; {_only(readers)}")
        return settings_class  # a key no backend reads is refused as unknown, with a suggestion

    @classmethod
    def unread_after_override(cls, own: dict, key: str) -> list[str]:
        """A backend chosen by ``--set`` drops the recipe's options of other backends."""
        backend = own.get("backend", DEFAULT_BACKEND)
        if key != "backend" or backend not in BACKENDS:
            return []
        options = options_by_backend()
        return [k for k in own if k not in options[backend] and any(k in read for read in options.values())]

    is_async = True

    def __init__(self, settings=None, *, name: str | None = None):
        super().__init__(settings, name=name)
        self._judge: Judge | None = None
        self._judge_lock = threading.Lock()

    @classmethod
    def models(cls, settings) -> dict[str, ModelRef]:
        local = judge_class(settings.backend).loads_model and settings.model
        gguf_file = getattr(settings, "gguf_file", None)  # only the backends that read GGUF have it
        return {"model": ModelRef(settings.model, settings.dtype, gguf_file)} if local else {}

    @property
    def judge_type(self) -> type[Judge]:
        """The backend's judge class: what it declares (model-free, loads a model, ...) without building it."""
        return judge_class(self.settings.backend)

    def needs_model(self) -> str | None:
        return self.settings.model if self.judge_type.loads_model else None

    def needs_network(self) -> str | None:
        return self.settings.base_url if self.judge_type.sends_requests else None

    @property
    def judge(self) -> Judge:
        """The backend, built on first use (models load then, on the bound device)."""
        with self._judge_lock:
            if self._judge is None:
                self._judge = build_judge(self.settings, device=self.context.device)
            return self._judge

    async def judge_items(self, items: list[JudgeItem]) -> list[Verdict]:
        """Verdicts for solutions given as steps (items without steps are not sent)."""
        verdicts: list[Verdict | None] = [None if item.steps else Verdict(None, status="no_steps") for item in items]
        todo = [i for i, item in enumerate(items) if item.steps]
        if todo:
            judged = await self.judge.judge([items[i] for i in todo])
            for i, verdict in zip(todo, judged):
                verdicts[i] = verdict
        return verdicts  # type: ignore[return-value]

    def score(self, batch: RewardBatch) -> RewardOutput:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.ascore(batch))
        # called from inside an event loop: run on a fresh loop in a helper thread
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self.ascore(batch)).result()

    def make_item(
        self,
        question: str | None,
        steps: tuple[str, ...],
        gold: str | None,
        spec: AnswerSpec = NUMBER,
        completion: str | None = None,
    ) -> JudgeItem:
        """What the judge is asked about one solution, the same in training, ``eval-judge`` and
        ``evaluate``: the gold reduced to what ``reference`` shows (the reference judge always
        sees the whole gold solution: it checks against its intermediate values, and the final
        answer the completion states); a choice gold as its letter and text (``(B) reading``), a
        yes/no gold as ``yes`` / ``no``."""
        reference = getattr(self.settings, "reference", False)  # only the LLM judges are shown a gold
        if spec.kind != "number":
            shown = gold_text(gold, spec) if reference else None
            return JudgeItem(question, tuple(steps), shown, kind=spec.kind)
        judge = self.judge_type
        if not judge.needs_gold_solution:
            return JudgeItem(question, tuple(steps), reference_text(gold, reference))
        answer, concluded = judge.stated_answers(completion)
        return JudgeItem(question, tuple(steps), reference_text(gold, "solution"), answer=answer, concluded=concluded)

    async def ascore(self, batch: RewardBatch) -> RewardOutput:
        segmentations = batch.segmentations
        for kind in dict.fromkeys(spec.kind for spec in batch.answer_specs):
            refusal = answer_kind_refusal(self.settings.backend, kind)
            if refusal is not None:
                what, others = refusal
                raise ValueError(
                    f"the {self.settings.backend!r} judge {what}; these answers are {kind} "
                    f"(use backend {' or '.join(others)})"
                )
        items = [
            self.make_item(question, tuple(step.text for step in segmentation.steps), gold, spec, completion)
            for question, gold, segmentation, spec, completion in zip(
                batch.questions, batch.golds, segmentations, batch.answer_specs, batch.completions
            )
        ]
        verdicts = await self.judge_items(items)
        return self.output_from_verdicts(batch, items, verdicts)

    def _answer_correct(
        self, completion: str, gold: str | None, detail: dict, spec: AnswerSpec = NUMBER
    ) -> bool | None:
        if self.settings.penalty != "correct_only":
            return None
        correct = answer_correct(completion, gold, spec)
        detail["answer_correct"] = correct
        return correct

    def output_from_verdicts(self, batch: RewardBatch, items: list[JudgeItem], verdicts: list[Verdict]) -> RewardOutput:
        settings = self.settings
        failures = dict.fromkeys(FAILURE_KINDS, 0)
        scores: list[float | None] = []
        step_scores: list[list[float] | None] = []
        details: list[dict] = []
        found, judged, unverified, relative_positions = 0, 0, 0, []
        categories = dict.fromkeys(CATEGORIES, 0)
        judge = self.judge_type
        for completion, gold, item, verdict, spec in zip(
            batch.completions, batch.golds, items, verdicts, batch.answer_specs
        ):
            n = len(item.steps)
            detail = {"index": verdict.index, "category": verdict.category, "num_steps": n, "verdict": verdict.status}
            if verdict.checked_steps is not None:
                detail["checked_steps"] = verdict.checked_steps
            if verdict.step_probabilities is not None:
                detail["step_probabilities"] = [round(p, 4) for p in verdict.step_probabilities]
            detail.update(judge.note_details(verdict))  # a failure's: what failed, which procrl check names
            if n == 0:  # an answer alone: nothing was judged, and nothing is "correct"
                failures["no_steps"] += 1
                if judge.model_free:
                    detail["checked_steps"] = 0
                value = unchecked_score(
                    settings.no_steps_score, settings.penalty, self._answer_correct(completion, gold, detail, spec)
                )
                scores.append(value)
                step_scores.append([])
                detail.update(index=None, verdict="no_steps", penalty=value)
                details.append(detail)
                continue
            if not verdict.ok or verdict.index is None:  # a judge failure: no opinion (-> fallback)
                kind = "no_verdict" if verdict.ok else verdict.status
                failures[kind] = failures.get(kind, 0) + 1
                scores.append(None)
                step_scores.append(None)
                details.append(detail)
                continue
            if verdict.index == -1 and verdict.checked_steps == 0:  # the judge checked nothing
                unverified += 1
                value = unchecked_score(
                    settings.unverified_score, settings.penalty, self._answer_correct(completion, gold, detail, spec)
                )
                scores.append(value)
                step_scores.append([0.0] * (n - 1) + [value if value else 0.0])
                detail.update(index=None, verdict="unverified", penalty=value)
                details.append(detail)
                continue
            k = verdict.index
            judged += 1
            if k >= 0:
                found += 1
                relative_positions.append(k / n)
            if k >= 0 and verdict.category in categories:
                categories[verdict.category] += 1
            value = first_error_penalty(k, n, settings.penalty, self._answer_correct(completion, gold, detail, spec))
            scores.append(value)
            penalised = value is not None and value != 0.0
            step_scores.append(first_error_step_scores(k, n) if penalised else [0.0] * n)
            detail["penalty"] = value
            details.append(detail)
        total = max(len(batch), 1)
        metrics = {
            "error_found_fraction": found / judged if judged else math.nan,
            "mean_relative_position": sum(relative_positions) / len(relative_positions)
            if relative_positions
            else math.nan,
            "no_verdict_fraction": failures["no_verdict"] / total,
            "failed_fraction": sum(v for k, v in failures.items() if k != "no_steps") / total,
            "no_steps_fraction": failures["no_steps"] / total,
        }
        if judge.model_free:
            metrics["unverified_fraction"] = unverified / total
        if judge.reports_categories and settings.categories:
            # ReTraceQA's error categories: share of the errors found, and of those the judge left uncategorised
            for category, count in categories.items():
                metrics[f"category/{category}"] = count / found if found else math.nan
            metrics["category/none"] = (found - sum(categories.values())) / found if found else math.nan
        if judge.needs_gold_solution:
            metrics["no_reference_fraction"] = failures["no_reference"] / total
        try:
            metrics.update({f"judge_{key}": value for key, value in self.judge.stats().items()})
        except Exception:  # stats are diagnostics only
            pass
        return RewardOutput(scores=scores, step_scores=step_scores, metrics=metrics, details=details, failures=failures)
