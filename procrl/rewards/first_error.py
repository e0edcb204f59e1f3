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
solution (``reference: solution``). Backends: :mod:`procrl.rewards.judges`. Every failure kind
is reported each batch, zeros included, so the logged curves exist from step one.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
from dataclasses import dataclass
from typing import Literal

from procrl.core.config import ConfigError, field
from procrl.core.redaction import redact_url
from procrl.core.choices import NUMBER, AnswerSpec, answer_correct, gold_text
from procrl.rewards.judges import FAILURE_KINDS, Judge, JudgeItem, Verdict, build_judge
from procrl.rewards.protocol import ModelRef, RewardBatch, RewardComponent, RewardOutput

# judge failures where no verdict came back at all (not a reply without a verdict): the sample's
# details carry what failed
REQUEST_FAILURES = ("timeout", "http_error", "connection_error", "bad_response", "judge_error")
from procrl.rewards.judges.prompt import CATEGORIES, build_prompt, parse_verdict

__all__ = [
    "FirstErrorReward",
    "build_prompt",
    "first_error_penalty",
    "first_error_step_scores",
    "parse_verdict",
]

Penalty = Literal["flat", "position", "correct_only"]
Reference = Literal["answer", "solution"]
Transformation = Literal["regroup", "units", "percent", "rounding"]
# Backends without a model: they report how many steps they could check (``checked_steps``).
MODEL_FREE = ("arithmetic", "reference")


def first_error_penalty(index: int, num_steps: int, penalty: str = "flat", answer_correct: bool | None = None) -> float | None:
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


