"""Labelled solutions for ``procrl validate``: readers of the public corpora's formats.

Every reader turns a record into :class:`Solution`: one text written as the model wrote it (the
data's steps joined with the separator its source used), the spans of the data's steps in it,
the first wrong step on the data's steps (-1: none; None: flawed, position unknown), the
labelled final-answer correctness and the gold answer when the data has them. The format is
detected from the first record's keys; every record must then be of that format:

============================  ====================================================================
format (detected by)          read as
============================  ====================================================================
``processbench``              ``problem, steps, label`` (0-based, -1 all correct),
(``steps`` + ``label``)       ``final_answer_correct``, optional ``answer`` (gold) and ``id``;
                              steps joined with a blank line (ProcessBench split on them)
``mr-gsm8k``                  ``question, model_output_steps`` ("Step k: ..." strings, joined with
(``model_output_steps``)      a newline), ``model_output_solution_correctness`` (correct/wrong),
                              ``model_output_solution_first_error_step`` (**1-based**; "N/A":
                              unknown), ``model_output_answer_correctness``, gold
                              ``ground_truth_answer`` (for the reversed questions whose answer
                              field is not a number, the number the last line of
                              ``ground_truth_solution`` states), ``uuid``, ``question_type``
``big-bench-mistake``         ``input, steps, mistake_index`` (0-based, null: none), ``answer``,
(``mistake_index``)           ``target``: answer correct when they are equal; steps joined as
                              PaLM 2 wrote them, ``Thought k: `` lines; a task whose input lists
                              ``Options:`` ``(A) ...`` (logical_deduction,
                              tracking_shuffled_objects) is a choice row with those options
``reasoneval-perturbation``   ``reference_steps`` (sound) and ``hypothesis_steps`` (one perturbation,
(``hypothesis_steps``)        ``error_type``, ``tags``): each distinct reference (``rid``) once as a
                              sound row, each record as a flawed row (steps joined with a newline);
                              first error: the changed step (random number / operation), the
                              earlier of two swapped steps, the repeated copy (repeat step), the
                              step after the removed one (none when the last was removed), step 0
                              (swap solutions: another problem's solution); answer right when
                              the copy still ends with the reference's final step, wrong for a
                              swapped solution of a problem with another answer, else unlabelled
``procrl``                    ``completion``, ``first_error`` (-1 sound, k the first wrong step of
(``completion``)              procrl's own segmentation, null flawed at an unknown step),
                              optional ``question``, ``answer`` (gold: a number, an option letter,
                              yes/no or a boolean), ``answer_kind`` (number, choice, yes_no),
                              ``choices`` (a choice row's options), ``answer_correct``, ``id``
============================  ====================================================================

A file is a JSON array or JSON lines (:func:`procrl.core.jsonl.iter_records`). A bad record is a
one-line :class:`~procrl.core.config.ConfigError` ``FILE:RECORD: ...`` (RECORD: the record's number,
from 1; its line too when that differs); a file without records is an error.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procrl.core.choices import ANSWER_KINDS, answer_spec, gold_answer, normalize_choices
from procrl.core.config import ConfigError
from procrl.core.jsonl import iter_records
from procrl.evaluation.validate.metrics import step_spans

__all__ = ["CLASSES", "CLASS_LABELS", "FORMATS", "Solution", "detect_format", "read_solutions"]

SOUND, RIGHT_FLAWED, WRONG, FLAWED_UNLABELLED = (
    "sound",
    "right_answer_flawed",
    "wrong_answer",
    "flawed_answer_unlabelled",
)
CLASSES = (SOUND, RIGHT_FLAWED, WRONG, FLAWED_UNLABELLED)
CLASS_LABELS = {
    SOUND: "sound",
    RIGHT_FLAWED: "right answer but flawed",
    WRONG: "wrong answer",
    FLAWED_UNLABELLED: "flawed, answer unlabelled",
}  # as reports name the classes


@dataclass(frozen=True)
class Solution:
    """One labelled solution. ``label``: the first wrong step on the data's steps (on procrl's
    own steps for the procrl format, where ``data_spans`` is None), -1 none, None unknown."""

    id: str
    record: int
    question: str | None
    completion: str
    data_spans: tuple[tuple[int, int], ...] | None
    label: int | None
    answer_correct: bool | None
    gold: str | None
    kind: str | None = None
    path: str = ""
    gold_solution: str | None = None  # the worked gold solution, when the data has one
    answer_kind: str | None = None  # number, choice, yes_no (None: read as a number)
    choices: tuple[dict, ...] | None = None  # the options of a choice row, {label, text}

    @property
    def reference(self) -> str | None:
        """The row's gold as scoring sees it (a GSM8K ``answer`` field): the gold solution ending
        with ``#### N`` when the data has one (the reference judge checks steps against its
        values; accuracy reads the answer after ``####``), else the gold answer."""
        if not self.gold_solution:
            return self.gold
        if "####" in self.gold_solution or self.gold is None:
            return self.gold_solution
        return f"{self.gold_solution.rstrip()}\n#### {self.gold}"

    @property
    def sound(self) -> bool:
        """No wrong step and no wrong answer (a label -1 with a wrong final answer is flawed)."""
        return self.label == -1 and self.answer_correct is not False

    @property
    def klass(self) -> str:
        if self.sound:
            return SOUND
        if self.answer_correct is True:
            return RIGHT_FLAWED
        if self.answer_correct is False:
            return WRONG
        return FLAWED_UNLABELLED


