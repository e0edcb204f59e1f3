"""Shim: ``python -m procrl.data.integrity`` (the reward-integrity cases); the code is
:mod:`procrl.evaluation.integrity`."""

from procrl.evaluation.integrity import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
