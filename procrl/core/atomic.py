"""Writing files without destroying anything: the one rule every atomic write of procrl follows
(``procrl score --output``, the final model of a run, the checkpoints' and the tiny reasoner's
directories).

:func:`output_target` decides what a path is before anything is written:

* a regular file, or none yet: written to a hidden temporary file beside it and renamed over it
  when complete (:class:`AtomicOutput`, :func:`replace_file`), so an interrupted write leaves
  the previous file as it was. A *symlink* is written through: the temporary file goes beside
  the file the link points to and is renamed over that file, and the link stays a link (a
  rename onto the link's own name would replace the link, and the file it points to would
  never see the output).
* a character device (``/dev/null``, a terminal) or a pipe (a FIFO, ``/dev/stdout`` or
  ``/proc/self/fd/N`` of a process whose output is piped): written straight, never renamed
  onto or removed. (A rename onto ``/dev/null`` by root replaces the machine's ``/dev/null``
  with a regular file.) ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N`` and
  ``/proc/self/fd/N`` are this process's open descriptors: written through a duplicate of the
  descriptor, whatever it is open on (a file the shell redirected to keeps the shell's offset).
* anything else (a directory, a socket, a block device): refused with one line.

:func:`write_bytes` is the one temporary-file-and-rename of procrl, under a name it has already
checked (the files of a folder a command writes, procrl/core/folders.py): the name itself is
replaced, so a link that appeared under it is replaced too, never written through.

:func:`replace_directory` puts a finished directory in place of an older one of procrl's
(rename the old one aside, rename the new one in, delete the old one): a kill at any moment
leaves the old directory or the new one under the name. :func:`publish_directory` puts a
finished directory under a name no other process has published first (a model cache, a rank's
copy).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from procrl.core.config import ConfigError

__all__ = [
    "AtomicOutput",
    "OutputTarget",
    "output_target",
    "publish_directory",
    "replace_directory",
    "replace_file",
    "write_bytes",
]

# this process's open descriptors, by the names Linux gives them
_DESCRIPTOR = re.compile(r"^/(?:proc/(self|thread-self|\d+)/fd|dev/fd)/(\d+)$")
_STANDARD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


@dataclass(frozen=True)
class OutputTarget:
    """Where the bytes for a path go. ``kind``: ``file`` (atomic: a temporary file beside
    ``path``, renamed over it), ``stream`` (a character device or a pipe, opened and written
    straight) or ``descriptor`` (this process's open descriptor ``fd``, written through a
    duplicate)."""

    kind: str
    path: Path
    fd: int | None = None


def _kind_of(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "stream"
    return None


def _what(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def output_target(path: str | os.PathLike, option: str = "--output") -> OutputTarget:
    """What writing ``path`` means (see the module docstring); a one-line ConfigError naming
    ``option`` for a path procrl must not write."""
    name = os.path.abspath(os.fspath(path))
    for _ in range(40):  # the kernel's own limit on a chain of symlinks
        if name in _STANDARD:
            name = f"/dev/fd/{_STANDARD[name]}"
        own = _DESCRIPTOR.match(os.path.normpath(name))
        if own and own.group(1) in (None, "self", "thread-self", str(os.getpid())):
            fd = int(own.group(2))
            try:
                mode = os.fstat(fd).st_mode
            except OSError:
                raise ConfigError(f"{option}: {path} names file descriptor {fd}, which is not open") from None
            if stat.S_ISDIR(mode):
                raise ConfigError(f"{option}: {path} is a directory; give a file path")
            return OutputTarget("descriptor", Path(name), fd)
        if not os.path.islink(name):
            break
        name = os.path.join(os.path.dirname(name), os.readlink(name))  # no normpath: '..' after a symlinked dir
    else:
        raise ConfigError(f"{option}: {path}: too many levels of symbolic links")
    try:
        mode = os.stat(name).st_mode
    except FileNotFoundError:
        return OutputTarget("file", Path(name))  # a new file (through a dangling symlink: its target)
    except OSError as error:
        raise ConfigError(f"{option}: cannot use {path} ({error.strerror or error})") from None
    kind = _kind_of(mode)
    if kind is None:
        shown = str(path) if name == os.path.abspath(os.fspath(path)) else f"{path} (-> {os.path.normpath(name)})"
        if stat.S_ISDIR(mode):
            raise ConfigError(f"{option}: {shown} is a directory; give a file path")
        raise ConfigError(
            f"{option}: {shown} is {_what(mode)}; procrl writes regular files, character devices and pipes only"
        )
    return OutputTarget(kind, Path(name))


def _open_stream(path: Path, shown: Path, option: str) -> int:
    """A device or a pipe opened for writing (no O_CREAT, no O_TRUNC). Opening a FIFO blocks until
    a reader opens it: say so on stderr first, rather than wait without a word."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as error:
        if error.errno != errno.ENXIO:  # ENXIO: a FIFO without a reader
            raise
        print(
            f"procrl: waiting for a reader of {shown} ({option} is a FIFO); open it for reading, or press Ctrl-C",
            file=sys.stderr,
            flush=True,
        )
        return os.open(path, os.O_WRONLY)
    os.set_blocking(descriptor, True)  # written with ordinary blocking writes
    return descriptor


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _temporary_beside(path: Path) -> tuple[int, Path]:
    """A new hidden ``.NAME.*.partial`` file in ``path``'s folder (open descriptor, path)."""
    # the name cut to fit: a file name may take 255 bytes, and the temporary one adds to it
    name = os.fsencode(path.name)[:200].decode("utf-8", "ignore") if len(os.fsencode(path.name)) > 200 else path.name
    descriptor, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=path.parent)
    return descriptor, Path(temporary)


