"""Datasets and prompt formatting.

``load_examples`` returns raw rows ``{question, answer}`` from the Hub (``load_dataset``), a local
JSON/JSONL file, a local directory (a dataset written by ``datasets``' ``save_to_disk``, or a
folder of data files such as a clone of a Hub dataset), or the embedded generator;
``build_prompt_dataset`` turns them into the ``prompt`` / ``question`` / ``answer`` columns TRL
trains on (the gold answer reaches every reward as the ``answer`` column). Every row is checked
(a non-empty text question, a text or numeric answer) wherever it comes from, with a one-line
error naming the row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError, suggest
from procrl.core.paths import is_local_data_file
from procrl.data.prompts import DEFAULT_PROMPT_TEMPLATE, format_prompt, uses_chat_template

__all__ = [
    "DEFAULT_PROMPT_TEMPLATE",
    "build_eval_dataset",
    "build_prompt_dataset",
    "check_data_file",
    "check_rows",
    "format_prompt",
    "has_no_splits",
    "load_examples",
    "synthetic_rows",
    "uses_chat_template",
]

SYNTHETIC = "synthetic"


DATA_FILE_SUFFIXES = (".parquet", ".arrow", ".json", ".jsonl", ".csv", ".tsv")


def _saved_kind(directory: Path) -> str | None:
    """'dict' for a DatasetDict written by ``save_to_disk``, 'dataset' for a Dataset, else None."""
    if (directory / "dataset_dict.json").is_file():
        return "dict"
    if (directory / "state.json").is_file() and (directory / "dataset_info.json").is_file():
        return "dataset"
    return None


def has_no_splits(dataset: str) -> bool:
    """A local file, or a single Dataset saved with ``save_to_disk``: ``split`` selects nothing."""
    return dataset != SYNTHETIC and (
        is_local_data_file(dataset) or (Path(dataset).is_dir() and _saved_kind(Path(dataset)) == "dataset")
    )


def _load_directory(data, split: str):
    """A local directory: a dataset saved with ``save_to_disk`` (a DatasetDict gives ``split``),
    or a folder of data files read by ``load_dataset``; anything else is a one-line error."""
    import datasets

    directory = Path(data.dataset)
    kind = _saved_kind(directory)
    try:
        if kind is not None:
            loaded = datasets.load_from_disk(str(directory))
            if kind == "dataset":
                return loaded
            if split not in loaded:
                raise ConfigError(
                    f"data.split: {split!r} is not a split of {directory} (splits: "
                    f"{', '.join(map(repr, loaded))}){suggest(split, list(loaded))}"
                )
            return loaded[split]
        if not any(p.suffix.lower() in DATA_FILE_SUFFIXES for p in _files_below(directory, depth=3)):
            raise ConfigError(
                f"data.dataset: {directory} is a directory but not a dataset: no dataset_dict.json or state.json "
                f"(datasets' save_to_disk) and no data files ({', '.join(DATA_FILE_SUFFIXES)}); give a .jsonl file, "
                "a Hub dataset id, or such a directory"
            )
        try:
            return datasets.load_dataset(str(directory), data.config, split=split)
        except ValueError as error:  # a plain folder of files has no configuration 'main' (the default, GSM8K's)
            if data.config != "main" or "BuilderConfig" not in str(error):
                raise
            return datasets.load_dataset(str(directory), split=split)
    except ConfigError:
        raise
    except Exception as error:  # datasets' own errors: a missing config or split, unreadable files
        message = " ".join(str(error).split())[:300]
        raise ConfigError(
            f"data.dataset: cannot load the directory {directory} ({type(error).__name__}: {message})"
        ) from None


def _files_below(directory: Path, depth: int):
    """Files under ``directory`` at most ``depth`` levels down (not following the whole tree)."""
    level = [directory]
    for _ in range(depth):
        following = []
        for folder in level:
            try:
                for entry in folder.iterdir():
                    if entry.is_file():
                        yield entry
                    elif entry.is_dir() and not entry.name.startswith("."):
                        following.append(entry)
            except OSError:
                continue
        level = following


def check_rows(
    dataset,
    source: str,
    question_column: str = "question",
    answer_column: str = "answer",
    boolean_answers: bool = False,
) -> None:
    """Every row of a loaded dataset has a non-empty text question and a text or numeric answer
    (what :func:`check_data_file` checks for a local file), else a one-line ConfigError naming
    the row (numbered from 1)."""

    def rows():
        for batch in dataset.select_columns(list(dict.fromkeys([question_column, answer_column]))).iter(
            batch_size=10_000
        ):
            yield from zip(batch[question_column], batch[answer_column])

    for index, (question, answer) in enumerate(rows(), 1):
        if not isinstance(question, str) or not question.strip():
            got = f"{type(question).__name__} {question!r}"[:60]
            raise ConfigError(
                f"data.dataset: {source} row {index}: {question_column!r} must be a non-empty string "
                f"({got}; data.question_column)"
            )
        if (isinstance(answer, bool) and not boolean_answers) or not isinstance(answer, (str, int, float)):
            raise ConfigError(
                f"data.dataset: {source} row {index}: {answer_column!r} must be a string or a number "
                f"({type(answer).__name__}; data.answer_column)"
            )
    if len(dataset) == 0:
        raise ConfigError(f"data.dataset: {source} holds no rows")


def synthetic_rows(data, split: str) -> list[dict[str, Any]]:
    """The embedded problems of ``split`` as plain rows (no ``datasets`` import)."""
    from procrl.data.synthetic import HELD_OUT_SPLITS, generate_split

    settings = data.synthetic
    if split != "train" and split not in HELD_OUT_SPLITS:
        raise ConfigError(
            f"data.split: the synthetic dataset has the splits 'train', 'test' and 'validation', "
            f"got {split!r}{suggest(split, ('train', *HELD_OUT_SPLITS))}"
        )
    # held-out splits: their own seed stream, minus every training question (procrl/data/synthetic.py)
    size = settings.num_examples if split == "train" else settings.held_out_examples
    return generate_split(split, size, settings.seed, train_examples=settings.num_examples)


def load_examples(data, split: str | None = None):
    """A ``datasets.Dataset`` with ``question`` and ``answer`` columns; a choice or yes/no dataset
    also ``answer_kind`` (and ``choices``): :mod:`procrl.data.qa`."""
    import datasets

    from procrl.data.qa import resolve_columns

    split = split or data.split
    if data.dataset == SYNTHETIC:
        dataset = datasets.Dataset.from_list(synthetic_rows(data, split))
    elif is_local_data_file(data.dataset):
        if not Path(data.dataset).is_file():
            raise ConfigError(f"data.dataset: file not found: {data.dataset}")
        dataset = None
    elif Path(data.dataset).is_dir():
        dataset = _load_directory(data, split)
    else:
        dataset = _load_hub(data, split)
    if dataset is None:  # a local file: its columns from the first row, every row checked before datasets reads it
        columns = _file_columns(data)
        check_data_file(data.dataset, columns.question, columns.answer, boolean_answers=columns.kind == "yes_no")
        dataset = datasets.load_dataset("json", data_files=data.dataset, split="train")
    else:
        first = dataset[0][data.answer_column] if len(dataset) and data.answer_column in dataset.column_names else None
        columns = resolve_columns(data, dataset.column_names, first)
    for column in (columns.question, columns.answer):
        if column not in dataset.column_names:
            raise ConfigError(
                f"data: column {column!r} not in dataset {data.dataset!r}; columns: {', '.join(dataset.column_names)}"
            )
    question_type = getattr(dataset.features[columns.question], "dtype", None)
    if question_type not in ("string", "large_string"):
        raise ConfigError(
            f"data.question_column: column {columns.question!r} of {data.dataset!r} holds {question_type}, not text"
        )
    if data.dataset != SYNTHETIC and not is_local_data_file(data.dataset):  # a local file was checked line by line
        check_rows(dataset, data.dataset, columns.question, columns.answer, boolean_answers=columns.kind == "yes_no")
    if data.max_samples is not None:
        dataset = dataset.select(range(min(data.max_samples, len(dataset))))
    return _normalized(dataset, columns, data.dataset)


def _load_hub(data, split: str):
    """A Hub dataset; the default configuration 'main' (GSM8K's) falls back to the dataset's only
    one when it has no 'main' (tau/commonsense_qa, allenai/qasc), as for a local folder."""
    import datasets

    try:
        return datasets.load_dataset(data.dataset, data.config, split=split)
    except ValueError as error:
        if data.config != "main" or "BuilderConfig" not in str(error):
            raise
        return datasets.load_dataset(data.dataset, split=split)


def _file_columns(data):
    """The columns of a local data file, from its first row."""
    from procrl.core.jsonl import iter_records
    from procrl.data.qa import resolve_columns

    try:
        first = next((row for _, row in iter_records(data.dataset, "data.dataset")), None)
    except ConfigError:
        first = None  # check_data_file names the problem
    names = list(first) if isinstance(first, dict) else []
    columns = resolve_columns(
        data,
        names,
        first.get(data.answer_column if data.answer_column in names else "answerKey")
        if isinstance(first, dict)
        else None,
    )
    return columns


def _normalized(dataset, columns, source: str):
    """``question`` / ``answer`` / ``answer_kind`` (and ``choices``) under their own names."""
    from procrl.data.qa import normalize_row

    if columns.kind == "number":
        if columns.question != "question":
            dataset = dataset.rename_column(columns.question, "question")
        if columns.answer != "answer":
            if "answer" in dataset.column_names:
                dataset = dataset.remove_columns("answer")
            dataset = dataset.rename_column(columns.answer, "answer")
        return dataset  # no answer_kind column: a row without one is read as a number
    rows = [normalize_row(row, columns, f"data.dataset: {source} row {index}") for index, row in enumerate(dataset, 1)]
    import datasets

    return datasets.Dataset.from_list(rows)


_EXACT_IN_DATASETS = 2**53  # the largest integer up to which every one is exact as a float64 (datasets' number column)


def _check_encodable(where: str, column: str, text: str) -> None:
    """JSON's ``\\ud800`` escape gives a lone surrogate, which is no character: no tokenizer or
    file can take it (UTF-8 cannot encode it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ConfigError(
            f"{where}: {column!r} holds a lone surrogate ({text[error.start]!r} at character "
            f"{error.start + 1}), which is not text; remove it or give the character it was meant to be "
            "as a pair"
        ) from None


def check_data_file(
    path: str, question_column: str = "question", answer_column: str = "answer", boolean_answers: bool = False
) -> int:
    """Read a local JSON-lines / JSON-array data file once, before ``datasets`` does: every row
    an object with a non-empty text question and a text or numeric answer. A one-line
    ConfigError names the file and line (datasets would fail with a traceback, or a row with a
    missing question would fail later, in the middle of formatting prompts). Returns the rows."""
    from procrl.core.jsonl import iter_records

    count = 0
    try:
        for line, row in iter_records(path, "data.dataset"):
            where = f"{path}:{line}"
            if not isinstance(row, dict):
                raise ConfigError(f"{where}: expected a JSON object per row, got {type(row).__name__}")
            question = row.get(question_column)
            if not isinstance(question, str) or not question.strip():
                got = "no such field" if question_column not in row else f"{type(question).__name__} {question!r}"[:60]
                raise ConfigError(
                    f"{where}: {question_column!r} must be a non-empty string ({got}; data.question_column)"
                )
            _check_encodable(where, question_column, question)
            answer = row.get(answer_column)
            if isinstance(answer, str):
                _check_encodable(where, answer_column, answer)
            if (isinstance(answer, bool) and not boolean_answers) or not isinstance(answer, (str, int, float)):
                got = "no such field" if answer_column not in row else type(answer).__name__
                raise ConfigError(
                    f"{where}: {answer_column!r} must be a string or a number ({got}; data.answer_column)"
                )
            if isinstance(answer, int) and abs(answer) > _EXACT_IN_DATASETS:
                raise ConfigError(
                    f"{where}: {answer_column!r} is a JSON integer of {len(str(abs(answer)))} digits, past "
                    f"2**53: datasets stores numbers in 64 bits and would round it; give it as a string"
                )
            count += 1
    except ConfigError as error:
        message = str(error)
        raise ConfigError(message if message.startswith("data.") else f"data.dataset: {message}") from None
    if count == 0:
        raise ConfigError(f"data.dataset: {path} holds no rows")
    return count


def build_prompt_dataset(data, tokenizer: Any, split: str | None = None):
    """The prompt dataset of ``split`` (default ``data.split``), at most ``data.max_samples`` rows."""
    dataset = load_examples(data, split)
    chat = uses_chat_template(data, tokenizer)
    keep = {"question", "answer", "answer_kind", "choices"}
    dataset = dataset.remove_columns([c for c in dataset.column_names if c not in keep])
    return dataset.map(lambda row: {"prompt": format_prompt(data, row["question"], chat, row.get("answer_kind"))})


def build_eval_dataset(data, tokenizer: Any):
    """The held-out prompts evaluated during training: ``data.eval_split`` of ``data.eval_dataset``
    (default ``data.dataset``), the first ``data.eval_limit`` rows (``max_samples`` is for training)."""
    import dataclasses

    held_out = dataclasses.replace(data, dataset=data.eval_dataset or data.dataset, max_samples=data.eval_limit)
    return build_prompt_dataset(held_out, tokenizer, split=data.eval_split)
