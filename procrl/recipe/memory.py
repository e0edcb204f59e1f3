"""The memory estimate of ``procrl check``: per-GPU bytes for weights + gradients + optimizer
states under the launch's ZeRO stage, TRL's reference model, PPO's critic, and the reward models.

Arithmetic over the recipe and small local files (the accelerate config, the model's
config.json or safetensors headers when they are on disk); nothing is downloaded and no model is built.

Memory model (bytes per parameter, the ZeRO paper's accounting, Rajbhandari et al. 2020):

* DeepSpeed (mixed precision): 16-bit weights (2) + 16-bit gradients (2) + fp32 master weights
  and Adam moments (12). Stage 1 shards the optimizer states over the data-parallel ranks, stage
  2 also the gradients, stage 3 also the weights. ``offload_optimizer_device: cpu`` moves the
  optimizer states (and ``offload_param_device: cpu`` the stage-3 weights) to host memory.
* Without DeepSpeed (single process, DDP): weights and gradients in the model's dtype and two
  AdamW moments in that dtype (no master copy), all replicated.
* LoRA: all of the model's weights stay, frozen (in the model's dtype; sharded only by stage 3);
  the adapters come on top, and only they have gradients and optimizer states, kept in fp32
  (4 + 4 + 8 bytes, PEFT's fp32 adapters and torch AdamW's moments in the parameters' dtype).
  Measured against a PEFT model in tests/test_launch_plan.py and by
  benchmarks/gpu_step_bench.py (weights, gradients, optimizer states of a real run).
* ``model.dtype: auto``: the dtype the checkpoint's config.json records (a float32 checkpoint
  loads in float32), else 16-bit.
* TRL's reference model (``beta > 0`` without LoRA) is one more copy of the weights (sharded by
  stage 3). PPO adds its critic (the policy's layout without the LM head, or
  ``trainer.value_model``'s), trained like the policy.
* :func:`gpu_plan` adds what a step holds besides that state: activations of one micro-batch
  (with or without gradient checkpointing), the logits the loss materialises, generation's KV
  cache or colocated vLLM's share of the card (which must hold the policy's weights and one
  max-length sequence), for a total per GPU that :func:`fit_problem` compares with a card.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procrl.models.architecture import model_architecture
from procrl.models.parameters import count_lora_parameters, count_parameters
from procrl.recipe.launch import ZeroSetup, zero_setup
from procrl.recipe.schema import Recipe

__all__ = [
    "GIB",
    "MemoryEstimate",
    "PolicyMemory",
    "ZeroSetup",
    "estimate_memory",
    "format_bytes",
    "format_count",
    "gpu_plan",
    "fit_problem",
    "remedies",
    "remedy_text",
    "policy_memory_estimate",
    "reward_model_memory",
    "value_model_memory",
    "weight_bytes_per_parameter",
    "weights_on_disk",
    "zero_setup",
]

GIB = 1024**3


@dataclass
class MemoryEstimate:
    """Bytes per GPU (see the module docstring for the model)."""

    weights: float
    gradients: float
    optimizer_states: float
    reference_model: float
    host_offload: float  # bytes per rank moved to CPU memory by offloading

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer_states + self.reference_model


def estimate_memory(
    parameters: int,
    trainable: int,
    *,
    weight_bytes: int = 2,
    shards: int = 1,
    zero_stage: int | None = None,
    offload_optimizer: bool = False,
    offload_param: bool = False,
    lora: bool = False,
    reference_model: bool = False,
) -> MemoryEstimate:
    """Per-GPU bytes for weights, gradients, optimizer states (+ reference model) of one rank.

    ``parameters``: the model's own parameters. ``trainable``: the parameters trained; with
    ``lora`` these are the adapters, added on top of the model's parameters (which all stay
    frozen), not a part of them.
    """
    if parameters < 0 or trainable < 0 or shards < 1:
        raise ValueError("parameters and trainable must be >= 0, shards >= 1")
    deepspeed = zero_stage is not None
    stage = zero_stage or 0
    frozen = parameters if lora else 0  # LoRA: the whole base stays in memory, the adapters come on top
    if lora:  # adapters in fp32: 4 + 4 + 8; the base is frozen, in the model dtype
        base_weights, trainable_weight, grad_bytes, optim_bytes = frozen * weight_bytes, 4, 4, 8
    elif deepspeed:  # mixed precision: 16-bit weights and grads, fp32 master + 2 moments
        base_weights, trainable_weight, grad_bytes, optim_bytes = (
            0,
            weight_bytes,
            weight_bytes,
            12 if weight_bytes == 2 else 8,
        )
    else:  # plain torch: everything in the model's dtype, two AdamW moments
        base_weights, trainable_weight, grad_bytes, optim_bytes = 0, weight_bytes, weight_bytes, 2 * weight_bytes
    weights = base_weights + trainable * trainable_weight
    gradients = trainable * grad_bytes
    optimizer = trainable * optim_bytes
    reference = parameters * weight_bytes if reference_model else 0
    host = 0.0
    if deepspeed and stage >= 1:
        optimizer /= shards
    if deepspeed and stage >= 2:
        gradients /= shards
    if deepspeed and stage >= 3:
        weights /= shards
        reference /= shards
    if deepspeed and offload_optimizer:
        host += optimizer
        optimizer = 0.0
    if deepspeed and stage >= 3 and offload_param:
        host += weights
        weights = 0.0
    return MemoryEstimate(float(weights), float(gradients), float(optimizer), float(reference), float(host))


def format_bytes(value: float) -> str:
    return f"{value / GIB:.1f} GiB" if value >= 0.1 * GIB else f"{value / 1024**2:.1f} MiB"


def format_count(value: int) -> str:
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g}{unit} ({value:,})"
    return f"{value:,}"


def weight_bytes_per_parameter(dtype: str, config: dict[str, Any] | None) -> int:
    """Bytes per weight as loaded: the recipe's ``model.dtype``; for ``auto``, the dtype the
    checkpoint's config.json records (``dtype`` / ``torch_dtype``; a float32 checkpoint loads in
    float32), else 2 (16-bit, as the Hub's LMs are stored)."""
    if dtype == "auto" and config:
        dtype = str(config.get("dtype") or config.get("torch_dtype") or "auto")
    return 4 if dtype == "float32" else 2


@dataclass
class PolicyMemory:
    """The estimate for a recipe's policy and the counts behind it; ``memory`` is None (and
    ``problem`` says why) when it cannot be estimated."""

    parameters: int | None
    trainable: int | None
    weight_bytes: int
    memory: MemoryEstimate | None
    config: dict[str, Any] | None
    source: str
    problem: str | None = None


def policy_memory_estimate(recipe: Recipe, processes: int, setup: ZeroSetup | None = None) -> PolicyMemory:
    """Per-GPU bytes of the policy's weights, gradients, optimizer states (+ TRL's reference
    model) for the recipe over ``processes`` ranks (benchmarks/gpu_step_bench.py compares it
    with what a run holds)."""
    setup = setup or zero_setup(recipe)
    config, source = model_architecture(recipe.model.name_or_path, recipe.model.revision, recipe.model.gguf_file)
    weight_bytes = weight_bytes_per_parameter(recipe.model.dtype, config)
    parameters = count_parameters(config) if config else None
    if parameters is None:
        return PolicyMemory(None, None, weight_bytes, None, config, source, "parameter count unknown")
    lora = recipe.model.lora
    trainable = parameters
    if lora is not None:
        trainable = count_lora_parameters(config, lora.r, lora.target_modules)
        if trainable is None:
            return PolicyMemory(
                parameters, None, weight_bytes, None, config, source, "LoRA target modules not in the standard layout"
            )
    beta = float(recipe.trainer_args.get("beta", 0.0) or 0.0)
    estimate = estimate_memory(
        parameters,
        trainable,
        weight_bytes=weight_bytes,
        shards=processes,
        zero_stage=setup.zero_stage,
        offload_optimizer=setup.offload_optimizer,
        offload_param=setup.offload_param,
        lora=lora is not None,
        reference_model=beta > 0 and lora is None,
    )
    return PolicyMemory(parameters, trainable, weight_bytes, estimate, config, source)


# --- reward models ------------------------------------------------------------------------------

_DTYPE_BYTES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float64": 8,
}


