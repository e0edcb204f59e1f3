"""Custom rewards next to a recipe (examples/custom_reward/): imported without PYTHONPATH from the
recipe's directory or the working directory, in one process and on every rank of
``accelerate launch``; the README shows the example file as it is; "did you mean" on the common
keys of a component and of a plain function."""

from __future__ import annotations

import json
import re
import sys
import textwrap

import pytest

from procrl.core.config import ConfigError
from procrl.recipe import load_recipe
from tests.helpers.launch import REPO, accelerate, procrl, read_run_info, read_trainer_state, run_command

EXAMPLE = REPO / "examples" / "custom_reward"
QUESTION = "Tom has 3 apples and buys 4 more. How many apples does he have?"
WORKED = "Tom starts with 3 apples.\nHe buys 4 more apples, so 3 + 4 = 7.\n#### 7"
CASES = {
    "worked": WORKED,
    "slip": "Tom starts with 3 apples.\nHe buys 4 more apples, so 3 + 4 = 8.\n#### 8",
    "answer_alone": "#### 7",
    "hedging": "Tom starts with 3 apples.\nLet me double-check that.\nHe buys 4 more apples, so 3 + 4 = 7.\n"
    "Let me double-check that.\n#### 7",
    "padding": "Tom starts with 3 apples.\nTom starts with 3 apples.\nTom starts with 3 apples.\n"
    "He buys 4 more apples, so 3 + 4 = 7.\n#### 7",
    "empty_steps": "Tom starts with 3 apples.\n\n\n\nHe buys 4 more apples, so 3 + 4 = 7.\n\n\n#### 7",
    "overlong": WORKED.replace("#### 7", "And that is all. " * 40 + "\n#### 7"),
}


@pytest.fixture
def restore_sys_path(monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in [m for m in sys.modules if m in ("my_rewards", "cwd_rewards")]:
        monkeypatch.delitem(sys.modules, name)
    yield
    for name in ("my_rewards", "cwd_rewards"):
        sys.modules.pop(name, None)


def test_readme_shows_the_example_file_as_it_is():
    readme = (REPO / "README.md").read_text()
    code = (EXAMPLE / "my_rewards.py").read_text()
    assert f"```python\n{code}```" in readme


def test_example_scores_hand_written_cases_from_another_directory_without_pythonpath(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"question": QUESTION, "completion": text, "answer": "7", "case": case}) + "\n"
            for case, text in CASES.items()
        )
    )
    out = tmp_path / "scored.jsonl"
    result = run_command(
        [*procrl(), "score", "--recipe", EXAMPLE / "recipe.yaml", "--input", rows, "--output", out, "--quiet"],
        tmp_path,
        cwd=tmp_path,
        PYTHONPATH="",
    )
    assert result.returncode == 0, result.output
    scored = {row["case"]: row for row in map(json.loads, out.read_text().splitlines())}
    repeats = {case: row["rewards"]["repeats"] for case, row in scored.items()}
    length = {case: row["rewards"]["length"] for case, row in scored.items()}
    assert repeats["worked"] == 0.0 and repeats["slip"] == 0.0 and repeats["empty_steps"] == 0.0
    assert repeats["answer_alone"] == -1.0  # no steps: the recipe's fallback, not a clean 0
    assert repeats["hedging"] == pytest.approx(-1 / 4) and repeats["padding"] == pytest.approx(-2 / 4)
    assert [s["scores"]["repeats"] for s in scored["padding"]["steps"]] == [0.0, -1.0, -1.0, 0.0]
    assert length["worked"] == 0.0 and length["answer_alone"] == 0.0 and -1.0 <= length["overlong"] < -0.5
    # nothing pays more than the worked solution for skipping, hedging, padding or rambling
    worked = scored["worked"]["reward"]
    for case in ("answer_alone", "hedging", "padding", "overlong"):
        assert scored[case]["reward"] < worked, case


def test_module_in_the_working_directory_is_importable(tmp_path, restore_sys_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    (work / "cwd_rewards.py").write_text(
        "def constant(completions, value=0.5, **kwargs):\n    return [value] * len(completions)\n"
    )
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    recipe = recipes / "r.yaml"
    recipe.write_text(
        textwrap.dedent("""\
        recipe: procrl/v1
        model: {name_or_path: procrl:tiny-qwen2}
        data: {dataset: synthetic}
        rewards: {mine: {type: cwd_rewards:constant, value: 0.25}}
        """)
    )
    monkeypatch.chdir(work)
    loaded = load_recipe(recipe)
    assert loaded.rewards[0].target.__module__ == "cwd_rewards"
    assert sys.path[:2] == [str(recipes), str(work)]  # the recipe's directory first, as for a script
    result = run_command([*procrl(), "check", recipe], tmp_path, cwd=work, PYTHONPATH="")
    assert result.returncode == 0, result.output
    assert re.search(r"mine\s+weight 1\s+scores \[0.2500, 0.2500\]", result.stdout), result.stdout


def test_did_you_mean_for_common_keys(tmp_path, restore_sys_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text((EXAMPLE / "recipe.yaml").read_text())
    (tmp_path / "my_rewards.py").write_text((EXAMPLE / "my_rewards.py").read_text())
    cases = {
        "rewards.accuracy.wieght=1.0": "rewards.accuracy.wieght: unknown key (did you mean 'weight'?)",
        "rewards.repeats.fallbak=-1": "rewards.repeats.fallbak: unknown key (did you mean 'fallback'?)",
        "rewards.length.wieght=0.5": "rewards.length.wieght: unknown key (did you mean 'weight'?)",  # plain function
        "rewards.format.gaet={on: accuracy}": "rewards.format.gaet: unknown key (did you mean 'gate'?)",
    }
    for override, message in cases.items():
        with pytest.raises(ConfigError) as error:
            load_recipe(recipe, [override])
        assert str(error.value).startswith(message), str(error.value)
    # a function's own keyword arguments stay settings, even when they resemble a common key
    assert load_recipe(recipe, ["rewards.length.max_chars=10"]).rewards[3].settings == {"max_chars": 10}


@pytest.mark.slow
def test_example_trains_under_accelerate_launch_with_two_processes(tmp_path):
    """Every rank builds the reward mix, so every rank must find my_rewards.py next to the recipe;
    run from another directory, no PYTHONPATH; YAML 1.2 (`on`, `1e-3`) through the file and --set."""
    out = tmp_path / "run"
    result = run_command(
        [
            *accelerate(),
            "launch",
            "--multi_gpu",
            "--num_processes",
            "2",
            EXAMPLE / "recipe.yaml",
            "--output-dir",
            out,
            "--set",
            "trainer.max_steps=1",
            "--set",
            "trainer.learning_rate=1e-4",
            "--set",
            "rewards.format.gate={on: accuracy, min: 1.0}",
        ],
        tmp_path,
        cwd=tmp_path,
        PYTHONPATH="",
    )
    assert result.returncode == 0, result.output
    assert read_run_info(out)["world_size"] == 2
    logged = read_trainer_state(out)["log_history"][0]
    assert "rewards/repeats/mean" in logged and "rewards/length/mean" in logged, logged
    assert "process/steps_per_completion" in logged  # the component's step scores gave dense credit
