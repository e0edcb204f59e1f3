"""Accuracy statistics over problems with one or more sampled completions each (pure functions).

Used by ``procrl evaluate`` and by evaluation during training (``procrl/trainers/held_out.py``).
Every accuracy comes with its standard error, so that two checkpoints can be compared honestly:

* ``answer_accuracy``: share of completions whose answer is right; ``reasoning_aware_accuracy``:
  right AND the first-error judge found no error (a right answer without a verdict does not
  count); ``inflation``: the difference of the two.
* ``pass@k`` (unbiased estimator of Chen et al. 2021, "Evaluating Large Language Models Trained
  on Code"): with n samples of a problem of which c are right, ``1 - C(n-c, k) / C(n, k)``, the
  probability that k samples drawn without replacement contain a right one; averaged over
  problems. ``reasoning_aware_pass@k``: the same with c = right and judged error-free.
* ``maj@n``: majority vote over a problem's n predicted answers (numbers equal within 1e-6 are
  one answer; no answer does not vote; ties go to the answer seen first); right when the vote
  equals the gold answer. ``reasoning_aware_maj@n``: the vote is right, weighted by the share of
  the samples behind it that the judge found error-free (the chance that the vote comes with a
  sound solution when one of its supporting solutions is shown). Only k = n is reported for
  majority voting (no estimator for k < n here).

Standard errors are over problems: ``sqrt(var / P)`` with the population variance of the
per-problem values over the P problems. With one sample per problem and a 0/1 outcome this is
the binomial ``sqrt(p (1 - p) / P)``; with several samples, their correlation within a problem
is accounted for by averaging them per problem first. The exception is ``process_error_rate``
(among right answers with a verdict, the share judged flawed): pooled over those completions,
with the binomial error over them.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

__all__ = [
    "SampleOutcome",
    "default_ks",
    "majority_answer",
    "pass_at_k",
    "standard_error",
    "summarize",
]


@dataclass(frozen=True)
class SampleOutcome:
    """One scored completion. ``verdict``: the first-error judge's index (-1 = no error, k >= 0 =
    first wrong step, None = no verdict); ``answer``: the predicted number (None: no answer)."""

    problem: int
    correct: bool | None
    verdict: int | None = None
    answer: float | None = None

    @property
    def sound(self) -> bool:
        return self.correct is True and self.verdict == -1


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem with ``n`` samples of which ``c`` are right:
    ``1 - C(n-c, k) / C(n, k)``, computed as ``1 - prod_{i=n-c+1}^{n} (1 - k/i)`` (no large
    binomials)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def standard_error(values: Sequence[float]) -> float | None:
    """``sqrt(var / n)`` with the population variance (binomial ``sqrt(p(1-p)/n)`` for 0/1 values)."""
    if not values:
        return None
    mean = sum(values) / len(values)
    variance = sum((v - mean) ** 2 for v in values) / len(values)
    return math.sqrt(variance / len(values))


_MICRO = Decimal("1e-6")
_EXACT_ROUNDING = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def _answer_key(value):
    """What votes together: an option label or yes/no as it is; a number as its exact value rounded
    to 6 decimal places (integers of any length stay apart: 2**53 and 2**53 + 1 are two answers);
    -0 and 0 are one (equal Decimals hash alike)."""
    from procrl.core.answers import exact_value

    if isinstance(value, (str, bool)):
        return value
    exact = exact_value(value)
    return None if exact is None else _EXACT_ROUNDING.quantize(exact, _MICRO)


def majority_answer(answers: Iterable[float | None]) -> float | None:
    """The most frequent predicted answer (None when no sample has one; ties: seen first)."""
    counts: dict[Decimal, int] = {}
    first: dict[Decimal, float] = {}
    for answer in answers:
        key = _answer_key(answer)
        if key is None:
            continue
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, answer)
    if not counts:
        return None
    best = max(counts.values())
    return first[next(key for key, count in counts.items() if count == best)]


def default_ks(num_samples: int) -> list[int]:
    """k values reported for ``num_samples`` samples per problem: 1, 2, 4, ... below n, and n."""
    ks, k = [], 1
    while k < num_samples:
        ks.append(k)
        k *= 2
    return ks + [num_samples]


def _group(outcomes: Sequence[SampleOutcome]) -> list[list[SampleOutcome]]:
    groups: dict[int, list[SampleOutcome]] = {}
    for outcome in outcomes:
        groups.setdefault(outcome.problem, []).append(outcome)
    return list(groups.values())


def _mean_and_error(key: str, values: list[float], out: dict[str, float | int | None]) -> None:
    out[key] = sum(values) / len(values) if values else None
    out[f"{key}_stderr"] = standard_error(values)


def summarize(
    outcomes: Sequence[SampleOutcome],
    judged: bool,
    golds: Sequence[float | None] | None = None,
    ks: Sequence[int] | None = None,
) -> dict[str, float | int | None]:
    """Every accuracy with its standard error over the problems of ``outcomes``.

    ``judged``: a first-error component scored the samples (else the reasoning-aware values are
    None). ``golds``: gold number per problem index, for majority voting (without them no maj@n).
    ``ks``: the k of pass@k (default :func:`default_ks` of the smallest sample count). maj@n needs
    the same number of samples for every problem."""
    groups = _group(outcomes)
    out: dict[str, float | int | None] = {"problems": len(groups), "completions": len(outcomes)}
    if not groups:
        return out
    sizes = [len(g) for g in groups]
    out["samples_per_problem"] = sizes[0] if len(set(sizes)) == 1 else None
    right = [sum(o.correct is True for o in g) / len(g) for g in groups]
    _mean_and_error("answer_accuracy", right, out)
    sound = [sum(o.sound for o in g) / len(g) for g in groups] if judged else []
    _mean_and_error("reasoning_aware_accuracy", sound, out)
    _mean_and_error("inflation", [r - s for r, s in zip(right, sound)], out)
    # among right answers with a verdict, the share judged flawed (pooled over samples)
    judged_right = [o for o in outcomes if o.correct is True and o.verdict is not None] if judged else []
    flawed = [1.0 if o.verdict >= 0 else 0.0 for o in judged_right]
    _mean_and_error("process_error_rate", flawed, out)
    for k in ks if ks is not None else default_ks(min(sizes)):
        if k > min(sizes):
            continue
        _mean_and_error(f"pass@{k}", [pass_at_k(len(g), sum(o.correct is True for o in g), k) for g in groups], out)
        if judged:
            _mean_and_error(
                f"reasoning_aware_pass@{k}", [pass_at_k(len(g), sum(o.sound for o in g), k) for g in groups], out
            )
    if golds is not None and len(set(sizes)) == 1:
        from procrl.core.answers import answers_match

        n = sizes[0]
        votes, sound_votes = [], []
        for group in groups:
            gold = golds[group[0].problem]
            vote = majority_answer(o.answer for o in group)
            if isinstance(gold, (str, bool)):  # an option label or yes/no
                hit = vote is not None and vote == gold
            else:
                hit = answers_match(vote, gold)  # accuracy's comparison: absolute 1e-6, integers exactly
            votes.append(1.0 if hit else 0.0)
            if judged:
                backers = [o for o in group if vote is not None and _answer_key(o.answer) == _answer_key(vote)]
                sound_votes.append(sum(o.verdict == -1 for o in backers) / len(backers) if hit else 0.0)
        _mean_and_error(f"maj@{n}", votes, out)
        if judged:
            _mean_and_error(f"reasoning_aware_maj@{n}", sound_votes, out)
    return out
