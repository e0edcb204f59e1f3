"""``python -m procrl``: the ``procrl`` command (:mod:`procrl.launch.cli`)."""

import sys

from procrl.launch.cli import main

if __name__ == "__main__":
    sys.exit(main())
