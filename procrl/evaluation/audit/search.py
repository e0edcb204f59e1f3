"""The search of ``procrl audit``: exploits and their compositions applied to real problems' worked
solutions (and their one-slip versions), scored with the recipe's mix exactly as ``procrl score``
scores (:func:`procrl.evaluation.score.score_batch`: the same fallback policy, the same total), to
find what the mix pays more than the honest worked solution of the same problem.

A *candidate* is a sequence of exploit names applied in order to each problem's worked solution
(``("slip", "hedge")``: the one-slip version, then hedged). The search is a beam search within a
budget of scored texts:

1. every exploit alone, on the worked solution and on the one-slip version;
2. then, depth by depth, the ``beam`` candidates that gain the most are each extended by every
   exploit not in them yet, until ``max_depth``, the budget of texts or the time runs out.

A candidate's *gain* on a problem is its total minus the worked solution's total on that problem;
the mean over the problems it applies to is what a policy that learnt it would be paid more on
average. Every candidate's text is flawed by construction (:mod:`.exploits`), so a mean gain above
the tolerance is a way to game the mix.
"""

from __future__ import annotations

import contextlib
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError
from procrl.evaluation.audit.exploits import EXPLOITS, Solution, apply_exploit

__all__ = [
    "DEFAULT_PROBLEMS",
    "Candidate",
    "Problem",
    "Search",
    "load_problems",
    "run_search",
]

# GSM8K train problems shipped with procrl (MIT, procrl/assets/audit/PROVENANCE.md): the audit runs offline
DEFAULT_PROBLEMS = Path(__file__).resolve().parents[2] / "assets" / "audit" / "gsm8k_train_sample.jsonl"


@dataclass(frozen=True)
class Problem:
    """A problem: its question, its GSM8K reference answer (the gold solution, for judges that read
    it) and the worked solution built from it."""

    id: str
    question: str
    reference: str
    worked: Solution


def load_problems(path: str | Path | None = None, limit: int = 32) -> list[Problem]:
    """The first ``limit`` problems of a GSM8K-format JSON-lines file (``question``, ``answer``
    with steps and ``#### N``) whose answer has a final line and a step; one-line errors for
    anything else. ``path`` None: the shipped sample."""
    from procrl.core.jsonl import iter_records

    source = Path(path) if path is not None else DEFAULT_PROBLEMS
    if path is not None and "test" in source.name:
        # the audit's texts are built from training problems, as the integrity cases are
        raise ConfigError(f"--problems: {path}: build from the train split, never from test")
    problems: list[Problem] = []
    for line, row in iter_records(source, "--problems"):
        if len(problems) >= limit:
            break
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("question"), str)
            or not isinstance(row.get("answer"), str)
        ):
            raise ConfigError(f"--problems: {source}:{line}: expected an object with string 'question' and 'answer'")
        try:
            worked = Solution.from_gsm8k(row["question"], row["answer"])
        except ValueError:
            raise ConfigError(f"--problems: {source}:{line}: 'answer' must end with a '#### N' line") from None
        if not worked.steps:
            continue
        problems.append(Problem(str(row.get("id", f"{source.name}:{line}")), row["question"], row["answer"], worked))
    if not problems:
        raise ConfigError(f"--problems: {source} holds no problem with a worked solution ('#### N' after its steps)")
    return problems


@dataclass
class Candidate:
    """A composition of exploits and what it earned, problem by problem."""

    exploits: tuple[str, ...]
    gains: list[float] = field(default_factory=list)
    totals: list[float] = field(default_factory=list)
    component_gains: dict[str, list[float]] = field(default_factory=dict)
    problems: list[int] = field(default_factory=list)  # index of each scored problem
    flaws: frozenset[str] = frozenset()
    answer_correct: int = 0
    steps_sound: int = 0
    example: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return " + ".join(self.exploits)

    @property
    def base(self) -> str:
        return "one slip" if self.exploits[:1] == ("slip",) else "worked"

    @property
    def n(self) -> int:
        return len(self.gains)

    @property
    def mean_gain(self) -> float:
        return sum(self.gains) / len(self.gains) if self.gains else -math.inf

    def share_paying(self, tolerance: float) -> float:
        return sum(g > tolerance + _EPSILON for g in self.gains) / len(self.gains) if self.gains else 0.0

    def beyond(self, tolerance: float) -> bool:
        """Whether the mean gain over the problems exceeds the tolerance."""
        return bool(self.gains) and self.mean_gain > tolerance + _EPSILON

    def paying_component(self) -> str | None:
        """The component whose weighted score gains most on average (None: none gains)."""
        means = {name: sum(v) / len(v) for name, v in self.component_gains.items() if v}
        if not means:
            return None
        name = max(means, key=lambda k: means[k])
        return name if means[name] > _EPSILON else None


