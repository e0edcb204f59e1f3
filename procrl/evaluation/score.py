"""Score completions with a recipe's reward mix outside training (``procrl score``).

* Streaming: rows are read one at a time (JSON lines, or a JSON array parsed incrementally),
  scored ``batch_size`` at a time, written as soon as they are scored and summarised with
  running sums, so memory does not grow with the number of rows
  (benchmarks/score_memory_bench.py measures it).
* Nothing half-written: a first pass checks every row (one-line error naming ``file:line``)
  before anything is scored; the output is written to a temporary file next to it and renamed
  over it only when every row is in, so a crash, Ctrl-C, SIGTERM or a full disk leaves the
  previous output as it was (:class:`procrl.core.atomic.AtomicOutput`: through a symlink to the file
  it names; a device, a pipe or ``/dev/stdout`` is written straight, never renamed onto).
  ``--output`` equal to ``--input`` is refused.
* A failing row does not fail the file: when a component raises on a batch, the batch's rows
  are scored one by one for that component; the rows that still fail get the failure policy of
  training (the component's ``fallback``, the failure counted and written to the row's
  diagnostics) and are named by their line number on stderr; the other rows keep their scores.
  A component that returns the wrong number of scores for a batch fails the batch, as in
  training: every row of it gets the fallback, ``wrong_length`` is counted once per row, and
  stderr names the batch's lines.
* What a reward prints goes to stderr, so that ``--output /dev/stdout`` holds the rows alone.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from procrl.core.atomic import AtomicOutput, output_target
from procrl.core.config import ConfigError
from procrl.core.jsonl import iter_records
from procrl.core.paths import name_problem
from procrl.core.redaction import redact
from procrl.rewards.mix import RewardMix
from procrl.rewards.protocol import RewardBatch, RewardOutput

__all__ = ["AtomicOutput", "RunningSummary", "check_paths", "iter_rows", "score_file", "score_rows"]

_ROW_FAILURE_KINDS = ("exception", "wrong_length")


# --- reading ------------------------------------------------------------------------------------


def _check_row(row: Any, path: str, where: int) -> dict:
    if not isinstance(row, dict):
        raise ConfigError(f"{path}:{where}: expected a JSON object per row, got {type(row).__name__}")
    if "completion" not in row:
        raise ConfigError(f"{path}:{where}: row needs a 'completion' field")
    if not isinstance(row["completion"], str):
        raise ConfigError(f"{path}:{where}: 'completion' must be a string, got {type(row['completion']).__name__}")
    question = row.get("question")
    if question is not None and not isinstance(question, str):
        raise ConfigError(f"{path}:{where}: 'question' must be a string, got {type(question).__name__}")
    answer = row.get("answer")
    if answer is not None and not isinstance(answer, (str, int, float)):  # a bool: a yes/no gold
        raise ConfigError(
            f"{path}:{where}: 'answer' must be a string, a number or a boolean, got {type(answer).__name__}"
        )
    _check_answer_kind(row, path, where)
    return row


def _check_answer_kind(row: dict, path: str, where: int) -> None:
    """A row's ``answer_kind`` and ``choices`` (options: a list of ``{label, text}`` or the Hub's
    ``{label: [...], text: [...]}``) are readable, and its gold is one of its options or yes/no."""
    from procrl.core.choices import ANSWER_KINDS, answer_spec, gold_answer, normalize_choices

    kind = row.get("answer_kind")
    if kind is not None and kind not in ANSWER_KINDS:
        raise ConfigError(f"{path}:{where}: 'answer_kind' must be one of {', '.join(ANSWER_KINDS)}, got {kind!r}")
    if row.get("choices") is not None and not normalize_choices(row["choices"]):
        raise ConfigError(
            f"{path}:{where}: 'choices' must be a list of {{label, text}}, {{label: [...], text: [...]}} "
            "or a list of option texts"
        )
    if kind == "choice" and row.get("choices") is None:
        raise ConfigError(f"{path}:{where}: 'answer_kind' choice needs the row's 'choices'")
    spec = answer_spec(kind, row.get("choices"), row.get("answer"))
    if spec.kind != "number" and row.get("answer") is not None and gold_answer(row["answer"], spec) is None:
        what = (
            "one of its choices (a letter or an option's text)" if spec.kind == "choice" else "yes, no, true or false"
        )
        raise ConfigError(f"{path}:{where}: 'answer' must be {what}, got {str(row['answer'])[:40]!r}")


def iter_rows(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """``(line, row)`` of every row of a JSON-lines file or a JSON array, streamed
    (:func:`procrl.core.jsonl.iter_records`); a one-line ConfigError naming ``file:line`` for anything
    that is not a row of text to score."""
    for line, value in iter_records(path, "--input"):
        yield line, _check_row(value, str(path), line)


def count_rows(path: str | os.PathLike) -> int:
    """Check every row (the first pass) and count them; the file holding no row is an error."""
    count = sum(1 for _ in iter_rows(path))
    if count == 0:
        raise ConfigError(f"--input: {path} holds no rows")
    return count


# --- writing ------------------------------------------------------------------------------------


def _same_file(a: Path, b: Path) -> bool:
    try:
        return b.exists() and os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def check_paths(input_path: str, output_path: str) -> None:
    """Refuse an output that would destroy the input or cannot be a file (before any work)."""
    problem = name_problem(output_path)
    if problem:
        raise ConfigError(f"--output: {output_path}: {problem}")
    source, target = Path(input_path), Path(output_path)
    if source.is_file() and _same_file(source, target):  # a terminal can be both stdin and stdout
        raise ConfigError(f"--output: {output_path} is the input file; write the scores to another file")
    if target.is_dir():
        raise ConfigError(f"--output: {output_path} is a directory; give a file path")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"--output: {parent} is a file, so {output_path} cannot be created")
            break
    output_target(output_path, "--output")  # a socket, a block device: refused (procrl/core/atomic.py)


# --- scoring ------------------------------------------------------------------------------------


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


def _batch(rows: list[dict]) -> RewardBatch:
    columns = {key: [r.get(key) for r in rows] for key in ("answer_kind", "choices") if any(key in r for r in rows)}
    return RewardBatch.from_texts(
        [r.get("completion") for r in rows],
        questions=[r.get("question") for r in rows],
        golds=[r.get("answer") for r in rows],
        **columns,
    )


def _refuse_number_judges(mix: RewardMix, batch: RewardBatch, lines: list[int]) -> None:
    """A judge that checks numbers has nothing to check in a choice or yes/no row: one line."""
    from procrl.rewards.spec import check_answer_kind

    for line, spec in zip(lines, batch.answer_specs):
        if spec.kind != "number":
            check_answer_kind(spec.kind, list(mix.specs.values()), f"row {line}")


def _concat(parts: list[RewardOutput]) -> RewardOutput:
    """Per-row outputs joined into one batch output (batch metrics are dropped)."""
    scores, steps, details, failures = [], [], [], {}
    for part in parts:
        scores += part.scores
        steps += part.step_scores if part.step_scores is not None else [None] * len(part.scores)
        details += part.details if part.details is not None else [{} for _ in part.scores]
        for kind, count in part.failures.items():
            failures[kind] = failures.get(kind, 0) + count
    return RewardOutput(scores=scores, step_scores=steps, details=details, failures=failures)


@dataclass
class RowProblem:
    """A row (or, ``batch``, the rows ``first-last`` of a batch) a component failed on (it got
    the component's fallback)."""

    line: int | str
    component: str
    error: str
    batch: bool = False

    def describe(self, path: str) -> str:
        if self.batch:
            return f"{path}:{self.line}: {self.component} {self.error}"
        return f"{path}:{self.line}: {self.component} failed ({self.error}); scored with its fallback"


def _segment_one(completion: str):
    from procrl.core.text import Segmentation, segment_batch

    try:
        return segment_batch([completion])[0], None
    except Exception as error:  # noqa: BLE001 - a row that cannot be segmented is scored without steps
        return Segmentation(completion, 0, (), (), ()), f"{type(error).__name__}: {error}"


def score_batch(
    mix: RewardMix, lines: list[int], rows: list[dict]
) -> tuple[list[dict], list[RowProblem], dict[str, dict[str, int]]]:
    """Score one batch: the output rows, the rows a component failed on, failure counts per component."""
    batch = _batch(rows)
    _refuse_number_judges(mix, batch, lines)
    problems: list[RowProblem] = []
    try:
        segmentations = batch.segmentations
    except Exception:  # noqa: BLE001 - find the row(s): segment them one by one
        pairs = [_segment_one(row["completion"]) for row in rows]
        segmentations = [segmentation for segmentation, _ in pairs]
        batch.__dict__["segmentations"] = segmentations
        problems += [RowProblem(line, "segmentation", error) for line, (_, error) in zip(lines, pairs) if error]
    outputs = mix.score_all(batch)
    for name, output in list(outputs.items()):
        if output.failures.get("wrong_length"):
            # a count that does not match the batch belongs to no row: every row gets the fallback,
            # counted per row, as training counts it (rescored alone, a row would hide it)
            span = f"{lines[0]}-{lines[-1]}" if len(lines) > 1 else f"{lines[0]}"
            problems.append(
                RowProblem(
                    span,
                    name,
                    f"returned the wrong number of scores for this batch of {len(rows)} "
                    "rows (wrong_length); each row scored with its fallback",
                    batch=True,
                )
            )
            continue
        if not any(output.failures.get(kind) for kind in _ROW_FAILURE_KINDS):
            continue
        if len(rows) == 1:
            single = [output]
        else:  # which rows? score them one at a time for this component
            single = []
            for row, segmentation in zip(rows, segmentations):
                one = _batch([row])
                one.__dict__["segmentations"] = [segmentation]
                single.append(mix.compute(name, one))
            outputs[name] = _concat(single)
        for line, part in zip(lines, single):
            kinds = [kind for kind in _ROW_FAILURE_KINDS if part.failures.get(kind)]
            if kinds:
                error = ((part.details or [{}])[0] or {}).get("error") or ", ".join(kinds)
                problems.append(RowProblem(line, name, error))
    # the total the trainer would use, under the same fallback policy, each row its own group
    resolved, _ = mix.resolve(outputs, groups=list(range(len(rows))), batch_level=False)
    totals = mix.total(resolved)
    scored = []
    for i, row in enumerate(rows):
        steps = []
        for j, step in enumerate(segmentations[i].steps):
            scores = {}
            for name, output in outputs.items():
                step_scores = output.step_scores[i] if output.step_scores is not None else None
                if step_scores is not None and j < len(step_scores):
                    scores[name] = step_scores[j]
            steps.append({"text": step.text, "start": step.start, "end": step.end, "scores": scores})
        diagnostics = {name: out.details[i] for name, out in outputs.items() if out.details is not None}
        fallbacks = {
            name: {"fallback": mix.specs[name].fallback, "score": resolved[name].scores[i]}
            for name, out in outputs.items()
            if out.scores[i] is None
        }
        scored.append(
            _jsonable(
                {
                    **row,
                    "rewards": {name: out.scores[i] for name, out in outputs.items()},
                    "reward": totals[i],
                    "steps": steps,
                    "diagnostics": diagnostics,
                    **({"fallbacks": fallbacks} if fallbacks else {}),
                }
            )
        )
    failures = {name: {k: v for k, v in out.failures.items() if v} for name, out in outputs.items()}
    return scored, problems, failures


def _chunks(items: Iterable[tuple[int, dict]], size: int) -> Iterator[list[tuple[int, dict]]]:
    chunk: list[tuple[int, dict]] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def score_rows(mix: RewardMix, rows: Iterable[dict], batch_size: int = 64) -> Iterator[dict]:
    """Each row plus ``rewards``, ``reward``, ``steps``, ``diagnostics`` and, for components
    without an opinion on the row, ``fallbacks`` (rows as an iterable: nothing is held beyond
    one batch).

    ``rewards`` holds each component's own score (None: no opinion); ``reward`` is the total
    the trainer would use, under the same fallback policy, every row being its own generation
    group (and its own batch: rows are separate problems). So a numeric fallback is counted, and
    a ``group_mean`` fallback finds no other score in its group: the component is left out of
    that row's total (as TRL's nansum leaves it out of a group in which no sample has a score,
    the same for every member) and ``fallbacks`` says so."""
    for chunk in _chunks(enumerate(rows, 1), batch_size):
        scored, _, _ = score_batch(mix, [line for line, _ in chunk], [row for _, row in chunk])
        yield from scored


@dataclass
class _Stats:
    n: int = 0
    none: int = 0
    total: float = 0.0
    low: float = math.inf
    high: float = -math.inf

    def add(self, value: float | None) -> None:
        if value is None:
            self.none += 1
            return
        self.n += 1
        self.total += value
        self.low = min(self.low, value)
        self.high = max(self.high, value)


@dataclass
class RunningSummary:
    """Per component (and the weighted total): rows scored, no-opinion count, mean, min, max and
    failure counts, kept as running sums."""

    names: list[str]
    stats: dict[str, _Stats] = field(default_factory=dict)
    failures: dict[str, dict[str, int]] = field(default_factory=dict)
    rows: int = 0

    def __post_init__(self) -> None:
        self.stats = {name: _Stats() for name in [*self.names, "reward"]}

    def add(self, row: dict) -> None:
        self.rows += 1
        for name in self.names:
            self.stats[name].add(row["rewards"].get(name))
        self.stats["reward"].add(row["reward"])

    def add_failures(self, failures: dict[str, dict[str, int]]) -> None:
        for name, kinds in failures.items():
            for kind, count in kinds.items():
                bucket = self.failures.setdefault(name, {})
                bucket[kind] = bucket.get(kind, 0) + count

    def format(self) -> str:
        lines = [f"{'component':<28}{'n':>7}{'none':>7}{'mean':>10}{'min':>10}{'max':>10}"]
        for name, s in self.stats.items():
            if s.n:
                lines.append(f"{name:<28}{s.n:>7}{s.none:>7}{s.total / s.n:>10.4f}{s.low:>10.4f}{s.high:>10.4f}")
            else:
                lines.append(f"{name:<28}{0:>7}{s.none:>7}{'-':>10}{'-':>10}{'-':>10}")
        for name, kinds in self.failures.items():
            if kinds:
                lines.append(
                    f"failures of {name}: " + ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
                )
        return "\n".join(lines)


def score_file(
    mix: RewardMix,
    input_path: str,
    output_path: str,
    batch_size: int = 64,
    progress: bool = True,
    report=None,
    max_reported: int = 20,
) -> RunningSummary:
    """Check, score and write ``input_path`` to ``output_path`` (streamed, atomic).
    ``report(line)`` receives one line per row a component failed on (at most ``max_reported``)."""
    from tqdm.auto import tqdm

    check_paths(input_path, output_path)
    total = count_rows(input_path)
    summary = RunningSummary(mix.names)
    output = AtomicOutput(output_path)
    reported = 0
    try:
        # what a reward prints goes to stderr: stdout may be the output (--output /dev/stdout)
        with (
            contextlib.redirect_stdout(sys.stderr),
            tqdm(total=total, desc="scoring", unit="row", disable=not progress) as bar,
        ):
            for chunk in _chunks(iter_rows(input_path), batch_size):
                lines = [line for line, _ in chunk]
                scored, problems, failures = score_batch(mix, lines, [row for _, row in chunk])
                for row in scored:
                    # the rows are an output path like any other: a reward's error text may quote a
                    # secret of the recipe or of the row (procrl/core/redaction.py)
                    output.write(json.dumps(redact(row)) + "\n")
                    summary.add(row)
                summary.add_failures(failures)
                for problem in problems:
                    reported += 1
                    if report is not None and reported <= max_reported:
                        report(problem.describe(input_path))
                bar.update(len(chunk))
        if report is not None and reported > max_reported:
            report(f"... {reported - max_reported} more failed rows (see each row's diagnostics)")
        output.commit()
    except KeyboardInterrupt as error:  # Ctrl-C, SIGTERM (procrl/core/interrupts.py)
        from procrl.core.interrupts import interrupted

        output.abort()
        raise interrupted(error, output.kept()) from None
    except BaseException:
        output.abort()
        raise
    return summary
