"""Reading JSON lines (or a JSON array of objects) one record at a time, with one-line errors
naming ``file:line``: not UTF-8, not JSON, nested too deeply, an array that is not closed, an
integer longer than Python reads (4,300 digits: a number that long goes in a string). Used
for ``procrl score``'s input and local training data files; memory holds one record at a time.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import json
import math
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError

__all__ = ["iter_records", "read_small_json", "readable_twice"]

_CHUNK = 1 << 20  # bytes read at a time


def _decode_error(path: str, where: int, error: UnicodeDecodeError, data: bytes) -> ConfigError:
    byte = data[error.start] if error.start < len(data) else 0
    return ConfigError(f"{path}:{where}: not UTF-8 text (byte {byte:#04x}); expected UTF-8 JSON lines")


class _LongInteger(ValueError):
    """A JSON integer with more digits than Python converts from text (``sys.get_int_max_str_digits``)."""


def _integer(digits: str) -> int:
    try:
        return int(digits)
    except ValueError:  # Python's int-string limit (4,300 digits by default): its message is a traceback's
        raise _LongInteger(len(digits.lstrip("-"))) from None


class _NotFinite(_LongInteger):
    """A JSON number past a float's range (``1e309``), or ``NaN`` / ``Infinity``: no answer or
    score can be computed with it."""


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


def _constant(text: str) -> float:
    raise _NotFinite(text)


def _long_integer_error(where: str, error: _LongInteger) -> ConfigError:
    if isinstance(error, _NotFinite):
        shown = error.args[0] if len(error.args[0]) <= 40 else error.args[0][:40] + "..."
        return ConfigError(
            f"{where}: the JSON number {shown} is not a finite float (its range ends near 1.8e308); "
            f'give it as a string ("{shown}")'
        )
    return ConfigError(
        f"{where}: a JSON integer of {error.args[0]:,} digits, more than Python reads as a number "
        f'({sys.get_int_max_str_digits():,}); give it as a string ("123...")'
    )


def _parse(text: str, path: str, where: int) -> Any:
    try:
        return json.loads(text, parse_int=_integer, parse_float=_float, parse_constant=_constant)
    except _LongInteger as error:
        raise _long_integer_error(f"{path}:{where}", error) from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}:{where}: not valid JSON ({error.msg}, column {error.pos + 1})") from None
    except RecursionError:
        raise ConfigError(f"{path}:{where}: JSON nested too deeply") from None


def _iter_json_lines(handle, path: str) -> Iterator[tuple[int, Any]]:
    for number, raw in enumerate(handle, 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _decode_error(path, number, error, raw) from None
        if text.strip():
            yield number, _parse(text, path, number)


class _ArrayReader:
    """Elements of a JSON array read incrementally: one element in memory at a time."""

    def __init__(self, handle, path: str):
        self.handle, self.path = handle, path
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.text, self.pos, self.line, self.eof = "", 0, 1, False
        self.json = json.JSONDecoder(parse_int=_integer, parse_float=_float, parse_constant=_constant)

    def _more(self, at_least: int = _CHUNK) -> bool:
        if self.eof:
            return False
        data = self.handle.read(max(_CHUNK, at_least))
        try:
            self.text += self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as error:
            where = self.line + self.text.count("\n", self.pos) + data[: error.start].count(b"\n")
            raise _decode_error(self.path, where, error, data) from None
        self.eof = not data
        return True

    def _skip_space(self) -> bool:
        """Move to the next non-space character; False at the end of the input."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n\ufeff":
                if self.text[self.pos] == "\n":
                    self.line += 1
                self.pos += 1
            if self.pos < len(self.text):
                return True
            self.text, self.pos = "", 0
            if not self._more():
                return False

    def _error(self, message: str) -> ConfigError:
        return ConfigError(f"{self.path}:{self.line}: not a valid JSON array ({message})")

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        if not self._skip_space() or self.text[self.pos] != "[":
            raise self._error("expected '['")
        self.pos += 1
        first = True
        while True:
            if not self._skip_space():
                raise self._error("the array is not closed with ']'")
            if self.text[self.pos] == "]":
                self.pos += 1
                if self._skip_space():
                    raise self._error("text after the closing ']'")
                return
            if not first:
                if self.text[self.pos] != ",":
                    raise self._error(f"expected ',' or ']', got {self.text[self.pos]!r}")
                self.pos += 1
                if not self._skip_space():
                    raise self._error("the array is not closed with ']'")
            first = False
            start_line = self.line
            yield start_line, self._element()

    def _element(self) -> Any:
        if self.pos > _CHUNK:  # drop what was consumed
            self.text, self.pos = self.text[self.pos :], 0
        while True:
            try:
                value, end = self.json.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as error:
                incomplete = error.msg.startswith("Unterminated string") or error.pos >= len(self.text.rstrip())
                if incomplete and self._more(len(self.text) - self.pos):
                    continue
                where = self.line + self.text.count("\n", self.pos, error.pos)
                raise ConfigError(f"{self.path}:{where}: not valid JSON ({error.msg})") from None
            except RecursionError:
                raise ConfigError(f"{self.path}:{self.line}: JSON nested too deeply") from None
            except _LongInteger as error:
                raise _long_integer_error(f"{self.path}:{self.line}", error) from None
            if end == len(self.text) and not isinstance(value, (dict, list)) and self._more():
                continue  # a number or literal cut by the read boundary
            self.line += self.text.count("\n", self.pos, end)
            self.pos = end
            return value