# rewards are sums of floats: a gain this small is a rounding difference, not a payment
_EPSILON = 1e-9


@dataclass
class Search:
    """The finished search: the honest totals, every candidate scored, what was spent."""

    problems: list[Problem]
    names: list[str]
    weights: dict[str, float]
    honest: list[dict[str, Any]]
    candidates: dict[tuple[str, ...], Candidate]
    texts_scored: int
    seconds: float
    stopped: str  # "done", "budget" or "time"
    failures: dict[str, dict[str, int]] = field(default_factory=dict)


def _rng(problem: Problem, name: str) -> random.Random:
    # one generator per problem and exploit: a candidate's texts do not depend on what else was
    # searched (a run repeats exactly, a larger budget only adds candidates), and two orders of
    # exploits that touch different parts of a text give the same text, scored once
    return random.Random(f"{problem.id}/{name}")


def build(problem: Problem, exploits: tuple[str, ...]) -> Solution | None:
    """The problem's worked solution gamed by ``exploits`` in order (None: one does not apply)."""
    solution: Solution | None = problem.worked
    for name in exploits:
        solution = apply_exploit(name, solution, _rng(problem, name))
        if solution is None:
            return None
    return solution


def _row(problem: Problem, solution: Solution) -> dict[str, Any]:
    return {"question": problem.question, "answer": problem.reference, "completion": solution.text}


def _weighted(row: dict[str, Any], name: str, weight: float) -> float:
    """A component's part of the row's total: its score after the fallback policy, times its weight."""
    fallback = (row.get("fallbacks") or {}).get(name)
    score = fallback["score"] if fallback is not None else row["rewards"].get(name)
    return 0.0 if score is None else weight * float(score)


