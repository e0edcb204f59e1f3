"""Shim: ``python -m procrl.run RECIPE`` / ``accelerate launch -m procrl.run RECIPE`` (the command
``procrl train`` launches); the code is :mod:`procrl.launch.run`."""

import sys

from procrl.launch.run import build_trainer, main, train

__all__ = ["build_trainer", "main", "train"]

if __name__ == "__main__":
    sys.exit(main())
