"""Recipe files: reading one (UTF-8 YAML, one-line errors), putting its directory on the import
path, loading it with overrides, and telling cheaply whether a file is a recipe."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from procrl.core import yaml_core
from procrl.core.config import ConfigError
from procrl.recipe.overrides import apply_overrides
from procrl.recipe.schema import MARKER, Recipe, parse_recipe

__all__ = ["add_import_paths", "is_recipe_file", "load_recipe", "read_recipe_file"]


def read_recipe_file(path: str | os.PathLike) -> dict[str, Any]:
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"{path}: recipe file not found")
    data = file.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}: line {line}: not UTF-8 text (byte {data[error.start]:#04x}); a recipe is a UTF-8 YAML file"
        ) from None
    if "\x00" in text:
        raise ConfigError(
            f"{path}: line {text[: text.index(chr(0))].count(chr(10)) + 1}: a NUL byte;"
            " a recipe is a UTF-8 YAML file, not binary"
        )
    try:
        raw = yaml_core.load(text)
    except yaml_core.YAMLSizeError as error:
        raise ConfigError(f"{path}: {error}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}:{where} not valid YAML ({getattr(error, 'problem', error)})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a recipe must be a YAML mapping, got {type(raw).__name__}")
    return raw


def add_import_paths(recipe_path: str | os.PathLike) -> list[str]:
    """Put the recipe's directory and the working directory first on ``sys.path`` (as Python
    puts a script's directory there), so that ``type: my_module:fn`` finds ``my_module.py`` next
    to the recipe or in the current directory without PYTHONPATH. Returns the paths added."""
    import sys

    added = []
    for directory in (str(Path(recipe_path).resolve().parent), os.getcwd()):
        if directory not in sys.path:
            sys.path.insert(len(added), directory)
            added.append(directory)
    return added


def load_recipe(
    path: str | os.PathLike, overrides: list[str] | None = None, output_dir: str | None = None, *, scoring: bool = False
) -> Recipe:
    """Read, override and validate a recipe file (its directory and the working directory go on
    the import path first: :func:`add_import_paths`); ``scoring``: see :func:`parse_recipe`."""
    raw = apply_overrides(
        read_recipe_file(path), overrides or []
    )  # registers the secret values (procrl/core/redaction.py)
    add_import_paths(path)
    if output_dir is not None:
        raw["output_dir"] = output_dir
    return parse_recipe(raw, path=str(path), scoring=scoring)


def is_recipe_file(path: str | os.PathLike, max_bytes: int = 1 << 20) -> bool:
    """Whether ``path`` is a procrl recipe (a YAML mapping with the marker), cheaply."""
    try:
        file = Path(path)
        if file.suffix.lower() not in (".yaml", ".yml") or not file.is_file() or file.stat().st_size > max_bytes:
            return False
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if MARKER not in text:
        return False
    try:
        raw = yaml_core.load(text)
    except (yaml_core.YAMLSizeError, yaml_core.DuplicateKeyError):
        return True  # a recipe that loading refuses in one line (read_recipe_file says why)
    except yaml.YAMLError:
        return False
    return isinstance(raw, dict) and raw.get("recipe") == MARKER
