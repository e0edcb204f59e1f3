"""Torch dtypes by name for the judge models (loaded whole under ZeRO-3 by
:func:`procrl.rewards.standalone.zero3_init_disabled`)."""

from __future__ import annotations

from typing import Any

__all__ = ["torch_dtype"]


def torch_dtype(name: str) -> Any:
    import torch

    if name == "auto":
        return "auto"
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown torch dtype {name!r}")
    return value
