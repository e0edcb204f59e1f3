"""docs/recipes.md is current: its generated tables are what scripts/recipes_reference.py writes from the schema
today (each setting's type, default and help string), and the hand-written prose around them is kept."""

from __future__ import annotations

import importlib.util
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from procrl.core.config import field

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("recipes_reference", REPO / "scripts" / "recipes_reference.py")
reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference)


def test_the_page_is_current():
    page = reference.PAGE.read_text()
    assert reference.render(page, reference.tables()) == page, (
        "docs/recipes.md is not current: run python scripts/recipes_reference.py"
    )
    assert reference.main(["--check"]) == 0


def test_every_section_and_built_in_component_has_a_table():
    from procrl.rewards.registry import REWARDS

    names = set(reference.tables())
    assert {"model", "model.lora", "data", "data.synthetic", "trainer", "logging", "launch", "rewards.gate"} <= names
    assert {f"rewards.{name}" for name in REWARDS} <= names


@dataclass
class _Inner:
    depth: int = field(2, help="How deep.")


@dataclass
class _Settings:
    name: str = field(help="Required | with a pipe.")
    mode: Literal["a", "b"] = field("a", help="The mode.")
    limit: int | None = field(None, help="")
    reference: bool | Literal["answer"] = field(False, help="")
    kinds: list[Literal["x", "y"]] = field(default_factory=lambda: ["x"], help="")
    paths: str | list[str] = field("all", help="")
    inner: _Inner | None = field(None, help="")


def test_a_settings_table_by_hand():
    assert reference.settings_table(_Settings, "sec.") == (
        "| key | allowed | default | meaning |\n"
        "|---|---|---|---|\n"
        "| `sec.name` | str | `required` | Required \\| with a pipe. |\n"
        "| `sec.mode` | `a`, `b` | `'a'` | The mode. |\n"
        "| `sec.limit` | int or None | `null` |  |\n"
        "| `sec.reference` | `false`, `true`, `answer` | `false` |  |\n"
        "| `sec.kinds` | list of `x`, `y` | `['x']` |  |\n"
        "| `sec.paths` | str or list[str] | `'all'` |  |\n"
        "| `sec.inner` | _Inner or None | `null` |  |\n"
    )
    assert reference.nested_sections(_Settings) == {"inner": _Inner}
    assert reference.interval(0, True, None, False) == "[0, inf)"
    assert reference.interval(0, False, 1, True) == "(0, 1]"


def test_render_keeps_the_prose_and_refuses_a_marker_without_a_table():
    page = (
        "Intro.\n<!-- generated: a -->\nold table\n<!-- end generated -->\nMiddle.\n"
        "<!-- generated: b -->\n<!-- end generated -->\nEnd.\n"
    )
    assert reference.render(page, {"a": "| A |\n", "b": "| B |\n"}) == (
        "Intro.\n<!-- generated: a -->\n| A |\n<!-- end generated -->\nMiddle.\n"
        "<!-- generated: b -->\n| B |\n<!-- end generated -->\nEnd.\n"
    )
    with pytest.raises(ValueError, match="markers without a table: b; tables without a marker: c"):
        reference.render(page, {"a": "", "c": ""})


def _keys_of_table_after(page: str, heading: str) -> list[str]:
    """The first column of the first table after ``heading``."""
    lines = page.split(heading + "\n", 1)[1].splitlines()
    table = list(
        itertools.takewhile(
            lambda line: line.startswith("|"), itertools.dropwhile(lambda line: not line.startswith("|"), lines)
        )
    )
    return [row.split("|")[1].strip().strip("`") for row in table[2:]]  # below the header and its rule


def test_the_hand_written_key_tables_list_every_key():
    from procrl.rewards.spec import COMMON_KEYS

    page = reference.PAGE.read_text()
    assert _keys_of_table_after(page, "## Top-level keys") == list(reference.recipe_attribute("TOP_LEVEL_KEYS"))
    assert set(_keys_of_table_after(page, "## rewards")) == set(COMMON_KEYS)
