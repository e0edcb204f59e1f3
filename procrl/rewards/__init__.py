"""Reward components, each in its own module with one entry in ``registry.REWARDS``, and the one
import a custom reward needs::

    from procrl.rewards import RewardBatch, RewardComponent, RewardOutput, field

The names are defined in :mod:`procrl.rewards.protocol` (the component protocol), :mod:`procrl.rewards.mix`
(the reward mix), :mod:`procrl.rewards.spec` (a recipe's ``rewards:``, validated) and
:mod:`procrl.core.config` (``field``: a settings field with its help string). procrl's own modules
import from those modules; this package re-exports them for code outside procrl.
"""

from procrl.core.config import ConfigError, field
from procrl.rewards.mix import RewardMix
from procrl.rewards.protocol import (
    ModelRef,
    RewardBatch,
    RewardComponent,
    RewardOutput,
    RuntimeContext,
    completion_text,
)
from procrl.rewards.registry import REWARDS
from procrl.rewards.spec import parse_rewards

__all__ = [
    "REWARDS",
    "ConfigError",
    "ModelRef",
    "RewardBatch",
    "RewardComponent",
    "RewardMix",
    "RewardOutput",
    "RuntimeContext",
    "completion_text",
    "field",
    "parse_rewards",
]