class _Record:
    """One record being read, for error messages naming where it is."""

    def __init__(self, path: str, number: int, line: int, value: Any):
        self.path, self.number, self.line, self.value = path, number, line, value

    def error(self, message: str) -> ConfigError:
        where = f"{self.number}" + (f" (line {self.line})" if self.line != self.number else "")
        return ConfigError(f"{self.path}:{where}: {message}")

    def get(self, key: str, default: Any = None) -> Any:
        return self.value.get(key, default)

    def require(self, key: str) -> Any:
        if key not in self.value:
            raise self.error(f"missing {key!r}")
        return self.value[key]

    def text(self, key: str, required: bool = True) -> str | None:
        value = self.require(key) if required else self.value.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str):
            raise self.error(f"{key!r} must be a string, got {type(value).__name__}")
        return value

    def steps(self, key: str) -> list[str]:
        steps = self.require(key)
        if not isinstance(steps, list) or not steps or not all(isinstance(s, str) for s in steps):
            raise self.error(f"{key!r} must be a non-empty list of strings")
        return steps

    def index(self, key: str, value: Any, count: int, allow_none: bool = False, base: int = 0) -> int | None:
        """A step index given ``base``-based (returned 0-based); -1 allowed for base 0."""
        if value is None and allow_none:
            return None
        low = -1 if base == 0 else base
        if isinstance(value, bool) or not isinstance(value, int) or not (low <= value < count + base):
            allowed = f"-1 or a step index below {count}" if base == 0 else f"a step number from 1 to {count}"
            raise self.error(f"{key!r} must be {allowed}{' or null' if allow_none else ''}, got {value!r}")
        return value - base

    def gold(self, key: str) -> str | None:
        value = self.value.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.error(f"{key!r} must be a string or a number, got {type(value).__name__}")
        return str(value)

    def flag(self, key: str, true: tuple = (True,), false: tuple = (False,)) -> bool | None:
        value = self.value.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            value = value.strip().lower()
        if value in true:
            return True
        if value in false:
            return False
        raise self.error(f"{key!r} must be one of {', '.join(map(repr, true + false))}, got {value!r}")

    def ident(self, key: str, fallback: str) -> str:
        value = self.value.get(key)
        if value is None:
            return fallback
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self.error(f"{key!r} must be a string or an integer, got {type(value).__name__}")
        return str(value)


def _solution(
    record: _Record,
    ident: str,
    question: str | None,
    steps: list[str],
    separator: str,
    label: int | None,
    answer_correct: bool | None,
    gold: str | None,
    kind: str | None = None,
    prefixes=None,
    gold_solution: str | None = None,
) -> Solution:
    text, spans = step_spans(steps, separator, prefixes)
    return Solution(
        ident,
        record.number,
        question,
        text,
        tuple(spans),
        label,
        answer_correct,
        gold,
        kind,
        record.path,
        gold_solution,
    )


