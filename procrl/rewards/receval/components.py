"""The two ReCEval components: ``receval_correctness`` (an NLI model over each step's RCUs) and
``receval_informativeness`` (information gain under a causal LM), each scoring a chain by its
weakest step. Their formulas are :mod:`procrl.rewards.receval.formulas`, the RCU split
:mod:`procrl.rewards.receval.rcu`; the models live in :mod:`procrl.rewards.scorers.nli` and
:mod:`procrl.rewards.scorers.info_gain`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from procrl.core.config import ConfigError, field
from procrl.core.numeric import mean as _mean  # None for no values (never NaN or 0)
from procrl.rewards.protocol import ModelRef, RewardBatch, RewardComponent, RewardOutput, RuntimeContext
from procrl.rewards.receval.formulas import (
    CorrectnessPlan,
    chain_minimum,
    chain_summary,
    format_answer,
    information_gains,
    informativeness_contexts,
    informativeness_step_scores,
    informativeness_target,
    plan_correctness_pairs,
    score_correctness_plan,
)
from procrl.rewards.receval.rcu import load_rcu_splitter

__all__ = [
    "DEFAULT_NLI_MODEL",
    "DEFAULT_NLI_PARAMETERS",
    "DEFAULT_SPLITTER",
    "ReCEvalCorrectness",
    "ReCEvalInformativeness",
]

DEFAULT_NLI_MODEL = "MoritzLaurer/DeBERTa-v3-large-mnli-fever-anli-ling-wanli"
DEFAULT_NLI_PARAMETERS = 435_000_000  # its model card: DeBERTa-v3-large, 304M backbone + 131M embedding parameters
DEFAULT_SPLITTER = "procrl.rewards.receval:split_rcus"
_DTYPES = ("auto", "float32", "float16", "bfloat16")


def _check_dtype(path: str, dtype: str) -> None:
    if dtype not in _DTYPES:
        raise ConfigError(f"{path}.dtype: invalid value {dtype!r}; allowed values: {', '.join(map(repr, _DTYPES))}")


class ReCEvalCorrectness(RewardComponent):
    """min over steps of min(intra-step entailment, 1 - inter-step contradiction), in [0, 1]."""

    grades = "reasoning"
    score_range = (0.0, 1.0)
    uses_model = True  # the NLI model
    diagnostics = ("receval",)

    @dataclass
    class Settings:
        nli_model: str = field(
            DEFAULT_NLI_MODEL,
            help="Hub id or directory of a 3-way NLI sequence classifier (labels read from config.id2label).",
        )
        batch_size: int = field(64, help="NLI pairs per forward pass.")
        max_length: int = field(
            512,
            help="Token limit of a (premise, hypothesis) pair (the released code's 512); a longer pair loses the "
            "beginning of its premise, so the most recent conclusions are kept.",
        )
        rcu_splitter: str = field(
            DEFAULT_SPLITTER, help="'module:function' splitting a step's text into premises and a conclusion."
        )
        cache_size: int = field(100_000, help="NLI results kept in the text-keyed LRU cache (0: no cache).")
        dtype: str = field("auto", help="torch dtype of the NLI model ('auto', 'float32', 'bfloat16', ...).")
        max_steps: int = field(
            64,
            help="Chains with more steps are not scored (their NLI pairs grow quadratically):"
            " they get no_steps_score, counted as too_many_steps.",
        )
        no_steps_score: float = field(
            0.0,
            help="Score of a chain without reasoning steps, or with more than max_steps: the bottom of the range, "
            "never better than a checked chain.",
        )

        def validate(self, path: str) -> None:
            if self.batch_size < 1:
                raise ConfigError(f"{path}.batch_size: must be >= 1, got {self.batch_size}")
            if self.max_steps < 1:
                raise ConfigError(f"{path}.max_steps: must be >= 1, got {self.max_steps}")
            if not 0.0 <= self.no_steps_score <= 1.0:
                raise ConfigError(f"{path}.no_steps_score: must be in [0, 1], got {self.no_steps_score}")
            if self.max_length < 8:
                raise ConfigError(f"{path}.max_length: must be >= 8, got {self.max_length}")
            if self.cache_size < 0:
                raise ConfigError(f"{path}.cache_size: must be >= 0, got {self.cache_size}")
            _check_dtype(path, self.dtype)
            try:
                load_rcu_splitter(self.rcu_splitter)
            except ValueError as error:
                raise ConfigError(f"{path}.rcu_splitter: {error}") from None

    def __init__(self, settings: Any = None, *, name: str | None = None):
        super().__init__(settings, name=name or "receval_correctness")
        self.splitter = load_rcu_splitter(self.settings.rcu_splitter)
        self._scorer = None

    @classmethod
    def models(cls, settings) -> dict[str, ModelRef]:
        parameters = DEFAULT_NLI_PARAMETERS if settings.nli_model == DEFAULT_NLI_MODEL else None
        return {"nli_model": ModelRef(settings.nli_model, settings.dtype, parameters=parameters)}

    def needs_model(self) -> str | None:
        return self.settings.nli_model

    @property
    def scorer(self):
        if self._scorer is None:
            from procrl.rewards.scorers.nli import NLIScorer

            s = self.settings
            self._scorer = NLIScorer(
                s.nli_model,
                device=self.context.device,
                batch_size=s.batch_size,
                max_length=s.max_length,
                cache_size=s.cache_size,
                dtype=s.dtype,
            )
        return self._scorer

    def plan(self, batch: RewardBatch) -> tuple[list[CorrectnessPlan | None], list[list[str] | None]]:
        """The NLI pairs of every chain and each chain's conclusions; None for a chain without
        steps, and (None, None) where the RCU splitter raised on one of its steps."""
        from procrl.core.text import split_sentences

        question_sentences: dict[str, list[str]] = {}
        plans: list[CorrectnessPlan | None] = []
        conclusions: list[list[str] | None] = []
        for segmentation, question in zip(batch.segmentations, batch.questions):
            steps = [s.text for s in segmentation.steps]
            if not steps or len(steps) > self.settings.max_steps:
                plans.append(None)
                conclusions.append(None)
                continue
            if question and question not in question_sentences:
                question_sentences[question] = [s.text for s in split_sentences(question)]
            try:
                rcus = [self.splitter(step) for step in steps]
            except Exception:  # a custom splitter failing on one chain fails that sample only
                plans.append(None)
                conclusions.append(None)
                continue
            plans.append(plan_correctness_pairs(rcus, question_sentences.get(question, []) if question else []))
            conclusions.append([r.conclusion for r in rcus])
        return plans, conclusions

    def score(self, batch: RewardBatch) -> RewardOutput:
        plans, conclusions = self.plan(batch)
        failures: dict[str, int] = {}
        for plan, segmentation in zip(plans, batch.segmentations):
            if plan is None:
                kind = _unscorable_kind(segmentation.steps, self.settings.max_steps) or "rcu_split_error"
                failures[kind] = failures.get(kind, 0) + 1
        before = dict(self.scorer.stats)
        probabilities = self.scorer.score(p for plan in plans if plan is not None for p in plan.pairs())
        scores: list[float | None] = []
        step_scores: list[list[float] | None] = []
        details: list[dict[str, Any]] = []
        all_intra: list[float] = []
        all_inter: list[float] = []
        for plan, chain_conclusions, segmentation in zip(plans, conclusions, batch.segmentations):
            if plan is None:
                unscorable = _unscorable_kind(segmentation.steps, self.settings.max_steps)
                # no steps / too many: the policy's doing, the bottom score; a failing splitter: no opinion
                scores.append(self.settings.no_steps_score if unscorable else None)
                step_scores.append([] if unscorable == "no_steps" else None)
                details.append(
                    {"min_step": None, "step_values": [], **({"unscored": unscorable} if unscorable else {})}
                )
                continue
            try:
                values, intra, inter = score_correctness_plan(plan, probabilities)
            except ValueError:  # a NaN / out-of-range probability from the model: this sample only
                failures["invalid_probability"] = failures.get("invalid_probability", 0) + 1
                scores.append(None)
                step_scores.append(None)
                details.append({"min_step": None, "step_values": []})
                continue
            value, index = chain_minimum(values)
            scores.append(value)
            step_scores.append(values)
            all_intra += intra
            all_inter += inter
            details.append(
                {
                    "min_step": index,
                    "step_values": values,
                    "intra": intra,
                    "inter": inter,
                    "conclusions": chain_conclusions,
                }
            )
        metrics = chain_summary(step_scores)
        metrics.update(
            {k: v for k, v in (("intra_mean", _mean(all_intra)), ("inter_mean", _mean(all_inter))) if v is not None}
        )
        stats = self.scorer.stats
        metrics["nli_pairs"] = float(stats["pairs"] - before["pairs"])
        metrics["nli_computed"] = float(stats["computed"] - before["computed"])
        metrics["nli_cache_hits"] = float(stats["cache_hits"] - before["cache_hits"])
        return RewardOutput(scores=scores, step_scores=step_scores, metrics=metrics, details=details, failures=failures)


def _unscorable_kind(steps, max_steps: int) -> str | None:
    """Why a chain is not scored at all, if it is not: no steps, or more than max_steps."""
    if not steps:
        return "no_steps"
    return "too_many_steps" if len(steps) > max_steps else None


class ReCEvalInformativeness(RewardComponent):
    """min over steps of tanh(information gain / tau), in [-1, 1]."""

    grades = "reasoning"
    score_range = (-1.0, 1.0)
    uses_model = True  # the language model of the information gain (by default the trainer's reference model)
    diagnostics = ("receval",)

    @dataclass
    class Settings:
        lm: str = field(
            "reference",
            help="Causal LM for the information gain: a Hub id or directory (or a .gguf path,"
            " or an embedded model such as procrl:smollm2-135m-instruct),"
            " or 'reference' for the trainer's reference model"
            " (trainer.beta > 0, or the LoRA policy with adapters disabled).",
        )
        gguf_file: str | None = field(
            None, help="A GGUF checkpoint inside lm (a Hub repository or directory), dequantized to dtype."
        )
        tau: float = field(1.0, help="Temperature of tanh(IG / tau).")
        condition_on_question: bool = field(
            True, help="Put the question before the steps in both contexts (the released ReCEval code omits it)."
        )
        target_template: str = field(
            " The answer is {answer}.", help="Target statement; {answer} is the chain's predicted answer."
        )
        target: Literal["answer", "question_and_answer"] = field(
            "answer",
            help="'answer': the target is the answer statement (target_template); 'question_and_answer': the question "
            "followed by it (the released ReCEval code's GSM8K hypothesis).",
        )
        no_steps_score: float = field(
            -1.0, help="Score of a chain without reasoning steps, or with more than max_steps: the bottom of the range."
        )
        no_answer_score: float = field(
            -1.0, help="Score of a completion without a predicted answer (no target to gain information about)."
        )
        batch_size: int = field(16, help="Sequences per LM forward pass.")
        max_length: int = field(1024, help="Token limit of context + target; longer contexts lose their beginning.")
        dtype: str = field(
            "auto", help="torch dtype of a named LM ('auto', 'float32', 'bfloat16', ...); unused for 'reference'."
        )
        max_steps: int = field(
            64,
            help="Chains with more steps get no score (counted as too_many_steps):"
            " their work grows with the steps (quadratically for NLI pairs).",
        )

        def validate(self, path: str) -> None:
            if not self.tau > 0:
                raise ConfigError(f"{path}.tau: must be > 0, got {self.tau}")
            if self.max_steps < 1:
                raise ConfigError(f"{path}.max_steps: must be >= 1, got {self.max_steps}")
            for name in ("no_steps_score", "no_answer_score"):
                if not -1.0 <= getattr(self, name) <= 1.0:
                    raise ConfigError(f"{path}.{name}: must be in [-1, 1], got {getattr(self, name)}")
            if "{answer}" not in self.target_template:
                raise ConfigError(f"{path}.target_template: must contain {{answer}}, got {self.target_template!r}")
            try:
                self.target_template.format(answer="1")
            except (KeyError, IndexError, ValueError) as error:
                raise ConfigError(f"{path}.target_template: invalid template ({error})") from None
            if self.batch_size < 1:
                raise ConfigError(f"{path}.batch_size: must be >= 1, got {self.batch_size}")
            if self.max_length < 8:
                raise ConfigError(f"{path}.max_length: must be >= 8, got {self.max_length}")
            _check_dtype(path, self.dtype)
            if self.gguf_file is not None and self.lm == "reference":
                raise ConfigError(
                    f"{path}.gguf_file: lm is 'reference' (the trainer's model); a GGUF file needs lm: "
                    "<the Hub id or directory holding it>"
                )
            from procrl.models.loading import check_gguf_file

            check_gguf_file(f"{path}.gguf_file", self.gguf_file, self.lm, f"{path}.lm")

    def __init__(self, settings: Any = None, *, name: str | None = None):
        super().__init__(settings, name=name or "receval_informativeness")
        from procrl.rewards.scorers.info_gain import TargetLogProbScorer

        s = self.settings
        self.scorer = TargetLogProbScorer(
            s.lm, batch_size=s.batch_size, max_length=s.max_length, dtype=s.dtype, gguf_file=s.gguf_file
        )

    @classmethod
    def models(cls, settings) -> dict[str, ModelRef]:
        return {} if settings.lm == "reference" else {"lm": ModelRef(settings.lm, settings.dtype, settings.gguf_file)}

    def needs_model(self) -> str | None:
        return "the trainer's reference model" if self.settings.lm == "reference" else self.settings.lm

    @property
    def collective(self) -> bool:
        """True under ZeRO-3 with ``lm: reference``: the mix then calls and settles it on every rank."""
        return self.scorer.collective

    def settle_collectives(self, failed: bool) -> None:
        self.scorer.settle(failed)

    def bind(self, context: RuntimeContext) -> None:
        super().bind(context)
        self.scorer.bind(context.device, context.tokenizer, context.trainer)
        if self.settings.lm == "reference" and context.trainer is not None:
            from procrl.rewards.scorers.info_gain import ReferenceModelError, reference_lm

            try:
                reference_lm(context.trainer)
            except ReferenceModelError as error:  # scoring will fail per batch; training goes on
                if context.is_main_process:
                    import logging

                    logging.getLogger(__name__).warning("%s: %s", self.name, error)

    def score(self, batch: RewardBatch) -> RewardOutput:
        from procrl.core.choices import answer_text, predict

        s = self.settings
        failures: dict[str, int] = {}
        requests: list[tuple[str, str]] = []
        chains: list[tuple[int, int, str] | str] = []  # (first request, number of steps, target), or why unscored
        for completion, segmentation, question, spec in zip(
            batch.completions, batch.segmentations, batch.questions, batch.answer_specs
        ):
            steps = [step.text for step in segmentation.steps]
            predicted, _ = predict(completion, spec)  # a number, an option ("(B) reading"), yes/no
            kind = _unscorable_kind(steps, s.max_steps) or (None if predicted is not None else "no_answer")
            if kind is not None:
                failures[kind] = failures.get(kind, 0) + 1
                chains.append(kind)
                continue
            shown = format_answer(predicted) if spec.kind == "number" else answer_text(predicted, spec)
            target = informativeness_target(s.target_template, shown, question, s.target)
            contexts = informativeness_contexts(steps, question, s.condition_on_question)
            chains.append((len(requests), len(steps), target))
            requests += [(context, target) for context in contexts]
        before = dict(self.scorer.stats)
        logprobs = self.scorer.mean_logprobs(requests)  # also when empty: ZeRO-3 ranks pass in step
        scores: list[float | None] = []
        step_scores: list[list[float] | None] = []
        details: list[dict[str, Any]] = []
        all_gains: list[float] = []
        for chain in chains:
            if isinstance(chain, str):  # no steps, too many, no answer: the bottom scores, not "no opinion"
                scores.append(s.no_answer_score if chain == "no_answer" else s.no_steps_score)
                step_scores.append([] if chain == "no_steps" else None)
                details.append({"min_step": None, "step_values": [], "unscored": chain})
                continue
            first, count, target = chain
            gains = information_gains(logprobs[first : first + count + 1])
            if not all(math.isfinite(g) for g in gains):
                failures["non_finite"] = failures.get("non_finite", 0) + 1
                scores.append(None)
                step_scores.append(None)
                details.append({"min_step": None, "step_values": []})
                continue
            values = informativeness_step_scores(gains, s.tau)
            value, index = chain_minimum(values)
            scores.append(value)
            step_scores.append(values)
            all_gains += gains
            details.append({"min_step": index, "step_values": values, "ig": gains, "target": target})
        metrics = chain_summary(step_scores)
        if all_gains:
            metrics["ig_mean"] = sum(all_gains) / len(all_gains)
        metrics["lm_sequences"] = float(self.scorer.stats["unique"] - before["unique"])
        metrics["lm_forward_passes"] = float(self.scorer.stats["forward_passes"] - before["forward_passes"])
        return RewardOutput(scores=scores, step_scores=step_scores, metrics=metrics, details=details, failures=failures)
