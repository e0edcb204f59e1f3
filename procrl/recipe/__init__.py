"""Recipes: one YAML file describes a whole run. Schema, loading, ``--set`` overrides, validation.

A recipe is identified by its marker key ``recipe: procrl/v1``. Sections:

* ``model``: what to fine-tune (Hub id or local dir, or ``procrl:tiny-qwen2`` for the embedded
  CPU model), dtype, optional LoRA;
* ``data``: the dataset (Hub id, local JSON/JSONL path, or ``synthetic``), split, columns and
  prompt formatting;
* ``trainer``: ``algorithm`` and ``credit`` (procrl's own keys) plus any field of TRL's
  ``GRPOConfig`` under its own name (``learning_rate``, ``num_generations``, ``beta``, ...);
* ``rewards``: component name -> settings (``type``, ``weight``, ``gate``, ``fallback`` and the
  component's own keys);
* ``logging``: W&B project/entity and the diagnostics switch;
* ``launch``: how ``procrl train`` starts accelerate (config file, processes, machines).

Everything is validated before any model or dataset is loaded; every error is a
:class:`~procrl.core.config.ConfigError` whose one-line message names the key.

Modules: ``sections.py`` (the sections' settings), ``trl_fields.py`` (the ``trainer`` section's TRL
fields: names, types, choices, ranges), ``trl_schema.py`` (the table of TRL's GRPOConfig fields and
choices, generated from TRL), ``schema.py`` (:class:`Recipe`, :func:`parse_recipe`), ``overrides.py``
(``--set``), ``load.py`` (files), ``checks.py`` (a recipe's data checked against its model).
"""

from __future__ import annotations

from procrl.recipe.load import add_import_paths, is_recipe_file, load_recipe, read_recipe_file
from procrl.recipe.overrides import apply_overrides
from procrl.recipe.schema import MARKER, TOP_LEVEL_KEYS, Recipe, evaluates_during_training, parse_recipe
from procrl.recipe.sections import (
    DataSection,
    LaunchSection,
    LoggingSection,
    LoraSection,
    ModelSection,
    ProcessCredit,
    SyntheticSection,
    TrainerSection,
)
from procrl.recipe.trl_fields import REPORT_TO_INTEGRATIONS, TRL_CHOICES, TRL_RANGES

__all__ = [
    "MARKER",
    "REPORT_TO_INTEGRATIONS",
    "TOP_LEVEL_KEYS",
    "TRL_CHOICES",
    "TRL_RANGES",
    "DataSection",
    "LaunchSection",
    "LoggingSection",
    "LoraSection",
    "ModelSection",
    "Recipe",
    "SyntheticSection",
    "ProcessCredit",
    "TrainerSection",
    "add_import_paths",
    "apply_overrides",
    "evaluates_during_training",
    "is_recipe_file",
    "load_recipe",
    "parse_recipe",
    "read_recipe_file",
]
