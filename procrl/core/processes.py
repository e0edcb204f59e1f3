"""Whether the process holding a lock or a temporary folder is still running (Linux ``/proc``),
one check for every holder: the output dir's lock, a build's temporary folder. A holder writes
:func:`holder_record` when it takes its place; :func:`holder_gone` reads it back."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from pathlib import Path
from typing import Any

__all__ = [
    "ExitRefused",
    "exit_without_waiting",
    "refuse_process_exit",
    "holder_gone",
    "holder_record",
    "process_alive",
    "process_start_time",
]


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


# --- who may end this process --------------------------------------------------------------------


class ExitRefused(Exception):
    """Code procrl runs (a reward) called ``os._exit``, which would end the process on the spot:
    no output, no message, and whatever exit status it chose."""


_running = 0  # calls under refuse_process_exit() in progress
_running_lock = threading.Lock()
_real_exit = os._exit
_owner = os.getpid()


def _guarded_exit(status: int) -> None:
    # a forked child (a data loader worker) ends as its library means it to
    if _running and os.getpid() == _owner:
        raise ExitRefused(f"called os._exit({status}), which would end procrl without a word; refused")
    _real_exit(status)


@contextlib.contextmanager
def refuse_process_exit():
    """While a reward runs (in any thread), ``os._exit`` raises :class:`ExitRefused` in the thread
    that called it instead of ending the process: the reward fails like any that raises, and
    procrl finishes and reports. (``sys.exit`` raises SystemExit, which the failure policy
    catches already.)"""
    global _running
    os._exit = _guarded_exit
    with _running_lock:
        _running += 1
    try:
        yield
    finally:
        with _running_lock:
            _running -= 1


def exit_without_waiting(status: int) -> None:
    """End the process with ``status`` when threads that are not daemons are still running
    (started by a reward or a library, never joined): Python would wait for them at exit, for
    ever. The exit handlers run and the streams are flushed first, as at a normal exit; a note
    names the threads. Returns (does nothing) when no such thread is left."""
    import atexit

    left = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if not left:
        return
    names = ", ".join(t.name for t in left[:3]) + (f", ... ({len(left)} threads)" if len(left) > 3 else "")
    print(f"procrl: not waiting for {names}, still running at the end (not a daemon thread)", file=sys.stderr)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _real_exit(status)
