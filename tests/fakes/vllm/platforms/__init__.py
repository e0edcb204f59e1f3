"""vLLM's platform of the engine double: it runs on the CPU (as a CPU build of vLLM does)."""

from types import SimpleNamespace

current_platform = SimpleNamespace(device_type="cpu")
