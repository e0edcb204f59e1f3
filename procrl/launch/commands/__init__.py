"""One module per ``procrl`` subcommand: its arguments and a handler that calls the work in the
layer the work belongs to (no command's parsing lives outside this package).

Each module defines ``NAME`` (the subcommand), ``HELP`` (its one line in ``procrl --help``),
``add_arguments(parser)`` and ``run(args) -> int`` (the exit status); :mod:`procrl.launch.cli`
registers the modules it lists in ``COMMANDS``, in that order. A module may also set
``PASSES_UNKNOWN_FLAGS = True`` to receive the flags procrl does not know as ``args.launch_args``
(``train`` hands them to accelerate launch); every other command refuses them. Modules whose
name starts with an underscore hold what several commands share.
"""
