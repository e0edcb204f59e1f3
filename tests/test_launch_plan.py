"""The offline plan of ``procrl check``: ZeRO memory arithmetic and the 7B recipes planned here
(parameter counts: tests/test_model_parameters.py)."""

from __future__ import annotations

import pytest

from procrl.launch.cli import main as procrl_main
from procrl.models.architecture import model_architecture
from procrl.models.parameters import KNOWN_ARCHITECTURES, count_lora_parameters, count_parameters
from procrl.recipe import load_recipe
from procrl.recipe.memory import GIB, estimate_memory
from procrl.recipe.plan import plan
from tests.helpers.launch import REPO

SMALL = {
    "vocab_size": 96,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}


def test_model_architecture_finds_the_known_table_offline():
    assert model_architecture("Qwen/Qwen2.5-7B-Instruct")[0]["hidden_size"] == 3584
    assert model_architecture("org/unknown-model")[0] is None


def test_zero_memory_arithmetic():
    p = 8_000_000_000
    plain = estimate_memory(p, p, weight_bytes=2)  # bf16 weights, grads, 2 moments, replicated
    assert (plain.weights, plain.gradients, plain.optimizer_states) == (2 * p, 2 * p, 4 * p)
    z0 = estimate_memory(p, p, zero_stage=0, shards=8)  # DeepSpeed mixed precision: 2 + 2 + 12
    assert (z0.weights, z0.gradients, z0.optimizer_states) == (2 * p, 2 * p, 12 * p)
    z2 = estimate_memory(p, p, zero_stage=2, shards=8)
    assert (z2.weights, z2.gradients, z2.optimizer_states) == (2 * p, 2 * p / 8, 12 * p / 8)
    z3 = estimate_memory(p, p, zero_stage=3, shards=8, reference_model=True)
    assert z3.total == pytest.approx((16 * p + 2 * p) / 8)
    offload = estimate_memory(p, p, zero_stage=3, shards=8, offload_optimizer=True, offload_param=True)
    assert offload.optimizer_states == 0 and offload.weights == 0 and offload.host_offload == (12 * p + 2 * p) / 8
    lora = estimate_memory(p, 10_000_000, zero_stage=2, shards=8, lora=True)  # frozen base stays whole
    assert lora.weights == 2 * p + 4 * 10_000_000  # the adapters come on top of the base
    assert lora.optimizer_states == 8 * 10_000_000 / 8
    with pytest.raises(ValueError):
        estimate_memory(p, p, shards=0)


@pytest.mark.parametrize("lora", [True, False])
def test_memory_estimate_matches_a_model_after_an_optimizer_step(lora):
    """What procrl check estimates for a 16-bit policy without DeepSpeed, against what a real one
    holds after a backward pass and an AdamW step: a tiny bf16 Qwen2 with procrl's LoRA config
    (PEFT keeps the adapters in fp32, on top of the frozen base), or trained whole (weights,
    gradients and both moments in bf16). AdamW's per-tensor ``step`` scalars are left out."""
    import torch
    from peft import get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    from procrl.models.loading import lora_config

    config = AutoConfig.for_model("qwen2", **SMALL, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
    recipe = load_recipe(REPO / "recipes" / "gsm8k_tiny_smoke.yaml", ["model.lora={r: 4}"] if lora else [])
    if lora:
        model = get_peft_model(model, lora_config(recipe.model))
    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=1e-3)
    ids = torch.randint(0, SMALL["vocab_size"], (2, 8))
    model(input_ids=ids, labels=ids).loss.backward()
    gradients = sum(p.grad.numel() * p.grad.element_size() for p in trained)
    optimizer.step()
    moments = sum(
        v.numel() * v.element_size()
        for state in optimizer.state.values()
        for k, v in state.items()
        if k in ("exp_avg", "exp_avg_sq")
    )
    weights = sum(p.numel() * p.element_size() for p in model.parameters())

    values = config.to_dict()
    parameters = count_parameters(values)
    trainable = count_lora_parameters(values, 4, "all-linear") if lora else parameters
    assert sum(p.numel() for p in trained) == trainable
    estimate = estimate_memory(parameters, trainable, weight_bytes=2, lora=lora)
    assert (estimate.weights, estimate.gradients, estimate.optimizer_states) == (weights, gradients, moments)


def test_auto_dtype_reads_the_checkpoint(tmp_path):
    from procrl.recipe.memory import weight_bytes_per_parameter

    assert weight_bytes_per_parameter("auto", {"dtype": "float32"}) == 4
    assert weight_bytes_per_parameter("auto", {"torch_dtype": "bfloat16"}) == 2
    assert weight_bytes_per_parameter("auto", None) == 2
    assert weight_bytes_per_parameter("float32", {"dtype": "bfloat16"}) == 4


