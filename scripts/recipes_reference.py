"""Write the tables of docs/recipes.md from the schema: every recipe section's and every built-in reward component's
settings (each field's name, type, default and help string) and the tables of TRL fields procrl checks.

    python scripts/recipes_reference.py           # rewrite the generated tables of docs/recipes.md
    python scripts/recipes_reference.py --check   # exit status 1 when the page is not current

A generated table lies between ``<!-- generated: ID -->`` and ``<!-- end generated -->``; everything outside those
markers is hand-written and kept. Every table has a marker on the page and every marker a table, so a new section or
component is a failure of ``--check`` (tests/test_recipes_reference.py) until the page holds it.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import pkgutil
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "recipes.md"
MARKED = re.compile(
    r"(?P<begin><!-- generated: (?P<id>[\w.:-]+) -->\n)(?P<body>.*?)(?P<end><!-- end generated -->)", re.DOTALL
)
RECIPE_SECTIONS = ("model", "data", "trainer", "logging", "launch", "audit")


def allowed(tp: Any) -> str:
    """The values a field takes, as the page writes them: ``str or None``, `` `a`, `b` ``, ``list of `x`, `y` ``."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return ", ".join(f"`{value}`" for value in args)
    if origin in (Union, types.UnionType):
        options = [option for option in args if option is not type(None)]
        if all(option is bool or get_origin(option) is Literal for option in options):  # a closed set of values
            text = ", ".join("`false`, `true`" if option is bool else allowed(option) for option in options)
        else:
            text = " or ".join(allowed(option) for option in options)
        return text + (" or None" if type(None) in args else "")
    if origin is list:
        item = args[0] if args else Any
        return f"list of {allowed(item)}" if get_origin(item) is Literal else f"list[{allowed(item)}]"
    return getattr(tp, "__name__", str(tp))


def default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "`required`"
    if value is None or isinstance(value, bool):
        return "`null`" if value is None else f"`{str(value).lower()}`"
    return f"`{value!r}`"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def settings_table(cls: type, prefix: str = "") -> str:
    """``| key | allowed | default | meaning |``, one row per field of the settings dataclass ``cls``."""
    hints = typing.get_type_hints(cls)
    rows = ["| key | allowed | default | meaning |", "|---|---|---|---|"]
    for f in dataclasses.fields(cls):
        if f.init:
            rows.append(
                f"| `{prefix}{f.name}` | {cell(allowed(hints[f.name]))} | {cell(default(f))} | "
                f"{cell(f.metadata.get('help', ''))} |"
            )
    return "\n".join(rows) + "\n"


def nested_sections(cls: type) -> dict[str, type]:
    """Field name -> settings dataclass, for the fields of ``cls`` that are sections of their own (model.lora)."""
    found = {}
    for name, tp in typing.get_type_hints(cls).items():
        options = get_args(tp) if get_origin(tp) in (Union, types.UnionType) else (tp,)
        inner = [option for option in options if dataclasses.is_dataclass(option)]
        if inner:
            found[name] = inner[0]
    return found


def recipe_tables() -> dict[str, str]:
    from procrl.recipe import Recipe

    hints = typing.get_type_hints(Recipe)
    tables = {}
    for section in RECIPE_SECTIONS:
        cls = next(
            option for option in (get_args(hints[section]) or (hints[section],)) if dataclasses.is_dataclass(option)
        )
        tables[section] = settings_table(cls, f"{section}.")
        for name, inner in nested_sections(cls).items():
            tables[f"{section}.{name}"] = settings_table(inner, f"{section}.{name}.")
    return tables


def reward_tables() -> dict[str, str]:
    from procrl.rewards.registry import REWARDS, builtin_class
    from procrl.rewards.spec import ComponentSpec

    gate = next(
        option for option in get_args(typing.get_type_hints(ComponentSpec)["gate"]) if dataclasses.is_dataclass(option)
    )
    tables = {"rewards.gate": settings_table(gate, "gate.")}
    for name in REWARDS:
        tables[f"rewards.{name}"] = settings_table(builtin_class(name).Settings)
    tables.update(first_error_tables())
    return tables


def judge_traits(backend: str) -> str:
    """What a backend's judge declares it is (:class:`procrl.rewards.judges.protocol.Judge`), in words."""
    from procrl.rewards.judges.registry import judge_class

    judge = judge_class(backend)
    traits = [
        "model-free" if judge.model_free else "",
        "loads a model" if judge.loads_model else "",
        "sends requests" if judge.sends_requests else "",
        "needs gold solutions" if judge.needs_gold_solution else "",
        "error categories" if judge.reports_categories else "",
        "step scores" if judge.gives_step_scores else "",
        f"{' / '.join(judge.answer_kinds)} answers" if judge.answer_kinds else "any answers",
    ]
    return ", ".join(trait for trait in traits if trait)