def _model_directory(name: str) -> Path | None:
    """A local directory, or the model's snapshot in the Hugging Face cache (no network)."""
    local = Path(name).expanduser()
    if local.is_dir():
        return local
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, "config.json")
    except Exception:  # noqa: BLE001 - not a repo id
        return None
    return Path(cached).parent if isinstance(cached, str) else None


def weights_on_disk(directory: Path) -> tuple[int, int] | None:
    """(parameters, bytes) of the safetensors weights in ``directory``, from their headers."""
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        return None
    from safetensors import safe_open

    parameters = size = 0
    for file in files:
        with safe_open(str(file), framework="numpy") as handle:
            for key in handle.keys():
                tensor = handle.get_slice(key)
                count = 1
                for dimension in tensor.get_shape():
                    count *= dimension
                parameters += count
                size += count * _DTYPE_BYTES.get(tensor.get_dtype(), 4)
    return parameters, size


def reward_model_memory(recipe: Recipe) -> dict[str, tuple[float | None, str]]:
    """Per reward component that loads a model: (bytes per GPU or None, a description). Reward
    models load whole on every rank (never ZeRO-sharded), so each GPU holds all of them. From the
    safetensors headers when the weights are on disk (local or cached), else the parameter count
    the component gives for its default model (``ModelRef.parameters``) or the architecture's."""
    result: dict[str, tuple[float | None, str]] = {}
    for spec in recipe.rewards:
        models = getattr(spec.target, "models", None)
        refs = models(spec.settings) if callable(models) else {}
        for key, ref in refs.items():
            label = spec.name if len(refs) == 1 else f"{spec.name}.{key}"
            gguf = ref.gguf_file is not None or ref.name.lower().endswith(".gguf")
            directory = None if gguf else _model_directory(ref.name)
            on_disk = weights_on_disk(directory) if directory is not None else None
            assumed = ""
            if on_disk is not None:
                parameters, stored = on_disk
                count, source = format_count(parameters), "the weights on disk"
            else:
                config, _ = model_architecture(ref.name, gguf_file=ref.gguf_file)
                parameters = ref.parameters or (
                    count_parameters(config) if config else None
                )  # the component's model card
                if parameters is None:
                    result[label] = (None, f"not estimated ({ref.name}: weights not on disk, size unknown)")
                    continue
                config_dtype = str((config or {}).get("torch_dtype") or (config or {}).get("dtype") or "")
                stored = parameters * _DTYPE_BYTES.get(config_dtype, 4)
                assumed = "" if config_dtype in _DTYPE_BYTES else ", float32 assumed"
                count = f"~{parameters / 1e6:,.0f}M" if ref.parameters else format_count(parameters)
                source = (
                    "its model card"
                    if ref.parameters
                    else ("its GGUF header" if config and "gguf_file_type" in config else "its architecture")
                )
            if ref.dtype == "auto":
                size, dtype_text = float(stored), f"checkpoint dtype{assumed}"
            else:
                size, dtype_text = float(parameters * _DTYPE_BYTES.get(ref.dtype, 4)), ref.dtype
            result[label] = (
                size,
                f"{format_bytes(size)} ({ref.name}: {count} parameters from {source}, {dtype_text};"
                " whole on every rank)",
            )
    return result


