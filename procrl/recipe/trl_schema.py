"""TRL's ``GRPOConfig`` fields, their types and their closed sets of values, as tables, so that
validating a recipe's ``trainer`` section does not import TRL (which imports torch, transformers
and peft: seconds and hundreds of MiB before ``procrl check`` or ``score`` do any work).

The tables below are generated from the installed TRL by
``python -m procrl.recipe.trl_schema --write``; ``tests/test_startup.py`` checks them against the installed TRL, field
by field and type by type, so a TRL upgrade that adds, drops or retypes a field, or changes a set of values, fails the
tests until the tables are regenerated. A field's values are a closed set where TRL's dataclass
states one: an Enum in its annotation (``IntervalStrategy | str``: the Enum's values) or
``metadata["choices"]`` (what transformers' argument parser offers); the recipe layer checks a
value against that set. Types that procrl does not check themselves (TRL's and transformers'
enums, accelerate's ParallelismConfig) are ``Any`` in the field table, as
:func:`procrl.core.config.check_value` passes such values through unchanged.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import textwrap
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

__all__ = [
    "GRPO_CONFIG_CHOICES",
    "GRPO_CONFIG_FIELDS",
    "TRL_VERSION",
    "grpo_config_choices",
    "grpo_config_fields",
    "type_source",
]


def type_source(tp: Any) -> str:
    """Python source for a field type, as the table spells it (unknown classes become Any)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return "Any"
    if tp is type(None):
        return "None"
    if tp in (bool, int, float, str):
        return tp.__name__
    if tp in (list, dict, tuple):
        return tp.__name__
    if origin is Literal:
        return f"Literal[{', '.join(repr(a) for a in typing.get_args(tp))}]"
    if origin in (Union, types.UnionType):
        members = [type_source(a) for a in typing.get_args(tp)]
        if "Any" in members:
            return "Any"
        # None last, each member once, in the declared order
        ordered = [m for m in dict.fromkeys(members) if m != "None"] + (["None"] if "None" in members else [])
        return " | ".join(ordered)
    if origin in (list, dict, tuple):
        return f"{origin.__name__}[{', '.join(type_source(a) for a in typing.get_args(tp))}]"
    return "Any"


def grpo_config_fields() -> dict[str, str]:
    """Field name -> type source of the installed TRL's GRPOConfig (imports TRL)."""
    from trl import GRPOConfig

    hints = typing.get_type_hints(GRPOConfig)
    return {f.name: type_source(hints.get(f.name, Any)) for f in dataclasses.fields(GRPOConfig) if f.init}


def field_choices(tp: Any, metadata: Any) -> tuple[str, ...] | None:
    """The closed set of values a field's annotation or metadata states: an Enum's values, else
    ``metadata["choices"]``; None when the field states none."""
    members = typing.get_args(tp) if typing.get_origin(tp) in (Union, types.UnionType) else (tp,)
    for member in members:
        if isinstance(member, type) and issubclass(member, enum.Enum):
            return tuple(str(item.value) for item in member)
    choices = metadata.get("choices")
    return tuple(str(choice) for choice in choices) if choices else None


def grpo_config_choices() -> dict[str, tuple[str, ...]]:
    """Field name -> the values TRL's GRPOConfig (and its parents) state for it (imports TRL)."""
    from trl import GRPOConfig

    hints = typing.get_type_hints(GRPOConfig)
    fields = [f for f in dataclasses.fields(GRPOConfig) if f.init]
    found = {f.name: field_choices(hints.get(f.name, Any), f.metadata) for f in fields}
    return {name: choices for name, choices in found.items() if choices}


_GENERATED = "# --- generated"


def _choices_entry(name: str, values: tuple[str, ...], width: int = 120) -> str:
    """One entry of the generated choices table, wrapped at ``width`` characters."""
    line = f"    {name!r}: {values!r},"
    if len(line) <= width:
        return line
    wrapped = textwrap.wrap(", ".join(map(repr, values)) + ",", width - 8, break_long_words=False)
    return "\n".join([f"    {name!r}: (", *(f"        {part}" for part in wrapped), "    ),"])


