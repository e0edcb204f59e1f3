"""How a procrl command line runs, for ``procrl COMMAND`` (:mod:`procrl.launch.cli`) and
``python -m procrl.run`` (:mod:`procrl.launch.run`) alike: the secrets given on the command line
registered and redacted from everything printed, procrl's known warnings filtered, SIGTERM handled
as Ctrl-C, a ConfigError one line on stderr and exit status 2, an interrupt one line saying what
is kept and exit status 130 (143 for SIGTERM).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from procrl.core import interrupts
from procrl.core.config import ConfigError
from procrl.core.known_warnings import filter_known_warnings
from procrl.core.processes import exit_without_waiting
from procrl.core.redaction import redact_argv, redacted_console

__all__ = ["run_command"]


def run_command(
    build_parser: Callable[[], argparse.ArgumentParser],
    argv: list[str] | None = None,
    passes_unknown_flags: Callable[[argparse.Namespace], bool] = lambda args: False,
    show_interrupt: bool = True,
    exit_when_done: bool = False,
) -> int:
    """Parse ``argv`` with the parser ``build_parser`` returns and call the parsed ``handler``.

    Args:
        build_parser: returns the parser; each command's parser sets ``handler(args) -> int``.
        argv: the arguments (None: ``sys.argv[1:]``).
        passes_unknown_flags: whether the parsed command takes the flags procrl does not know, as
            ``args.launch_args`` (``procrl train`` hands them to accelerate launch); else they are a
            usage error.
        show_interrupt: print the interrupt's line (False on a launched rank other than 0: every rank
            gets Ctrl-C, the first prints it).
        exit_when_done: end the process when the command is done, without waiting for threads a
            reward started and never ended.

    Returns:
        The exit status: the handler's, 2 for a ConfigError, 130 or 143 for an interrupt.
    """
    redact_argv(sys.argv if argv is None else argv)  # registers the secrets given on the command line
    with redacted_console():  # everything printed, whoever prints it, is redacted (procrl/core/redaction.py)
        code = _run(build_parser, argv, passes_unknown_flags, show_interrupt)
        if exit_when_done:
            exit_without_waiting(code)
        return code


def _run(build_parser, argv, passes_unknown_flags, show_interrupt) -> int:
    filter_known_warnings()
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not passes_unknown_flags(args):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.launch_args = extra
    sys.argv[:] = redact_argv(sys.argv)  # what records the command line (W&B, the lock file) sees no secret
    with interrupts.terminate_as_interrupt():  # SIGTERM cleans up as Ctrl-C does
        try:
            return args.handler(args)
        except ConfigError as error:
            print(f"procrl: error: {error}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as error:  # one line saying what is kept
            return interrupts.report(error, show=show_interrupt)