def value_model_memory(
    recipe: Recipe,
    config: dict[str, Any],
    parameters: int,
    trainable: int,
    weight_bytes: int,
    processes: int,
    setup: ZeroSetup,
) -> MemoryEstimate | None:
    """PPO's critic: the policy's architecture (or trainer.value_model's) without the LM head, with
    a 1-output head, trained like the policy (LoRA adapters when the policy uses LoRA)."""
    if recipe.trainer.value_model:
        config, _ = model_architecture(recipe.trainer.value_model, gguf_file=recipe.trainer.value_model_gguf_file)
        parameters = count_parameters(config) if config else None
        if parameters is None:
            return None
        lora = recipe.model.lora
        trainable = count_lora_parameters(config, lora.r, lora.target_modules) if lora else parameters
        if trainable is None:
            return None
    hidden, vocab = int(config["hidden_size"]), int(config["vocab_size"])
    head = 0 if config.get("tie_word_embeddings", False) else vocab * hidden
    if recipe.model.lora is not None:  # frozen trunk; the adapters and the new 1-output head train
        value_parameters, value_trainable = parameters - head, trainable + hidden
    else:
        value_parameters = value_trainable = parameters - head + hidden
    return estimate_memory(
        value_parameters,
        value_trainable,
        weight_bytes=weight_bytes,
        shards=processes,
        zero_stage=setup.zero_stage,
        offload_optimizer=setup.offload_optimizer,
        offload_param=setup.offload_param,
        lora=recipe.model.lora is not None,
    )


# --- the whole per-GPU plan: training state, activations, logits, generation, vLLM ---------------