# --- the formats -------------------------------------------------------------------------------


def _processbench(record: _Record) -> Iterator[Solution]:
    steps = record.steps("steps")
    label = record.index("label", record.require("label"), len(steps))
    yield _solution(
        record,
        record.ident("id", f"record-{record.number}"),
        record.text("problem"),
        steps,
        "\n\n",
        label,
        record.flag("final_answer_correct"),
        record.gold("answer"),
    )


_STATED = re.compile(r"(?:value of (?:the )?(?:unknown variable )?x is|answer is:?)\s*\$?\s*(-?[\d,]*\.?\d+)", re.I)
_NUMBER = re.compile(r"\s*-?\$?\s*[\d,]*\.?\d+\s*")


def _mr_gsm8k_gold(record: _Record) -> str | None:
    answer = record.gold("ground_truth_answer")
    if answer is not None and _NUMBER.fullmatch(answer):
        return answer.strip()
    solution = record.value.get("ground_truth_solution")
    if isinstance(solution, str) and solution.strip():
        stated = _STATED.search(solution.strip().splitlines()[-1])
        if stated:
            return stated.group(1)
    return None


def _mr_gsm8k_steps(record: _Record) -> list[str]:
    value = record.require("model_output_steps")
    if isinstance(value, str):  # some copies hold the list's Python repr
        try:
            value = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # the parser's stack: a deep repr
            raise record.error("'model_output_steps' must be a list of strings (or its repr)") from None
        record.value = {**record.value, "model_output_steps": value}
    return record.steps("model_output_steps")


def _mr_gsm8k(record: _Record) -> Iterator[Solution]:
    steps = _mr_gsm8k_steps(record)
    correct = record.flag("model_output_solution_correctness", ("correct",), ("wrong",))
    if correct is None:
        raise record.error("missing 'model_output_solution_correctness' (correct or wrong)")
    if correct:
        label: int | None = -1
    else:
        raw = record.require("model_output_solution_first_error_step")
        if isinstance(raw, str) and raw.strip().isdigit():
            raw = int(raw)
        label = (
            None
            if raw in ("N/A", None)
            else record.index("model_output_solution_first_error_step", raw, len(steps), base=1)
        )
    answer = record.flag("model_output_answer_correctness", ("correct",), ("wrong",))
    kind = record.value.get("question_type")
    solution = record.value.get("ground_truth_solution")
    yield _solution(
        record,
        record.ident("uuid", f"record-{record.number}"),
        record.text("question"),
        steps,
        "\n",
        label,
        answer,
        _mr_gsm8k_gold(record),
        kind if isinstance(kind, str) else None,
        gold_solution=solution if isinstance(solution, str) and solution.strip() else None,
    )


_OPTION_LINE = re.compile(r"^\(([A-Z])\)\s*(.+?)\s*$", re.MULTILINE)


def input_options(text: str) -> tuple[dict, ...] | None:
    """The options a BIG-Bench task lists after ``Options:`` (``(A) The truck is the newest.``),
    or None when it lists none (the tasks that are not multiple choice)."""
    head, marker, tail = text.rpartition("Options:")
    if not marker:
        return None
    options = tuple({"label": m.group(1), "text": m.group(2)} for m in _OPTION_LINE.finditer(tail))
    return options or None


def _big_bench_mistake(record: _Record) -> Iterator[Solution]:
    steps = record.steps("steps")
    label = record.index("mistake_index", record.require("mistake_index"), len(steps), allow_none=True)
    answer, target = record.gold("answer"), record.gold("target")
    correct = None if answer is None or target is None else answer.strip() == target.strip()
    question = record.text("input")
    options = input_options(question)  # logical_deduction, tracking_shuffled_objects: answers (A)..
    solution = _solution(
        record,
        record.ident("id", f"record-{record.number}"),
        question,
        steps,
        "\n",
        -1 if label is None else label,
        correct,
        target,
        prefixes=[f"Thought {i + 1}: " for i in range(len(steps))],
    )
    if options is not None:
        solution = dataclasses.replace(solution, answer_kind="choice", choices=options)
    yield solution


