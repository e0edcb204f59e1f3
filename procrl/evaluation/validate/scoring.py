"""``procrl validate``'s scoring: every labelled solution through ``procrl score``'s code
(:func:`procrl.evaluation.score.score_batch`), the data's first-error label moved onto procrl's
steps (:func:`procrl.evaluation.validate.metrics.map_label`)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tqdm.auto import tqdm

from procrl.core.choices import answer_block_start, answer_spec
from procrl.core.config import ConfigError
from procrl.core.redaction import redact_url
from procrl.core.text import reasoning_end
from procrl.evaluation.corpora import Solution
from procrl.evaluation.score import score_batch
from procrl.evaluation.validate.metrics import map_label

__all__ = ["Scored", "score_solutions"]


@dataclass
class Scored:
    """One solution as procrl scored it."""

    solution: Solution
    rewards: dict[str, float | None]
    total: float | None
    procrl_spans: list[tuple[int, int]]
    reasoning_end: int
    diagnostics: dict[str, Any]
    fallbacks: dict[str, Any]
    procrl_label: int | None = None  # the data's label on procrl's steps

    @property
    def klass(self) -> str:
        return self.solution.klass


def _chunks(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _load_failures(mix, outputs_failures: dict[str, dict[str, int]], n: int) -> None:
    """A component with a model or a judge endpoint that failed on the first solution did not
    load or cannot reach its judge: measuring it would report its fallback. One clear error
    instead (a model-free component's failures are counted and reported, as in training)."""

    for name, kinds in outputs_failures.items():
        component = mix.components[name]
        what, where = component.needs_model(), component.needs_network()
        if what is None and where is None:
            continue
        total_failed = sum(kinds.get(k, 0) for k in ("exception", "judge_error", "connection_error", "http_error"))
        if n and total_failed >= n:
            cause = f"failed to load or run {what}" if what else f"every request to {redact_url(where)} failed"
            raise ConfigError(
                f"rewards.{name}: {cause} ({', '.join(f'{k} {v}' for k, v in kinds.items() if v)}); "
                f"fix it, or leave it out with --component / --set rewards.{name}=false"
            )


def _reasoning_end(solution: Solution) -> int:
    """Where the solution's reasoning ends, its answer block read under its answer kind."""

    if not solution.answer_kind or solution.answer_kind == "number":
        return reasoning_end(solution.completion)

    spec = answer_spec(solution.answer_kind, list(solution.choices or []) or None, solution.gold)
    start = answer_block_start(solution.completion, spec)
    return len(solution.completion[: len(solution.completion) if start is None else start].rstrip())


def score_solutions(
    mix, solutions: list[Solution], batch_size: int = 64, progress: bool = False
) -> tuple[list[Scored], dict[str, dict[str, int]]]:
    """Every solution through :func:`procrl.evaluation.score.score_batch` (``procrl score``'s code); the
    scored solutions and each component's failure counts."""
    scored: list[Scored] = []
    counts: dict[str, dict[str, int]] = {name: {} for name in mix.names}
    first = True
    with tqdm(total=len(solutions), desc="validating", unit="solution", disable=not progress, file=sys.stderr) as bar:
        # the first solution alone: a component that cannot load is found after one attempt (a
        # failing batch would be retried row by row, each retry loading again)
        for chunk in [solutions[:1], *_chunks(solutions[1:], batch_size)]:
            if not chunk:
                continue
            rows = [
                {
                    "question": s.question,
                    "completion": s.completion,
                    "answer": s.reference,
                    **(
                        {"answer_kind": s.answer_kind, "choices": list(s.choices) if s.choices else None}
                        if s.answer_kind
                        else {}
                    ),
                }
                for s in chunk
            ]
            out, _, failures = score_batch(mix, [s.record for s in chunk], rows)
            if first:
                _load_failures(mix, failures, len(chunk))
                first = False
            for name, kinds in failures.items():
                for kind, count in kinds.items():
                    counts[name][kind] = counts[name].get(kind, 0) + count
            for solution, row in zip(chunk, out):
                spans = [(step["start"], step["end"]) for step in row["steps"]]
                item = Scored(
                    solution,
                    dict(row["rewards"]),
                    row["reward"],
                    spans,
                    _reasoning_end(solution),
                    row.get("diagnostics") or {},
                    row.get("fallbacks") or {},
                )
                if solution.data_spans is None:  # procrl format: the label is on procrl's steps already
                    label = solution.label
                    item.procrl_label = label if label is None or label < len(spans) else None
                else:
                    item.procrl_label = map_label(solution.label, solution.data_spans, spans)
                scored.append(item)
            bar.update(len(chunk))
    return scored, counts