# The cards `procrl check` always plans against (torch.cuda.get_device_properties(...).total_memory
# of an H100/A100 80 GB and an A100 40 GB: a little under the marketed size in GiB).
CARDS = {"80 GB": 85_031_714_816, "40 GB": 42_505_273_344}
# What a card cannot give to tensors: the CUDA context, NCCL buffers, the allocator's fragmentation.
CARD_RESERVE = 0.06


@dataclass
class GpuPlan:
    """Every part of one GPU's memory in bytes (``parts``), the plan's total, and a problem when
    the vLLM share cannot hold what it must (the policy's weights and one max-length sequence)."""

    parts: dict[str, float]
    notes: dict[str, str]
    total: float
    vllm_share: float | None  # bytes given to colocated vLLM on this card
    vllm_needs: float | None  # bytes vLLM needs at least: weights + the KV cache of one max-length sequence
    problem: str | None = None

    def fits(self, card_bytes: float) -> bool:
        return self.problem is None and self.total <= card_bytes * (1 - CARD_RESERVE)


def zero_from_launch(setup) -> ZeroSetup:
    """A :class:`procrl.launch.launched.LaunchSetup` as the sharding the estimate needs."""
    return ZeroSetup(
        setup.distributed_type,
        setup.zero_stage if setup.distributed_type == "DEEPSPEED" else None,
        setup.offload_optimizer,
        setup.offload_param,
        setup.world_size,
        setup.describe(),
    )


def _sequence_lengths(recipe: Recipe) -> tuple[int, int]:
    args = recipe.trainer_args
    prompt = int(args.get("max_prompt_length") or recipe.trainer.max_prompt_length or 512)
    completion = int(args.get("max_completion_length") or 256)
    return prompt, completion


def activation_bytes(config: dict[str, Any], batch: int, tokens: int, weight_bytes: int, checkpointing: bool) -> float:
    """Activations a training forward keeps for the backward of one micro-batch (Korthikanti et al.
    2022's per-layer accounting with a gated MLP and SDPA/flash attention, which keeps no attention
    matrix): per layer and token, the attention block keeps ~15 values of the hidden size and the
    MLP 2 of the hidden size plus 6 of its intermediate size (gate, up, the product; input and
    output of the activation). Gradient checkpointing keeps each layer's input only, and one layer's
    activations while it is recomputed."""
    hidden = int(config.get("hidden_size") or 0)
    layers = int(config.get("num_hidden_layers") or 0)
    intermediate = int(config.get("intermediate_size") or 4 * hidden)
    per_layer = batch * tokens * (17 * hidden + 6 * intermediate) * weight_bytes
    if checkpointing:
        return float(layers * batch * tokens * hidden * weight_bytes + per_layer)
    return float(layers * per_layer)


def kv_cache_bytes(config: dict[str, Any], sequences: int, tokens: int, weight_bytes: int) -> float:
    """Keys and values of ``sequences`` sequences of ``tokens`` tokens, every layer (GQA aware)."""
    hidden = int(config.get("hidden_size") or 0)
    heads = int(config.get("num_attention_heads") or 1)
    kv_heads = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or hidden // max(heads, 1))
    layers = int(config.get("num_hidden_layers") or 0)
    return float(2 * layers * kv_heads * head_dim * tokens * sequences * weight_bytes)


