"""``procrl check``: the recipe's own check (:func:`procrl.recipe.check.check_recipe_alone`) with
what depends on this machine added here, in the launch layer: the plan against ``--gpu-memory`` (the
user's number of GB) or this machine's GPU, and the installed vLLM against TRL's range."""

from __future__ import annotations

import math
import sys

from procrl.core.config import ConfigError

__all__ = ["check_recipe"]


def check_recipe(
    path: str,
    overrides: list[str],
    load_models: bool = False,
    probe_judge: bool = False,
    gpu_memory_gb: float | None = None,
) -> list[str]:
    """Print the check of the recipe at ``path``; return one line per component that cannot run
    (empty when training may start). An invalid recipe raises ConfigError before anything loads."""
    from procrl.recipe.check import check_recipe_alone

    gpu = None
    if gpu_memory_gb is not None:
        if not (math.isfinite(gpu_memory_gb) and gpu_memory_gb > 0):
            raise ConfigError(f"--gpu-memory: must be a finite number > 0 (GB), got {gpu_memory_gb:g}")
        gpu = (gpu_memory_gb * 1e9, f"{gpu_memory_gb:g} GB")
    elif "torch" in sys.modules:  # this machine's GPU; check imports no torch for this alone
        from procrl.launch.prelaunch import gpu_memory_bytes

        gpu = gpu_memory_bytes()
    recipe, broken = check_recipe_alone(path, overrides, load_models, probe_judge, gpu)
    if recipe.trainer_args.get("use_vllm"):
        from procrl.launch.versions import vllm_version_problem  # TRL only warns; its weight sync needs its range

        if (version_problem := vllm_version_problem()) is not None:
            broken.append(f"trainer.use_vllm: {version_problem}")
    return broken
