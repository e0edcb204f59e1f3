"""The embedded synthetic dataset: deterministic problems and a held-out test split that never
contains a training problem (the tiny reasoner's held-out evaluation relies on it)."""

from __future__ import annotations

import re

import pytest

from procrl.core.config import ConfigError
from procrl.data import load_examples
from procrl.data.synthetic import generate_problems, generate_split
from procrl.recipe import load_recipe, parse_recipe

BASE = {"recipe": "procrl/v1", "model": {"name_or_path": "procrl:tiny-qwen2"}, "rewards": {"accuracy": {}}}


def _data(**synthetic):
    return parse_recipe({**BASE, "data": {"dataset": "synthetic", "synthetic": synthetic}}).data


def _questions(dataset) -> set[str]:
    return set(dataset["question"])


def test_test_split_has_its_own_size_and_no_training_question():
    data = _data(num_examples=20000, seed=0, held_out_examples=500)
    train, test = load_examples(data, "train"), load_examples(data, "test")
    assert len(train) == 20000 and len(test) == 500  # the held-out size does not follow num_examples
    assert not _questions(train) & _questions(test)
    assert len(_questions(test)) == 500  # no repeats either
    for row in test:  # GSM8K format: steps with calculator notes, '#### N'
        assert re.search(r"<<[^>]+=[-\d]+>>", row["answer"]) and re.search(r"#### -?\d+$", row["answer"])


def test_held_out_stream_is_no_training_seed():
    """The test stream is not an integer seed's stream (seed + 1_000_003, for one, would be the
    training data of seed 1_000_003)."""
    test = [p["question"] for p in generate_split("test", 50, seed=0, train_examples=1)]
    assert test != [p["question"] for p in generate_problems(50, seed=1_000_003)]
    assert test != [p["question"] for p in generate_problems(50, seed=0)]
    assert generate_split("test", 50, seed=0, train_examples=1) == generate_split("test", 50, seed=0, train_examples=1)
    assert generate_split("test", 50, seed=1, train_examples=1) != generate_split("test", 50, seed=0, train_examples=1)


def test_splits_are_deterministic_and_distinct():
    data = _data(num_examples=64, seed=3, held_out_examples=40)
    assert list(load_examples(data, "test")) == list(load_examples(data, "test"))
    assert list(load_examples(data, "train")) == generate_problems(64, seed=3)  # training data unchanged
    test, validation = _questions(load_examples(data, "test")), _questions(load_examples(data, "validation"))
    assert test != validation


def test_unknown_synthetic_split_is_a_config_error():
    with pytest.raises(ConfigError, match=r"data.split: .*'tset'.*did you mean 'test'"):
        load_examples(_data(), "tset")
    with pytest.raises(ConfigError, match="held_out_examples"):
        _data(held_out_examples=0)


def test_tiny_recipe_has_500_held_out_problems(tiny_recipe):
    """What the tiny reasoner evaluates on: the CPU recipe's test split, 500 problems and more."""
    recipe = load_recipe(tiny_recipe)
    train, test = load_examples(recipe.data, "train"), load_examples(recipe.data, "test")
    assert len(test) >= 500
    assert not _questions(train) & _questions(test)


def test_clean_solutions_are_verified_and_slips_are_the_failure_modes_they_claim():
    """render_solution: clean = no wrong step; carry = a wrong step and a wrong answer; recover =
    a wrong step and the right answer (checked with the arithmetic judge's own step check)."""
    import random

    from procrl.data.synthetic import make_problem, render_solution
    from procrl.rewards.quantities import first_wrong_step

    rng = random.Random(5)
    for _ in range(200):
        problem = make_problem(rng)
        clean, answer = render_solution(problem)
        steps = clean.split("\n")[:-1]
        assert len(steps) == len(problem.steps) and 2 <= len(steps) <= 4
        assert first_wrong_step(steps) == -1 and clean.endswith(f"#### {answer}")
        for slip_step in range(len(problem.steps) - 1):
            carry, carried = render_solution(problem, "carry", slip_step)
            assert first_wrong_step(carry.split("\n")[:-1]) == slip_step and carried != answer
            recover, recovered = render_solution(problem, "recover", slip_step)
            assert first_wrong_step(recover.split("\n")[:-1]) == slip_step and recovered == answer
    with pytest.raises(ValueError, match="slip"):
        render_solution(problem, "typo")