def gpu_plan(recipe: Recipe, setup: ZeroSetup, processes: int, card_bytes: float | None) -> GpuPlan | None:
    """The per-GPU total of a recipe under ``setup`` over ``processes`` ranks: the training state
    (:func:`policy_memory_estimate`, PPO's critic, the reward models), activations of one micro-batch
    (with or without ``gradient_checkpointing``), the logits the loss materialises, generation's KV
    cache (transformers) or vLLM's share of the card (colocate: ``vllm_gpu_memory_utilization`` of
    ``card_bytes``, which must hold the policy's weights and the KV cache of one max-length sequence).
    None when the policy's size is unknown."""
    policy = policy_memory_estimate(recipe, processes, setup)
    if policy.memory is None or policy.config is None:
        return None
    config, weight_bytes, args = policy.config, policy.weight_bytes, recipe.trainer_args
    parts: dict[str, float] = {
        "weights": policy.memory.weights,
        "gradients": policy.memory.gradients,
        "optimizer_states": policy.memory.optimizer_states,
        "reference_model": policy.memory.reference_model,
    }
    notes: dict[str, str] = {}
    if recipe.trainer.algorithm == "ppo" and not recipe.trainer.value_head_on_policy:
        value = value_model_memory(recipe, config, policy.parameters, policy.trainable, weight_bytes, processes, setup)
        parts["value_model"] = value.total if value is not None else 0.0
    parts["reward_models"] = float(sum(size for size, _ in reward_model_memory(recipe).values() if size))
    prompt, completion = _sequence_lengths(recipe)
    batch = int(args.get("per_device_train_batch_size", 8))
    checkpointing = bool(args.get("gradient_checkpointing", False))
    parts["activations"] = activation_bytes(config, batch, prompt + completion, weight_bytes, checkpointing)
    notes["activations"] = f"{batch} sequences of {prompt}+{completion} tokens, " + (
        "gradient checkpointing (layer inputs kept)" if checkpointing else "no gradient checkpointing"
    )
    vocab = int(config.get("vocab_size") or 0)
    if recipe.trainer.algorithm == "ppo":  # the forward's logits over the completion, in the model's dtype
        parts["logits"] = float(batch * completion * vocab * weight_bytes)
        notes["logits"] = f"{batch} x {completion} x {vocab} in the model's dtype"
    else:  # TRL's GRPO computes log-probabilities through its fused LM head, chunk by chunk
        parts["logits"] = float(min(batch * completion, 1024) * vocab * 4)
        notes["logits"] = "TRL's fused LM head: one float32 chunk of at most 1024 positions"
    hidden, layers = int(config.get("hidden_size") or 0), int(config.get("num_hidden_layers") or 1)
    if setup.zero_stage == 3:
        head = vocab * hidden
        if recipe.trainer.algorithm != "ppo":
            # the fused LM head works on the whole head: ZeRO-3 gathers it (16-bit) and the head's
            # gradient is held whole in float32 before it is reduced to the shards (frozen under LoRA)
            parts["lm_head"] = float(head * weight_bytes + (0 if recipe.model.lora else head * 4))
            notes["lm_head"] = "ZeRO-3: TRL's fused LM head gathered" + (
                "" if recipe.model.lora else " and its float32 gradient"
            )
        # ZeRO-3 gathers each layer's weights to compute it and prefetches the next one's
        per_layer = max(policy.parameters - 2 * head, 0) / max(layers, 1)
        parts["zero3_working_set"] = float(2 * per_layer * weight_bytes)
        notes["zero3_working_set"] = "ZeRO-3: two layers' weights gathered, the one computing and the next"
    vllm_share = vllm_needs = None
    problem = None
    colocate = args.get("use_vllm") and args.get("vllm_mode", "colocate") == "colocate"
    if colocate:
        tp = int(args.get("vllm_tensor_parallel_size", 1) or 1)
        notes["vllm_tensor_parallel_size"] = str(tp)
        vllm_needs = policy.parameters * 2 / tp + kv_cache_bytes(config, 1, prompt + completion, 2) / tp
        share = float(args.get("vllm_gpu_memory_utilization", 0.3))
        if card_bytes is not None:
            vllm_share = share * card_bytes
            parts["vllm"] = vllm_share
            if vllm_share < vllm_needs:
                problem = (
                    f"trainer.vllm_gpu_memory_utilization: {share:g} of the card is {format_bytes(vllm_share)}, "
                    "less than "
                    f"vLLM needs for the policy's weights and one {prompt + completion}-token sequence "
                    f"({format_bytes(vllm_needs)})"
                )
        notes["vllm"] = f"{share:g} of the card (colocate); needs at least {format_bytes(vllm_needs)}"
    else:
        generations = batch * int(args.get("steps_per_generation") or args.get("gradient_accumulation_steps", 1))
        parts["generation_kv_cache"] = kv_cache_bytes(config, generations, prompt + completion, weight_bytes)
        notes["generation_kv_cache"] = f"transformers generate, {generations} sequences"
    return GpuPlan(parts, notes, float(sum(parts.values())), vllm_share, vllm_needs, problem)


