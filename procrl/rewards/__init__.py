"""Reward components. Each lives in its own module and has one entry in ``registry.REWARDS``."""

from procrl.rewards.base import RewardBatch, RewardComponent, RewardMix, RewardOutput, RuntimeContext
from procrl.rewards.registry import REWARDS

__all__ = ["REWARDS", "RewardBatch", "RewardComponent", "RewardMix", "RewardOutput", "RuntimeContext"]
