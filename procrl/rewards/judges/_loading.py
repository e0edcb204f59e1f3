"""Loading a judge model: torch dtype by name, and loading outside DeepSpeed ZeRO-3.

Under ZeRO-3, ``from_pretrained`` partitions every model it builds across ranks (transformers
checks a global set by the trainer). A judge is inference-only and called by each rank on its
own samples, so it is loaded whole on the rank's device instead.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

__all__ = ["outside_zero3", "torch_dtype"]


def torch_dtype(name: str) -> Any:
    import torch

    if name == "auto":
        return "auto"
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown torch dtype {name!r}")
    return value


@contextlib.contextmanager
def outside_zero3() -> Iterator[None]:
    """``from_pretrained`` inside this block builds an ordinary, unpartitioned model."""
    try:
        from transformers.integrations import deepspeed as hf_deepspeed
    except ImportError:  # transformers without the DeepSpeed integration
        yield
        return
    saved = getattr(hf_deepspeed, "_hf_deepspeed_config_weak_ref", None)
    hf_deepspeed._hf_deepspeed_config_weak_ref = None
    try:
        yield
    finally:
        hf_deepspeed._hf_deepspeed_config_weak_ref = saved
