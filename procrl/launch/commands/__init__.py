"""One module per ``procrl`` subcommand: its arguments and a handler that calls the work in the
layer the work belongs to (no command's parsing lives outside this package).

Each module defines ``NAME`` (the subcommand), ``HELP`` (its one line in ``procrl --help``),
``add_arguments(parser)`` and ``run(args) -> int`` (the exit status); :mod:`procrl.launch.cli`
registers the modules it lists in ``COMMANDS``, in that order.
"""
