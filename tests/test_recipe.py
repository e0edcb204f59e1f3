"""Recipe validation: broken recipes and overrides fail with one clear line, before any load."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from procrl.core.config import ConfigError
from procrl.launch import cli
from procrl.recipe import apply_overrides, is_recipe_file, load_recipe, parse_recipe

BASE = {
    "recipe": "procrl/v1",
    "model": {"name_or_path": "procrl:tiny-qwen2"},
    "data": {"dataset": "synthetic"},
    "trainer": {"max_steps": 1},
    "rewards": {"accuracy": {}},
}


@pytest.fixture
def no_model_loading(monkeypatch):
    """Fail the test if anything tries to load or build a model."""
    import transformers

    import procrl.models.loading

    def forbidden(*args, **kwargs):
        raise AssertionError("a model was loaded during recipe validation")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", forbidden)
    monkeypatch.setattr(procrl.models.loading, "ensure_tiny_model", forbidden)


def write(tmp_path, data, name="recipe.yaml"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def test_tiny_recipe_checks(tiny_recipe, capsys, no_model_loading):
    assert cli.main(["check", str(tiny_recipe)]) == 0
    out = capsys.readouterr().out
    assert "valid" in out and "plan:" in out and "accuracy" in out


def test_misspelled_reward_suggests(tmp_path, capsys, no_model_loading):
    path = write(
        tmp_path,
        textwrap.dedent("""\
        recipe: procrl/v1
        model: {name_or_path: procrl:tiny-qwen2}
        rewards: {acurracy: {}}
        """),
    )
    assert cli.main(["check", str(path)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "acurracy" in err and "did you mean 'accuracy'" in err


BROKEN = [
    # (description, mutation of BASE or override list, expected fragments)
    ("unknown top-level key", {"rewardz": {}}, ["rewardz", "did you mean 'rewards'"]),
    ("missing marker", {"recipe": None}, ["recipe", "procrl/v1"]),
    ("wrong marker", {"recipe": "procrl/v0"}, ["unsupported marker", "procrl/v1"]),
    ("unknown model key", {"model": {"name_or_path": "x", "dtyp": "float32"}}, ["model.dtyp", "did you mean 'dtype'"]),
    (
        "bad dtype value",
        {"model": {"name_or_path": "x", "dtype": "fp33"}},
        ["model.dtype", "allowed values", "'bfloat16'"],
    ),
    ("wrong type", {"trainer": {"learning_rate": "fast"}}, ["trainer.learning_rate", "expected a number"]),
    (
        "unknown trainer key",
        {"trainer": {"num_generation": 4}},
        ["trainer.num_generation", "did you mean 'num_generations'"],
    ),
    ("bad TRL choice", {"trainer": {"loss_type": "ppo_clip"}}, ["trainer.loss_type", "allowed values", "'dapo'"]),
    ("non-finite weight", {"rewards": {"accuracy": {"weight": float("nan")}}}, ["rewards.accuracy.weight", "finite"]),
    ("infinite weight", {"rewards": {"accuracy": {"weight": float("inf")}}}, ["rewards.accuracy.weight", "finite"]),
    (
        "unknown component setting",
        {"rewards": {"accuracy": {"tolerence": 0.1}}},
        ["rewards.accuracy.tolerence", "did you mean 'tolerance'"],
    ),
    (
        "unknown reward type",
        {"rewards": {"mine": {"type": "acuracy"}}},
        ["rewards.mine.type", "did you mean 'accuracy'"],
    ),
    (
        "unimportable type",
        {"rewards": {"mine": {"type": "no_such_pkg.mod:fn"}}},
        ["rewards.mine.type", "cannot import", "no_such_pkg"],
    ),
    (
        "missing attribute",
        {"rewards": {"mine": {"type": "procrl.rewards.accuracy:nope"}}},
        ["rewards.mine.type", "no attribute 'nope'"],
    ),
    (
        "gate on unknown component",
        {"rewards": {"format": {"gate": {"on": "acc"}}, "accuracy": {}}},
        ["rewards.format.gate.on", "'acc'", "did you mean 'accuracy'"],
    ),
    ("empty rewards", {"rewards": {}}, ["rewards", "non-empty"]),
    (
        "weights managed by procrl",
        {"trainer": {"reward_weights": [1.0]}},
        ["trainer.reward_weights", "rewards.<name>.weight"],
    ),
    ("bad chat_template", {"data": {"chat_template": "yes"}}, ["data.chat_template", "allowed values"]),
    ("negative generations", {"trainer": {"num_generations": 0}}, ["trainer.num_generations", "positive"]),
    (
        "prompt template without question",
        {"data": {"prompt_template": "Solve it."}},
        ["data.prompt_template", "{question}"],
    ),
    ("missing model", {"model": None}, ["model", "name_or_path"]),
    ("launch processes", {"launch": {"num_processes": 0}}, ["launch.num_processes", ">= 1"]),
]


@pytest.mark.parametrize("description,mutation,fragments", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_recipes_fail_clearly(tmp_path, capsys, no_model_loading, description, mutation, fragments):
    data = {**BASE, **mutation}
    if data.get("recipe") is None:
        data.pop("recipe")
    if data.get("model") is None:
        data.pop("model")
    path = write(tmp_path, data)
    assert cli.main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for fragment in fragments:
        assert fragment in err, (description, err)


OVERRIDES = [
    (["trainer.max_stepz=3"], ["trainer.max_stepz", "did you mean 'max_steps'"]),
    (["rewards.accuracy.weight=.nan"], ["rewards.accuracy.weight", "finite"]),
    (["trainer.max_steps"], ["--set", "key.path=value"]),
    (["model.name_or_path.sub=1"], ["model.name_or_path", "not a mapping"]),
    (["rewards.accuracy.weight=heavy"], ["rewards.accuracy.weight", "expected a number"]),
    (["trainer..x=1"], ["empty key segment"]),
]


@pytest.mark.parametrize("overrides,fragments", OVERRIDES, ids=[o[0][0] for o in OVERRIDES])
def test_broken_overrides_fail_clearly(tmp_path, capsys, no_model_loading, overrides, fragments):
    path = write(tmp_path, BASE)
    argv = ["check", str(path)]
    for override in overrides:
        argv += ["--set", override]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for fragment in fragments:
        assert fragment in err, err


def test_invalid_yaml_names_the_line(tmp_path, capsys):
    path = write(tmp_path, "recipe: procrl/v1\nmodel: [unclosed\n")
    assert cli.main(["check", str(path)]) == 2
    assert "line" in capsys.readouterr().err


def test_overrides_address_one_component_and_create_new_ones(tmp_path):
    path = write(tmp_path, BASE)
    recipe = load_recipe(
        path,
        [
            "rewards.accuracy.weight=0.3",
            "rewards.fmt.type=format",
            "rewards.fmt.partial=true",
            "trainer.max_steps=7",
            "data.synthetic.seed=5",
        ],
    )
    weights = {spec.name: spec.weight for spec in recipe.rewards}
    assert weights == {"accuracy": 0.3, "fmt": 1.0}
    assert recipe.rewards[1].type == "format" and recipe.rewards[1].settings.partial is True
    assert recipe.trainer_args["max_steps"] == 7
    assert recipe.data.synthetic.seed == 5


def test_two_instances_of_one_type(tmp_path):
    recipe = parse_recipe(
        {**BASE, "rewards": {"strict": {"type": "format"}, "loose": {"type": "format", "partial": True}}}
    )
    assert [(s.name, s.type, s.settings.partial) for s in recipe.rewards] == [
        ("strict", "format", False),
        ("loose", "format", True),
    ]


def test_trl_fields_pass_through_with_their_names(tmp_path):
    recipe = parse_recipe(
        {
            **BASE,
            "trainer": {
                "multi_objective_aggregation": "normalize_then_sum",
                "scale_rewards": "batch",
                "num_generations": 4,
            },
        }
    )
    assert recipe.trainer_args == {
        "multi_objective_aggregation": "normalize_then_sum",
        "scale_rewards": "batch",
        "num_generations": 4,
    }


def test_false_drops_a_component(tmp_path):
    recipe = load_recipe(write(tmp_path, {**BASE, "rewards": {"accuracy": {}, "format": {}}}), ["rewards.format=false"])
    assert [s.name for s in recipe.rewards] == ["accuracy"]
    with pytest.raises(ConfigError, match="disabled"):
        load_recipe(write(tmp_path, BASE), ["rewards.accuracy=false"])


def test_apply_overrides_does_not_mutate_input():
    raw = {"a": {"b": 1}}
    assert apply_overrides(raw, ["a.b=2", "a.c=[1, 2]"]) == {"a": {"b": 2, "c": [1, 2]}}
    assert raw == {"a": {"b": 1}}


def test_resolved_recipe_round_trips(tmp_path):
    recipe = parse_recipe(BASE)
    again = parse_recipe(recipe.resolved())
    assert again.resolved() == recipe.resolved()


def test_is_recipe_file(tmp_path, tiny_recipe):
    assert is_recipe_file(tiny_recipe)
    assert not is_recipe_file(write(tmp_path, {"foo": 1}, "other.yaml"))
    assert not is_recipe_file(write(tmp_path, "recipe: procrl/v1\n", "recipe.txt"))
    assert not is_recipe_file(tmp_path / "missing.yaml")


def test_training_on_test_split_is_refused(tmp_path):
    from procrl.launch.run import train

    recipe = parse_recipe({**BASE, "data": {"dataset": "synthetic", "split": "test"}})
    with pytest.raises(ConfigError, match="data.split"):
        train(recipe)


def test_process_aggregation_keys_are_validated():
    base = apply_overrides(BASE, ["trainer.credit=process"])
    recipe = parse_recipe(base)
    assert (recipe.trainer.process_aggregation, recipe.trainer.process_temperature) == ("min", 0.1)
    assert parse_recipe(apply_overrides(base, ["trainer.process_aggregation=sum"])).trainer.process_aggregation == "sum"
    with pytest.raises(
        ConfigError, match=r"trainer\.process_aggregation: invalid value 'mean'; allowed values: 'min', 'sum'"
    ):
        parse_recipe(apply_overrides(base, ["trainer.process_aggregation=mean"]))
    with pytest.raises(ConfigError, match=r"trainer\.process_temperature: must be > 0"):
        parse_recipe(apply_overrides(base, ["trainer.process_temperature=0"]))
