"""The few numbers of a GGUF checkpoint that ``procrl check`` plans with, read from its header.

A GGUF file starts with key-value metadata (architecture, layer count, widths, the tokenizer's
vocabulary) and a table of tensor names and shapes; the weights follow. Planning needs a dozen
scalars and the shapes, so this reads only the header, with the standard library: the gguf
package's ``GGUFReader`` parses every tokenizer string into arrays first (seconds for the 135M
SmolLM2 file, where reading the header alone takes a fraction of one), and transformers' own
reader needs torch, which ``procrl check`` does not import.
Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md (versions 2 and 3; little-endian).
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path
from typing import Any

__all__ = ["gguf_config", "read_gguf_header"]

# value type -> struct format of the fixed-size scalars; 8 = string, 9 = array
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def _string(view: Any, pos: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<Q", view, pos)
    start = pos + 8
    return bytes(view[start : start + length]).decode("utf-8", errors="replace"), start + length


def _value(view: Any, pos: int, kind: int) -> tuple[Any, int]:
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack_from(fmt, view, pos)[0], pos + struct.calcsize(fmt)
    if kind == _STRING:
        return _string(view, pos)
    if kind == _ARRAY:
        element, count = struct.unpack_from("<IQ", view, pos)
        pos += 12
        if element in _SCALARS:  # kept as its length only (token types, scores): planning needs none of them
            return count, pos + count * struct.calcsize(_SCALARS[element])
        for _ in range(count):  # strings (tokens, merges) or nested arrays: skipped
            _, pos = _value(view, pos, element)
        return count, pos
    raise ValueError(f"unknown GGUF metadata value type {kind}")


def read_gguf_header(path: str | Path) -> tuple[dict[str, Any], dict[str, tuple[int, ...]]]:
    """(metadata, tensor name -> shape in GGUF order, fastest-moving dimension first); arrays in
    the metadata are given as their length."""
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        if view[:4] != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file (no GGUF magic bytes)")
        version, tensors, entries = struct.unpack_from("<IQQ", view, 4)
        if version not in (2, 3):
            raise ValueError(f"{path}: GGUF version {version}; versions 2 and 3 are read")
        pos = 24
        metadata: dict[str, Any] = {}
        for _ in range(entries):
            key, pos = _string(view, pos)
            (kind,) = struct.unpack_from("<I", view, pos)
            metadata[key], pos = _value(view, pos + 4, kind)
        shapes: dict[str, tuple[int, ...]] = {}
        for _ in range(tensors):
            name, pos = _string(view, pos)
            (dims,) = struct.unpack_from("<I", view, pos)
            shapes[name] = struct.unpack_from(f"<{dims}Q", view, pos + 4)
            pos += 4 + 8 * dims + 4 + 8  # dims, ggml type, data offset
    return metadata, shapes


def gguf_config(path: str | Path) -> dict[str, Any]:
    """config.json-style values of a GGUF decoder LM (what :func:`procrl.models.parameters.count_parameters`
    reads), plus ``num_parameters`` counted from the tensor shapes. transformers dequantizes a
    GGUF to float32 by default (``dtype: auto``), which ``dtype`` records."""
    metadata, shapes = read_gguf_header(path)
    arch = str(metadata.get("general.architecture", ""))

    def get(key: str) -> Any:
        return metadata.get(f"{arch}.{key}")

    hidden = get("embedding_length")
    vocab = get("vocab_size") or metadata.get("tokenizer.ggml.tokens")
    embedding = shapes.get("token_embd.weight")
    if embedding and hidden:
        vocab = next((d for d in embedding if d != hidden), vocab)
    parameters = 0
    for shape in shapes.values():
        count = 1
        for dimension in shape:
            count *= dimension
        parameters += count
    config = {
        "model_type": arch,
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": get("feed_forward_length"),
        "num_hidden_layers": get("block_count"),
        "num_attention_heads": get("attention.head_count"),
        "num_key_value_heads": get("attention.head_count_kv"),
        "tie_word_embeddings": "output.weight" not in shapes,
        "max_position_embeddings": get("context_length"),
        "dtype": "float32",
        "num_parameters": parameters,
        "gguf_file_type": metadata.get("general.file_type"),
    }
    head_dim = get("attention.key_length")
    if head_dim:
        config["head_dim"] = head_dim
    return {key: value for key, value in config.items() if value is not None}