def _write(path: Path) -> None:
    import trl

    fields = grpo_config_fields()
    choices = grpo_config_choices()
    text = path.read_text()
    start = text.rindex("\n" + _GENERATED) + 1  # the table's header line, the last one
    body = [
        f"{_GENERATED} by `python -m procrl.recipe.trl_schema --write` from TRL {trl.__version__}; do not edit ---",
        f"TRL_VERSION = {trl.__version__!r}",
        "GRPO_CONFIG_FIELDS: dict[str, Any] = {",
        *(f"    {name!r}: {source}," for name, source in fields.items()),
        "}",
        "GRPO_CONFIG_CHOICES: dict[str, tuple[str, ...]] = {",
        *(_choices_entry(name, values) for name, values in choices.items()),
        "}",
        "",
    ]
    path.write_text(text[:start] + "\n".join(body))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Regenerate procrl's tables of TRL GRPOConfig fields and choices.")
    parser.add_argument("--write", action="store_true", help="Rewrite the tables in this file from the installed TRL.")
    args = parser.parse_args(argv)
    if args.write:
        _write(Path(__file__))
    else:
        for name, source in grpo_config_fields().items():
            print(f"{name}: {source}")
        for name, values in grpo_config_choices().items():
            print(f"{name} choices: {', '.join(values)}")


if __name__ == "__main__":
    main()


