"""The third-party warnings procrl filters, once, at its entry points (``procrl``,
``python -m procrl.run``, the ``python RECIPE.yaml`` start-up hook): only those listed here,
each for a reason; every other warning is shown as Python would.

* transformers 5 renamed gradient checkpointing to activation checkpointing and warns
  (FutureWarning) on the old names: ``gradient_checkpointing`` (the TrainingArguments / TRL
  config field, which recipes keep under TRL's name) and the model methods
  ``gradient_checkpointing_enable`` / ``_disable`` / ``is_gradient_checkpointing``, which TRL
  calls around every generation, so the three lines came back at every training step.
"""

from __future__ import annotations

import warnings

__all__ = ["GRADIENT_CHECKPOINTING_RENAME", "filter_known_warnings"]

GRADIENT_CHECKPOINTING_RENAME = (
    r"`(is_)?gradient_checkpointing(_enable|_disable)?` is deprecated and will be removed in v6"
)


def filter_known_warnings() -> None:
    """Ignore the warnings listed in this module's docstring (idempotent)."""
    warnings.filterwarnings("ignore", message=GRADIENT_CHECKPOINTING_RENAME, category=FutureWarning)
