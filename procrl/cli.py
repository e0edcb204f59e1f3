"""Shim: ``python -m procrl.cli`` and the ``procrl.cli:main`` entry point of older installs; the
code is :mod:`procrl.launch.cli`."""

import sys

from procrl.launch.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
