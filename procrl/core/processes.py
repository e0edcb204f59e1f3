"""Whether the process holding a lock or a temporary folder is still running (Linux ``/proc``),
one check for every holder: the output dir's lock, a build's temporary folder."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["process_alive", "process_start_time"]


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
