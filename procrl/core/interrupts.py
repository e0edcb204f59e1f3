"""Ctrl-C and SIGTERM: one line saying what is kept, no traceback, exit 130 / 143.

* :func:`terminate_as_interrupt` turns SIGTERM (``kill PID``, a job scheduler's stop, a
  container's shutdown) into :class:`Terminated`, a ``KeyboardInterrupt``: the same clean-up as
  Ctrl-C runs (``procrl score`` removes its temporary file, a training run releases its lock and
  leaves its staged save unpublished) instead of the process vanishing with its debris. A second
  SIGTERM kills at once, as the default does.
* The code that knows what an interruption leaves turns the ``KeyboardInterrupt`` into
  :class:`Interrupted` with that in words (``--output x.jsonl left as it was``, ``the newest
  complete checkpoint is ...``); the command's ``main`` prints
  ``procrl: interrupted; nothing lost: ...`` (:func:`report`).
* :func:`deferred` holds both signals back for the few renames that publish a save, so that an
  interruption falls before or after them, not between.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

__all__ = ["Interrupted", "Terminated", "deferred", "interrupted", "report", "terminate_as_interrupt"]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread by :func:`terminate_as_interrupt`'s handler."""


class Interrupted(KeyboardInterrupt):
    """An interruption, with what it left behind (``kept``) in words."""

    def __init__(self, kept: str, terminated: bool = False):
        super().__init__(kept)
        self.kept = kept
        self.terminated = terminated


def interrupted(error: KeyboardInterrupt, kept: str) -> Interrupted:
    """``error`` (Ctrl-C or SIGTERM) as :class:`Interrupted` saying ``kept``; an :class:`Interrupted`
    raised further in (which knows better) is returned as it is."""
    if isinstance(error, Interrupted):
        return error
    return Interrupted(kept, terminated=isinstance(error, Terminated))


def _raise_terminated(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated()


@contextlib.contextmanager
def terminate_as_interrupt():
    """While inside: SIGTERM raises :class:`Terminated` in the main thread (elsewhere, or when a
    handler other than the default is installed, nothing changes). The handler is restored after."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def report(error: KeyboardInterrupt, show: bool = True) -> int:
    """Print the one line for ``error`` (when ``show``) and return the exit status: 130 for
    Ctrl-C, 143 for SIGTERM (128 + the signal, as a shell reports them)."""
    terminated = isinstance(error, Terminated) or getattr(error, "terminated", False)
    if show:
        how = "interrupted (SIGTERM)" if terminated else "interrupted"
        kept = error.kept if isinstance(error, Interrupted) else None
        print(f"procrl: {how}; nothing lost: {kept}" if kept else f"procrl: {how}", file=sys.stderr, flush=True)
    return 143 if terminated else 130


@contextlib.contextmanager
def deferred():
    """SIGINT and SIGTERM held back (delivered when the block ends) in this thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
