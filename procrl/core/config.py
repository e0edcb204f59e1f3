"""Typed settings from plain dicts, with one-line errors that name the key.

Every recipe section and every reward component's settings is a dataclass whose fields carry a
``help`` string in their metadata (the TRL convention). :func:`from_dict` builds one from a
mapping and raises :class:`ConfigError` naming the dotted key path, with a "did you mean"
suggestion for unknown keys and the allowed values for a ``Literal``.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

__all__ = ["ConfigError", "field", "from_dict", "check_value", "suggest"]


class ConfigError(ValueError):
    """An invalid recipe or setting; the message is one line naming the key. Secrets are
    redacted from it (:func:`procrl.core.redaction.redact_text`: URL credentials, the values of the
    recipe's secret keys), whoever raises it, and it is one printable line: a file name's newline,
    terminal escape sequence or undecodable byte is shown escaped (:func:`printable`)."""

    def __init__(self, message: object = "", *args: object):
        from procrl.core.redaction import redact_text

        # several one-line errors joined by their own prefix stay several lines (procrl/launch/prelaunch.py)
        lines = redact_text(str(message)).split(_NEXT_ERROR)
        super().__init__(_NEXT_ERROR.join(printable(line) for line in lines), *args)


_NEXT_ERROR = "\nprocrl: error: "
_LONGEST = 4000  # characters of one error line; more is cut, saying how much (a 50 MB message is no message)
# C0 and C1 controls (a newline, ESC of a terminal escape sequence), bidirectional overrides, and the
# surrogates Python gives an undecodable byte of a file name (b"\xff" -> "\udcff")
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escaped(match: re.Match) -> str:
    char = match.group(0)
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte of a file name, as the byte
        return f"\\x{code - 0xDC00:02x}"
    return char.encode("unicode_escape").decode("ascii")


def printable(text: str, limit: int = _LONGEST) -> str:
    """``text`` as one printable line: control and bidirectional characters escaped (``\\n``,
    ``\\x1b``), an undecodable byte of a file name as ``\\xff``, at most ``limit`` characters
    (the middle is cut: a line's end says what is wrong with the long name before it)."""
    text = _UNPRINTABLE.sub(_escaped, text)
    if len(text) > limit:
        text = f"{text[: limit // 2]} ... ({len(text):,} characters) ... {text[-limit // 2 :]}"
    return text


def field(default: Any = dataclasses.MISSING, *, help: str, default_factory: Any = dataclasses.MISSING):
    """A dataclass field with a help string (the recipes reference, docs/recipes.md, is generated from them).

    Args:
        default: the field's default (none: the key is required).
        help: what the option does, in one or two sentences: the recipe reference's "meaning".
        default_factory: a function making the default, for a mutable one (a list).

    Returns:
        A ``dataclasses.field`` carrying ``help`` in its metadata.

    >>> import dataclasses
    >>> @dataclasses.dataclass
    ... class Settings:
    ...     threshold: float = field(0.5, help="A step scored below this is an error.")
    >>> Settings().threshold, dataclasses.fields(Settings)[0].metadata["help"]
    (0.5, 'A step scored below this is an error.')
    """
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata={"help": help})
    return dataclasses.field(default=default, metadata={"help": help})


def suggest(name: str, choices) -> str:
    """`` (did you mean 'x'?)`` or an empty string."""
    name, options = str(name), [str(c) for c in choices]
    match = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    if not match and len(name) >= 3:  # an abbreviation: 'acc' -> 'accuracy'
        match = [o for o in options if o.startswith(name)][:1]
    return f" (did you mean {match[0]!r}?)" if match else ""


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " | ".join(_type_name(a) for a in get_args(tp))
    if tp is type(None):
        return "null"
    if origin is not None:
        return getattr(origin, "__name__", str(origin))
    return getattr(tp, "__name__", str(tp))


def check_value(path: str, value: Any, tp: Any) -> Any:
    """Return ``value`` converted to type ``tp`` or raise ConfigError naming ``path``."""
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin is Literal:
        allowed = get_args(tp)
        if value in allowed:
            return value
        hint = suggest(value, allowed) if isinstance(value, str) else ""
        raise ConfigError(f"{path}: invalid value {value!r}; allowed values: {', '.join(map(repr, allowed))}{hint}")
    if origin in (Union, types.UnionType):
        options = get_args(tp)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return check_value(path, value, option)
            except ConfigError as error:
                errors.append(error)
        literal_errors = [e for e in errors if "allowed values" in str(e)]
        if len(errors) == 1 or (literal_errors and value is not None and isinstance(value, str)):
            raise (literal_errors or errors)[0]
        raise ConfigError(f"{path}: expected {_type_name(tp)}, got {type(value).__name__} {value!r}")
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{path}: expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            # torch, numpy and the data loader hold every count as a 64-bit integer: a longer one
            # passed here and ended training after the model had loaded
            if not -(2**63) <= value < 2**63:
                raise ConfigError(f"{path}: {value} does not fit in a 64-bit integer; give a count that does")
            return value
        raise ConfigError(f"{path}: expected an integer, got {type(value).__name__} {value!r}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise ConfigError(f"{path}: must be a finite number, got {value!r}")
            return float(value)
        raise ConfigError(f"{path}: expected a number, got {type(value).__name__} {value!r}")
    if tp is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{path}: expected a string, got {type(value).__name__} {value!r}")
    if origin in (list, tuple) or tp in (list, tuple):
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ConfigError(f"{path}: expected a list, got {type(value).__name__} {value!r}")
        args = get_args(tp)
        item_type = args[0] if args else Any
        return [check_value(f"{path}[{i}]", v, item_type) for i, v in enumerate(value)]
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: expected a mapping, got {type(value).__name__} {value!r}")
        args = get_args(tp)
        value_type = args[1] if len(args) == 2 else Any
        return {k: check_value(f"{path}.{k}", v, value_type) for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        return from_dict(tp, value, path)
    return value


def from_dict(cls: type, data: Any, path: str, *, extra: dict[str, Any] | None = None):
    """Build dataclass ``cls`` from mapping ``data``; ``path`` prefixes every error.

    ``extra`` maps additional accepted keys to their types; their values are returned in
    ``instance.__extra__`` (used for pass-through TRL fields).
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping, got {type(data).__name__} {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    extra = extra or {}
    values, extras = {}, {}
    for key, value in data.items():
        key_path = f"{path}.{key}" if path else str(key)
        if key in fields:
            values[key] = check_value(key_path, value, hints[key])
        elif key in extra:
            extras[key] = check_value(key_path, value, extra[key])
        else:
            known = list(fields) + list(extra)
            raise ConfigError(f"{key_path}: unknown key{suggest(key, known)}; known keys: {', '.join(sorted(fields))}")
    missing = [
        name
        for name, f in fields.items()
        if name not in values and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"{path}.{missing[0]}: required key is missing" if path else f"{missing[0]}: required")
    instance = cls(**values)
    if extra:
        object.__setattr__(instance, "__extra__", extras)
    validate = getattr(instance, "validate", None)
    if callable(validate):
        validate(path)
    return instance
