"""ReCEval (docs/spec.md section 3): step correctness with an NLI model and step informativeness
as information gain under a causal LM; a chain scores its weakest step.

Per step i with conclusion c_i and premises P_i (Reasoning Content Units, RCUs):

* intra-step correctness = P_entail(P_i plus all earlier conclusions, joined with " and " =>
  c_i); no premises -> 1.0;
* inter-step correctness = 1 - max over p in {question sentences} U {c_1..c_{i-1}} of
  P_contradiction(p => c_i), each pair scored separately; no such p -> 1.0;
* information gain IG_i = mean token log p(t | q, steps<=i, " Therefore,") - the same with
  steps<i, t = the chain's predicted answer statement (default ``" The answer is N."``).

``receval_correctness`` = min_i min(intra_i, inter_i) in [0, 1];
``receval_informativeness`` = min_i tanh(IG_i / tau) in [-1, 1]. Per-step values are the
per-step scores.

No opinion is never the best score: a chain without steps or with more than ``max_steps``
gets ``no_steps_score`` (the bottom of the range: 0 / -1), a completion without a predicted
answer ``no_answer_score`` (-1, informativeness); only a failure of the model or of a custom
splitter gives None, which the mix resolves by the component's ``fallback`` (group mean). The formulas and the RCU split
are pure functions (text / probabilities in, numbers out); models live in :mod:`procrl.rewards.scorers.nli` and
:mod:`procrl.rewards.scorers.info_gain`.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from procrl.core.config import ConfigError, field
from procrl.core.numeric import mean as _mean  # None for no values (never NaN or 0)
from procrl.rewards.protocol import ModelRef, RewardBatch, RewardComponent, RewardOutput, RuntimeContext
from procrl.rewards.quantities.results import EQUALS, state_results, states_number

__all__ = [
    "RCU",
    "CorrectnessPlan",
    "ReCEvalCorrectness",
    "ReCEvalInformativeness",
    "chain_minimum",
    "correctness_step_scores",
    "format_answer",
    "information_gains",
    "informativeness_contexts",
    "informativeness_step_scores",
    "informativeness_target",
    "inter_step_score",
    "intra_step_score",
    "letter_words",
    "load_rcu_splitter",
    "plan_correctness_pairs",
    "score_correctness_plan",
    "split_rcus",
]

Pair = tuple[str, str]
DEFAULT_NLI_MODEL = "MoritzLaurer/DeBERTa-v3-large-mnli-fever-anli-ling-wanli"
DEFAULT_NLI_PARAMETERS = 435_000_000  # its model card: DeBERTa-v3-large, 304M backbone + 131M embedding parameters
DEFAULT_SPLITTER = "procrl.rewards.receval:split_rcus"
CONNECTIVE = " Therefore,"


# --- formulas over probabilities --------------------------------------------------------------


def _probability(value: float, what: str) -> float:
    value = float(value)
    if not (0.0 <= value <= 1.0):  # also rejects NaN
        raise ValueError(f"{what} must be a probability in [0, 1], got {value!r}")
    return value


def intra_step_score(entailment: float | None) -> float:
    """P_entail(premises => conclusion); ``None`` (the step has no premises) -> 1.0."""
    return 1.0 if entailment is None else _probability(entailment, "entailment probability")


def inter_step_score(contradictions: Sequence[float]) -> float:
    """1 - the largest P_contradiction(p => c_i) over the question sentences and earlier
    conclusions; no such p -> 1.0."""
    if not contradictions:
        return 1.0
    return 1.0 - max(_probability(p, "contradiction probability") for p in contradictions)


def correctness_step_scores(intra: Sequence[float], inter: Sequence[float]) -> list[float]:
    """Per-step correctness: min(intra_i, inter_i)."""
    if len(intra) != len(inter):
        raise ValueError(f"{len(intra)} intra-step scores but {len(inter)} inter-step scores")
    return [min(a, b) for a, b in zip(intra, inter)]


def information_gains(prefix_logprobs: Sequence[float]) -> list[float]:
    """IG_i from the mean target log-probabilities after 0, 1, ..., n steps (n + 1 values)."""
    if len(prefix_logprobs) < 2:
        raise ValueError("information gain needs the target log-probability before and after at least one step")
    return [after - before for before, after in zip(prefix_logprobs[:-1], prefix_logprobs[1:])]


def informativeness_step_scores(gains: Sequence[float], tau: float = 1.0) -> list[float]:
    """tanh(IG_i / tau), in [-1, 1]."""
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau!r}")
    return [math.tanh(g / tau) for g in gains]


def chain_minimum(step_values: Sequence[float]) -> tuple[float, int]:
    """(smallest step value, index of the first step that has it)."""
    if not step_values:
        raise ValueError("a chain needs at least one step")
    index = min(range(len(step_values)), key=lambda i: (step_values[i], i))
    return step_values[index], index


# --- RCU split ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RCU:
    """A step's premises and conclusion."""

    premises: tuple[str, ...]
    conclusion: str


