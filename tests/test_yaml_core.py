"""One YAML loader for recipes and --set values (procrl/core/yaml_core.py): YAML 1.2 core-schema
scalars through a file and through --set, output that reads back the same, and the alias-bomb
guard refusing a tiny recipe that would expand to gigabytes."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import pytest
import yaml

from procrl.core import yaml_core
from procrl.core.config import ConfigError
from procrl.launch import cli
from procrl.recipe import load_recipe

RECIPE_12 = textwrap.dedent("""\
    recipe: procrl/v1
    model: {name_or_path: procrl:tiny-qwen2}
    data: {dataset: synthetic}
    trainer: {learning_rate: 1e-4, max_steps: 1}
    rewards:
      accuracy: {weight: 1.0}
      format: {weight: 0.2, gate: {on: accuracy, min: 1.0}}
    """)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("on", "on"),
        ("off", "off"),
        ("yes", "yes"),
        ("no", "no"),
        ("y", "y"),
        ("Yes", "Yes"),
        ("true", True),
        ("True", True),
        ("TRUE", True),
        ("false", False),
        ("1e-4", 1e-4),
        ("1E5", 1e5),
        ("+1.5e-3", 1.5e-3),
        (".5", 0.5),
        ("1.", 1.0),
        ("-2.0", -2.0),
        ("010", 10),
        ("0o10", 8),
        ("0x1f", 31),
        ("-3", -3),
        ("1_000", "1_000"),
        ("1:30", "1:30"),
        ("2024-01-01", "2024-01-01"),
        ("~", None),
        ("null", None),
        ("", None),
        (".inf", math.inf),
        ("-.Inf", -math.inf),
    ],
)
def test_core_schema_scalars(text, expected):
    assert yaml_core.load(f"value: {text}") == {"value": expected}
    assert type(yaml_core.load(f"value: {text}")["value"]) is type(expected)


def test_gate_on_and_exponent_float_through_a_file(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text(RECIPE_12)
    recipe = load_recipe(path)
    assert recipe.trainer_args["learning_rate"] == 1e-4
    gate = {spec.name: spec.gate for spec in recipe.rewards}["format"]
    assert (gate.on, gate.min) == ("accuracy", 1.0)


def test_gate_on_and_exponent_float_through_set(tmp_path, capsys):
    path = tmp_path / "recipe.yaml"
    path.write_text(
        RECIPE_12.replace("trainer: {learning_rate: 1e-4, max_steps: 1}", "trainer: {max_steps: 1}").replace(
            ", gate: {on: accuracy, min: 1.0}", ""
        )
    )
    overrides = [
        "trainer.learning_rate=1e-4",
        "rewards.format.gate={on: accuracy, min: 1}",
        "rewards.format.gate.value=.5",
    ]
    recipe = load_recipe(path, overrides)
    assert recipe.trainer_args["learning_rate"] == 1e-4
    gate = {spec.name: spec.gate for spec in recipe.rewards}["format"]
    assert (gate.on, gate.min, gate.value) == ("accuracy", 1.0, 0.5)
    # the command line takes the same path
    assert cli.main(["check", str(path), *(arg for o in overrides for arg in ("--set", o))]) == 0
    out = capsys.readouterr().out
    assert "learning_rate: 0.0001" in out and "'on': accuracy" in out  # quoted: YAML 1.1 readers too


def test_set_value_on_is_a_string_where_a_string_is_expected(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text(RECIPE_12)
    recipe = load_recipe(path, ["description=on", "data.chat_template=off"])
    assert recipe.description == "on" and recipe.data.chat_template == "off"


def test_dump_reads_back_identically_under_yaml_1_1_and_1_2():
    data = {
        "a": "on",
        "b": "1e-4",
        "c": "yes",
        "d": 1e-4,
        "e": "010",
        "f": "2024-01-01",
        "g": True,
        "h": None,
        "i": "",
        "j": "plain",
        "k": [1, "no", 0.5],
    }
    text = yaml_core.dump(data)
    assert yaml_core.load(text) == data
    assert yaml.safe_load(text) == data


def _bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_in_one_line_before_anything_else(tmp_path):
    """A ~0.5 KB recipe whose aliases expand to 9^9 (387M) nodes: today `procrl check` dumps it
    (minutes, gigabytes); it must be refused at load, in one line, exit 2. Run in a subprocess
    with a memory cap and a timeout, so that a regression fails instead of taking the machine."""
    path = tmp_path / "bomb.yaml"
    path.write_text(
        "recipe: procrl/v1\nmodel: {name_or_path: procrl:tiny-qwen2}\nrewards: {accuracy: {}}\n"
        "description: &d bomb\n" + _bomb()
    )
    assert len(path.read_bytes()) < 1200
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
        "from procrl.launch import cli; sys.exit(cli.main(['check', sys.argv[1]]))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-2000:]
    assert "bomb.yaml" in lines[0] and "alias" in lines[0] and "100,000" in lines[0]


def test_alias_bomb_in_a_set_value_and_recursive_aliases_are_refused(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text(RECIPE_12)
    flow = "[" + ", ".join(["&b0 [x, x, x, x, x, x, x, x, x]"] + ["*b0"] * 8) + "]"
    for level in range(1, 8):  # nest: each level repeats the previous one 9 times
        flow = f"[&b{level} {flow}, " + ", ".join([f"*b{level}"] * 8) + "]"
    with pytest.raises(ConfigError, match=r"--set 'description=.*alias bomb"):
        load_recipe(path, [f"description={flow}"])
    with pytest.raises(yaml_core.YAMLSizeError, match="recursive"):
        yaml_core.load("a: &a [1, *a]")
    # what stays under the bound loads, merge keys included
    assert yaml_core.load("base: &b {x: 1}\nuse: {<<: *b, y: 2}") == {"base": {"x": 1}, "use": {"x": 1, "y": 2}}
