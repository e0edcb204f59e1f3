"""Shim: custom rewards import ``procrl.config.field`` (and ConfigError, suggest); the code is
:mod:`procrl.core.config`."""

from procrl.core.config import ConfigError, check_value, describe_fields, field, from_dict, suggest

__all__ = ["ConfigError", "check_value", "describe_fields", "field", "from_dict", "suggest"]
