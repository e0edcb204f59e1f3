"""The run plan ``procrl check`` prints: processes, batch sizes, generations, accumulation, the
launch command, and the memory estimate (:mod:`procrl.recipe.memory`) in words."""

from __future__ import annotations

from typing import Any

from procrl.core.redaction import redact_text, redact_url
from procrl.recipe.launch import launch_command_text
from procrl.recipe.memory import (
    CARD_RESERVE,
    CARDS,
    format_bytes,
    format_count,
    gpu_plan,
    policy_memory_estimate,
    remedy_text,
    reward_model_memory,
    value_model_memory,
    zero_setup,
)
from procrl.recipe.schema import Recipe

__all__ = [
    "credit_text",
    "format_plan",
    "generation_text",
    "judge_concurrency",
    "memory_plan",
    "plan",
    "planned_processes",
]


def planned_processes(recipe: Recipe) -> int:
    """Processes the recipe's launch asks for (launch section, else its accelerate config file)."""
    setup_processes = recipe.launch.num_processes
    if setup_processes is None and recipe.launch.config_file is not None:
        setup_processes = zero_setup(recipe).config_processes
    return int(setup_processes or 1)


def plan(recipe: Recipe, gpu_memory: tuple[float, str] | None = None) -> dict[str, Any]:
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
    values.update(memory_plan(recipe, processes, gpu_memory))
    concurrency = judge_concurrency(recipe, processes)
    if concurrency:
        values["judge_requests_in_flight"] = concurrency
    if not isinstance(values.get("memory_per_gpu"), dict):  # the policy's size is unknown: reward models alone
        rewards = reward_model_memory(recipe)
        if rewards:
            values["reward_models_per_gpu"] = {name: text for name, (_, text) in rewards.items()}
    return values


def memory_plan(recipe: Recipe, processes: int, gpu_memory: tuple[float, str] | None = None) -> dict[str, Any]:
    """The plan's memory lines: the ZeRO setup, the parameter counts, the per-GPU estimate in words, and
    the total per GPU (:func:`procrl.recipe.memory.gpu_plan`) against an 80 GB and a 40 GB card, and
    ``gpu_memory`` ``(bytes, name)`` (this machine's GPU, or ``procrl check --gpu-memory``)."""
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
        result["parameters"] = f"{format_count(parameters)} from {source}"
        result["memory_per_gpu"] = f"not estimated ({policy.problem})"
        return result
    lora = recipe.model.lora
    beta = float(recipe.trainer_args.get("beta", 0.0) or 0.0)
    result["parameters"] = f"{format_count(parameters)} from {source}"
    result["trainable_parameters"] = format_count(trainable) + (
        f" (LoRA r={lora.r}, {lora.target_modules})" if lora else ""
    )
    memory = {
        "weights": format_bytes(estimate.weights),
        "gradients": format_bytes(estimate.gradients),
        "optimizer_states": format_bytes(estimate.optimizer_states),
    }
    if estimate.reference_model:
        memory["reference_model"] = format_bytes(estimate.reference_model) + f" (beta={beta:g})"
    total, host = estimate.total, estimate.host_offload
    if recipe.trainer.algorithm == "ppo" and recipe.trainer.value_head_on_policy:
        memory["value_model"] = "a linear head on the policy (value_head_on_policy): negligible"
    elif recipe.trainer.algorithm == "ppo":
        value = value_model_memory(recipe, config, parameters, trainable, weight_bytes, processes, setup)
        if value is None:
            memory["value_model"] = "not estimated (value_model architecture unknown)"
        else:
            memory["value_model"] = format_bytes(value.total) + " (PPO critic: weights + gradients + optimizer states)"
            total, host = total + value.total, host + value.host_offload
    rewards = reward_model_memory(recipe)
    if rewards:  # loaded whole on every rank: the same bytes on each GPU (also listed on their own in the plan)
        memory["reward_models"] = {name: text for name, (_, text) in rewards.items()}
        total += sum(size for size, _ in rewards.values() if size)
    memory["training_state"] = format_bytes(total) + f" per GPU over {processes} rank(s)"
    if host:
        memory["cpu_offload"] = format_bytes(host) + " of host memory per rank"
    cards = dict(CARDS)
    if gpu_memory is not None:  # the user's (or this machine's) number wins over a built-in card of its name
        cards = {gpu_memory[1]: gpu_memory[0], **{name: size for name, size in CARDS.items() if name != gpu_memory[1]}}
    plans = {name: gpu_plan(recipe, setup, processes, size) for name, size in cards.items()}
    first = next(iter(plans.values()))
    if first is not None:
        for part in ("activations", "logits", "lm_head", "zero3_working_set", "generation_kv_cache"):
            if part in first.parts:
                memory[part] = format_bytes(first.parts[part]) + f" ({first.notes[part]})"
        if "vllm" in first.notes:
            memory["vllm_colocate"] = first.notes["vllm"]
        for name, gpu in plans.items():
            size = cards[name]
            verdict = "fits" if gpu.fits(size) else "does NOT fit"
            memory[f"total_on_{name.replace(' ', '_')}"] = (
                f"{format_bytes(gpu.total)} per GPU: {verdict} the {name} card ({format_bytes(size)}, "
                f"{CARD_RESERVE:.0%} kept for CUDA context and fragmentation)"
                + (f"; {gpu.problem}" if gpu.problem else "")
                + ("" if gpu.fits(size) else f"; {remedy_text(recipe, setup, processes, size)}")
            )
    result["memory_per_gpu"] = memory
    return result


def judge_concurrency(recipe: Recipe, processes: int) -> dict[str, str]:
    """Per component that sends requests: its ``concurrency`` is per training process, so a node
    of N processes has N times as many requests in flight (the server must queue no longer than
    ``timeout_s``)."""
    per_machine = max(1, processes // max(recipe.launch.num_machines, 1))
    out = {}
    for spec in recipe.rewards:
        concurrency = getattr(spec.settings, "concurrency", None)
        if isinstance(concurrency, int) and getattr(spec.settings, "base_url", None):
            out[spec.name] = (
                f"{concurrency} per process x {per_machine} process(es) = {concurrency * per_machine} per node, "
                f"{concurrency * processes} in all (rewards.{spec.name}.concurrency is per process)"
            )
    return out


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
