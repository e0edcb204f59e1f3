"""The run plan ``procrl check`` prints: processes, batch sizes, generations, accumulation, and an
estimate of per-GPU memory for weights + gradients + optimizer states under the launch's ZeRO stage.

Arithmetic over the recipe and small local files (the accelerate config, the model's
config.json when it is on disk); nothing is downloaded and no model is built.

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
  ``trainer.value_model``'s), trained like the policy. Activations, generation KV cache and
  vLLM's share of the GPU are not included.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from struct import error as struct_error
from typing import Any

from procrl.core.redaction import redact_text, redact_url
from procrl.models.parameters import KNOWN_ARCHITECTURES, count_lora_parameters, count_parameters
from procrl.recipe import Recipe

__all__ = [
    "MemoryEstimate",
    "PolicyMemory",
    "ZeroSetup",
    "estimate_memory",
    "format_plan",
    "model_architecture",
    "plan",
    "reward_model_memory",
    "planned_processes",
    "policy_memory_estimate",
    "weight_bytes_per_parameter",
    "zero_setup",
]

GIB = 1024**3


def _known_key(name_or_path: str) -> str | None:
    base = name_or_path.rstrip("/").split("/")[-1].lower()
    base = re.sub(r"-(instruct|chat|base)$", "", base)
    base = base.replace("meta-llama-3.1", "llama-3.1")
    return base if base in KNOWN_ARCHITECTURES else None


def _gguf_architecture(file: Path) -> tuple[dict[str, Any] | None, str]:
    from procrl.models.gguf import gguf_config

    try:
        return gguf_config(file), f"the GGUF header of {file} (dequantized to float32 on dtype: auto)"
    except (OSError, ValueError, struct_error) as error:
        return None, f"unknown ({file}: {error})"


def _gguf_file(name_or_path: str, gguf_file: str | None) -> Path | None:
    """The local GGUF file a model setting names, if it is on disk (Hub GGUFs: the local cache)."""
    if gguf_file is None:
        return Path(name_or_path).expanduser() if name_or_path.lower().endswith(".gguf") else None
    for candidate in (Path(name_or_path).expanduser() / gguf_file, Path(gguf_file).expanduser()):
        if candidate.is_file():
            return candidate
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name_or_path, gguf_file)
    except Exception:  # noqa: BLE001 - not a repo id
        return None
    return Path(cached) if isinstance(cached, str) else None


def model_architecture(
    name_or_path: str, revision: str | None = None, gguf_file: str | None = None
) -> tuple[dict[str, Any] | None, str]:
    """The model's config.json values and where they came from: a local directory, the local
    Hugging Face cache (no network), procrl's embedded models, the header of a GGUF file (a
    ``gguf_file`` or a ``.gguf`` path), or the table of known architectures."""
    candidates: list[tuple[Path, str]] = []
    gguf = _gguf_file(name_or_path, gguf_file)
    if gguf is not None:
        return _gguf_architecture(gguf)
    if name_or_path.startswith("procrl:"):
        from procrl.models.loading import SMOLLM2, TINY_MODEL, TINY_VERSION, cache_root
        from procrl.models.reasoner import REASONER, SHIPPED_REASONER

        if name_or_path == TINY_MODEL:
            directory = cache_root() / f"tiny-qwen2-{TINY_VERSION}-h64-l2-s0"
            candidates.append((directory / "config.json", f"config.json of the built tiny model ({directory})"))
        if name_or_path == REASONER:
            candidates.append(
                (SHIPPED_REASONER / "config.json", f"config.json of the shipped tiny reasoner ({SHIPPED_REASONER})")
            )
        if name_or_path == SMOLLM2:  # the wheel's GGUF header (the converted copy holds the same numbers)
            from procrl.core.config import ConfigError
            from procrl.models.loading import smollm2_gguf

            try:
                config, source = _gguf_architecture(smollm2_gguf())
            except ConfigError as error:
                return None, f"unknown ({error})"
            return config, source.replace(" (dequantized", f" ({SMOLLM2}; dequantized")
    else:
        local = Path(name_or_path).expanduser()
        candidates.append((local / "config.json", f"{local / 'config.json'}"))
    for path, source in candidates:
        if path.is_file():
            try:
                return json.loads(path.read_text()), source
            except (OSError, ValueError):
                pass
    if not name_or_path.startswith("procrl:") and not Path(name_or_path).expanduser().exists():
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(name_or_path, "config.json", revision=revision)
        except Exception:  # noqa: BLE001 - an odd repo id: fall through to the table
            cached = None
        if isinstance(cached, str):
            try:
                return json.loads(Path(cached).read_text()), f"config.json in the Hugging Face cache ({cached})"
            except (OSError, ValueError):
                pass
    key = _known_key(name_or_path)
    if key is not None:
        return dict(KNOWN_ARCHITECTURES[key]), f"procrl's table of known architectures ({key})"
    return None, "unknown (no local config.json; not in procrl's table of known architectures)"


@dataclass
class ZeroSetup:
    """What the accelerate config says about sharding."""

    distributed_type: str  # NO | MULTI_GPU | DEEPSPEED | FSDP | ...
    zero_stage: int | None  # DeepSpeed ZeRO stage; None without DeepSpeed
    offload_optimizer: bool
    offload_param: bool
    config_processes: int | None
    source: str


def zero_setup(recipe: Recipe) -> ZeroSetup:
    """Read the recipe's accelerate config file (launch.config_file), if any."""
    import yaml

    from procrl.core.config import ConfigError
    from procrl.launch.flags import resolve_config_file

    launch = recipe.launch
    if launch.config_file is None:
        kind = "MULTI_GPU" if (launch.num_processes or 1) > 1 or launch.num_machines > 1 else "NO"
        return ZeroSetup(kind, None, False, False, None, "no accelerate config file")
    try:
        path = resolve_config_file(launch.config_file, recipe.path)
        config = yaml.safe_load(path.read_text()) or {}
    except (ConfigError, OSError, yaml.YAMLError) as error:
        return ZeroSetup("UNKNOWN", None, False, False, None, f"{launch.config_file}: {error}")
    kind = str(config.get("distributed_type", "NO"))
    processes = config.get("num_processes")
    if kind != "DEEPSPEED":
        return ZeroSetup(kind, None, False, False, processes, launch.config_file)
    deepspeed = config.get("deepspeed_config") or {}
    if not isinstance(deepspeed, dict):
        return ZeroSetup(
            kind, None, False, False, processes, f"{launch.config_file}: deepspeed_config is not a mapping"
        )
    stage = deepspeed.get("zero_stage")
    offload_optimizer = str(deepspeed.get("offload_optimizer_device", "none")).lower() not in ("none", "")
    offload_param = str(deepspeed.get("offload_param_device", "none")).lower() not in ("none", "")
    json_file = deepspeed.get("deepspeed_config_file")
    if json_file:
        try:
            zero = json.loads(resolve_config_file(json_file, str(path)).read_text()).get("zero_optimization", {})
            stage = zero.get("stage", stage)
            offload_optimizer = str((zero.get("offload_optimizer") or {}).get("device", "none")) != "none"
            offload_param = str((zero.get("offload_param") or {}).get("device", "none")) != "none"
        except (ConfigError, OSError, ValueError) as error:
            return ZeroSetup(kind, None, False, False, processes, f"{json_file}: {error}")
    return ZeroSetup(
        kind, int(stage) if stage is not None else 0, offload_optimizer, offload_param, processes, launch.config_file
    )


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