class _Prepended(io.RawIOBase):
    """``head`` followed by what is left of ``rest``: a stream that cannot seek, read from its start."""

    def __init__(self, head: bytes, rest):
        self.head, self.rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.head[: len(buffer)] if self.head else self.rest.read(len(buffer))
        self.head = self.head[len(data) :] if self.head else b""
        buffer[: len(data)] = data
        return len(data)


def iter_records(path: str | os.PathLike, option: str = "--input") -> Iterator[tuple[int, Any]]:
    """``(line, value)`` of every record of a JSON-lines file or a JSON array, streamed; a
    one-line ConfigError naming ``file:line`` for what is not readable JSON (``option``: how the
    file was given, for the errors that concern the file itself)."""
    file = Path(path)
    name = str(path)
    try:
        handle = file.open("rb")
    except FileNotFoundError:
        raise ConfigError(f"{option}: file not found: {name}") from None
    except IsADirectoryError:
        raise ConfigError(f"{option}: {name} is a directory, not a file") from None
    except OSError as error:
        raise ConfigError(f"{option}: cannot read {name} ({error.strerror or error})") from None
    with handle:
        head = handle.read(4096)
        if handle.seekable():
            handle.seek(0)
        else:  # a pipe (/dev/stdin): the bytes read are served again before the rest
            handle = io.BufferedReader(_Prepended(head, handle), _CHUNK)
        if head.lstrip(b" \t\r\n\xef\xbb\xbf").startswith(b"["):
            yield from _ArrayReader(handle, name)
        else:
            yield from _iter_json_lines(handle, name)


def _open_waiting(path: str, option: str):
    """``path`` (a FIFO, a device) opened for reading. Opening a FIFO blocks until a writer opens
    it: it is opened without blocking, and when nothing arrives at once the wait is said on
    stderr first, rather than kept silent."""
    import select

    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if stat.S_ISFIFO(os.fstat(descriptor).st_mode) and not select.select([descriptor], [], [], 0.2)[0]:
        print(
            f"procrl: waiting for a writer of {path} ({option} is a FIFO); write the rows into it, or press Ctrl-C",
            file=sys.stderr,
            flush=True,
        )
        select.select([descriptor], [], [])  # readable once a writer has written, or opened and closed it
    os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "rb")


@contextlib.contextmanager
def readable_twice(path: str, option: str = "--input") -> Iterator[str]:
    """A path that can be read more than once: ``path`` itself for a regular file (or one that
    does not exist: the reader names it); ``-``, a pipe (``/dev/stdin``), a terminal or a FIFO is
    first copied to a private temporary file, removed afterwards (``procrl score`` reads its
    input twice: every row is checked before any is scored)."""
    if path != "-":
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = None  # missing, a name too long, ...: the reader names it
        # decided before the one yield: an error raised in the caller's block is not this function's to catch
        if mode is None or not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
            yield path
            return
    directory = tempfile.mkdtemp(prefix="procrl-input-")
    copy = os.path.join(directory, "input.jsonl")
    try:
        try:
            with (
                open(sys.stdin.fileno(), "rb", closefd=False) if path == "-" else _open_waiting(path, option) as source,
                open(copy, "wb") as target,
            ):
                shutil.copyfileobj(source, target, 1 << 20)
        except OSError as error:
            raise ConfigError(
                f"{option}: cannot read {path} into a temporary file in {tempfile.gettempdir()} "
                f"({error.strerror or error})"
            ) from None
        yield copy
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def read_small_json(path: str | os.PathLike, limit: int = 1 << 16) -> Any:
    """The JSON value of a small file procrl keeps beside its work (a folder's marker, a run's
    lock), read as something procrl did not write: only a regular file (a FIFO is not waited on,
    ``/dev/zero`` is not read), at most ``limit`` bytes, UTF-8, nested no deeper than Python's
    parser goes. ValueError (with the reason) for anything else, FileNotFoundError when it is
    missing; other OSErrors are left to the caller."""
    # O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ValueError(f"{path} is not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path} is larger than {limit:,} bytes")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text") from None
    except RecursionError:
        raise ValueError(f"{path} holds JSON nested too deeply") from None