_CALCULATOR_NOTE = re.compile(r"<<[^<>]*>>")
# Conclusion markers; "so far", "so that", "even so", "or so", "so many/much" are not markers.
_CONCLUSION_MARKER = re.compile(
    r"(?<!\beven )(?<!\bor )\bso\b(?!\s+(?:far|that|many|much)\b)"
    r"|\b(?:therefore|thus|hence|which\s+means|this\s+means)\b",
    re.IGNORECASE,
)
# Per ReCEval, the clause after "because" / "since" is a premise of the step's conclusion.
_REASON_MARKER = re.compile(r"\b(?:because|since)\b", re.IGNORECASE)
# Where a clause ends: ";", a comma before a space (not "1,000"), a sentence end.
_CLAUSE_END = re.compile(r";|,(?=\s)|[.!?](?=\s|$)")
_PREMISE_SEPARATOR = re.compile(r";|,\s*and\b|\s+and\s+|\bbecause\b|\bsince\b", re.IGNORECASE)
_WORD = re.compile(r"(?<![\w$])[A-Za-z]+(?![\w])")


def _tidy(text: str) -> str:
    """A clause as an NLI text: single spaces, no dangling separators or final period."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,;:.!?%])", r"\1", text)
    return text.strip(" ,;:").rstrip(".!?").strip()


def _premises(text: str) -> list[str]:
    pieces = (_tidy(p) for p in _PREMISE_SEPARATOR.split(text))
    return [p for p in pieces if any(ch.isalnum() for ch in p)]


def letter_words(text: str) -> int:
    """Number of words made of letters only ("Jenny has $25" has 2; "80 sheep" has 1)."""
    return len(_WORD.findall(text))


def _clause_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The clause of ``text`` holding ``text[start:end]``: from the last clause end before it
    to the next one after it."""
    left = 0
    for match in _CLAUSE_END.finditer(text, 0, start):
        left = match.end()
    right = _CLAUSE_END.search(text, end)
    return left, right.start() if right else len(text)


def _reasons(text: str) -> tuple[str, list[str]]:
    """The step without its because/since clauses, and those clauses (premises)."""
    reasons: list[str] = []
    while True:
        match = _REASON_MARKER.search(text)
        if not match:
            return text, reasons
        end = _CLAUSE_END.search(text, match.end())
        marker = _CONCLUSION_MARKER.search(text, match.end())
        stop = min(m.start() for m in (end, marker) if m) if (end or marker) else len(text)
        reasons.append(text[match.end() : stop])
        text = text[: match.start()] + " " + text[stop:]


def split_rcus(step: str) -> RCU:
    """The default RCU split (docs/spec.md section 3; no SRL model): a conclusion that is a
    clause, never a bare number.

    GSM8K calculator notes ``<<a*b=c>>`` are dropped first (they repeat the visible equation).
    Clauses after *because* / *since* are premises (ReCEval). The conclusion is the clause after
    the last of {so, therefore, thus, hence, which means, this means} (not "so far", "so that",
    "even so"), else the clause holding the last ``= number`` result, else the whole step; in it,
    each calculation is replaced by its stated result ("She sold 48/2 = 24 clips in May" ->
    "She sold 24 clips in May") and becomes a premise. The rest of the step, split on ``;``,
    ``, and``, `` and ``, are premises. No trailing period on any RCU (they are joined with
    " and ").
    """
    text = _CALCULATOR_NOTE.sub("", step)
    text = EQUALS.sub(" = ", text).strip()
    text, reasons = _reasons(text)
    premises: list[str] = []
    markers = list(_CONCLUSION_MARKER.finditer(text))
    conclusion = ""
    if markers:
        last = markers[-1]
        clause = text[last.end() :]
        if any(ch.isalnum() for ch in clause):
            conclusion, equations = state_results(clause)
            premises += _premises(text[: last.start()]) + equations
    if not conclusion:
        results = [m for m in EQUALS.finditer(text) if states_number(text[m.end() :])]
        if results:
            last = results[-1]
            left, right = _clause_around(text, last.start(), last.end() + 1)
            conclusion, equations = state_results(text[left:right])
            premises += _premises(text[:left] + " ; " + text[right:]) + equations
    if not _tidy(conclusion):
        conclusion, equations = state_results(text)
        premises = equations
    premises = [_tidy(p) for p in reasons] + premises
    conclusion = _tidy(conclusion) or _tidy(step) or step
    return RCU(tuple(p for p in premises if any(ch.isalnum() for ch in p)), conclusion)


