"""Parameter counts of dense decoder-only LMs (Llama, Qwen2, Qwen3, Mistral layouts) from their
config.json values, without building the model, and a table of common policies' architectures:
what ``procrl check`` plans memory with when no weights are on disk."""

from __future__ import annotations

from typing import Any

__all__ = ["KNOWN_ARCHITECTURES", "LINEAR_NAMES", "count_lora_parameters", "count_parameters", "linear_shapes"]

# Architectures (config.json values) of common policies, for planning without the Hub. Parameter
# counts from count_parameters() match the model cards: Qwen2.5 0.49B / 1.54B / 3.09B / 7.61B /
# 72.7B, Llama-3.1-8B 8.03B. Instruct/base variants share the architecture.
_QWEN25 = {"model_type": "qwen2", "hidden_act": "silu"}
KNOWN_ARCHITECTURES: dict[str, dict[str, Any]] = {
    "qwen2.5-0.5b": {
        **_QWEN25,
        "vocab_size": 151936,
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
    },
    "qwen2.5-1.5b": {
        **_QWEN25,
        "vocab_size": 151936,
        "hidden_size": 1536,
        "intermediate_size": 8960,
        "num_hidden_layers": 28,
        "num_attention_heads": 12,
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
    },
    "qwen2.5-3b": {
        **_QWEN25,
        "vocab_size": 151936,
        "hidden_size": 2048,
        "intermediate_size": 11008,
        "num_hidden_layers": 36,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
    },
    "qwen2.5-7b": {
        **_QWEN25,
        "vocab_size": 152064,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "tie_word_embeddings": False,
    },
    "qwen2.5-72b": {
        **_QWEN25,
        "vocab_size": 152064,
        "hidden_size": 8192,
        "intermediate_size": 29568,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "tie_word_embeddings": False,
    },
    "llama-3.1-8b": {
        "model_type": "llama",
        "vocab_size": 128256,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "tie_word_embeddings": False,
    },
}
LINEAR_NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def linear_shapes(config: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """(in, out) features of each decoder-layer linear of a Llama/Qwen2-style model."""
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or hidden // heads)
    inter = int(config["intermediate_size"])
    return {
        "q_proj": (hidden, heads * head_dim),
        "k_proj": (hidden, kv_heads * head_dim),
        "v_proj": (hidden, kv_heads * head_dim),
        "o_proj": (heads * head_dim, hidden),
        "gate_proj": (hidden, inter),
        "up_proj": (hidden, inter),
        "down_proj": (inter, hidden),
    }


def count_parameters(config: dict[str, Any]) -> int | None:
    """Parameters of a dense decoder-only LM (Llama, Qwen2, Qwen3, Mistral layout) from its
    config.json values; None for layouts this formula does not cover (MoE, encoder-decoder)."""
    required = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")
    if any(config.get(key) is None for key in required) or config.get("num_local_experts") or config.get("num_experts"):
        return None
    model_type = str(config.get("model_type", ""))
    hidden = int(config["hidden_size"])
    shapes = linear_shapes(config)
    per_layer = sum(i * o for i, o in shapes.values())
    if model_type == "qwen2":  # q/k/v carry biases
        per_layer += sum(shapes[name][1] for name in ("q_proj", "k_proj", "v_proj"))
    elif config.get("attention_bias"):
        per_layer += sum(shapes[name][1] for name in ("q_proj", "k_proj", "v_proj", "o_proj"))
    if config.get("mlp_bias"):
        per_layer += sum(shapes[name][1] for name in ("gate_proj", "up_proj", "down_proj"))
    if model_type == "qwen3":  # per-head RMSNorm of queries and keys
        per_layer += 2 * (shapes["q_proj"][1] // int(config["num_attention_heads"]))
    per_layer += 2 * hidden  # input and post-attention RMSNorm
    embeddings = int(config["vocab_size"]) * hidden
    head = 0 if config.get("tie_word_embeddings", False) else embeddings
    return embeddings + head + int(config["num_hidden_layers"]) * per_layer + hidden  # + final norm


def count_lora_parameters(config: dict[str, Any], r: int, target_modules: str | list[str]) -> int | None:
    """LoRA adapter parameters (A: r x in, B: out x r per adapted linear) of the decoder layers.
    ``all-linear`` adapts every linear but the output head (PEFT's rule)."""
    try:
        shapes = linear_shapes(config)
    except (KeyError, TypeError, ValueError):
        return None
    names = LINEAR_NAMES if target_modules == "all-linear" else [m for m in target_modules if m in shapes]
    if target_modules != "all-linear" and len(names) != len(target_modules):
        return None  # a module this layout does not know
    return int(config["num_hidden_layers"]) * sum(r * (shapes[n][0] + shapes[n][1]) for n in names)