def _perturbation_label(
    record: _Record, kind: str, tags: Any, hypothesis: list[str], reference: list[str]
) -> int | None:
    if kind in ("random number", "random operation"):
        return record.index("tags", tags, len(hypothesis))
    if kind == "swap steps":
        if not (isinstance(tags, list) and len(tags) == 2):
            raise record.error(f"'tags' of a swap must be the two swapped steps, got {tags!r}")
        return min(record.index("tags", t, len(hypothesis)) for t in tags)
    if kind == "repeat step":  # tags: the last step before the repeated copy
        return record.index("tags", tags, len(hypothesis) - 1) + 1
    if kind == "remove step":  # tags: the removed step of the reference; the step after it lacks its premise
        removed = record.index("tags", tags, len(reference))
        return removed if removed < len(hypothesis) else None
    if kind == "swap solutions":
        return 0
    raise record.error(f"unknown 'error_type' {kind!r}")


def _reasoneval(record: _Record, seen: set) -> Iterator[Solution]:
    reference, hypothesis = record.steps("reference_steps"), record.steps("hypothesis_steps")
    question, gold = record.text("question"), record.gold("ground_truth_answer")
    kind = record.text("error_type")
    rid = record.ident("rid", f"record-{record.number}")
    worked = "\n".join(reference)  # the sound solution is the gold solution itself
    if rid not in seen:
        seen.add(rid)
        yield _solution(
            record, f"rid-{rid}", question, reference, "\n", -1, True, gold, "reference", gold_solution=worked
        )
    label = _perturbation_label(record, kind, record.require("tags"), hypothesis, reference)
    if kind == "swap solutions":
        other = record.value.get("other_answer")  # filled in by the reader: the swapped-in problem's gold
        correct = None if other is None or gold is None else other.strip() == gold.strip()
    else:
        correct = True if hypothesis[-1] == reference[-1] else None
    yield _solution(
        record,
        record.ident("id", f"record-{record.number}"),
        question,
        hypothesis,
        "\n",
        label,
        correct,
        gold,
        kind,
        gold_solution=worked,
    )


def _answer_kind(record: _Record) -> tuple[str | None, tuple[dict, ...] | None, str | None]:
    """A procrl row's ``answer_kind``, ``choices`` and gold (a yes/no gold may be a boolean)."""

    kind, raw = record.get("answer_kind"), record.get("choices")
    if kind is not None and kind not in ANSWER_KINDS:
        raise record.error(f"'answer_kind' must be one of {', '.join(ANSWER_KINDS)}, got {kind!r}")
    options = normalize_choices(raw) if raw is not None else None
    if raw is not None and not options:
        raise record.error("'choices' must be a list of {label, text}, {label: [...], text: [...]} or a list of texts")
    if kind == "choice" and not options:
        raise record.error("'answer_kind' choice needs the row's 'choices'")
    answer = record.get("answer")
    gold = ("yes" if answer else "no") if isinstance(answer, bool) else record.gold("answer")
    spec = answer_spec(kind, raw, gold)
    if spec.kind != "number" and gold is not None and gold_answer(gold, spec) is None:
        raise record.error(
            f"'answer' {gold[:40]!r} is not {'one of its choices' if spec.kind == 'choice' else 'yes or no'}"
        )
    choices = tuple({"label": o.label, "text": o.text} for o in options) if options else None
    return (spec.kind if spec.kind != "number" or kind else None), choices, gold


def _procrl(record: _Record) -> Iterator[Solution]:
    completion = record.text("completion")
    first_error = record.require("first_error")
    if first_error is not None and (
        isinstance(first_error, bool) or not isinstance(first_error, int) or first_error < -1
    ):
        raise record.error(
            f"'first_error' must be -1 (sound), a step index of procrl's segmentation, or null, got {first_error!r}"
        )
    kind, choices, gold = _answer_kind(record)
    yield Solution(
        record.ident("id", f"record-{record.number}"),
        record.number,
        record.text("question", required=False),
        completion,
        None,
        first_error,
        record.flag("answer_correct"),
        gold,
        path=record.path,
        answer_kind=kind,
        choices=choices,
    )