def load_rcu_splitter(reference: str) -> Callable[[str], RCU]:
    """The splitter named ``module:attr``: a callable step text -> RCU or (premises, conclusion)."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected 'package.module:function', got {reference!r}")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"cannot load RCU splitter {reference!r} ({error})") from None
    if not callable(target):
        raise ValueError(f"RCU splitter {reference!r} is not callable")

    def split(step: str) -> RCU:
        result = target(step)
        if isinstance(result, RCU):
            return result
        premises, conclusion = result
        return RCU(tuple(str(p) for p in premises), str(conclusion))

    return split


# --- correctness pairs --------------------------------------------------------------------


@dataclass(frozen=True)
class CorrectnessPlan:
    """The NLI pairs a chain needs: per step, the intra-step (premise, conclusion) pair (None
    when the step has no premises) and the inter-step (p, conclusion) pairs."""

    intra: tuple[Pair | None, ...]
    inter: tuple[tuple[Pair, ...], ...]

    def pairs(self) -> list[Pair]:
        return [p for p in self.intra if p is not None] + [p for step in self.inter for p in step]


def plan_correctness_pairs(rcus: Sequence[RCU], question_sentences: Sequence[str]) -> CorrectnessPlan:
    """Pairs per step: intra = (premises of step i plus earlier conclusions joined with " and ",
    c_i); inter = (p, c_i) for every question sentence and earlier conclusion p."""
    intra: list[Pair | None] = []
    inter: list[tuple[Pair, ...]] = []
    earlier: list[str] = []
    for rcu in rcus:
        premises = [p for p in list(rcu.premises) + earlier if p.strip()]
        intra.append((" and ".join(premises), rcu.conclusion) if premises else None)
        inter.append(tuple((p, rcu.conclusion) for p in list(question_sentences) + earlier if p.strip()))
        earlier.append(rcu.conclusion)
    return CorrectnessPlan(tuple(intra), tuple(inter))


def score_correctness_plan(
    plan: CorrectnessPlan, probabilities: Mapping[Pair, tuple[float, float]]
) -> tuple[list[float], list[float], list[float]]:
    """(per-step correctness, intra, inter) from {pair: (P_entail, P_contradiction)}."""
    intra = [intra_step_score(None if pair is None else probabilities[pair][0]) for pair in plan.intra]
    inter = [inter_step_score([probabilities[pair][1] for pair in pairs]) for pairs in plan.inter]
    return correctness_step_scores(intra, inter), intra, inter


# --- informativeness contexts ---------------------------------------------------------------


def format_answer(value: float) -> str:
    """72.0 -> "72", 0.5 -> "0.5"."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.6f}".rstrip("0").rstrip(".")


def informativeness_target(template: str, answer: str, question: str | None, target: str = "answer") -> str:
    """The statement whose log-probability the steps should raise: the answer statement, or
    (``question_and_answer``, the released code's GSM8K hypothesis) the question followed by it
    (the answer statement alone when there is no question)."""
    statement = template.format(answer=answer)
    if target == "question_and_answer" and question and question.strip():
        return " " + question.strip() + statement
    return statement


def informativeness_contexts(
    steps: Sequence[str], question: str | None, condition_on_question: bool = True
) -> list[str]:
    """The n + 1 contexts (question, steps<k, " Therefore,") for k = 0..n."""
    head = [question.strip()] if condition_on_question and question and question.strip() else []
    return [("\n".join(head + list(steps[:k])) + CONNECTIVE).lstrip() for k in range(len(steps) + 1)]


# --- components ---------------------------------------------------------------------------


def _chain_summary(step_values_by_chain: list[list[float] | None]) -> dict[str, float]:
    values = [v for chain in step_values_by_chain if chain for v in chain]
    minima = [chain_minimum(chain) for chain in step_values_by_chain if chain]
    chains = [chain for chain in step_values_by_chain if chain]
    metrics: dict[str, float] = {}
    if values:
        metrics["step_mean"] = sum(values) / len(values)
        metrics["min_step_mean"] = sum(i for _, i in minima) / len(minima)
        metrics["min_step_fraction_mean"] = sum((i + 1) / len(c) for (_, i), c in zip(minima, chains)) / len(minima)
        metrics["steps_mean"] = sum(len(c) for c in chains) / len(chains)
    return metrics


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
        metrics = _chain_summary(step_scores)
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
        metrics = _chain_summary(step_scores)
        if all_gains:
            metrics["ig_mean"] = sum(all_gains) / len(all_gains)
        metrics["lm_sequences"] = float(self.scorer.stats["unique"] - before["unique"])
        metrics["lm_forward_passes"] = float(self.scorer.stats["forward_passes"] - before["forward_passes"])
        return RewardOutput(scores=scores, step_scores=step_scores, metrics=metrics, details=details, failures=failures)
