"""Load a scoring model (NLI classifier, information-gain LM) whole, on every rank.

Under DeepSpeed ZeRO-3 with ``zero3_init_flag`` (accelerate's default for ZeRO-3 configs),
transformers builds every model created by ``from_pretrained`` inside ``deepspeed.zero.Init``:
its parameters are partitioned placeholders that only work inside a DeepSpeed engine. A reward
model that each rank runs on its own must not be partitioned, so it is loaded with the
transformers ZeRO-3 hook switched off for the duration of the call.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from procrl.models.loading import torch_dtype

__all__ = ["load_scoring_model", "load_standalone", "torch_dtype", "zero3_init_disabled"]

_LOCK = threading.Lock()


@contextlib.contextmanager
def zero3_init_disabled():
    """Within this block ``from_pretrained`` builds ordinary (unpartitioned) models."""
    try:
        from transformers.integrations import deepspeed as hf_deepspeed
    except ImportError:  # transformers without the DeepSpeed integration
        yield
        return
    with _LOCK:
        saved = hf_deepspeed._hf_deepspeed_config_weak_ref
        hf_deepspeed._hf_deepspeed_config_weak_ref = None
        try:
            yield
        finally:
            hf_deepspeed._hf_deepspeed_config_weak_ref = saved


def load_standalone(loader: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``loader(*args, **kwargs)`` (e.g. ``AutoModelForSequenceClassification.from_pretrained``)
    with ZeRO-3 partitioning off."""
    with zero3_init_disabled():
        return loader(*args, **kwargs)


def load_scoring_model(auto_class: Any, source: Any, *, dtype: str = "auto", device: Any = "cpu", **kwargs: Any) -> Any:
    """``auto_class.from_pretrained(source)`` whole on every rank, in eval mode on ``device``:
    the one loading path of the judges, the NLI scorer and a named information-gain LM, through
    :func:`procrl.models.loading.load_pretrained` (``source``: a path or a ``ModelSource``, GGUF included)."""
    from procrl.models.loading import load_pretrained

    if dtype != "auto":
        kwargs["dtype"] = torch_dtype(dtype)
    return load_standalone(load_pretrained, auto_class, source, **kwargs).to(device).eval()
