"""One digest of a model's weights, shared by the vLLM engine double (tests/fakes/vllm) and the
tests that compare what the engine holds with a saved checkpoint."""

from __future__ import annotations

import hashlib

import torch


def weights_digest(model: torch.nn.Module) -> str:
    """sha256 over the parameters by name, as float32 bytes (order- and device-independent)."""
    digest = hashlib.sha256()
    for name, param in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(param.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()
