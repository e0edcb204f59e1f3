"""Score completions with a recipe's reward mix outside training (``procrl score``, ``check``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Iterator

from procrl.config import ConfigError
from procrl.rewards.base import RewardBatch, RewardMix, RewardOutput

__all__ = ["read_rows", "score_rows", "summarize"]


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file (or a JSON list)."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"--input: file not found: {path}")
    text = file.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        rows = json.loads(text)
    else:
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise ConfigError(f"{path}:{number}: not valid JSON ({error.msg})") from None
    for number, row in enumerate(rows, 1):
        if not isinstance(row, dict) or "completion" not in row:
            raise ConfigError(f"{path}: row {number} needs a 'completion' field")
    return rows


def _jsonable(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if hasattr(value, "item"):
        return _jsonable(value.item())
    return str(value)


def _batches(rows: list[dict], size: int) -> Iterator[list[dict]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def score_rows(mix: RewardMix, rows: list[dict[str, Any]], batch_size: int = 64, progress: bool = True) -> Iterable[dict]:
    """Yield each input row plus ``rewards``, ``reward``, ``steps``, ``diagnostics`` and, for
    components without an opinion on the row, ``fallbacks``.

    ``rewards`` holds each component's own score (None: no opinion); ``reward`` is the total
    the trainer would use, under the same fallback policy, every row being its own generation
    group (and its own batch: rows are separate problems). So a numeric fallback is counted, and
    a ``group_mean`` fallback finds no other score in its group: the component is left out of
    that row's total (as TRL's nansum leaves it out of a group in which no sample has a score,
    the same for every member) and ``fallbacks`` says so."""
    from tqdm.auto import tqdm

    bar = tqdm(total=len(rows), desc="scoring", unit="row", disable=not progress)
    for chunk in _batches(rows, batch_size):
        batch = RewardBatch.from_texts(
            [r.get("completion") for r in chunk],
            questions=[r.get("question") for r in chunk],
            golds=[r.get("answer") for r in chunk],
        )
        outputs: dict[str, RewardOutput] = mix.score_all(batch)
        resolved, _ = mix.resolve(outputs, groups=list(range(len(chunk))), batch_level=False)
        totals = mix.total(resolved)
        for i, row in enumerate(chunk):
            segmentation = batch.segmentations[i]
            steps = []
            for j, step in enumerate(segmentation.steps):
                scores = {}
                for name, output in outputs.items():
                    if output.step_scores is not None and output.step_scores[i] is not None and j < len(output.step_scores[i]):
                        scores[name] = output.step_scores[i][j]
                steps.append({"text": step.text, "start": step.start, "end": step.end, "scores": scores})
            diagnostics = {name: out.details[i] for name, out in outputs.items() if out.details is not None}
            fallbacks = {
                name: {"fallback": mix.specs[name].fallback, "score": resolved[name].scores[i]}
                for name, out in outputs.items()
                if out.scores[i] is None
            }
            yield _jsonable(
                {
                    **row,
                    "rewards": {name: out.scores[i] for name, out in outputs.items()},
                    "reward": totals[i],
                    "steps": steps,
                    "diagnostics": diagnostics,
                    **({"fallbacks": fallbacks} if fallbacks else {}),
                }
            )
        bar.update(len(chunk))
    bar.close()


def summarize(scored: list[dict[str, Any]], names: list[str]) -> str:
    """A plain-text table: component, n scored, no-opinion count, mean, min, max."""
    lines = [f"{'component':<28}{'n':>7}{'none':>7}{'mean':>10}{'min':>10}{'max':>10}"]
    for name in names + ["reward"]:
        values = [row["rewards"].get(name) if name != "reward" else row["reward"] for row in scored]
        present = [v for v in values if v is not None]
        if present:
            mean = sum(present) / len(present)
            lines.append(f"{name:<28}{len(present):>7}{len(values) - len(present):>7}{mean:>10.4f}{min(present):>10.4f}{max(present):>10.4f}")
        else:
            lines.append(f"{name:<28}{0:>7}{len(values):>7}{'-':>10}{'-':>10}{'-':>10}")
    return "\n".join(lines)