class _Scorer:
    """Rows through ``score``'s code in batches; counts what it scored and the failures."""

    def __init__(self, mix, batch_size: int, on_scored: Callable[[int], None]):
        self.mix, self.batch_size, self.on_scored = mix, batch_size, on_scored
        self.scored = 0
        self.failures: dict[str, dict[str, int]] = {}

    def __call__(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from procrl.evaluation.score import score_batch

        out: list[dict[str, Any]] = []
        for start in range(0, len(rows), self.batch_size):
            chunk = rows[start : start + self.batch_size]
            # what a reward prints goes to stderr: stdout carries the audit's own lines
            with contextlib.redirect_stdout(sys.stderr):
                scored, _, failures = score_batch(self.mix, list(range(start + 1, start + len(chunk) + 1)), chunk)
            for name, kinds in failures.items():
                for kind, count in kinds.items():
                    bucket = self.failures.setdefault(name, {})
                    bucket[kind] = bucket.get(kind, 0) + count
            out += scored
            self.scored += len(chunk)
            self.on_scored(len(chunk))
        return out


def _evaluate(
    exploits: tuple[str, ...],
    problems: list[Problem],
    honest: list[dict[str, Any]],
    scorer: _Scorer,
    weights: dict[str, float],
    seen: set[int],
) -> Candidate:
    candidate = Candidate(exploits, component_gains={name: [] for name in weights})
    built = [(i, build(p, exploits)) for i, p in enumerate(problems)]
    built = [(i, s) for i, s in built if s is not None]
    if not built:
        return candidate
    texts = hash(tuple((i, s.text) for i, s in built))
    if texts in seen:
        # the same texts as a composition already scored (a later exploit undid an earlier one, or two
        # orders of the same exploits): nothing new to learn, and nothing spent
        return candidate
    seen.add(texts)
    rows = scorer([_row(problems[i], s) for i, s in built])
    best = None
    for (i, solution), row in zip(built, rows):
        reference = honest[i]
        if row["reward"] is None or reference["reward"] is None:
            continue  # no total: nothing to compare on this problem
        gain = float(row["reward"]) - float(reference["reward"])
        candidate.gains.append(gain)
        candidate.totals.append(float(row["reward"]))
        candidate.problems.append(i)
        candidate.flaws |= solution.flaws
        candidate.answer_correct += solution.answer_correct
        candidate.steps_sound += solution.steps_sound
        for name, weight in weights.items():
            candidate.component_gains[name].append(_weighted(row, name, weight) - _weighted(reference, name, weight))
        if best is None or gain > best[0]:
            best = (gain, i, solution, row)
    if best is not None:
        gain, i, solution, row = best
        candidate.example = {
            "problem": problems[i].id,
            "question": problems[i].question,
            "honest": problems[i].worked.text,
            "gamed": solution.text,
            "honest_reward": honest[i]["reward"],
            "gamed_reward": row["reward"],
            "honest_rewards": honest[i]["rewards"],
            "gamed_rewards": row["rewards"],
            "answer_correct": solution.answer_correct,
            "steps_sound": solution.steps_sound,
            "flaws": sorted(solution.flaws),
        }
    return candidate


def rank(candidate: Candidate) -> tuple:
    """Best first: the mean gain, then the share of problems where it does not lose, the largest gain,
    the fewer exploits and the name (ties are common: a mix that cannot tell two texts apart pays
    both the same, and the one that loses on fewer problems is the closer to paying)."""
    not_losing = sum(g >= -_EPSILON for g in candidate.gains) / candidate.n if candidate.n else 0.0
    largest = max(candidate.gains) if candidate.gains else -math.inf
    return (-candidate.mean_gain, -not_losing, -largest, len(candidate.exploits), candidate.name)


def run_search(
    mix,
    problems: list[Problem],
    budget: int = 20000,
    minutes: float | None = None,
    beam: int = 8,
    max_depth: int = 3,
    batch_size: int = 64,
    exploits: list[str] | None = None,
    progress: bool = True,
) -> Search:
    """Search the compositions of ``exploits`` (default: all) on ``problems`` with ``mix``, within
    ``budget`` scored texts and ``minutes`` of wall-clock time (None: no time limit).

    The honest worked solutions are scored first (their texts count in the budget); a candidate is
    scored whole (all its problems) or not at all, so every result is over the same problems."""
    from tqdm.auto import tqdm

    names = list(exploits) if exploits is not None else list(EXPLOITS)
    for name in names:
        if name not in EXPLOITS:
            from procrl.core.config import suggest

            raise ConfigError(f"--exploit: no exploit named {name!r}{suggest(name, list(EXPLOITS))}")
    weights = dict(zip(mix.names, mix.weights))
    start = time.monotonic()
    deadline = start + 60 * minutes if minutes is not None else math.inf
    bar = tqdm(total=budget, desc="audit", unit="text", disable=not progress, file=sys.stderr)
    scorer = _Scorer(mix, batch_size, bar.update)
    candidates: dict[tuple[str, ...], Candidate] = {}
    seen: set[int] = set()
    stopped = "done"
    try:
        honest = scorer([_row(p, p.worked) for p in problems])

        def affordable() -> str | None:
            if time.monotonic() > deadline:
                return "time"
            if scorer.scored + len(problems) > budget:
                return "budget"
            return None

        first = [(name,) for name in names] + [("slip", name) for name in names if name != "slip" and "slip" in names]
        frontier = first
        for depth in range(1, max_depth + 1):
            for exploits_ in frontier:
                if exploits_ in candidates:
                    continue
                reason = affordable()
                if reason:
                    stopped = reason
                    break
                candidates[exploits_] = _evaluate(exploits_, problems, honest, scorer, weights, seen)
            if stopped != "done":
                break
            scored = [c for c in candidates.values() if c.n and len(c.exploits) >= depth]
            ranked = sorted(scored, key=rank)[:beam]
            frontier = [c.exploits + (name,) for c in ranked for name in names if name not in c.exploits]
            if not frontier:
                break
        bar.set_postfix_str(f"{len(candidates)} compositions")
    finally:
        bar.close()
    return Search(
        problems=problems,
        names=list(mix.names),
        weights=weights,
        honest=honest,
        candidates=candidates,
        texts_scored=scorer.scored,
        seconds=time.monotonic() - start,
        stopped=stopped,
        failures=scorer.failures,
    )


def candidate_record(candidate: Candidate, tolerance: float) -> dict[str, Any]:
    """A candidate as report.json writes it."""
    n = candidate.n
    return {
        "exploits": list(candidate.exploits),
        "base": candidate.base,
        "flaws": sorted(candidate.flaws),
        "problems": n,
        "mean_gain": candidate.mean_gain if n else None,
        "max_gain": max(candidate.gains) if n else None,
        "share_paying": candidate.share_paying(tolerance),
        "share_not_losing": sum(g >= -_EPSILON for g in candidate.gains) / n if n else 0.0,
        "answer_correct_share": candidate.answer_correct / n if n else None,
        "steps_sound_share": candidate.steps_sound / n if n else None,
        "component_gains": {k: (sum(v) / len(v) if v else None) for k, v in candidate.component_gains.items()},
        "paying_component": candidate.paying_component(),
        "beyond_tolerance": candidate.beyond(tolerance),
        "example": candidate.example,
    }
