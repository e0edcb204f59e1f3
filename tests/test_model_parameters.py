"""Parameter counts from config.json values: hand-computed for a tiny Qwen2 and Llama, against
tiny models built here (random weights and meta tensors), LoRA adapters against PEFT, and the
model cards of the architectures procrl knows."""

from __future__ import annotations

import pytest

from procrl.models.parameters import KNOWN_ARCHITECTURES, count_lora_parameters, count_parameters, linear_shapes

SMALL = {
    "vocab_size": 96,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}


# SMALL by hand: embeddings 96 * 32 = 3072; per layer q 32 * 32 = 1024, k and v 32 * (2 * 8) = 512 each,
# o 1024, gate, up and down 32 * 48 = 1536 each, two RMSNorms 2 * 32 = 64: 7744; final norm 32.
LLAMA_LAYER = 1024 + 512 + 512 + 1024 + 3 * 1536 + 64


@pytest.mark.parametrize(
    "kind, extra, expected",
    [
        # q/k/v biases 32 + 16 + 16 per layer; the head tied to the embeddings
        ("qwen2", {"tie_word_embeddings": True}, 3072 + 2 * (LLAMA_LAYER + 64) + 32),
        ("qwen2", {"tie_word_embeddings": False}, 2 * 3072 + 2 * (LLAMA_LAYER + 64) + 32),
        ("llama", {"tie_word_embeddings": False}, 2 * 3072 + 2 * LLAMA_LAYER + 32),
        # attention biases 32 + 16 + 16 + 32, MLP biases 48 + 48 + 32
        (
            "llama",
            {"tie_word_embeddings": False, "attention_bias": True, "mlp_bias": True},
            2 * 3072 + 2 * (LLAMA_LAYER + 96 + 128) + 32,
        ),
    ],
)
def test_hand_computed_counts_match_a_random_model_built_here(kind, extra, expected):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    assert (3072 + 2 * (LLAMA_LAYER + 64) + 32, 2 * 3072 + 2 * LLAMA_LAYER + 32) == (18720, 21664)
    config = AutoConfig.for_model(kind, **SMALL, **extra)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)  # real random weights on the CPU
    assert count_parameters(config.to_dict()) == expected
    assert sum(p.numel() for p in model.parameters()) == expected  # tied weights are one Parameter


def test_lora_count_by_hand():
    """r * (in + out) per adapted linear: q and o 4 * 64, k and v 4 * 48, gate, up, down 4 * 80; two layers."""
    config = {**SMALL, "model_type": "qwen2"}
    assert linear_shapes(config)["k_proj"] == (32, 16)
    assert count_lora_parameters(config, 4, "all-linear") == 2 * (2 * 256 + 2 * 192 + 3 * 320) == 3712
    assert count_lora_parameters(config, 4, ["q_proj", "v_proj"]) == 2 * (256 + 192)


def test_layouts_the_formula_does_not_cover_have_no_count():
    assert count_parameters({**SMALL, "num_local_experts": 8}) is None  # MoE
    assert count_parameters({"hidden_size": 32}) is None


@pytest.mark.parametrize(
    "kind, extra",
    [
        ("qwen2", {"tie_word_embeddings": True}),
        ("qwen2", {"tie_word_embeddings": False}),
        ("llama", {"tie_word_embeddings": False, "attention_bias": True, "mlp_bias": True}),
        ("llama", {"tie_word_embeddings": True, "head_dim": 16}),
        ("qwen3", {"tie_word_embeddings": False, "head_dim": 8}),
    ],
)
def test_parameter_count_matches_a_built_model(kind, extra):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(kind, **SMALL, **extra)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    actual = sum(p.numel() for p in model.parameters())  # tied weights are one Parameter
    assert count_parameters(config.to_dict()) == actual


def test_lora_count_matches_peft():
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model("qwen2", **SMALL, tie_word_embeddings=False)
    for targets in ("all-linear", ["q_proj", "v_proj"]):
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
        peft_model = get_peft_model(model, LoraConfig(r=4, target_modules=targets, task_type="CAUSAL_LM"))
        trainable = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
        assert count_lora_parameters(config.to_dict(), 4, targets) == trainable
    assert count_lora_parameters(config.to_dict(), 4, ["not_a_module"]) is None


def test_known_architectures_reproduce_the_model_cards():
    billions = {key: count_parameters(arch) / 1e9 for key, arch in KNOWN_ARCHITECTURES.items()}
    cards = {
        "qwen2.5-0.5b": 0.49,
        "qwen2.5-1.5b": 1.54,
        "qwen2.5-3b": 3.09,
        "qwen2.5-7b": 7.61,
        "qwen2.5-72b": 72.7,
        "llama-3.1-8b": 8.03,
    }
    assert set(billions) == set(cards)
    for key, card in cards.items():
        assert billions[key] == pytest.approx(card, abs=0.011), key
