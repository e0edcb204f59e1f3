"""Start-up: validating a recipe does not import TRL (procrl/recipe/trl_schema.py holds GRPOConfig's
fields, checked here against the installed TRL); ``procrl score`` reads only the reward mix (no
``model:`` section needed, ``trainer:`` not read) and, like ``procrl check``, imports neither
torch, transformers, TRL nor peft when the rewards need no model. Timing and memory are measured
by benchmarks/startup_bench.py, not asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.recipe import load_recipe
from procrl.recipe.trl_schema import (
    GRPO_CONFIG_CHOICES,
    GRPO_CONFIG_FIELDS,
    field_choices,
    grpo_config_choices,
    grpo_config_fields,
    type_source,
)
from tests.helpers.launch import REPO, TINY_RECIPE, launch_env

HEAVY = ("torch", "transformers", "trl", "peft", "accelerate", "datasets")


def test_field_table_matches_the_installed_trl():
    """Regenerate with `python -m procrl.recipe.trl_schema --write` when this fails after a TRL upgrade."""
    installed = grpo_config_fields()
    table = {name: type_source(tp) for name, tp in GRPO_CONFIG_FIELDS.items()}
    assert list(table) == list(installed), set(table) ^ set(installed)
    assert table == installed
    assert GRPO_CONFIG_CHOICES == grpo_config_choices()


def test_field_choices_reads_an_enum_annotation_or_the_metadata():
    import enum

    class Strategy(enum.Enum):
        NO = "no"
        STEPS = "steps"

    # typing.Union / typing.Optional on purpose: TRL annotates its fields so, and `X | Y` is another object
    assert field_choices(typing.Union[Strategy, str], {}) == ("no", "steps")  # noqa: UP007
    assert field_choices(str, {"choices": ["fork", "spawn"]}) == ("fork", "spawn")
    assert field_choices(typing.Optional[str], {"help": "any text"}) is None  # noqa: UP045


def test_type_source_keeps_what_check_value_checks():
    assert type_source(typing.Optional[float]) == "float | None"  # noqa: UP045
    assert type_source(typing.Union[str, list[str], None]) == "str | list[str] | None"  # noqa: UP007
    assert type_source(typing.Literal["a", "b"]) == "Literal['a', 'b']"
    assert type_source(dict[str, typing.Any]) == "dict[str, Any]"

    class Strategy(str):  # an enum-like class procrl does not check itself
        pass

    assert type_source(typing.Union[Strategy, str]) == "Any"  # noqa: UP007


def _imported_after(code: str, cwd=REPO) -> tuple[int, list[str], str]:
    """Run ``code`` in a fresh interpreter; (its exit status, the heavy modules it imported, stderr)."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, env=launch_env(), capture_output=True, text=True, timeout=300
    )
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "null"
    return done.returncode, json.loads(last), done.stderr


def test_score_one_row_imports_no_trainer_stack_and_needs_no_model_section(tmp_path):
    recipe = tmp_path / "score.yaml"  # no model: section; a trainer: section that only TRL-less validation would refuse
    recipe.write_text(
        textwrap.dedent("""\
        recipe: procrl/v1
        trainer: {learning_rat: 1e-4, algorithm: ppo}
        rewards:
          accuracy: {weight: 1.0}
          format: {weight: 0.2}
          trace: {weight: 0.2, tagger: cues}
        """)
    )
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps(
            {
                "question": "Tom has 3 apples and buys 4 more. How many?",
                "completion": "Tom starts with 3 apples.\nHe buys 4 more, so 3 + 4 = 7.\n#### 7",
                "answer": "7",
            }
        )
        + "\n"
    )
    out = tmp_path / "out.jsonl"
    code = (
        f"from procrl.launch import cli\nassert cli.main(['score', '--recipe', {str(recipe)!r},"
        f" '--input', {str(rows)!r}, "
        f"'--output', {str(out)!r}, '--quiet']) == 0"
    )
    status, heavy, stderr = _imported_after(code)
    assert status == 0, stderr[-3000:]
    assert heavy == [], heavy
    scored = json.loads(out.read_text())
    assert scored["rewards"]["accuracy"] == 1.0 and scored["rewards"]["trace"] is not None


def test_check_imports_no_trainer_stack():
    for recipe in (TINY_RECIPE, str(REPO / "recipes" / "gsm8k_trace.yaml")):
        status, heavy, stderr = _imported_after(
            f"from procrl.launch import cli\nassert cli.main(['check', {recipe!r}]) == 0"
        )
        assert status == 0, stderr[-3000:]
        assert not set(heavy) & {"torch", "transformers", "peft", "datasets"}, (recipe, heavy)


def test_check_imports_no_runner_and_no_launcher():
    # the recipe's own checks and plan live with the recipe (procrl/recipe/checks.py, plan.py, memory.py)
    code = (
        f"import sys\nfrom procrl.launch import cli\nassert cli.main(['check', {TINY_RECIPE!r}]) == 0\n"
        "print(sorted(m for m in sys.modules if m.startswith('procrl.launch.') and 'commands' not in m),"
        " file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=launch_env(), cwd=REPO, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1] == "['procrl.launch.check', 'procrl.launch.cli', 'procrl.launch.entry']"


def test_trainer_section_is_still_validated_without_trl(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(Path(TINY_RECIPE).read_text())
    with pytest.raises(ConfigError, match=r"trainer.learning_rat: unknown key \(did you mean 'learning_rate'\?\)"):
        load_recipe(recipe, ["trainer.learning_rat=1e-4"])
    with pytest.raises(ConfigError, match="trainer.num_generations: expected an integer"):
        load_recipe(recipe, ["trainer.num_generations=four"])
    with pytest.raises(ConfigError, match="trainer.report_to: expected"):
        load_recipe(recipe, ["trainer.report_to=3"])
    assert load_recipe(recipe, ["trainer.report_to=[wandb]"]).trainer_args["report_to"] == ["wandb"]
    with pytest.raises(ConfigError, match="model: required section is missing"):
        load_recipe(recipe, ["model=null"])  # training (and check) still need the model