def _rename_into_place(temporary: Path, path: Path) -> None:
    """``temporary`` renamed over ``path``, with the mode of the regular file it replaces (else the
    umask's default: mkstemp makes it 0600)."""
    try:
        replaced = os.lstat(path).st_mode
    except FileNotFoundError:
        replaced = None
    mode = stat.S_IMODE(replaced) if replaced is not None and stat.S_ISREG(replaced) else 0o666 & ~_umask()
    os.chmod(temporary, mode)
    os.replace(temporary, path)


def write_bytes(path: str | os.PathLike, data: bytes, exclusive: bool = False) -> Path:
    """Write ``path`` completely or not at all: a temporary file beside it, flushed to disk, renamed
    over the name (a symlink under the name is replaced, never followed). ``exclusive``: linked
    under the name instead, which fails with FileExistsError when anything is there already (the
    first of two processes wins). OSError is left to the caller, and the temporary file is
    removed on any failure."""
    path = Path(path)
    descriptor, temporary = _temporary_beside(path)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if exclusive:
            os.chmod(temporary, 0o666 & ~_umask())
            os.link(temporary, path)
            temporary.unlink()
        else:
            _rename_into_place(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


class AtomicOutput:
    """Text written to ``path`` under :func:`output_target`'s rule: for a file, into a temporary
    file beside it, renamed over it by :meth:`commit` (:meth:`abort` removes the temporary file
    and ``path`` is never touched); for a device, a pipe or an open descriptor, straight.
    Failures are one-line ConfigErrors naming ``option``."""

    def __init__(self, path: str | os.PathLike, option: str = "--output"):
        self.shown = Path(path)
        self.option = option
        self.target = output_target(path, option)
        self.path = self.target.path
        self.temporary: Path | None = None
        try:
            if self.target.kind == "file":
                self.path.parent.mkdir(parents=True, exist_ok=True)
                descriptor, self.temporary = _temporary_beside(self.path)
            elif self.target.kind == "descriptor":
                descriptor = os.dup(self.target.fd)
            else:
                descriptor = _open_stream(self.path, self.shown, option)
        except OSError as error:
            where = self.path.parent if self.target.kind == "file" else self.shown
            raise ConfigError(f"{option}: cannot write in {where} ({error.strerror or error})") from None
        self.handle = os.fdopen(descriptor, "w", encoding="utf-8")

    @property
    def streamed(self) -> bool:
        """Written straight (a device, a pipe, an open descriptor), not renamed into place."""
        return self.temporary is None

    def write(self, text: str) -> None:
        try:
            self.handle.write(text)
        except OSError as error:
            self.abort()
            raise self._failed(error) from None

    def _failed(self, error: OSError) -> ConfigError:
        reason = error.strerror or str(error)
        if self.streamed:
            return ConfigError(f"{self.option}: writing {self.shown} failed ({reason}); the output is incomplete")
        kept = "left as it was" if self.path.exists() else "not created"
        shown = (
            self.shown
            if self.shown == self.path or str(self.shown) == str(self.path)
            else f"{self.shown} (-> {self.path})"
        )
        return ConfigError(f"{self.option}: writing {shown} failed ({reason}); nothing written, {self.shown} {kept}")

    def kept(self) -> str:
        """What an interruption leaves, in words (for the ``interrupted; nothing lost`` line)."""
        if self.streamed:
            return f"{self.shown} got the rows scored so far"
        return f"{self.shown} {'left as it was' if self.path.exists() else 'not created'}"

    def commit(self) -> None:
        try:
            self.handle.flush()
            if self.temporary is not None:
                os.fsync(self.handle.fileno())
            self.handle.close()
            if self.temporary is not None:
                _rename_into_place(self.temporary, self.path)
        except OSError as error:
            self.abort()
            raise self._failed(error) from None

    def abort(self) -> None:
        try:
            self.handle.close()
        except OSError:
            pass
        if self.temporary is not None:
            self.temporary.unlink(missing_ok=True)


def replace_file(
    staged: str | os.PathLike,
    destination: str | os.PathLike,
    option: str = "output_dir",
    within: str | os.PathLike | None = None,
) -> None:
    """Move the finished file ``staged`` to ``destination`` under :func:`output_target`'s rule: a
    rename over it (through a symlink: over the file it points to; from another file system:
    copied beside it first, then renamed), copied into a device or a pipe, refused otherwise.
    ``within``: the folder being written (procrl/core/folders.py), out of which no symlink is followed."""
    target = output_target(destination, option)
    if within is not None and os.path.islink(destination):
        root = os.path.realpath(within)
        if os.path.commonpath([root, os.path.realpath(destination)]) != root:
            raise ConfigError(
                f"{option}: {destination} is a symlink to {os.path.realpath(destination)}, outside {within}; "
                "procrl never writes through a link out of its folder"
            )
    if target.kind == "file":
        try:
            os.replace(staged, target.path)
            return
        except OSError as error:
            if error.errno != 18:  # EXDEV: the link points to another file system
                raise
        descriptor, temporary = _temporary_beside(target.path)
        try:
            with open(staged, "rb") as source, os.fdopen(descriptor, "wb") as sink:
                shutil.copyfileobj(source, sink)
                sink.flush()
                os.fsync(sink.fileno())
            _rename_into_place(temporary, target.path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        os.unlink(staged)
        return
    if target.kind == "descriptor":
        with open(staged, "rb") as source, os.fdopen(os.dup(target.fd), "wb") as sink:
            shutil.copyfileobj(source, sink)
    else:
        with open(staged, "rb") as source, open(target.path, "wb") as sink:
            shutil.copyfileobj(source, sink)
    os.unlink(staged)


def replace_directory(staged: str | os.PathLike, final: str | os.PathLike, aside: str | os.PathLike) -> None:
    """Rename the finished directory ``staged`` to ``final``; an existing ``final`` (which the
    caller has checked is procrl's to replace) is renamed to ``aside`` first and deleted after,
    never merged into. A symlink named ``final`` is not followed here: resolve it first."""
    if not os.path.isdir(staged):
        raise FileNotFoundError(f"not written: {staged}")
    if os.path.lexists(final):
        shutil.rmtree(aside, ignore_errors=True)
        os.rename(final, aside)
        os.rename(staged, final)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.rename(staged, final)


def publish_directory(staged: str | os.PathLike, final: str | os.PathLike) -> bool:
    """Rename the finished directory ``staged`` to ``final``; when another process published
    ``final`` first (the rename fails), ``staged`` is deleted and its copy kept: False."""
    try:
        os.rename(staged, final)
    except OSError:
        shutil.rmtree(staged, ignore_errors=True)
        return False
    return True
