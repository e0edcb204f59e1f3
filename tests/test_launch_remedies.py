"""The memory plan's ZeRO-3 terms by hand, ``--gpu-memory`` as the user's number, every remedy a
40 GB stop line names re-planned from scratch (fits, at the total the line says), the idle-GPU line
of a multi-node launch, and "the model is in DIR" only where from_pretrained loads a model."""

from __future__ import annotations

import pytest

from procrl.launch.prelaunch import LaunchLayout, idle_gpu_warning
from procrl.recipe import load_recipe
from procrl.recipe.memory import CARD_RESERVE, CARDS, GIB, format_bytes, gpu_plan, remedies, zero_setup
from procrl.recipe.plan import planned_processes
from procrl.trainers.checkpoints import holds_model
from tests.helpers.launch import REPO, procrl, run_command

FLAGSHIP = str(REPO / "recipes" / "gsm8k_trace.yaml")
# Qwen2.5-7B: hidden 3584, vocab 152,064, 28 layers, untied head; 7,615,616,512 parameters
HEAD = 152_064 * 3_584


def _plan(path: str, overrides=(), card: float = CARDS["40 GB"], setup=None, processes=None):
    recipe = load_recipe(path, list(overrides))
    return gpu_plan(recipe, setup or zero_setup(recipe), processes or planned_processes(recipe), card)


def test_the_zero3_terms_of_the_fused_lm_head_and_the_gathered_layers_by_hand():
    plan = _plan(FLAGSHIP, card=CARDS["80 GB"])
    # the gathered head in bf16 (2 bytes) and its float32 gradient (4 bytes), whole on every rank
    assert plan.parts["lm_head"] == HEAD * (2 + 4)
    assert 3.0 * GIB < plan.parts["lm_head"] < 3.1 * GIB
    # two layers' weights in bf16: (7,615,616,512 - 2 x head) / 28 layers x 2 x 2 bytes
    assert plan.parts["zero3_working_set"] == pytest.approx((7_615_616_512 - 2 * HEAD) / 28 * 2 * 2)
    assert 0.4 * GIB < plan.parts["zero3_working_set"] < 1.9 * GIB
    lora = _plan(FLAGSHIP, ["model.lora.r=16"], card=CARDS["80 GB"])
    assert lora.parts["lm_head"] == HEAD * 2  # frozen under LoRA: no gradient
    ddp = _plan(FLAGSHIP, ["launch.config_file=launch/accelerate/zero2.yaml"], card=CARDS["80 GB"])
    assert "lm_head" not in ddp.parts and "zero3_working_set" not in ddp.parts  # counted in the weights


def test_each_40_gb_remedy_of_the_flagship_is_re_planned_and_fits():
    recipe = load_recipe(FLAGSHIP, [])
    setup, processes, card = zero_setup(recipe), planned_processes(recipe), CARDS["40 GB"]
    assert not gpu_plan(recipe, setup, processes, card).fits(card)
    named = remedies(recipe, setup, processes, card)
    assert [text for text, _ in named] == ["--set trainer.vllm_tensor_parallel_size=2"]
    for text, total in named:  # re-planned from the recipe file with the change as a user gives it
        key_value = text.removeprefix("--set ")
        again = _plan(FLAGSHIP, [key_value], card=card)
        assert again.fits(card) and again.total == pytest.approx(total)
        assert again.total <= card * (1 - CARD_RESERVE)
    # what the docs used to suggest does not fit this card: the plan refutes it, the line omits it
    assert not _plan(FLAGSHIP, ["model.lora.r=16"], card=card).fits(card)
    offload = _plan(FLAGSHIP, ["launch.config_file=launch/accelerate/zero3_offload.yaml"], card=card)
    assert not offload.fits(card)


@pytest.mark.parametrize(
    "path", ["gsm8k_trace.yaml", "gsm8k_accuracy.yaml", "csqa_trace.yaml", "gsm8k_ppo_process.yaml"]
)
def test_every_remedy_a_recipes_40_gb_line_names_fits_when_re_planned(path):
    recipe = load_recipe(str(REPO / "recipes" / path), [])
    setup, processes, card = zero_setup(recipe), planned_processes(recipe), CARDS["40 GB"]
    for text, total in remedies(recipe, setup, processes, card):
        assert text.startswith("--set "), text  # the remedies these recipes get are recipe keys
        again = _plan(str(REPO / "recipes" / path), [text.removeprefix("--set ")], card=card)
        assert again.fits(card) and again.total == pytest.approx(total), text


def test_gpu_memory_is_the_users_number_not_the_built_in_card_of_its_name(tmp_path):
    result = run_command([*procrl(), "check", FLAGSHIP, "--gpu-memory", "40"], tmp_path, timeout=300)
    assert result.returncode == 0, result.output
    line = next(line for line in result.stdout.splitlines() if "total_on_40_GB" in line)
    # 40e9 bytes = 37.3 GiB (the built-in 40 GB card is 42.5e9 bytes, 39.6 GiB)
    assert f"the 40 GB card ({format_bytes(40e9)}," in line and format_bytes(40e9) == "37.3 GiB", line
    assert sum("total_on_40_GB" in line for line in result.stdout.splitlines()) == 1


def test_the_idle_gpu_line_of_a_multi_node_launch():
    one_node = LaunchLayout(2, 2, "DEEPSPEED", "launch.num_processes", "recipe", None)
    assert idle_gpu_warning(one_node, 2) == (
        "2 process(es) over 2 machines is 1 per machine (num_processes counts all machines), leaving 1 of this "
        "machine's 2 GPUs idle; to use them all: --num_processes 4"
    )
    assert idle_gpu_warning(LaunchLayout(4, 2, "DEEPSPEED", "--num_processes", "command line", None), 2) is None
    assert idle_gpu_warning(LaunchLayout(1, 1, "NO", "launch.num_processes", "default", None), 8) is None


def test_the_model_is_in_dir_only_where_from_pretrained_loads_one(tmp_path):
    shards = tmp_path / "shards"
    (shards / "global_step1").mkdir(parents=True)
    for name in ("latest", "zero_to_fp32.py", "config.json", "trainer_state.json"):
        (shards / name).write_text("{}")
    assert not holds_model(shards)  # DeepSpeed's shards and zero_to_fp32.py alone
    (shards / "model.safetensors").write_bytes(b"x")
    assert holds_model(shards)
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    assert not holds_model(adapter)
    (adapter / "adapter_model.safetensors").write_bytes(b"x")
    assert holds_model(adapter) and not holds_model(tmp_path / "missing")
