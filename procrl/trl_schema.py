"""Shim: ``python -m procrl.trl_schema --write`` regenerates the table in
:mod:`procrl.recipe.trl_schema` (the code)."""

from procrl.recipe.trl_schema import GRPO_CONFIG_FIELDS, main

__all__ = ["GRPO_CONFIG_FIELDS", "main"]

if __name__ == "__main__":
    main()
