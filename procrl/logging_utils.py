"""W&B integration: the resolved recipe as run config (secrets already redacted by the caller)."""

from __future__ import annotations

from transformers import TrainerCallback

__all__ = ["RecipeConfigCallback"]


class RecipeConfigCallback(TrainerCallback):
    """Adds the resolved recipe to the W&B run config under ``procrl``.

    Runs after transformers' WandbCallback has started the run (callbacks are called in order
    and ours is added after the default ones). Environment values are never read here.
    """

    def __init__(self, resolved_recipe: dict):
        self.resolved_recipe = resolved_recipe
        self._done = False

    def on_train_begin(self, args, state, control, **kwargs):
        if self._done or not state.is_world_process_zero:
            return
        try:
            import wandb
        except ImportError:
            return
        if getattr(wandb, "run", None) is not None:
            wandb.config.update({"procrl": self.resolved_recipe}, allow_val_change=True)
            self._done = True