def first_error_tables() -> dict[str, str]:
    """first_error's options, one settings class per backend: which backend reads what, and each option
    once with the backends that read it (the help string of the first backend listed that reads it)."""
    from procrl.rewards.judges.registry import BACKENDS, backend_settings, page_order

    order = page_order()  # model-free judges first
    readers: dict[str, list] = {}  # key -> [field, type, backends]
    for backend in order:
        cls = backend_settings(backend)
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.init:
                readers.setdefault(f.name, [f, hints[f.name], []])[2].append(backend)
    common = [key for key, (_, _, backends) in readers.items() if len(backends) == len(order)]
    summary = [
        f"| backend | what it is | options it reads beyond {', '.join(f'`{key}`' for key in common)} |",
        "|---|---|---|",
    ]
    for backend in order:
        own = [key for key, (_, _, backends) in readers.items() if backend in backends and key not in common]
        summary.append(f"| `{backend}` | {judge_traits(backend)} | {', '.join(f'`{key}`' for key in own)} |")
    rows = ["| key | read by | allowed | default | meaning |", "|---|---|---|---|---|"]
    for key in sorted(readers, key=lambda k: k not in common):
        f, tp, backends = readers[key]
        read_by = "every backend" if key in common else ", ".join(backends)
        values = ", ".join(f"`{b}`" for b in BACKENDS) if key == "backend" else allowed(tp)  # each class: its own
        rows.append(
            f"| `{key}` | {read_by} | {cell(values)} | {cell(default(f))} | {cell(f.metadata.get('help', ''))} |"
        )
    return {"rewards.first_error.backends": "\n".join(summary) + "\n", "rewards.first_error": "\n".join(rows) + "\n"}


def recipe_attribute(name: str) -> Any:
    """A table of procrl.recipe's (TRL's choices, ranges, the fields procrl sets), in whichever module defines it."""
    package = importlib.import_module("procrl.recipe")
    modules = [package] + [
        importlib.import_module(info.name) for info in pkgutil.iter_modules(package.__path__, "procrl.recipe.")
    ]
    for module in modules:
        if hasattr(module, name):
            return getattr(module, name)
    raise LookupError(f"no module of procrl.recipe defines {name}")


def interval(low, low_included, high, high_included) -> str:
    return (
        ("[" if low_included else "(")
        + ("-inf" if low is None else f"{low:g}")
        + ", "
        + ("inf" if high is None else f"{high:g}")
        + ("]" if high_included else ")")
    )


def trl_tables() -> dict[str, str]:
    from_help = recipe_attribute("HELP_CHOICES")  # the sets TRL names only in its help text
    choices = ["| field | allowed values | stated by |", "|---|---|---|"]
    for name, values in recipe_attribute("TRL_CHOICES").items():
        source = "TRL's help text (procrl's table)" if name in from_help else "TRL's dataclass (generated)"
        choices.append(f"| `{name}` | {', '.join(f'`{value}`' for value in values)} | {source} |")
    ranges = ["| field | allowed interval | meaning |", "|---|---|---|"]
    for name, (low, low_in, high, high_in, meaning) in recipe_attribute("TRL_RANGES").items():
        ranges.append(f"| `{name}` | {interval(low, low_in, high, high_in)} | {cell(meaning)} |")
    managed = [f"* `{name}`: {why}" for name, why in recipe_attribute("MANAGED_TRL_FIELDS").items()]
    return {
        "trainer.trl_choices": "\n".join(choices) + "\n",
        "trainer.trl_ranges": "\n".join(ranges) + "\n",
        "trainer.set_by_procrl": "\n".join(managed) + "\n",
    }


def tables() -> dict[str, str]:
    """Table id -> its Markdown, for every generated table of the page."""
    return {**recipe_tables(), **reward_tables(), **trl_tables()}


def render(page: str, generated: dict[str, str]) -> str:
    """``page`` with every marked table replaced by its generated text; a marker without a table, or a table
    without a marker, is a ValueError naming them."""
    marked = [match.group("id") for match in MARKED.finditer(page)]
    unknown = [name for name in marked if name not in generated]
    missing = [name for name in generated if name not in marked]
    if unknown or missing:
        raise ValueError(
            f"{PAGE.relative_to(REPO)}: markers without a table: {', '.join(unknown) or 'none'}; "
            f"tables without a marker: {', '.join(missing) or 'none'}"
        )
    return MARKED.sub(lambda m: m.group("begin") + generated[m.group("id")] + m.group("end"), page)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Only say whether the page is current (exit 1 if not).")
    args = parser.parse_args(argv)
    page = PAGE.read_text()
    current = render(page, tables())
    if args.check:
        if current != page:
            print(f"{PAGE.relative_to(REPO)} is not current: run python scripts/recipes_reference.py", file=sys.stderr)
            return 1
        return 0
    if current != page:
        PAGE.write_text(current)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))  # the page documents the procrl of this checkout
    sys.exit(main())
