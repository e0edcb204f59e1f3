"""Where a model's config.json values come from without a download: a local directory, the local
Hugging Face cache, procrl's embedded models, the header of a GGUF file, or the table of known
architectures (:data:`procrl.models.parameters.KNOWN_ARCHITECTURES`). What ``procrl check``
counts parameters and plans memory with; no model is built."""

from __future__ import annotations

import json
import re
from pathlib import Path
from struct import error as struct_error
from typing import Any

from procrl.models.parameters import KNOWN_ARCHITECTURES

__all__ = ["model_architecture"]


def _known_key(name_or_path: str) -> str | None:
    base = name_or_path.rstrip("/").split("/")[-1].lower()
    base = re.sub(r"-(instruct|chat|base)$", "", base)
    base = base.replace("meta-llama-3.1", "llama-3.1")
    return base if base in KNOWN_ARCHITECTURES else None


def _gguf_architecture(file: Path) -> tuple[dict[str, Any] | None, str]:
    from procrl.models.gguf import gguf_config

    try:
        return gguf_config(file), f"the GGUF header of {file} (dequantized to float32 on dtype: auto)"
    except (OSError, ValueError, struct_error) as error:
        return None, f"unknown ({file}: {error})"


def _gguf_file(name_or_path: str, gguf_file: str | None) -> Path | None:
    """The local GGUF file a model setting names, if it is on disk (Hub GGUFs: the local cache)."""
    if gguf_file is None:
        return Path(name_or_path).expanduser() if name_or_path.lower().endswith(".gguf") else None
    for candidate in (Path(name_or_path).expanduser() / gguf_file, Path(gguf_file).expanduser()):
        if candidate.is_file():
            return candidate
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name_or_path, gguf_file)
    except Exception:  # noqa: BLE001 - not a repo id
        return None
    return Path(cached) if isinstance(cached, str) else None


def model_architecture(
    name_or_path: str, revision: str | None = None, gguf_file: str | None = None
) -> tuple[dict[str, Any] | None, str]:
    """The model's config.json values and where they came from: a local directory, the local
    Hugging Face cache (no network), procrl's embedded models, the header of a GGUF file (a
    ``gguf_file`` or a ``.gguf`` path), or the table of known architectures."""
    candidates: list[tuple[Path, str]] = []
    gguf = _gguf_file(name_or_path, gguf_file)
    if gguf is not None:
        return _gguf_architecture(gguf)
    if name_or_path.startswith("procrl:"):
        from procrl.models.loading import SMOLLM2, TINY_MODEL, TINY_VERSION, cache_root
        from procrl.models.reasoner import REASONER, SHIPPED_REASONER

        if name_or_path == TINY_MODEL:
            directory = cache_root() / f"tiny-qwen2-{TINY_VERSION}-h64-l2-s0"
            candidates.append((directory / "config.json", f"config.json of the built tiny model ({directory})"))
        if name_or_path == REASONER:
            candidates.append(
                (SHIPPED_REASONER / "config.json", f"config.json of the shipped tiny reasoner ({SHIPPED_REASONER})")
            )
        if name_or_path == SMOLLM2:  # the wheel's GGUF header (the converted copy holds the same numbers)
            from procrl.core.config import ConfigError
            from procrl.models.loading import smollm2_gguf

            try:
                config, source = _gguf_architecture(smollm2_gguf())
            except ConfigError as error:
                return None, f"unknown ({error})"
            return config, source.replace(" (dequantized", f" ({SMOLLM2}; dequantized")
    else:
        local = Path(name_or_path).expanduser()
        candidates.append((local / "config.json", f"{local / 'config.json'}"))
    for path, source in candidates:
        if path.is_file():
            try:
                return json.loads(path.read_text()), source
            except (OSError, ValueError):
                pass
    if not name_or_path.startswith("procrl:") and not Path(name_or_path).expanduser().exists():
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(name_or_path, "config.json", revision=revision)
        except Exception:  # noqa: BLE001 - an odd repo id: fall through to the table
            cached = None
        if isinstance(cached, str):
            try:
                return json.loads(Path(cached).read_text()), f"config.json in the Hugging Face cache ({cached})"
            except (OSError, ValueError):
                pass
    key = _known_key(name_or_path)
    if key is not None:
        return dict(KNOWN_ARCHITECTURES[key]), f"procrl's table of known architectures ({key})"
    return None, "unknown (no local config.json; not in procrl's table of known architectures)"
