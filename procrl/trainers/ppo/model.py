"""The policy and the value model as one module (:class:`PolicyAndValue`), the value heads
(a fresh head starts at V = 0), and loading a checkpoint's weights back into them."""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

__all__ = [
    "VALUE_DIR",
    "VALUE_HEAD_FILE",
    "PolicyAndValue",
    "load_pretrained_into",
    "value_head_for",
    "zero_value_head",
]

VALUE_DIR = "value_model"
VALUE_HEAD_FILE = "value_head.safetensors"  # value_head_on_policy: the head alone


class PolicyAndValue(nn.Module):
    """The policy (causal LM) and the value model as one module: one forward gives the logits
    and the per-token values, so DDP/DeepSpeed see one model. ``value`` is either a separate
    1-output token classifier or an ``nn.Linear`` head on the policy's last hidden state (one
    forward through the shared trunk)."""

    def __init__(self, policy: nn.Module, value: nn.Module):
        super().__init__()
        self.policy = policy
        self.value = value
        self.config = policy.config

    @property
    def value_head_on_policy(self) -> bool:
        return isinstance(self.value, nn.Linear)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits, values): the values at every position, the logits at the last ``logits_to_keep``
        positions (0: all; transformers' ``logits_to_keep``, so the LM head runs on those alone)."""
        kwargs = {"logits_to_keep": logits_to_keep} if logits_to_keep else {}
        if self.value_head_on_policy:
            out = self.policy(
                input_ids=input_ids, attention_mask=attention_mask, use_cache=False, output_hidden_states=True, **kwargs
            )
            return out.logits, self.value(out.hidden_states[-1].to(self.value.weight.dtype)).squeeze(-1)
        logits = self.policy(input_ids=input_ids, attention_mask=attention_mask, use_cache=False, **kwargs).logits
        values = self.value(input_ids=input_ids, attention_mask=attention_mask).logits.squeeze(-1)
        return logits, values

    @property
    def is_gradient_checkpointing(self) -> bool:
        return bool(getattr(self.policy, "is_gradient_checkpointing", False))

    def activation_checkpointing_enable(self, **kwargs: Any) -> None:
        for model in (self.policy, self.value):
            if hasattr(model, "gradient_checkpointing_enable"):
                model.gradient_checkpointing_enable(
                    gradient_checkpointing_kwargs=kwargs.get("activation_checkpointing_kwargs")
                )

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs: dict | None = None, **_: Any) -> None:
        self.activation_checkpointing_enable(activation_checkpointing_kwargs=gradient_checkpointing_kwargs)

    def gradient_checkpointing_disable(self) -> None:
        for model in (self.policy, self.value):
            if hasattr(model, "gradient_checkpointing_disable"):
                model.gradient_checkpointing_disable()


def load_pretrained_into(model: nn.Module, directory: str) -> None:
    """Load weights saved by ``save_pretrained`` (full model or PEFT adapter), or a value head
    saved by ``PPOTrainer._save``, into ``model``."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"checkpoint directory not found: {directory}")
    if isinstance(model, nn.Linear):
        from safetensors.torch import load_file

        model.load_state_dict(load_file(os.path.join(directory, VALUE_HEAD_FILE)))
        return
    if hasattr(model, "peft_config"):
        from peft import set_peft_model_state_dict
        from peft.utils import load_peft_weights

        set_peft_model_state_dict(model, load_peft_weights(directory))
        return
    loaded = type(model).from_pretrained(directory, dtype=next(model.parameters()).dtype)
    model.load_state_dict(loaded.state_dict())
    del loaded


def value_head_for(policy: nn.Module) -> nn.Linear:
    """``value_head_on_policy``: a scalar head on the policy's last hidden state, V = 0 at start."""
    config = policy.config.get_text_config()
    head = nn.Linear(config.hidden_size, 1, dtype=next(policy.parameters()).dtype)
    with torch.no_grad():
        head.weight.zero_()
        head.bias.zero_()
    return head


def zero_value_head(value: nn.Module) -> None:
    """Start a fresh value head at V = 0: the first advantages are then the (whitened)
    rewards-to-go instead of the noise of a random head, which on small rewards drowns the signal."""
    from contextlib import nullcontext

    from transformers.integrations import is_deepspeed_zero3_enabled

    head = getattr(value, "score", None) or getattr(value, "classifier", None)
    if not isinstance(head, nn.Linear):
        raise ValueError(f"{type(value).__name__}: no linear 'score' or 'classifier' head to initialise")
    params = [p for p in (head.weight, head.bias) if p is not None]
    gathered = nullcontext()
    if is_deepspeed_zero3_enabled():  # built partitioned: zeroing the local shard alone would change nothing
        import deepspeed

        gathered = deepspeed.zero.GatheredParameters(params, modifier_rank=0)
    with gathered, torch.no_grad():
        for param in params:
            param.zero_()