def remedy_candidates(recipe: Recipe, setup: ZeroSetup, processes: int) -> list[tuple[str, Recipe, ZeroSetup, int]]:
    """The single changes a stop line may name, each as (what to give, the recipe, setup and
    processes it makes): vLLM tensor parallelism, a larger vLLM share, gradient checkpointing,
    LoRA, offloading to CPU memory, twice the processes. :func:`remedies` re-plans each."""
    import dataclasses

    from procrl.recipe.sections import LoraSection

    args = recipe.trainer_args

    def with_args(**values) -> Recipe:
        return dataclasses.replace(recipe, trainer_args={**args, **values})

    out = []
    if args.get("use_vllm") and args.get("vllm_mode", "colocate") == "colocate":
        tp = int(args.get("vllm_tensor_parallel_size", 1) or 1)
        for size in (2, 4, 8):  # within a machine's processes, as vLLM's colocated groups are
            if tp < size <= processes and processes % size == 0:
                out.append(
                    (
                        f"--set trainer.vllm_tensor_parallel_size={size}",
                        with_args(vllm_tensor_parallel_size=size),
                        setup,
                        processes,
                    )
                )
        share = float(args.get("vllm_gpu_memory_utilization", 0.3))
        for more in (0.4, 0.5, 0.6):
            if more > share:
                out.append(
                    (
                        f"--set trainer.vllm_gpu_memory_utilization={more:g}",
                        with_args(vllm_gpu_memory_utilization=more),
                        setup,
                        processes,
                    )
                )
    if not args.get("gradient_checkpointing"):
        out.append(
            ("--set trainer.gradient_checkpointing=true", with_args(gradient_checkpointing=True), setup, processes)
        )
    if recipe.model.lora is None:
        lora = dataclasses.replace(recipe, model=dataclasses.replace(recipe.model, lora=LoraSection()))
        out.append((f"--set model.lora.r={LoraSection().r}", lora, setup, processes))
    if setup.zero_stage == 3 and not (setup.offload_optimizer and setup.offload_param):
        offloaded = dataclasses.replace(setup, offload_optimizer=True, offload_param=True)
        out.append(("--config_file launch/accelerate/zero3_offload.yaml", recipe, offloaded, processes))
    if setup.zero_stage:  # sharded: more ranks, smaller shards
        out.append((f"--num_processes {2 * processes} (twice the GPUs)", recipe, setup, 2 * processes))
    return out


def remedies(recipe: Recipe, setup: ZeroSetup, processes: int, card_bytes: float) -> list[tuple[str, float]]:
    """Each single change of :func:`remedy_candidates` whose re-planned total fits ``card_bytes``,
    with that total: a stop line names only what its own plan shows fits."""
    fitting: dict[str, tuple[str, float]] = {}
    for text, changed, changed_setup, changed_processes in remedy_candidates(recipe, setup, processes):
        kind = text.split("=")[0]  # the smallest value of each setting that fits (candidates go up)
        if kind in fitting:
            continue
        plan = gpu_plan(changed, changed_setup, changed_processes, card_bytes)
        if plan is not None and plan.fits(card_bytes):
            fitting[kind] = (text, plan.total)
    return list(fitting.values())


def remedy_text(recipe: Recipe, setup: ZeroSetup, processes: int, card_bytes: float) -> str:
    """``what fits this card, each re-planned: X (total T), ...``, or that none of the tried changes does."""
    fitting = remedies(recipe, setup, processes, card_bytes)
    if not fitting:
        return (
            "no single change procrl tries fits it (vLLM tensor parallelism or share, gradient checkpointing, "
            "LoRA, offloading, twice the processes): a larger card, or several of them together"
        )
    return "what fits, each re-planned: " + "; ".join(
        f"{text} (total {format_bytes(total)})" for text, total in fitting
    )


def fit_problem(recipe: Recipe, setup, card_bytes: float, card_name: str) -> str | None:
    """One line when the plan of ``setup`` (a :class:`procrl.launch.launched.LaunchSetup`) does not
    fit ``card_bytes``, naming the launch, the total and the largest parts, and the changes that
    fit (:func:`remedy_text`); None when it fits or the policy's size is unknown."""
    zero = zero_from_launch(setup)
    plan = gpu_plan(recipe, zero, setup.world_size, card_bytes)
    if plan is None or plan.fits(card_bytes):
        return None
    remedy = remedy_text(recipe, zero, setup.world_size, card_bytes)
    if plan.problem:
        return f"{plan.problem}; {remedy}"
    largest = sorted(((v, k) for k, v in plan.parts.items() if v), reverse=True)[:3]
    return (
        f"{setup.describe()} needs about {format_bytes(plan.total)} per GPU "
        f"({', '.join(f'{k} {format_bytes(v)}' for v, k in largest)}), more than this {card_name}'s "
        f"{format_bytes(card_bytes)}; {remedy}"
    )
