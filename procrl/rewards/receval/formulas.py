"""ReCEval's formulas (docs/spec.md section 3): step scores from NLI probabilities and
information gains, the weakest step of a chain, the NLI pairs a chain needs and the contexts of
its information gain. Pure functions: probabilities, log-probabilities and texts in, numbers and
texts out."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from procrl.rewards.receval.rcu import RCU

__all__ = [
    "CONNECTIVE",
    "CorrectnessPlan",
    "Pair",
    "chain_minimum",
    "chain_summary",
    "correctness_step_scores",
    "format_answer",
    "information_gains",
    "informativeness_contexts",
    "informativeness_step_scores",
    "informativeness_target",
    "inter_step_score",
    "intra_step_score",
    "plan_correctness_pairs",
    "score_correctness_plan",
]

Pair = tuple[str, str]
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


def chain_summary(step_values_by_chain: list[list[float] | None]) -> dict[str, float]:
    """Batch metrics of the chains' step values: mean step value, where the minimum falls (index, and
    (index + 1) / steps), mean number of steps; chains without step values are left out."""
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
