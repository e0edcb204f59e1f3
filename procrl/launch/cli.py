"""The ``procrl`` command line: the parser built from the command modules of
:mod:`procrl.launch.commands` listed in ``COMMANDS`` (each its arguments and a handler), and the
run of the chosen one.

A ConfigError from any command is one line on stderr and exit status 2 (an invalid recipe is
refused before any model or dataset is loaded); Ctrl-C and SIGTERM are one line saying what is kept
(:func:`procrl.launch.entry.run_command`, which ``python -m procrl.run`` shares).
"""

from __future__ import annotations

import argparse
import sys

from procrl.launch.commands import (
    audit,
    build_tiny_reasoner,
    check,
    eval_judge,
    evaluate,
    score,
    serve,
    train,
    train_tagger,
    validate,
)
from procrl.launch.entry import run_command

__all__ = ["COMMANDS", "build_parser", "main"]

# the order of `procrl --help`; each module's imports are light (models and components load in its run)
COMMANDS = [train, check, score, audit, serve, train_tagger, build_tiny_reasoner, evaluate, validate, eval_judge]


class _CommandList(argparse.HelpFormatter):
    """``procrl --help``: one line per command, whatever the terminal's width."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=40, width=100_000)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        # argparse aligns the help by the commands' names without their own indent: a name as long as
        # build-tiny-reasoner would start its line of help below it
        for subaction in self._iter_indented_subactions(action):
            width = len(self._format_action_invocation(subaction)) + self._current_indent
            self._action_max_length = max(self._action_max_length, width)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="procrl",
        description="RL fine-tuning with process rewards.",
        epilog="procrl COMMAND --help: the options of that command.",
        formatter_class=_CommandList,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    for command in COMMANDS:
        subparser = commands.add_parser(command.NAME, help=command.HELP)
        command.add_arguments(subparser)
        subparser.set_defaults(handler=command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``procrl ARGV`` (None: this process's command line); returns the exit status (procrl.launch.entry)."""
    passes_on = {command.NAME for command in COMMANDS if getattr(command, "PASSES_UNKNOWN_FLAGS", False)}
    return run_command(
        build_parser,
        argv,
        passes_unknown_flags=lambda args: args.command in passes_on,  # the other commands refuse them
        # the procrl process itself (not a caller in Python): done when its command is, even if a thread a
        # reward started and never ended would keep it alive
        exit_when_done=argv is None,
    )


if __name__ == "__main__":
    sys.exit(main())
