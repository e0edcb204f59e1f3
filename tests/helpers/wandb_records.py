"""Read a W&B offline run file (``run-*.wandb``) back, to check what a run logged.

The file is W&B's transaction log: a 7-byte header (``:W&B``, magic, version) followed by
LevelDB-log-style 32 KiB blocks of records (crc32 u32, length u16, type u8: full/first/middle/
last) whose payloads are ``wandb_internal_pb2.Record`` protobufs. wandb 0.31 ships no
Python reader, so tests use this one.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BLOCK = 32 * 1024
HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def _payloads(data: bytes) -> Iterator[bytes]:
    position, pending = HEADER, b""
    while position + 7 <= len(data):
        block_left = BLOCK - (position % BLOCK)
        if block_left < 7:  # block trailer padding
            position += block_left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[position : position + 7])
        chunk = data[position + 7 : position + 7 + length]
        position += 7 + length
        if kind == FULL:
            yield chunk
        elif kind == FIRST:
            pending = chunk
        elif kind == MIDDLE:
            pending += chunk
        elif kind == LAST:
            yield pending + chunk
            pending = b""
        elif kind == 0 and length == 0:  # zero padding up to the next block
            position += BLOCK - (position % BLOCK) if position % BLOCK else 0


def read_records(run_file: str | Path) -> list[Any]:
    from wandb.proto import wandb_internal_pb2 as pb

    records = []
    for payload in _payloads(Path(run_file).read_bytes()):
        record = pb.Record()
        record.ParseFromString(payload)
        records.append(record)
    return records


def run_file(wandb_dir: str | Path) -> Path:
    files = sorted(Path(wandb_dir).glob("offline-run-*/run-*.wandb"))
    assert len(files) == 1, files
    return files[0]


def config(run: str | Path) -> dict[str, Any]:
    """The run config (last value of each key)."""
    values: dict[str, Any] = {}
    for record in read_records(run):
        if record.WhichOneof("record_type") == "config":
            for item in record.config.update:
                values[item.key] = json.loads(item.value_json)
        elif record.WhichOneof("record_type") == "run":
            for item in record.run.config.update:
                values[item.key] = json.loads(item.value_json)
    return values


def history(run: str | Path) -> list[dict[str, Any]]:
    """One dict per logged history row (key -> decoded JSON value)."""
    rows = []
    for record in read_records(run):
        if record.WhichOneof("record_type") == "history":
            rows.append(
                {".".join(item.nested_key) or item.key: json.loads(item.value_json) for item in record.history.item}
            )
    return rows