def _gib(value: float) -> str:
    return f"{value / GIB:.1f} GiB" if value >= 0.1 * GIB else f"{value / 1024**2:.1f} MiB"


def _count(value: int) -> str:
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


def memory_plan(recipe: Recipe, processes: int) -> dict[str, Any]:
    setup = zero_setup(recipe)
    policy = policy_memory_estimate(recipe, processes, setup)
    config, source, weight_bytes = policy.config, policy.source, policy.weight_bytes
    stage_text = {None: "none (no DeepSpeed)"}.get(setup.zero_stage, f"ZeRO-{setup.zero_stage}")
    if setup.offload_optimizer or setup.offload_param:
        moved = [name for name, on in (("optimizer", setup.offload_optimizer), ("weights", setup.offload_param)) if on]
        stage_text += f" + CPU offload ({', '.join(moved)})"
    result: dict[str, Any] = {
        "distributed": f"{setup.distributed_type} ({setup.source})",
        "zero_stage": stage_text,
    }
    parameters, trainable, estimate = policy.parameters, policy.trainable, policy.memory
    if parameters is None:
        result["parameters"] = f"unknown: {source}"
        result["memory_per_gpu"] = f"not estimated ({policy.problem})"
        return result
    if estimate is None:
        result["parameters"] = f"{_count(parameters)} from {source}"
        result["memory_per_gpu"] = f"not estimated ({policy.problem})"
        return result
    lora = recipe.model.lora
    beta = float(recipe.trainer_args.get("beta", 0.0) or 0.0)
    result["parameters"] = f"{_count(parameters)} from {source}"
    result["trainable_parameters"] = _count(trainable) + (f" (LoRA r={lora.r}, {lora.target_modules})" if lora else "")
    memory = {
        "weights": _gib(estimate.weights),
        "gradients": _gib(estimate.gradients),
        "optimizer_states": _gib(estimate.optimizer_states),
    }
    if estimate.reference_model:
        memory["reference_model"] = _gib(estimate.reference_model) + f" (beta={beta:g})"
    total, host = estimate.total, estimate.host_offload
    if recipe.trainer.algorithm == "ppo" and recipe.trainer.value_head_on_policy:
        memory["value_model"] = "a linear head on the policy (value_head_on_policy): negligible"
    elif recipe.trainer.algorithm == "ppo":
        value = _value_model_memory(recipe, config, parameters, trainable, weight_bytes, processes, setup)
        if value is None:
            memory["value_model"] = "not estimated (value_model architecture unknown)"
        else:
            memory["value_model"] = _gib(value.total) + " (PPO critic: weights + gradients + optimizer states)"
            total, host = total + value.total, host + value.host_offload
    rewards = reward_model_memory(recipe)
    if rewards:  # loaded whole on every rank: the same bytes on each GPU (also listed on their own in the plan)
        memory["reward_models"] = {name: text for name, (_, text) in rewards.items()}
        total += sum(size for size, _ in rewards.values() if size)
    memory["total"] = _gib(total) + f" per GPU over {processes} rank(s), before activations"
    if host:
        memory["cpu_offload"] = _gib(host) + " of host memory per rank"
    if recipe.trainer_args.get("use_vllm") and recipe.trainer_args.get("vllm_mode", "colocate") == "colocate":
        share = recipe.trainer_args.get("vllm_gpu_memory_utilization", 0.9)
        memory["vllm_colocate"] = f"{share:.0%} of each GPU reserved for generation (weights copy + KV cache)"
    result["memory_per_gpu"] = memory
    return result


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
                count, source = _count(parameters), "the weights on disk"
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
                count = f"~{parameters / 1e6:,.0f}M" if ref.parameters else _count(parameters)
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
                f"{_gib(size)} ({ref.name}: {count} parameters from {source}, {dtype_text}; whole on every rank)",
            )
    return result