# --- generated by `python -m procrl.recipe.trl_schema --write` from TRL 1.16.0; do not edit ---
TRL_VERSION = "1.16.0"
GRPO_CONFIG_FIELDS: dict[str, Any] = {
    "output_dir": str | None,
    "per_device_train_batch_size": int,
    "num_train_epochs": float,
    "max_steps": int,
    "learning_rate": float,
    "lr_scheduler_type": Any,
    "lr_scheduler_kwargs": dict | str | None,
    "warmup_steps": float,
    "optim": Any,
    "optim_args": str | None,
    "weight_decay": float,
    "adam_beta1": float,
    "adam_beta2": float,
    "adam_epsilon": float,
    "optim_target_modules": str | list[str] | None,
    "gradient_accumulation_steps": int,
    "average_tokens_across_devices": bool,
    "max_grad_norm": float,
    "label_smoothing_factor": float,
    "bf16": bool | None,
    "fp16": bool,
    "bf16_full_eval": bool,
    "fp16_full_eval": bool,
    "tf32": bool | None,
    "activation_checkpointing": bool | None,
    "activation_checkpointing_kwargs": dict[str, Any] | str | None,
    "gradient_checkpointing": bool,
    "gradient_checkpointing_kwargs": dict[str, Any] | str | None,
    "torch_compile": bool,
    "torch_compile_backend": str | None,
    "torch_compile_mode": str | None,
    "use_liger_kernel": bool,
    "liger_kernel_config": dict[str, bool] | None,
    "use_cache": bool,
    "neftune_noise_alpha": float | None,
    "torch_empty_cache_steps": int | None,
    "auto_find_batch_size": bool,
    "logging_strategy": Any,
    "logging_steps": float,
    "logging_first_step": bool,
    "log_on_each_node": bool,
    "logging_nan_inf_filter": bool,
    "include_num_input_tokens_seen": str | bool,
    "log_level": str,
    "log_level_replica": str,
    "disable_tqdm": bool | None,
    "report_to": str | list[str] | None,
    "run_name": str | None,
    "project": str,
    "trackio_space_id": str | None,
    "trackio_bucket_id": str | None,
    "trackio_static_space_id": str | Literal[False] | None,
    "eval_strategy": Any,
    "eval_steps": float | None,
    "eval_delay": float,
    "per_device_eval_batch_size": int,
    "prediction_loss_only": bool,
    "eval_on_start": bool,
    "eval_do_concat_batches": bool,
    "eval_use_gather_object": bool,
    "eval_accumulation_steps": int | None,
    "include_for_metrics": list[str],
    "batch_eval_metrics": bool,
    "save_only_model": bool,
    "save_strategy": Any,
    "save_steps": float,
    "save_on_each_node": bool,
    "save_total_limit": int | None,
    "enable_jit_checkpoint": bool,
    "push_to_hub": bool,
    "hub_token": str | None,
    "hub_private_repo": bool | None,
    "hub_model_id": str | None,
    "hub_strategy": Any,
    "hub_always_push": bool,
    "hub_revision": str | None,
    "load_best_model_at_end": bool,
    "metric_for_best_model": str | None,
    "greater_is_better": bool | None,
    "ignore_data_skip": bool,
    "restore_callback_states_from_checkpoint": bool,
    "full_determinism": bool,
    "seed": int,
    "data_seed": int | None,
    "use_cpu": bool,
    "accelerator_config": dict | str | None,
    "parallelism_config": Any,
    "dataloader_drop_last": bool,
    "dataloader_num_workers": int,
    "dataloader_pin_memory": bool,
    "dataloader_persistent_workers": bool,
    "dataloader_prefetch_factor": int | None,
    "dataloader_multiprocessing_context": str | None,
    "dataloader_in_order": bool,
    "remove_unused_columns": bool | None,
    "label_names": list[str] | None,
    "train_sampling_strategy": str,
    "length_column_name": str,
    "ddp_find_unused_parameters": bool | None,
    "ddp_bucket_cap_mb": int | None,
    "ddp_broadcast_buffers": bool | None,
    "ddp_static_graph": bool | None,
    "ddp_backend": str | None,
    "ddp_timeout": int,
    "fsdp": str | None,
    "fsdp_config": dict[str, Any] | str | None,
    "deepspeed": dict | str | None,
    "debug": str | list[Any],
    "skip_memory_metrics": bool,
    "do_train": bool,
    "do_eval": bool,
    "do_predict": bool,
    "resume_from_checkpoint": str | None,
    "local_rank": int,
    "model_init_kwargs": dict[str, Any] | str | None,
    "trust_remote_code": bool,
    "router_aux_loss_coef": float | None,
    "disable_dropout": bool,
    "cast_lm_head_to_fp32": bool,
    "num_generations": int | None,
    "num_generations_eval": int | None,
    "max_completion_length": int | None,
    "ds3_gather_for_generation": bool,
    "shuffle_dataset": bool | None,
    "pad_to_multiple_of": int | str | None,
    "generation_batch_size": int | None,
    "steps_per_generation": int | None,
    "temperature": float,
    "top_p": float,
    "top_k": int,
    "min_p": float | None,
    "generation_kwargs": dict | str | None,
    "chat_template_kwargs": dict | str | None,
    "repetition_penalty": float,
    "cache_implementation": str | None,
    "use_vllm": bool,
    "vllm_mode": str,
    "vllm_model_impl": str,
    "vllm_enable_sleep_mode": bool,
    "vllm_structured_outputs_regex": str | None,
    "vllm_server_base_url": str | None,
    "vllm_server_host": str,
    "vllm_server_port": int,
    "vllm_server_timeout": float,
    "vllm_group_port": int,
    "vllm_gpu_memory_utilization": float,
    "vllm_max_model_length": int | None,
    "vllm_tensor_parallel_size": int,
    "beta": float,
    "num_iterations": int,
    "epsilon": float,
    "delta": float | None,
    "epsilon_high": float | None,
    "sapo_temperature_neg": float,
    "sapo_temperature_pos": float,
    "vespo_k_pos": float,
    "vespo_lambda_pos": float,
    "vespo_k_neg": float,
    "vespo_lambda_neg": float,
    "importance_sampling_level": str,
    "reward_weights": list[float] | None,
    "multi_objective_aggregation": str,
    "scale_rewards": str,
    "loss_type": str,
    "mask_truncated_completions": bool,
    "sync_ref_model": bool,
    "ref_model_mixup_alpha": float,
    "ref_model_sync_steps": int,
    "top_entropy_quantile": float,
    "entropy_coef": float,
    "use_adaptive_entropy": bool,
    "entropy_coef_min": float,
    "entropy_coef_max": float,
    "entropy_coef_delta": float,
    "entropy_target": float,
    "max_tool_calling_iterations": int | None,
    "vllm_importance_sampling_correction": bool,
    "vllm_importance_sampling_mode": str,
    "vllm_importance_sampling_clip_max": float | None,
    "vllm_importance_sampling_clip_min": float | None,
    "off_policy_mask_threshold": float | None,
    "use_bias_correction_kl": bool,
    "log_completions": bool,
    "log_multimodal": bool,
    "num_completions_to_print": int | None,
    "log_unique_prompts": bool,
    "log_completions_hub_repo": str | None,
    "use_transformers_continuous_batching": bool,
    "transformers_continuous_batching_config": dict | str | None,
    "use_transformers_paged": bool,
    "vllm_importance_sampling_cap": float | None,
}
GRPO_CONFIG_CHOICES: dict[str, tuple[str, ...]] = {
    "lr_scheduler_type": (
        "linear",
        "cosine",
        "cosine_with_restarts",
        "polynomial",
        "constant",
        "constant_with_warmup",
        "inverse_sqrt",
        "reduce_lr_on_plateau",
        "cosine_with_min_lr",
        "cosine_warmup_with_min_lr",
        "warmup_stable_decay",
        "greedy",
    ),
    "optim": (
        "adamw_torch",
        "adamw_torch_fused",
        "adamw_torch_xla",
        "adamw_torch_npu_fused",
        "adafactor",
        "adamw_anyprecision",
        "adamw_torch_4bit",
        "adamw_torch_8bit",
        "ademamix",
        "sgd",
        "adagrad",
        "adamw_bnb_8bit",
        "adamw_8bit",
        "ademamix_8bit",
        "lion_8bit",
        "lion_32bit",
        "paged_adamw_32bit",
        "paged_adamw_8bit",
        "paged_ademamix_32bit",
        "paged_ademamix_8bit",
        "paged_lion_32bit",
        "paged_lion_8bit",
        "rmsprop",
        "rmsprop_bnb",
        "rmsprop_bnb_8bit",
        "rmsprop_bnb_32bit",
        "galore_adamw",
        "galore_adamw_8bit",
        "galore_adafactor",
        "galore_adamw_layerwise",
        "galore_adamw_8bit_layerwise",
        "galore_adafactor_layerwise",
        "lomo",
        "adalomo",
        "grokadamw",
        "schedule_free_radam",
        "schedule_free_adamw",
        "schedule_free_sgd",
        "apollo_adamw",
        "apollo_adamw_layerwise",
        "stable_adamw",
    ),
    "logging_strategy": ("no", "steps", "epoch"),
    "log_level": ("detail", "debug", "info", "warning", "error", "critical", "passive"),
    "log_level_replica": ("detail", "debug", "info", "warning", "error", "critical", "passive"),
    "eval_strategy": ("no", "steps", "epoch"),
    "save_strategy": ("no", "steps", "epoch", "best"),
    "hub_strategy": ("end", "every_save", "checkpoint", "all_checkpoints"),
    "dataloader_multiprocessing_context": ("fork", "spawn", "forkserver"),
    "train_sampling_strategy": ("random", "sequential", "group_by_length", "batch_rebalance"),
    "ddp_backend": ("nccl", "gloo", "mpi", "xccl", "hccl", "cncl", "mccl"),
}
