"""The run plan ``procrl check`` prints: processes, batch sizes, generations, accumulation.

Pure arithmetic over the recipe; nothing is loaded.
"""

from __future__ import annotations

from typing import Any

from procrl.recipe import Recipe

__all__ = ["plan", "format_plan"]


def plan(recipe: Recipe) -> dict[str, Any]:
    args = recipe.trainer_args
    processes = recipe.launch.num_processes or 1
    per_device = int(args.get("per_device_train_batch_size", 8))
    accumulation = int(args.get("gradient_accumulation_steps", 1))
    generations = int(args.get("num_generations") or 8)
    effective = per_device * processes * accumulation
    return {
        "algorithm": recipe.trainer.algorithm,
        "credit": recipe.trainer.credit,
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
    }


def format_plan(values: dict[str, Any]) -> str:
    width = max(len(k) for k in values)
    return "\n".join(f"  {key:<{width}}  {value}" for key, value in values.items())