def _value_model_memory(
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


def planned_processes(recipe: Recipe) -> int:
    """Processes the recipe's launch asks for (launch section, else its accelerate config file)."""
    setup_processes = recipe.launch.num_processes
    if setup_processes is None and recipe.launch.config_file is not None:
        setup_processes = zero_setup(recipe).config_processes
    return int(setup_processes or 1)


def plan(recipe: Recipe) -> dict[str, Any]:
    args = recipe.trainer_args
    processes = planned_processes(recipe)
    per_device = int(args.get("per_device_train_batch_size", 8))
    accumulation = int(args.get("gradient_accumulation_steps", 1))
    generations = int(args.get("num_generations") or 8)
    effective = per_device * processes * accumulation
    values = {
        "algorithm": recipe.trainer.algorithm,
        "credit": credit_text(recipe.trainer),
        "model": recipe.model.name_or_path,
        "lora": recipe.model.lora is not None,
        "num_processes": processes,
        "num_machines": recipe.launch.num_machines,
        "per_device_train_batch_size": per_device,
        "gradient_accumulation_steps": accumulation,
        "num_generations": generations,
        "effective_batch_completions": effective,
        "prompts_per_step": effective // generations if generations else None,
        "max_steps": args.get("max_steps", -1),
        "rewards": {spec.name: spec.weight for spec in recipe.rewards},
        "generation": generation_text(args),
    }
    values["launch_command"] = launch_command_text(recipe)
    values.update(memory_plan(recipe, processes))
    if not isinstance(values.get("memory_per_gpu"), dict):  # the policy's size is unknown: reward models alone
        rewards = reward_model_memory(recipe)
        if rewards:
            values["reward_models_per_gpu"] = {name: text for name, (_, text) in rewards.items()}
    return values


def credit_text(trainer) -> str:
    """The credit rule in words: outcome, or process with its aggregation of step rewards."""
    if trainer.credit != "process":
        return "outcome"
    if trainer.process_aggregation == "min":
        return f"process (min-form step returns, T={trainer.process_temperature:g})"
    return "process (sum of later step rewards)"


def generation_text(args: dict[str, Any]) -> str:
    """How rollouts are generated, and whether this environment has vLLM when the recipe asks for it."""
    if not args.get("use_vllm"):
        return "transformers generate"
    from procrl.models.generation import vllm_available  # the check TRL and procrl.launch.run make

    mode = args.get("vllm_mode", "colocate")
    if mode == "colocate":
        where = "an engine in each training process"
    else:
        url = args.get("vllm_server_base_url")
        where = "server at " + (
            redact_url(url)
            if url
            else f"{args.get('vllm_server_host', '0.0.0.0')}:{args.get('vllm_server_port', 8000)}"
        )
    installed = (
        "installed here"
        if vllm_available()
        else "not installed here: needed where it trains (pip install 'procrl[vllm]')"
    )
    return f"vLLM {mode} ({where}); vLLM {installed}"


def launch_command_text(recipe: Recipe) -> str:
    """What ``procrl train`` runs for this recipe (or that it trains in place)."""
    import shlex

    from procrl.core.config import ConfigError
    from procrl.launch.accelerate import accelerate_command, needs_launcher

    if not needs_launcher(recipe):
        return "none: trains in the calling process (one process)"
    try:
        flags = accelerate_command(recipe)[3:]
    except ConfigError as error:
        return f"unresolved: {error}"
    return shlex.join(["accelerate", "launch", *flags, "-m", "procrl.run", recipe.path or "RECIPE"])


def format_plan(values: dict[str, Any], indent: int = 2) -> str:
    width = max(len(k) for k in values)
    lines = []
    for key, value in values.items():
        if isinstance(value, dict) and value and key != "rewards":
            lines.append(f"{' ' * indent}{key}:")
            lines.append(format_plan(value, indent + 4))
        else:
            lines.append(f"{' ' * indent}{key:<{width}}  {redact_text(str(value))}")  # as the resolved recipe is
    return "\n".join(lines)
