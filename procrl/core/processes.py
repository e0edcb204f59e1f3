"""Whether the process holding a lock or a temporary folder is still running (Linux ``/proc``),
one check for every holder: the output dir's lock, a build's temporary folder. A holder writes
:func:`holder_record` when it takes its place; :func:`holder_gone` reads it back."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

__all__ = ["holder_gone", "holder_record", "process_alive", "process_start_time"]


def process_start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot, to tell a reused PID apart (None when
    it cannot be read: no such process, or no ``/proc``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def process_alive(pid: int, start_time: str | None = None) -> bool:
    """Whether process ``pid`` runs on this host; with ``start_time`` (from :func:`process_start_time`
    when the holder was written), a later process that reused the PID counts as gone."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    except OSError:
        return False
    if start_time is not None and process_start_time(pid) not in (None, start_time):
        return False
    return True


def holder_record() -> dict[str, Any]:
    """Who holds a place: this process's PID, host and start time."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "start_time": process_start_time(os.getpid())}


def holder_gone(record: Any) -> bool:
    """Whether the holder a :func:`holder_record` names has ended. Only decidable on its own host:
    a holder on another host, or a record without a PID, counts as running (never taken over)."""
    if not isinstance(record, dict):
        return False
    pid = record.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or record.get("host") != socket.gethostname():
        return False
    start_time = record.get("start_time")
    return not process_alive(pid, start_time if isinstance(start_time, str) else None)