FORMATS: dict[str, tuple[Callable[[dict], bool], str]] = {
    "mr-gsm8k": (lambda keys: "model_output_steps" in keys, "model_output_steps"),
    "reasoneval-perturbation": (lambda keys: "hypothesis_steps" in keys, "reference_steps + hypothesis_steps"),
    "big-bench-mistake": (lambda keys: "mistake_index" in keys, "input + steps + mistake_index"),
    "processbench": (lambda keys: "steps" in keys and "label" in keys, "problem + steps + label"),
    "procrl": (lambda keys: "completion" in keys, "completion + first_error"),
}


def detect_format(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    return next((name for name, (test, _) in FORMATS.items() if test(record)), None)


def _records(path: str) -> Iterator[_Record]:
    for number, (line, value) in enumerate(iter_records(path, "--data"), 1):
        yield _Record(path, number, line, value)


def read_solutions(paths: str | Path | list, limit: int | None = None) -> tuple[str, list[Solution]]:
    """``(format, solutions)`` of one file or several of the same format (e.g. MR-GSM8K's six
    grading files; a solution two files share, by id, is kept once), every record checked
    (``limit``: keep the first N solutions, still checking every record)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    fmt = None
    solutions: list[Solution] = []
    for path in paths:
        this, more = _read_file(path)
        if fmt is not None and this != fmt:
            raise ConfigError(f"{path}: a {this} file, but {paths[0]} is {fmt}; give files of one format")
        fmt = this
        solutions += more
    if fmt in ("mr-gsm8k", "processbench", "procrl"):
        _check_unique_ids(solutions)
    return fmt, solutions[:limit] if limit is not None else solutions


def _read_file(path: str | Path) -> tuple[str, list[Solution]]:
    name = str(path)
    records = list(_records(name))
    if not records:
        raise ConfigError(f"{name}: holds no records (expected a JSON array or JSON lines of labelled solutions)")
    fmt = detect_format(records[0].value)
    if fmt is None:
        keys = (
            ", ".join(sorted(records[0].value)[:12])
            if isinstance(records[0].value, dict)
            else type(records[0].value).__name__
        )
        known = "; ".join(f"{n} ({k})" for n, (_, k) in FORMATS.items())
        raise records[0].error(f"cannot tell the format from {keys}; known formats: {known}")
    solutions: list[Solution] = []
    seen: set = set()
    answers: dict[str, str] = {}
    if fmt == "reasoneval-perturbation":  # a swapped solution's answer: the gold of the problem it came from
        for record in records:
            if isinstance(record.value, dict) and isinstance(record.value.get("ground_truth_answer"), (str, int)):
                answers.setdefault(str(record.value.get("rid")), str(record.value["ground_truth_answer"]))
    for record in records:
        if not isinstance(record.value, dict):
            raise record.error(f"expected a JSON object, got {type(record.value).__name__}")
        if detect_format(record.value) != fmt:
            raise record.error(f"not a {fmt} record like the first one (keys: {', '.join(sorted(record.value)[:12])})")
        if fmt == "processbench":
            solutions += _processbench(record)
        elif fmt == "mr-gsm8k":
            solutions += _mr_gsm8k(record)
        elif fmt == "big-bench-mistake":
            solutions += _big_bench_mistake(record)
        elif fmt == "reasoneval-perturbation":
            if record.value.get("error_type") == "swap solutions":
                record.value = {**record.value, "other_answer": answers.get(str(record.value.get("tags")))}
            solutions += _reasoneval(record, seen)
        else:
            solutions += _procrl(record)
    return fmt, solutions


def _check_unique_ids(solutions: list[Solution]) -> None:
    """Rows are matched to peers' scores by id: one id, one solution (MR-GSM8K's grading files
    repeat a uuid across graders with the same solution: later copies are dropped)."""
    first: dict[str, Solution] = {}
    keep = []
    for solution in solutions:
        seen = first.get(solution.id)
        if seen is None:
            first[solution.id] = solution
            keep.append(solution)
        elif (seen.completion, seen.label) != (solution.completion, solution.label):
            raise ConfigError(
                f"{solution.path}:{solution.record}: id {solution.id!r} is also {seen.path}:{seen.record} "
                "with other steps or label"
            )
    solutions[:] = keep
