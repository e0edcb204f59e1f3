"""Question-answering datasets whose answers are not numbers, read in their own schemas.

=========================  =================================================  ============
dataset                    schema                                             answer kind
=========================  =================================================  ============
``tau/commonsense_qa``     ``question``, ``choices {label, text}``,           ``choice``
                           ``answerKey``
``allenai/openbookqa``     ``question_stem``, ``choices {text, label}``,      ``choice``
(``main``)                 ``answerKey``
``allenai/qasc``           ``question``, ``choices {text, label}``,           ``choice``
                           ``answerKey`` (``fact1``, ``fact2`` unused)
a StrategyQA copy          ``question``, ``answer`` (a boolean)               ``yes_no``
=========================  =================================================  ============

The same rows as local JSON lines read the same way. The answer kind (``data.answer_kind``) is
inferred from the schema when not given: a ``choices`` column (``data.choices_column``) makes a
choice dataset, a boolean answer column a yes/no one, the dataset ids above theirs; anything else
is a number. The default columns follow the schema: ``question_stem`` when there is no
``question``, ``answerKey`` when there is no ``answer``.

Every row becomes ``question`` (the question with its options listed as the chain-of-thought
papers list them, ``Answer Choices: (A) ... (B) ...``), ``answer`` (the option's letter; ``yes``
or ``no``), ``choices`` (a list of ``{label, text}``) and ``answer_kind``: the columns every reward
reads (:mod:`procrl.core.choices`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procrl.core.choices import AnswerSpec, format_options, gold_answer, normalize_choices
from procrl.core.config import ConfigError

__all__ = [
    "Columns",
    "EXAMPLE_SOLUTIONS",
    "KNOWN_KINDS",
    "declared_answer_kind",
    "known_kind",
    "normalize_row",
    "resolve_columns",
]

KNOWN_KINDS = {
    "tau/commonsense_qa": "choice",
    "commonsense_qa": "choice",
    "allenai/openbookqa": "choice",
    "openbookqa": "choice",
    "allenai/qasc": "choice",
    "qasc": "choice",
}


# Written solutions of each kind that is not a number (a dataset's gold is a letter or yes/no, not a
# worked solution): what `procrl check` scores the reward mix on.
_OPTIONS = [
    {"label": label, "text": text}
    for label, text in zip("ABCDE", ("ocean", "nightstand", "freezer", "volcano", "mailbox"))
]
EXAMPLE_SOLUTIONS = {
    "choice": [
        {
            "question": "Where would you put a book you want to read later tonight?\n"
            "Answer Choices: (A) ocean (B) nightstand (C) freezer (D) volcano (E) mailbox",
            "completion": "You read a book in bed before sleeping.\nSo the book should be within reach of the bed.\n"
            "A nightstand stands next to the bed.\nThe answer is (B).",
            "answer": "B",
            "answer_kind": "choice",
            "choices": _OPTIONS,
        },
        {
            "question": "What would you use to keep ice cream frozen?\n"
            "Answer Choices: (A) ocean (B) nightstand (C) freezer (D) volcano (E) mailbox",
            "completion": "Ice cream melts above freezing.\nA freezer keeps food below freezing.\n**C**",
            "answer": "C",
            "answer_kind": "choice",
            "choices": _OPTIONS,
        },
    ],
    "yes_no": [
        {
            "question": "Could a goldfish survive in a desert without water?",
            "completion": "Goldfish breathe with gills, which take oxygen from water.\nA desert has almost no water.\n"
            "So the answer is no.",
            "answer": "no",
            "answer_kind": "yes_no",
            "choices": None,
        },
        {
            "question": "Is the sun hotter than an ice cube?",
            "completion": "The sun's surface is thousands of degrees hot.\nAn ice cube is frozen water, below zero "
            "degrees.\nYes.",
            "answer": "yes",
            "answer_kind": "yes_no",
            "choices": None,
        },
    ],
}


def known_kind(dataset: str | None) -> str | None:
    """The answer kind of a dataset known by its Hub id (StrategyQA copies by their name)."""
    if not dataset:
        return None
    name = str(dataset).strip().rstrip("/").lower()
    if name in KNOWN_KINDS:
        return KNOWN_KINDS[name]
    tail = name.rsplit("/", 1)[-1].replace("_", "").replace("-", "")
    return "yes_no" if tail.startswith("strategyqa") and "/" in name and not Path(dataset).exists() else None


@dataclass(frozen=True)
class Columns:
    """Which columns hold the question, the gold answer and the options, and the answer kind."""

    question: str
    answer: str
    choices: str | None
    kind: str


def _is_yes_no(value: Any) -> bool:
    return isinstance(value, bool) or (
        isinstance(value, str) and value.strip().lower() in ("yes", "no", "true", "false")
    )


def resolve_columns(data, column_names: list[str], first_answer: Any = None) -> Columns:
    """The columns of a dataset with ``column_names`` under the recipe's ``data`` section
    (``first_answer``: the first row's gold; a boolean or yes/no makes a yes/no dataset)."""
    question = data.question_column
    if question not in column_names and question == "question" and "question_stem" in column_names:
        question = "question_stem"  # OpenBookQA
    answer = data.answer_column
    if answer not in column_names and answer == "answer" and "answerKey" in column_names:
        answer = "answerKey"  # CommonsenseQA, OpenBookQA, QASC
    choices = data.choices_column if data.choices_column in column_names else None
    kind = data.answer_kind
    if kind is None:
        if choices is not None:
            kind = "choice"
        elif _is_yes_no(first_answer):
            kind = "yes_no"
        else:
            kind = known_kind(data.dataset) or "number"
    if kind == "choice" and choices is None:
        raise ConfigError(
            f"data.choices_column: answer_kind is 'choice' but {data.dataset!r} has no column "
            f"{data.choices_column!r} (columns: {', '.join(column_names)})"
        )
    return Columns(question, answer, choices if kind == "choice" else None, kind)


def normalize_row(row: dict, columns: Columns, where: str) -> dict[str, Any]:
    """One row as the trainers and rewards read it (see the module docstring); a one-line
    ConfigError naming ``where`` for a row whose options or gold cannot be read."""
    question = row[columns.question]
    if columns.kind == "number":
        return {"question": question, "answer": row[columns.answer], "answer_kind": "number"}
    gold = row[columns.answer]
    if columns.kind == "yes_no":
        value = gold_answer(gold, AnswerSpec("yes_no"))
        if value is None:
            raise ConfigError(
                f"{where}: {columns.answer!r} must be a boolean or yes / no / true / false for a "
                f"yes/no dataset, got {str(gold)[:40]!r} (data.answer_kind)"
            )
        return {"question": question, "answer": "yes" if value else "no", "answer_kind": "yes_no"}
    options = normalize_choices(row.get(columns.choices))
    if not options:
        raise ConfigError(
            f"{where}: {columns.choices!r} must be the options: a list of {{label, text}}, "
            f"{{label: [...], text: [...]}} or a list of texts (data.choices_column)"
        )
    spec = AnswerSpec("choice", options)
    label = gold_answer(gold, spec)
    if label is None:
        raise ConfigError(
            f"{where}: gold {str(gold)[:40]!r} is not one of the options "
            f"({', '.join(o.label for o in options)}; data.answer_column)"
        )
    return {
        "question": f"{question.strip()}\n{format_options(options)}",
        "answer": label,
        "choices": [{"label": o.label, "text": o.text} for o in options],
        "answer_kind": "choice",
    }


def declared_answer_kind(data) -> str | None:
    """The answer kind of the recipe's training data known without loading it: ``answer_kind``,
    a known dataset id, or a local JSON-lines file's first row (options, a boolean or yes/no gold);
    None when only loading the data will tell."""
    if data.answer_kind is not None:
        return data.answer_kind
    kind = known_kind(data.dataset)
    if kind is not None:
        return kind
    from procrl.core.paths import is_local_data_file

    if not is_local_data_file(data.dataset) or not Path(data.dataset).is_file():
        return None
    try:
        from procrl.core.jsonl import iter_records

        first = next((record for _, record in iter_records(data.dataset, "data.dataset")), None)
    except (ConfigError, OSError):
        return None  # loading says what is wrong with the file
    if not isinstance(first, dict):
        return None
    names = list(first)
    answer = data.answer_column if data.answer_column in first else "answerKey"
    return resolve_columns(data, names, first.get(answer)).kind
