"""The whole recipe: its top-level keys, :class:`Recipe`, and :func:`parse_recipe`, which validates
a recipe mapping section by section and the checks that span sections."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from procrl.core.config import ConfigError, from_dict, suggest
from procrl.core.text import SENTENCE_SPLITTERS, use_sentence_splitter
from procrl.recipe.sections import DataSection, LaunchSection, LoggingSection, ModelSection, TrainerSection
from procrl.recipe.trl_fields import validate_trainer
from procrl.rewards.spec import ComponentSpec, parse_rewards

__all__ = ["MARKER", "TOP_LEVEL_KEYS", "Recipe", "evaluates_during_training", "parse_recipe"]

MARKER = "procrl/v1"


@dataclass
class Recipe:
    """A validated recipe. ``trainer_args`` are the TRL GRPOConfig fields it sets."""

    raw: dict[str, Any]
    model: ModelSection | None  # None only for recipes loaded for scoring (procrl score)
    data: DataSection
    trainer: TrainerSection
    trainer_args: dict[str, Any]
    rewards: list[ComponentSpec]
    logging: LoggingSection
    launch: LaunchSection
    output_dir: str
    description: str | None = None
    path: str | None = None
    segmentation: str = "rules"

    def resolved(self) -> dict[str, Any]:
        """The recipe with defaults filled in, as written to the output dir and W&B config."""
        rewards = {}
        raw_rewards = self.raw.get("rewards") or {}
        for spec in self.rewards:
            entry = {"type": spec.type, "weight": spec.weight}
            if spec.gate is not None:
                entry["gate"] = dataclasses.asdict(spec.gate)
            entry["fallback"] = spec.fallback
            if dataclasses.is_dataclass(spec.settings):
                entry.update(dataclasses.asdict(spec.settings))
            else:
                entry.update({k: v for k, v in (raw_rewards.get(spec.name) or {}).items() if k not in entry})
            rewards[spec.name] = entry
        return {
            "recipe": MARKER,
            "description": self.description,
            "output_dir": self.output_dir,
            "model": dataclasses.asdict(self.model) if self.model is not None else None,
            "data": dataclasses.asdict(self.data),
            "trainer": {**dataclasses.asdict(self.trainer), **self.trainer_args},
            "rewards": rewards,
            "logging": dataclasses.asdict(self.logging),
            "launch": dataclasses.asdict(self.launch),
            "segmentation": self.segmentation,
        }


TOP_LEVEL_KEYS = (
    "recipe",
    "description",
    "output_dir",
    "model",
    "data",
    "trainer",
    "rewards",
    "logging",
    "launch",
    "segmentation",
)


def evaluates_during_training(trainer_args: dict[str, Any]) -> bool:
    """Whether the Trainer will evaluate: ``eval_steps`` alone turns on ``eval_strategy: steps``."""
    return str(trainer_args.get("eval_strategy", "steps" if trainer_args.get("eval_steps") else "no")) != "no"


def parse_recipe(raw: Any, *, path: str | None = None, scoring: bool = False) -> Recipe:
    """Validate a recipe mapping (overrides already applied).

    ``scoring``: for ``procrl score``, which uses the reward mix only: the ``model`` section is
    optional and the ``trainer`` section is not read (``recipe.trainer`` has the defaults)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"recipe file must hold a mapping, got {type(raw).__name__}")
    marker = raw.get("recipe")
    if marker != MARKER:
        if marker is None:
            raise ConfigError(f"recipe: missing marker key; a procrl recipe starts with 'recipe: {MARKER}'")
        raise ConfigError(f"recipe: unsupported marker {marker!r}; expected {MARKER!r}")
    for key in raw:
        if key not in TOP_LEVEL_KEYS:
            raise ConfigError(
                f"{key}: unknown key{suggest(key, TOP_LEVEL_KEYS)}; top-level keys: {', '.join(TOP_LEVEL_KEYS)}"
            )
    if raw.get("model") is None and not scoring:
        raise ConfigError("model: required section is missing (at least model.name_or_path)")
    model = from_dict(ModelSection, raw.get("model"), "model") if raw.get("model") is not None else None
    data = from_dict(DataSection, raw.get("data"), "data")
    trainer, trainer_args = (TrainerSection(), {}) if scoring else validate_trainer(raw.get("trainer"))
    rewards = parse_rewards(raw.get("rewards"), "rewards")
    reward_names = [spec.name for spec in rewards]
    for name in trainer.process_rewards or []:
        if name not in reward_names:
            raise ConfigError(
                f"trainer.process_rewards: no reward component named {name!r}{suggest(name, reward_names)}"
            )
    from procrl.data.qa import declared_answer_kind
    from procrl.rewards.spec import check_answer_kind

    check_answer_kind(
        declared_answer_kind(data),
        rewards,  # before anything loads
        "data.answer_kind" if data.answer_kind else f"data.dataset {data.dataset!r}",
    )
    if data.eval_judge is not None:
        judges = [spec.name for spec in rewards if spec.type == "first_error"]
        if data.eval_judge not in judges:
            raise ConfigError(
                f"data.eval_judge: no first_error component named {data.eval_judge!r}"
                f"{suggest(data.eval_judge, judges)} (first_error components: {', '.join(judges) or 'none'})"
            )
    if evaluates_during_training(trainer_args):
        data.check_held_out("data")
    logging_section = from_dict(LoggingSection, raw.get("logging"), "logging")
    launch = from_dict(LaunchSection, raw.get("launch"), "launch")
    output_dir = raw.get("output_dir", "outputs/procrl")
    if not isinstance(output_dir, str) or not output_dir:
        raise ConfigError(f"output_dir: expected a non-empty string, got {output_dir!r}")
    description = raw.get("description")
    if description is not None and not isinstance(description, str):
        raise ConfigError(f"description: expected a string, got {type(description).__name__}")
    segmentation = raw.get("segmentation", "rules")
    if segmentation not in SENTENCE_SPLITTERS:
        raise ConfigError(
            f"segmentation: expected one of {list(SENTENCE_SPLITTERS)}, got {segmentation!r}"
            f"{suggest(str(segmentation), SENTENCE_SPLITTERS)}"
        )
    # One splitter per process, chosen here so that every reward this recipe builds segments the
    # same way; a splitter that cannot run here (spaCy asked for, not installed) stops before any
    # model loads, in one line.
    use_sentence_splitter(segmentation)
    return Recipe(
        raw=raw,
        model=model,
        data=data,
        trainer=trainer,
        trainer_args=trainer_args,
        rewards=rewards,
        logging=logging_section,
        launch=launch,
        output_dir=output_dir,
        description=description,
        path=path,
        segmentation=segmentation,
    )
