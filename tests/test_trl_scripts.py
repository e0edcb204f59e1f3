"""procrl's rewards in a plain TRL script (procrl.trl, examples/trl_grpo.py): the example trains 2
steps on the tiny model and its logged metrics hold every component, its failure counts and its
fallbacks; the reward functions given to TRL's own GRPOTrainer resolve "no opinion" per group."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.trl import GRPOTrainer, recipe_rewards

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "trl_grpo.py"

CUSTOM = '''
def half_silent(completions, **kwargs):
    """No opinion on every other completion: the group mean fills it."""
    return [None if i % 2 else 0.5 for i in range(len(completions))]


def broken(completions, **kwargs):
    raise RuntimeError("judge unreachable")
'''

RECIPE = """recipe: procrl/v1
rewards:
  accuracy: {weight: 1.0}
  format: {weight: 0.2, partial: true}
  first_error: {weight: 0.5, backend: arithmetic}
  silent: {type: "my_script_rewards:half_silent", weight: 0.1}
  broken: {type: "my_script_rewards:broken", weight: 0.1, fallback: -1.0}
"""


def _example():
    spec = importlib.util.spec_from_file_location("procrl_example_trl_grpo", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _recipe(tmp_path: Path) -> Path:
    (tmp_path / "my_script_rewards.py").write_text(CUSTOM)
    path = tmp_path / "recipe.yaml"
    path.write_text(RECIPE)
    return path


@pytest.mark.parametrize("credit", ["outcome", "process"])
def test_example_trains_two_steps_and_logs_every_component(tmp_path, credit):
    """Outcome: the script as a user runs it (its own process, TRL's parser reading the command line);
    process: in this process, reading the trainer's log."""
    from procrl.data.synthetic import generate_problems

    data = tmp_path / "train.jsonl"  # GSM8K's fields (question, answer with '#### N'), embedded generator
    data.write_text("".join(json.dumps(row) + "\n" for row in generate_problems(16, seed=0)))
    out = tmp_path / "out"
    argv = [
        "--recipe", str(_recipe(tmp_path)), "--credit", credit,
        "--model_name_or_path", "procrl:tiny-qwen2", "--dataset_name", str(data),
        "--output_dir", str(out), "--max_steps", "2", "--logging_steps", "1",
        "--per_device_train_batch_size", "4", "--num_generations", "4", "--max_completion_length", "32",
        "--bf16", "false", "--report_to", "none", "--seed", "0",
    ]  # fmt: skip
    if credit == "outcome":
        argv += ["--save_strategy", "steps", "--save_steps", "2"]  # the log lands in checkpoint-2
        done = subprocess.run([sys.executable, str(EXAMPLE), *argv], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        state = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())
        history = state["log_history"]
    else:
        module = _example()
        parser = module.TrlParser((module.ProcrlScriptArguments, module.GRPOConfig, module.ModelConfig))
        trainer = module.main(*parser.parse_args_and_config([*argv, "--save_strategy", "no"]))
        history = trainer.state.log_history
        assert trainer.args.reward_weights == [1.0, 0.2, 0.5, 0.1, 0.1]
    logs = [entry for entry in history if "reward" in entry]
    assert len(logs) == 2, history
    names = ["accuracy", "format", "first_error", "silent", "broken"]
    weights = [1.0, 0.2, 0.5, 0.1, 0.1]
    for entry in logs:
        # the recipe's weights made the reward: its mean is the weighted sum of the components' means
        assert entry["reward"] == pytest.approx(sum(w * entry[f"rewards/{n}/mean"] for n, w in zip(names, weights)))
        for name in names:
            assert f"rewards/{name}/mean" in entry and f"rewards/{name}/std" in entry, (name, sorted(entry))
        # the failure policy reached the log: the broken component's failures, counted per completion,
        # and its numeric fallback as its score; the silent one's None filled from its group
        assert entry["rewards/broken/failures/exception"] == 4.0
        assert entry["rewards/broken/mean"] == -1.0
        assert entry["rewards/silent/fallback/filled"] == 2.0
        assert entry["rewards/silent/mean"] == 0.5
        assert any(key.startswith("diagnostics/") for key in entry)  # procrl's diagnostics callback
        if credit == "process":
            assert "process/advantage_abs_mean" in entry
    assert (out / "model.safetensors").is_file()


def test_rewards_from_a_recipe_a_section_file_or_a_dict(tmp_path):
    recipe = _recipe(tmp_path)
    from_recipe = recipe_rewards(recipe)
    assert from_recipe.names == ["accuracy", "format", "first_error", "silent", "broken"]
    assert [f.__name__ for f in from_recipe.funcs] == from_recipe.names
    section = tmp_path / "rewards.yaml"
    section.write_text("accuracy: {weight: 2.0}\nformat: {weight: 0.5}\n")
    assert recipe_rewards(section).weights == [2.0, 0.5]
    assert recipe_rewards({"rewards": {"accuracy": {"weight": 1.0}}}).names == ["accuracy"]
    overridden = recipe_rewards(recipe, overrides=["rewards.format.weight=0.7"])
    assert overridden.weights[1] == 0.7
    with pytest.raises(ConfigError, match=r"rewards\.acuracy"):
        recipe_rewards({"acuracy": {"weight": 1.0}})
    with pytest.raises(ConfigError, match="recipe file not found"):
        recipe_rewards(tmp_path / "missing.yaml")


def test_plain_trl_reward_functions_resolve_no_opinion_per_prompt_group(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "my_script_rewards.py").write_text(CUSTOM)
    rewards = recipe_rewards({"silent": {"type": "my_script_rewards:half_silent", "weight": 1.0}})
    prompts = ["p1"] * 4 + ["p2"] * 4
    completions = [f"step {i}\n#### {i}" for i in range(8)]
    scores = rewards.funcs[0](prompts, completions, answer=["1"] * 8)
    # TRL would read None as 0 (nansum); here each is its group's mean
    assert scores == [0.5] * 8
    rewards.resolved_by_trainer = True  # procrl's trainers resolve after gathering: None stays for them
    raw = rewards.funcs[0](prompts, [c + " " for c in completions], answer=["1"] * 8)
    assert raw[1] is None and raw[0] == 0.5


def test_drop_in_trainer_refuses_reward_functions_that_are_not_procrls():
    def mine(completions, **kwargs):
        return [0.0] * len(completions)

    with pytest.raises(ConfigError, match="procrl's reward functions first"):
        GRPOTrainer(model="unused", reward_funcs=[mine])
    rewards = recipe_rewards({"accuracy": {"weight": 1.0}, "format": {"weight": 0.2}})
    with pytest.raises(ConfigError, match="in the recipe's order"):
        GRPOTrainer(model="unused", reward_funcs=list(reversed(rewards.funcs)))


def test_public_import_path():
    import procrl.trl

    assert procrl.trl.ProcessGRPOTrainer.__mro__[1].__name__ == "_FromRewardFunctions"
    assert not math.isnan(sum(recipe_rewards({"accuracy": {}}).weights))
    assert "procrl.trl" in sys.modules