class FirstErrorReward(RewardComponent):
    """Penalise the earliest wrong step found by a judge (LLM, PRM or arithmetic verifier)."""

    grades = "reasoning"
    score_range = (-1.0, 0.0)
    uses_model = True  # backend hf / prm
    uses_network = True  # backend openai
    diagnostics = ("first_error",)

    @dataclass
    class Settings:
        backend: Literal["openai", "hf", "prm", "arithmetic", "reference"] = field(
            "arithmetic",
            help="Judge: 'openai' (OpenAI-compatible endpoint, e.g. vLLM serve), 'hf' (in-process causal LM), "
            "'prm' (process reward model, Qwen2.5-Math-PRM convention), 'arithmetic' (no model: checks calculations) "
            "or 'reference' (no model: checks each step's quantities against the question and the gold solution's "
            "intermediate values; needs gold solutions, not only final answers). 'arithmetic' and 'reference' check "
            "numbers: refused for choice and yes/no answers (data.answer_kind).",
        )
        model: str | None = field(None, help="Judge model: served model name (openai) or Hugging Face id/path (hf, prm; hf also a .gguf path or an embedded model such as procrl:smollm2-135m-instruct).")
        gguf_file: str | None = field(None, help="hf: a GGUF checkpoint inside model (a Hub repository or directory), dequantized to dtype.")
        base_url: str = field("http://localhost:8000/v1", help="openai: base URL of the endpoint (…/v1).")
        api_key_env: str | None = field(
            None, help="openai: name of the environment variable holding the API key (the key itself never goes in a recipe)."
        )
        concurrency: int = field(16, help="openai: most requests in flight at once.")
        timeout_s: float = field(
            60.0, help="openai: seconds allowed for one request attempt in all (connect, send, the whole reply)."
        )
        max_retries: int = field(
            3, help="openai: retries after a 429, 5xx, timeout, connection error or a 200 that is not a chat completion."
        )
        backoff_s: float = field(0.5, help="openai: first retry delay; doubles each retry (a Retry-After header wins).")
        cache_size: int = field(100_000, help="openai: replies cached by (model, prompt); 0 disables the cache.")
        reference: bool | Reference = field(
            False,
            help="LLM judges, reference-based mode: 'answer' (or true) shows the gold final answer (the number after "
            "'####'; a choice's letter and text, '(B) reading', or yes/no: ReTraceQA's protocol); 'solution' shows the "
            "whole gold solution; false: reference-free.",
        )
        categories: bool = field(False, help="LLM judges: also ask for the error category (Misinterpretation/Hallucination/"
                                 "Reasoning, ReTraceQA's), logged per category (rewards/<name>/category/...).")
        penalty: Penalty = field(
            "flat",
            help="'flat': -1 when an error is found; 'position': -(n-k)/n when step k is the first error (padding "
            "the chain with steps before the error shrinks it); 'correct_only': the flat penalty only when the "
            "final answer is right.",
        )
        no_steps_score: float = field(
            -1.0, help="Score of a completion without reasoning steps (an answer alone): never better than checked and correct (0)."
        )
        unverified_score: float = field(
            -1.0,
            help="arithmetic, reference: score of a chain in which the judge checked nothing: no step holds a "
            "checkable calculation (arithmetic: hedging, prose without numbers, pure algebra) or works out a quantity "
            "of the gold's path (reference: hedging, the question's numbers copied, the gold answer stated without "
            "working): not 'no error'; the default -1 equals a found error, so leaving a wrong calculation out of the "
            "text never pays.",
        )
        max_depth: int = field(
            1,
            help="reference: operations (+ - * / over pairs) by which a stated gold value may be from what is known "
            "before it (the question's numbers, what earlier steps established) to count as worked out, and by "
            "which a later quantity may use an off-path value to reach a gold value (lookahead); 0, 1 or 2.",
        )
        transformations: list[Transformation] = field(
            default_factory=lambda: ["units", "percent", "rounding"],
            help="reference: what else reaches a gold or known value: 'units' (a quantity converted into the unit "
            "written after it from another unit its step names: 150 minutes for 2.5 hours; conversion factors of "
            "named units are known), 'percent' (20% also stands for 0.2; 100%-30% and 1-1/3 of a share of the "
            "question are on the path), 'rounding' (as written: to the decimals shown, a whole number for a non-whole "
            "value), 'regroup' (partial results of the gold's calculations regrouped: 16-3-4 also gives 3+4=7; off by "
            "default: on real solutions it lets more errors through than the lookahead needs).",
        )
        off_path: Literal["lookahead", "derivable", "flag"] = field(
            "lookahead",
            help="reference: a value off the gold's path is accepted when a later quantity uses it to reach a gold "
            "value ('lookahead': alternative decompositions pass, a wrong operation on right numbers does not), "
            "when it is within max_depth operations of known and gold values ('derivable': lets wrong operations "
            "through), or never ('flag').",
        )
        leap: Literal["accept", "flag"] = field(
            "accept",
            help="reference: a gold value stated before it can be worked out from what is known (e.g. the answer "
            "first): accepted without counting as checked ('accept'), or the first error ('flag').",
        )
        check_arithmetic: bool = field(
            True, help="reference: a calculation shown false is an error too (what the arithmetic judge flags)."
        )
        threshold: float = field(0.5, help="prm: a step whose probability of being correct is below this is an error.")
        max_tokens: int = field(1024, help="LLM judges: most tokens the judge may write.")
        temperature: float = field(0.0, help="LLM judges: sampling temperature (0: greedy).")
        batch_size: int = field(8, help="hf, prm: items per forward pass / generate call.")
        step_separator: str = field("<extra_0>", help="prm: the token that ends each step.")
        dtype: str = field("auto", help="hf, prm: torch dtype of the judge model (e.g. bfloat16).")
        trust_remote_code: bool = field(False, help="hf, prm: allow the model's own code (Qwen2.5-Math-PRM needs it).")

        def validate(self, path: str) -> None:
            if self.backend in ("openai", "hf", "prm") and not self.model:
                raise ConfigError(f"{path}.model: the {self.backend!r} backend needs a model")
            if self.gguf_file is not None and self.backend != "hf":
                raise ConfigError(f"{path}.gguf_file: only the 'hf' backend loads a GGUF checkpoint (backend is {self.backend!r})")
            from procrl.models.loading import check_gguf_file

            check_gguf_file(f"{path}.gguf_file", self.gguf_file, self.model, f"{path}.model")
            if self.api_key_env is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.api_key_env):
                raise ConfigError(
                    f"{path}.api_key_env: expected the NAME of an environment variable (e.g. JUDGE_API_KEY), "
                    "not a key; keys never go in a recipe"
                )
            if self.backend == "openai" and not self.base_url.startswith(("http://", "https://")):
                raise ConfigError(f"{path}.base_url: expected an http(s) URL, got {redact_url(self.base_url)!r}")
            for name in ("concurrency", "batch_size", "max_tokens"):
                if getattr(self, name) < 1:
                    raise ConfigError(f"{path}.{name}: must be at least 1, got {getattr(self, name)}")
            if self.max_retries < 0 or self.cache_size < 0:
                raise ConfigError(f"{path}: max_retries and cache_size must be >= 0")
            if self.timeout_s <= 0 or self.backoff_s < 0:
                raise ConfigError(f"{path}.timeout_s: must be positive (and backoff_s >= 0)")
            if not 0.0 <= self.threshold <= 1.0:
                raise ConfigError(f"{path}.threshold: must be in [0, 1], got {self.threshold}")
            if self.temperature < 0:
                raise ConfigError(f"{path}.temperature: must be >= 0, got {self.temperature}")
            if not 0 <= self.max_depth <= 2:
                raise ConfigError(f"{path}.max_depth: must be 0, 1 or 2, got {self.max_depth}")
            for name in ("no_steps_score", "unverified_score"):
                if getattr(self, name) > 0:
                    raise ConfigError(
                        f"{path}.{name}: must be <= 0 (0 is what a checked, error-free chain gets), got {getattr(self, name)}"
                    )

    is_async = True

    def __init__(self, settings=None, *, name: str | None = None):
        super().__init__(settings, name=name)
        self._judge: Judge | None = None
        self._judge_lock = threading.Lock()

    @classmethod
    def models(cls, settings) -> dict[str, ModelRef]:
        local = settings.backend in ("hf", "prm") and settings.model
        return {"model": ModelRef(settings.model, settings.dtype, settings.gguf_file)} if local else {}

    def needs_model(self) -> str | None:
        return self.settings.model if self.settings.backend in ("hf", "prm") else None

    def needs_network(self) -> str | None:
        return self.settings.base_url if self.settings.backend == "openai" else None

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

    def make_item(self, question: str | None, steps: tuple[str, ...], gold: str | None,
                  spec: AnswerSpec = NUMBER, completion: str | None = None) -> JudgeItem:
        """What the judge is asked about one solution, the same in training, ``eval-judge`` and
        ``evaluate``: the gold reduced to what ``reference`` shows (the reference judge always
        sees the whole gold solution: it checks against its intermediate values, and the final
        answer the completion states); a choice gold as its letter and text (``(B) reading``), a
        yes/no gold as ``yes`` / ``no``."""
        if spec.kind != "number":
            shown = gold_text(gold, spec) if self.settings.reference else None
            return JudgeItem(question, tuple(steps), shown, kind=spec.kind)
        if self.settings.backend != "reference":
            return JudgeItem(question, tuple(steps), reference_text(gold, self.settings.reference))
        from procrl.rewards.judges.reference import stated_final_answer

        return JudgeItem(question, tuple(steps), reference_text(gold, "solution"), answer=stated_final_answer(completion))

    async def ascore(self, batch: RewardBatch) -> RewardOutput:
        segmentations = batch.segmentations
        if self.settings.backend in MODEL_FREE and any(spec.kind != "number" for spec in batch.answer_specs):
            kind = next(spec.kind for spec in batch.answer_specs if spec.kind != "number")
            raise ValueError(f"the {self.settings.backend!r} judge checks numbers; these answers are {kind} "
                             "(use backend openai or hf)")
        items = [
            self.make_item(question, tuple(step.text for step in segmentation.steps), gold, spec, completion)
            for question, gold, segmentation, spec, completion in zip(batch.questions, batch.golds, segmentations,
                                                                      batch.answer_specs, batch.completions)
        ]
        verdicts = await self.judge_items(items)
        return self.output_from_verdicts(batch, items, verdicts)

    def _answer_correct(self, completion: str, gold: str | None, detail: dict, spec: AnswerSpec = NUMBER) -> bool | None:
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
        for completion, gold, item, verdict, spec in zip(batch.completions, batch.golds, items, verdicts,
                                                          batch.answer_specs):
            n = len(item.steps)
            detail = {"index": verdict.index, "category": verdict.category, "num_steps": n, "verdict": verdict.status}
            if verdict.checked_steps is not None:
                detail["checked_steps"] = verdict.checked_steps
            if verdict.step_probabilities is not None:
                detail["step_probabilities"] = [round(p, 4) for p in verdict.step_probabilities]
            if verdict.note is not None and settings.backend == "arithmetic":
                detail["wrong_calculation"] = verdict.note
            elif verdict.note is not None and settings.backend == "reference" and verdict.ok:
                detail["unreachable" if verdict.index is not None and verdict.index >= 0 else "note"] = verdict.note
            elif verdict.note is not None and verdict.status in REQUEST_FAILURES:
                detail["error"] = verdict.note  # what failed (the model did not load, HTTP 401): procrl check names it
            if n == 0:  # an answer alone: nothing was judged, and nothing is "correct"
                failures["no_steps"] += 1
                if settings.backend in MODEL_FREE:
                    detail["checked_steps"] = 0
                value = unchecked_score(settings.no_steps_score, settings.penalty, self._answer_correct(completion, gold, detail, spec))
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
                value = unchecked_score(settings.unverified_score, settings.penalty, self._answer_correct(completion, gold, detail, spec))
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
            "mean_relative_position": sum(relative_positions) / len(relative_positions) if relative_positions else math.nan,
            "no_verdict_fraction": failures["no_verdict"] / total,
            "failed_fraction": sum(v for k, v in failures.items() if k != "no_steps") / total,
            "no_steps_fraction": failures["no_steps"] / total,
        }
        if settings.backend in MODEL_FREE:
            metrics["unverified_fraction"] = unverified / total
        if settings.categories and settings.backend in ("openai", "hf"):
            # ReTraceQA's error categories: share of the errors found, and of those the judge left uncategorised
            for category, count in categories.items():
                metrics[f"category/{category}"] = count / found if found else math.nan
            metrics["category/none"] = (found - sum(categories.values())) / found if found else math.nan
        if settings.backend == "reference":
            metrics["no_reference_fraction"] = failures["no_reference"] / total
        try:
            metrics.update({f"judge_{key}": value for key, value in self.judge.stats().items()})
        except Exception:  # stats are diagnostics only
            pass
        return RewardOutput(scores=scores, step_scores=step_scores, metrics=metrics, details=details, failures=failures)
