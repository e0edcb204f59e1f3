"""The ``trainer`` section's TRL fields against the installed TRL: the closed sets of values TRL
states in its dataclasses are generated from them (tests/test_startup.py keeps that table
current); the sets TRL names only in its help text (HELP_CHOICES) and the numeric ranges TRL does
not state (TRL_RANGES) are procrl's tables, checked here entry by entry: the field exists, TRL's
default is allowed, TRL's help names each value, and TRL builds its config from every value and
boundary procrl accepts."""

from __future__ import annotations

import dataclasses
import re
import typing

import pytest

from procrl.core.config import ConfigError
from procrl.recipe import MARKER, parse_recipe
from procrl.recipe.sections import check_range
from procrl.recipe.trl_fields import HELP_CHOICES, TRL_CHOICES, TRL_RANGES
from procrl.recipe.trl_schema import GRPO_CONFIG_CHOICES, GRPO_CONFIG_FIELDS

trl = pytest.importorskip("trl")

# Quoted words in a field's help that are not among its values (loss_type's help names
# importance_sampling_level's 'sequence' where it explains 'luspo').
NOT_VALUES = {"loss_type": {"sequence"}}


# Edges procrl accepts that TRL refuses by a rule across fields, checked when TRL builds its config
# (procrl's PPO samples one completion per prompt, so the bound stays the one-field one).
CROSS_FIELD = {"generation_batch_size": "must be divisible by num_generations"}


def _fields() -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(trl.GRPOConfig) if f.init}


def _config(tmp_path, **values):
    """TRL's own construction of the config (its __post_init__ checks), on the CPU."""
    return trl.GRPOConfig(output_dir=str(tmp_path), report_to="none", use_cpu=True, **values)


def _integer(key: str) -> bool:
    return GRPO_CONFIG_FIELDS[key] in (int, int | None)


def _trainer_error(trainer: dict) -> str:
    raw = {
        "recipe": MARKER,
        "model": {"name_or_path": "procrl:tiny-qwen2"},
        "trainer": trainer,
        "rewards": {"accuracy": {"type": "accuracy"}},
    }
    with pytest.raises(ConfigError) as caught:
        parse_recipe(raw)
    return str(caught.value)


def _accepted(trainer: dict) -> dict:
    raw = {
        "recipe": MARKER,
        "model": {"name_or_path": "procrl:tiny-qwen2"},
        "trainer": trainer,
        "rewards": {"accuracy": {"type": "accuracy"}},
    }
    return parse_recipe(raw).trainer_args


@pytest.mark.parametrize("key", sorted(HELP_CHOICES))
def test_help_choices_are_the_values_trl_help_names(key):
    field = _fields()[key]
    assert key in GRPO_CONFIG_FIELDS and key not in GRPO_CONFIG_CHOICES  # TRL states no machine-readable set
    assert field.default in HELP_CHOICES[key]
    named = set(re.findall(r"['`]([a-z_]+)'", field.metadata["help"]))
    assert set(HELP_CHOICES[key]) <= named, set(HELP_CHOICES[key]) - named
    assert named - set(HELP_CHOICES[key]) == NOT_VALUES.get(key, set())  # a value TRL adds fails here


@pytest.mark.parametrize("key", sorted(HELP_CHOICES))
def test_trl_builds_its_config_from_every_help_choice(tmp_path, key):
    for value in HELP_CHOICES[key]:
        assert getattr(_config(tmp_path, **{key: value}), key) == value


def test_trl_stated_choices_are_refused_by_trl_too(tmp_path):
    """For the Enum-typed fields procrl's early refusal is TRL's own rule, stated once the config is built."""
    enum_typed = [key for key in GRPO_CONFIG_CHOICES if "choices" not in _fields()[key].metadata]
    assert {"eval_strategy", "save_strategy", "lr_scheduler_type", "optim"} <= set(enum_typed)
    for key in enum_typed:
        assert str(_fields()[key].default) in GRPO_CONFIG_CHOICES[key]
        with pytest.raises(ValueError, match="is not a valid"):
            _config(tmp_path, **{key: "not_a_value"})


@pytest.mark.parametrize("key", sorted(TRL_CHOICES))
def test_every_closed_set_refuses_in_one_line_naming_the_key_and_the_values(key):
    message = _trainer_error({key: "not_a_value"})
    assert "\n" not in message and message.startswith(f"trainer.{key}: invalid value 'not_a_value'")
    assert all(repr(value) in message for value in TRL_CHOICES[key])
    assert _accepted({key: TRL_CHOICES[key][-1]})[key] == TRL_CHOICES[key][-1]


def test_a_near_miss_is_named_and_null_passes_where_trl_allows_it():
    assert _trainer_error({"eval_strategy": "step"}).endswith("(did you mean 'steps'?)")
    assert _accepted({"ddp_backend": None}) == {"ddp_backend": None}  # str | None in TRL
    assert "trainer.eval_strategy" in _trainer_error({"eval_strategy": True})  # an Enum takes no boolean


@pytest.mark.parametrize("key", sorted(TRL_RANGES))
def test_each_range_fits_the_installed_trl(tmp_path, key):
    low, low_in, high, high_in, _ = TRL_RANGES[key]
    field = _fields()[key]
    assert set(typing.get_args(GRPO_CONFIG_FIELDS[key]) or (GRPO_CONFIG_FIELDS[key],)) - {type(None)} <= {int, float}
    if field.default is not None:
        check_range(f"trainer.{key}", field.default, *TRL_RANGES[key])  # TRL's default is allowed
    for edge, included in ((low, low_in), (high, high_in)):
        if edge is not None and included:  # an edge procrl accepts, TRL builds its config from
            value = int(edge) if _integer(key) else float(edge)
            if key in CROSS_FIELD:
                with pytest.raises(ValueError, match=CROSS_FIELD[key]):
                    _config(tmp_path, per_device_train_batch_size=1, num_generations=2, **{key: value})
            else:
                _config(tmp_path, **{key: value})
            assert _accepted({key: value})[key] == value


def _just_outside(key: str) -> list[int | float]:
    low, low_in, high, high_in, _ = TRL_RANGES[key]
    step = 1 if _integer(key) else 1e-3
    outside = []
    if low is not None:
        outside.append(low if not low_in else low - step)
    if high is not None:
        outside.append(high if not high_in else high + step)
    return [int(value) if _integer(key) else float(value) for value in outside]


def test_trl_itself_refuses_only_warmup_steps_outside_its_range(tmp_path):
    """Where TRL checks a range itself when it builds its config, the table agrees with it; a range
    TRL starts to check shows up here."""
    refused = set()
    for key in TRL_RANGES:
        for value in _just_outside(key):
            try:
                _config(tmp_path, **{key: value})
            except ValueError:
                refused.add(key)
    assert refused == {"warmup_steps"}


@pytest.mark.parametrize("key", sorted(TRL_RANGES))
def test_each_range_refuses_just_outside_in_one_line(key):
    integer = _integer(key)
    for value in _just_outside(key):
        message = _trainer_error({key: int(value) if integer else float(value)})
        assert "\n" not in message and message.startswith(f"trainer.{key}: must be in "), message
