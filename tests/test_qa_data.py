"""Commonsense QA datasets in their own Hub schemas (CommonsenseQA, OpenBookQA, QASC, StrategyQA)
through the real ``load_dataset`` code: hand-written rows under tests/data/qa/, read as a folder
of JSON lines, as the Hub's parquet layout, and as one local JSONL file."""

import json
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.data import build_prompt_dataset, load_examples
from procrl.recipe import parse_recipe

QA = Path(__file__).parent / "data" / "qa"


def _recipe(dataset, rewards=None, **data):
    return parse_recipe(
        {
            "recipe": "procrl/v1",
            "model": {"name_or_path": "procrl:tiny-qwen2"},
            "data": {"dataset": str(dataset), **data},
            "rewards": rewards or {"accuracy": {}},
        }
    )


@pytest.mark.parametrize(
    "folder, question, gold, options",
    [
        ("commonsense_qa", "Where would you put a book you want to read later tonight?", "B", 5),
        ("openbookqa", "Plants need sunlight to", "A", 4),
        ("qasc", "What do plants use to make food?", "B", 8),
    ],
)
def test_choice_datasets_in_their_hub_schemas(folder, question, gold, options):
    rows = load_examples(_recipe(QA / folder).data)
    first = rows[0]
    assert first["answer_kind"] == "choice" and first["answer"] == gold
    assert len(first["choices"]) == options and first["choices"][0]["label"] == "A"
    assert first["question"].startswith(question + "\nAnswer Choices: (A) ")
    assert first["question"].count("(") == options


def test_the_prompt_lists_the_options_as_the_papers_do():
    prompt = build_prompt_dataset(_recipe(QA / "commonsense_qa").data, None)[0]["prompt"]
    assert prompt.startswith(
        "Where would you put a book you want to read later tonight?\n"
        "Answer Choices: (A) ocean (B) nightstand (C) freezer (D) volcano (E) mailbox\n\n"
    )
    assert "'The answer is (X)'" in prompt and "####" not in prompt
    own = build_prompt_dataset(_recipe(QA / "commonsense_qa", prompt_template="Q: {question}\nA:").data, None)[0]
    assert own["prompt"].endswith("(E) mailbox\nA:")  # a recipe's own template is kept


def test_strategyqa_boolean_answers_become_yes_no():
    rows = load_examples(_recipe(QA / "strategyqa").data)
    assert rows[0]["answer_kind"] == "yes_no"
    assert list(rows["answer"]) == ["no", "yes", "no", "yes"]
    prompt = build_prompt_dataset(_recipe(QA / "strategyqa").data, None)[0]["prompt"]
    assert "'The answer is yes' or 'The answer is no'" in prompt


def test_the_hub_parquet_layout(tmp_path):
    """What a Hub snapshot of tau/commonsense_qa holds: data/<split>-00000-of-00001.parquet."""
    import datasets

    folder = tmp_path / "commonsense_qa" / "data"
    folder.mkdir(parents=True)
    for split in ("train", "validation"):
        datasets.load_dataset(
            "json", data_files=str(QA / "commonsense_qa" / f"{split}.jsonl"), split="train"
        ).to_parquet(str(folder / f"{split}-00000-of-00001.parquet"))
    recipe = _recipe(folder.parent, split="validation")
    rows = load_examples(recipe.data)
    assert list(rows["answer"]) == ["B", "C", "A"] and rows[0]["choices"][1] == {"label": "B", "text": "water"}


def test_local_jsonl_of_the_same_rows():
    hub = load_examples(_recipe(QA / "commonsense_qa").data)
    local = load_examples(_recipe(QA / "csqa_rows.jsonl").data)
    assert local.to_list() == hub.to_list()
    sqa = load_examples(_recipe(QA / "strategyqa_rows.jsonl").data)
    assert list(sqa["answer"]) == ["no", "yes", "no", "yes"] and sqa[0]["answer_kind"] == "yes_no"


def test_bad_choice_rows_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"question": "q?", "choices": {"label": ["A", "B"], "text": ["x", "y"]}, "answerKey": "C"}) + "\n"
    )
    with pytest.raises(ConfigError, match=r"row 1: gold 'C' is not one of the options \(A, B"):
        load_examples(_recipe(bad).data)
    with pytest.raises(ConfigError, match="data.choices_column: answer_kind is 'choice' but"):
        load_examples(_recipe(QA / "strategyqa", answer_kind="choice").data)
    with pytest.raises(ConfigError, match="data.answer_kind: invalid value"):
        _recipe(QA / "strategyqa", answer_kind="letter")


@pytest.mark.parametrize("backend", ["arithmetic", "reference"])
def test_number_judges_are_refused_on_answers_that_are_not_numbers(backend):
    rewards = {"accuracy": {}, "judge": {"type": "first_error", "backend": backend}}
    for dataset, extra in (
        ("tau/commonsense_qa", {}),
        (QA / "csqa_rows.jsonl", {}),
        (QA / "strategyqa", {"answer_kind": "yes_no"}),
    ):
        with pytest.raises(ConfigError) as error:
            _recipe(dataset, rewards, **extra)
        message = str(error.value)
        assert "\n" not in message and message.startswith(f"rewards.judge.backend: '{backend}' checks the calculations")
    _recipe("openai/gsm8k", rewards)  # numbers: accepted


def test_a_local_folder_whose_kind_shows_only_once_loaded_is_refused_by_check():
    from procrl.recipe.checks import check_recipe_data

    recipe = _recipe(QA / "qasc", {"accuracy": {}, "judge": {"type": "first_error", "backend": "arithmetic"}})
    with pytest.raises(ConfigError, match=r"rewards.judge.backend: 'arithmetic' .* answers are choice"):
        check_recipe_data(recipe)


@pytest.mark.parametrize("recipe", ["csqa_trace", "strategyqa_trace"])
def test_the_commonsense_recipes_pass_check_and_refuse_the_arithmetic_judge(capsys, recipe):
    from tests.helpers.cli import assert_one_line_error, cli

    path = Path(__file__).parents[1] / "recipes" / f"{recipe}.yaml"
    result = cli(capsys, "check", path)
    assert result.code == 0, result.err[-2000:]
    assert "reward mix on 2 reference solutions from written" in result.out
    assert "accuracy                 weight 1      scores [1.0000, 1.0000]" in result.out
    refused = cli(capsys, "check", path, "--set", "rewards.first_error.backend=arithmetic")
    assert_one_line_error(
        refused, "rewards.first_error.backend: 'arithmetic' checks the calculations", "data.answer_kind"
    )
