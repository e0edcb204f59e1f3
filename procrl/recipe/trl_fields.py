"""The ``trainer`` section's TRL part: every key that is not procrl's own is a TRL ``GRPOConfig``
field under TRL's name, checked here against procrl's table of TRL's fields (trl_schema.py),
so that a bad value fails in one line before any model loads, never importing TRL.

Closed sets of values come from TRL's own dataclasses where TRL states them (an Enum annotation
or ``metadata["choices"]``, generated into trl_schema.py); :data:`HELP_CHOICES` and
:data:`TRL_RANGES` hold what TRL states only in prose or not at all, and tests/test_trl_fields.py
checks each of their entries against the installed TRL.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from procrl.core.config import ConfigError, check_value, from_dict, suggest
from procrl.recipe.sections import TrainerSection, check_range
from procrl.recipe.trl_schema import GRPO_CONFIG_CHOICES

__all__ = [
    "HELP_CHOICES",
    "MANAGED_TRL_FIELDS",
    "REPORT_TO_INTEGRATIONS",
    "TRL_CHOICES",
    "TRL_RANGES",
    "check_choice",
    "check_report_to",
    "trl_fields",
    "validate_trainer",
]

# TRL string fields whose closed set of values TRL names only in the help text (TRL checks them
# only when the trainer starts); each value is checked against TRL's help by the tests.
HELP_CHOICES: dict[str, tuple[str, ...]] = {
    "loss_type": ("grpo", "dapo", "dr_grpo", "bnpo", "cispo", "sapo", "vespo", "luspo"),
    "scale_rewards": ("group", "batch", "none"),
    "multi_objective_aggregation": ("sum_then_normalize", "normalize_then_sum"),
    "vllm_mode": ("colocate", "server"),
}
# Every closed set: TRL's own (Enum annotations, metadata["choices"]), then the help text's.
TRL_CHOICES: dict[str, tuple[str, ...]] = {**GRPO_CONFIG_CHOICES, **HELP_CHOICES}
# trainer.report_to: transformers' integrations (the keys of its INTEGRATION_TO_CALLBACK, checked
# against the installed transformers by the tests), with "all" and "none"; transformers refuses
# any other name only once the model has loaded.
REPORT_TO_INTEGRATIONS: tuple[str, ...] = (
    "all",
    "none",
    "azure_ml",
    "clearml",
    "codecarbon",
    "comet_ml",
    "dagshub",
    "dvclive",
    "flyte",
    "kubeflow",
    "mlflow",
    "neptune",
    "swanlab",
    "tensorboard",
    "trackio",
    "wandb",
)


def check_report_to(value: Any) -> None:
    """``trainer.report_to``: an integration name or a list of them."""
    for name in [value] if isinstance(value, str) else value or []:
        if name not in REPORT_TO_INTEGRATIONS:
            raise ConfigError(
                f"trainer.report_to: unknown integration {name!r}{suggest(str(name), REPORT_TO_INTEGRATIONS)}; "
                f"allowed values: {', '.join(map(repr, REPORT_TO_INTEGRATIONS))} (or a list of them)"
            )


# Ranges of TRL numeric fields that TRL (or torch) checks only once the model has loaded, or
# never: (low, low included, high, high included, what the value means at the edge); None: open.
TRL_RANGES: dict[str, tuple[float | None, bool, float | None, bool, str]] = {
    "max_completion_length": (1, True, None, False, "tokens generated per completion"),
    "temperature": (0, False, None, False, "sampling temperature; TRL divides the logits by it"),
    "top_p": (0, False, 1, True, "nucleus sampling; 1 = off"),
    "top_k": (0, True, None, False, "0 = off"),
    "min_p": (0, True, 1, True, "minimum token probability relative to the most likely one"),
    "repetition_penalty": (0, False, None, False, "1 = off"),
    "beta": (0, True, None, False, "KL coefficient; 0 = no reference model"),
    "epsilon": (0, False, None, False, "clip range of the policy ratio"),
    "epsilon_high": (0, False, None, False, "upper clip range of the policy ratio"),
    "delta": (0, False, None, False, "upper bound of two-sided clipping"),
    "num_iterations": (1, True, None, False, "optimisation passes per generation batch"),
    "save_total_limit": (1, True, None, False, "checkpoints kept; null keeps every one"),
    "num_train_epochs": (0, False, None, False, "passes over the data (with max_steps: -1)"),
    "weight_decay": (0, True, None, False, ""),
    "max_grad_norm": (0, True, None, False, "0 = no clipping"),
    "warmup_steps": (0, True, None, False, "steps, or a fraction of the run below 1"),
    "adam_beta1": (0, True, 1, False, ""),
    "adam_beta2": (0, True, 1, False, ""),
    "adam_epsilon": (0, True, None, False, ""),
    "per_device_eval_batch_size": (1, True, None, False, ""),
    "generation_batch_size": (1, True, None, False, "completions generated together"),
    "steps_per_generation": (1, True, None, False, ""),
    "top_entropy_quantile": (0, True, 1, True, "1 = every token"),
    "vllm_gpu_memory_utilization": (0, False, 1, True, "share of the GPU's memory"),
    "dataloader_num_workers": (0, True, None, False, ""),
    "seed": (0, True, 2**32 - 1, True, "numpy's seed range"),
}


# Set by procrl from other sections; giving them under trainer would silently lose one of the two.
MANAGED_TRL_FIELDS = {
    "reward_weights": "set each component's weight under rewards.<name>.weight",
    "output_dir": "use the top-level output_dir key or --output-dir",
}


@functools.lru_cache(maxsize=1)
def trl_fields() -> dict[str, Any]:
    """GRPOConfig field name -> type, from procrl's table of TRL's fields (procrl/recipe/trl_schema.py,
    checked against the installed TRL by the tests): validating a recipe never imports TRL."""
    from procrl.recipe.trl_schema import GRPO_CONFIG_FIELDS

    return dict(GRPO_CONFIG_FIELDS)


def check_choice(path: str, key: str, value: Any) -> None:
    """A field with a closed set of values holds one of them (null where the field's type allows it:
    the type check follows; ``scale_rewards`` also takes TRL's booleans, which its help names)."""
    choices = TRL_CHOICES.get(key)
    if choices is None or value is None or value in choices:
        return
    if isinstance(value, bool) and key in HELP_CHOICES:
        return  # the type check decides
    allowed = ", ".join(map(repr, choices))
    hint = suggest(value, choices) if isinstance(value, str) else ""
    raise ConfigError(f"{path}: invalid value {value!r}; allowed values: {allowed}{hint}")


def validate_trainer(raw: Any) -> tuple[TrainerSection, dict[str, Any]]:
    """The ``trainer`` section: procrl's own keys as :class:`TrainerSection`, the rest as TRL's fields."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"trainer: expected a mapping, got {type(raw).__name__} {raw!r}")
    own = {f.name for f in dataclasses.fields(TrainerSection)}
    fields = trl_fields()
    trainer_args: dict[str, Any] = {}
    for key, value in raw.items():
        if key in own:
            continue
        path = f"trainer.{key}"
        if key in MANAGED_TRL_FIELDS:
            raise ConfigError(f"{path}: set by procrl; {MANAGED_TRL_FIELDS[key]}")
        if key not in fields:
            raise ConfigError(
                f"{path}: unknown key{suggest(key, list(fields) + list(own))}; "
                f"trainer keys are procrl's ({', '.join(sorted(own))}) or TRL GRPOConfig fields"
            )
        check_choice(path, key, value)
        trainer_args[key] = check_value(path, value, fields[key])
    section = from_dict(TrainerSection, {k: v for k, v in raw.items() if k in own}, "trainer")
    for key in ("num_generations", "per_device_train_batch_size", "max_steps", "gradient_accumulation_steps"):
        value = trainer_args.get(key)
        if isinstance(value, int) and value < (-1 if key == "max_steps" else 1):
            raise ConfigError(f"trainer.{key}: must be positive, got {value}")
    if trainer_args.get("max_steps") == 0:
        raise ConfigError(
            "trainer.max_steps: 0 trains nothing; give a positive number of steps, or -1 to train num_train_epochs"
        )
    for key in ("save_steps", "logging_steps", "eval_steps"):
        value = trainer_args.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
            raise ConfigError(f"trainer.{key}: must be positive (steps, or a fraction of the run below 1), got {value}")
    if "learning_rate" in trainer_args and trainer_args["learning_rate"] < 0:
        raise ConfigError(f"trainer.learning_rate: must be >= 0, got {trainer_args['learning_rate']}")
    for key, bounds in TRL_RANGES.items():
        if trainer_args.get(key) is not None:
            check_range(f"trainer.{key}", trainer_args[key], *bounds)
    check_report_to(trainer_args.get("report_to"))
    return section, trainer_args