def test_plan_of_the_7b_recipes_without_gpu_or_network():
    values = plan(load_recipe(REPO / "recipes" / "gsm8k_trace.yaml"))
    assert values["num_processes"] == 8 and values["effective_batch_completions"] == 8 * 8 * 4
    assert values["prompts_per_step"] == 32 and values["zero_stage"] == "ZeRO-3"
    memory = values["memory_per_gpu"]
    # 7.6e9 parameters x (16 bytes + 2 for the reference model, beta 0.04) / 8 ranks = 16 GiB, plus the
    # TRACE tagger (DeBERTa-v3-base, ~184M parameters, float32 assumed) whole on every rank
    total = float(memory["training_state"].split()[0])
    assert total == pytest.approx(7.6156e9 * 18 / 8 / GIB + 184e6 * 4 / GIB, abs=0.06)
    assert memory["reward_models"]["trace"].startswith("0.7 GiB (hyyangkisti/TRACE-DeBERTa-v3-base")
    lora = plan(
        load_recipe(
            REPO / "recipes" / "gsm8k_trace.yaml",
            ["model.lora.r=16", "launch.config_file=launch/accelerate/zero2.yaml"],
        )
    )
    assert lora["zero_stage"] == "ZeRO-2" and "LoRA r=16" in lora["trainable_parameters"]
    assert "reference_model" not in lora["memory_per_gpu"]  # TRL disables the adapter instead


@pytest.mark.parametrize("name", ["gsm8k_trace", "gsm8k_accuracy"])
def test_procrl_check_on_the_7b_recipes_exits_0_and_prints_the_plan(name, capsys):
    assert procrl_main(["check", str(REPO / "recipes" / f"{name}.yaml")]) == 0
    out = capsys.readouterr().out
    for expected in (
        "num_processes                8",
        "per_device_train_batch_size  8",
        "num_generations              8",
        "effective_batch_completions  256",
        "gradient_accumulation_steps  4",
        "zero_stage",
        "ZeRO-3",
        "optimizer_states",
        "7.62B",
        "zero3.yaml --num_processes 8 -m procrl.run",
    ):
        assert expected in out, expected


def test_ppo_plan_adds_the_critic():
    recipe = load_recipe(REPO / "recipes" / "gsm8k_trace.yaml", ["trainer.algorithm=ppo"])
    memory = plan(recipe)["memory_per_gpu"]
    arch = KNOWN_ARCHITECTURES["qwen2.5-7b"]
    critic = count_parameters(arch) - arch["vocab_size"] * arch["hidden_size"] + arch["hidden_size"]
    assert float(memory["value_model"].split()[0]) == pytest.approx(critic * 16 / 8 / GIB, abs=0.06)
    policy = load_recipe(REPO / "recipes" / "gsm8k_trace.yaml")
    policy_total = float(plan(policy)["memory_per_gpu"]["training_state"].split()[0])
    assert float(memory["training_state"].split()[0]) == pytest.approx(policy_total + critic * 16 / 8 / GIB, abs=0.1)
    # a value head on the policy adds (almost) nothing
    shared = plan(
        load_recipe(
            REPO / "recipes" / "gsm8k_trace.yaml", ["trainer.algorithm=ppo", "trainer.value_head_on_policy=true"]
        )
    )["memory_per_gpu"]
    assert (
        "negligible" in shared["value_model"]
        and shared["training_state"] == plan(policy)["memory_per_gpu"]["training_state"]
    )


def test_plan_says_how_rollouts_are_generated(monkeypatch):
    import importlib

    tiny = REPO / "recipes" / "gsm8k_tiny_smoke.yaml"
    assert plan(load_recipe(tiny))["generation"] == "transformers generate"
    trl_imports = importlib.import_module("trl.import_utils")  # trl's lazy module hides it as an attribute
    monkeypatch.setattr(trl_imports, "is_vllm_available", lambda *a, **k: False)  # also where vLLM is installed
    colocate = plan(load_recipe(REPO / "recipes" / "gsm8k_ppo_process.yaml"))["generation"]
    assert colocate.startswith("vLLM colocate") and "not installed here" in colocate
    server = plan(
        load_recipe(
            tiny, ["trainer.use_vllm=true", "trainer.vllm_mode=server", "trainer.vllm_server_base_url=http://n3:8000"]
        )
    )["generation"]
    assert server.startswith("vLLM server (server at http://n3:8000)")
