"""The one rule for a folder a command writes into (``train``'s output dir, ``evaluate``'s,
``validate``'s and ``eval-judge``'s report dirs, ``train-tagger``'s): procrl writes into a
folder only when

* it is new or empty,
* procrl itself wrote it: it holds :data:`MARKER`, written by :func:`claim_folder` before the
  first file, naming the commands that wrote there (``validate`` and ``eval-judge`` write the
  same files, so they count as one), or
* ``--overwrite`` names it.

Anything else is refused, before any work, in one line that says what is there. A symlink in
the folder (at any depth) that leads out of it is refused in every case, ``--overwrite``
included: procrl never writes through it to a file outside. Files are written with
:func:`write_file`: to a temporary file beside the name, renamed over it, so even a link that
appeared later is replaced, never followed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from procrl.core.atomic import write_bytes
from procrl.core.config import ConfigError
from procrl.core.paths import check_output_dir_option

__all__ = ["MARKER", "check_folder", "claim_folder", "folder_commands", "link_out_of", "write_file"]

MARKER = ".procrl-folder.json"
_SAME_FILES = {"eval-judge": "validate"}  # commands that write another command's files
_SHOWN = 4
# check_folder's verdict per (folder, command) in this process, for claim_folder to see a race
_CHECKED: dict[tuple[str, str], str] = {}


def _family(command: str) -> str:
    return _SAME_FILES.get(command, command)


def _identity(folder: str | os.PathLike) -> dict[str, int]:
    """What tells this folder from any other on the machine: its device and inode."""
    status = os.stat(folder)
    return {"device": status.st_dev, "inode": status.st_ino}


def folder_commands(folder: str | os.PathLike) -> list[str] | None:
    """The commands the marker of ``folder`` names, or None when it holds no marker that proves
    anything: a marker must be a small regular JSON file (read bounded: procrl did not write
    whatever is there now) naming this very folder by its device and inode, so a marker copied
    into another folder (with ``cp``, or from a backup) proves nothing."""
    from procrl.core.jsonl import read_small_json

    try:
        record = read_small_json(Path(folder) / MARKER)
        identity = _identity(folder)
    except (OSError, ValueError):
        return None
    commands = record.get("commands") if isinstance(record, dict) else None
    if not isinstance(commands, list) or record.get("written_by") != "procrl" or record.get("folder") != identity:
        return None
    return [str(command) for command in commands]


def link_out_of(folder: str | os.PathLike) -> tuple[Path, str] | None:
    """The first symlink under ``folder`` that leads out of it, with where it points (None if none)."""
    root = os.path.realpath(folder)
    for here, directories, files in os.walk(folder):  # does not descend into linked directories
        for name in sorted(directories + files):
            path = os.path.join(here, name)
            if os.path.islink(path):
                target = os.path.realpath(path)
                if os.path.commonpath([root, target]) != root:
                    return Path(path), target
    return None


def _contents(folder: Path, entries: list[str]) -> str:
    shown = []
    for name in entries[:_SHOWN]:
        path = folder / name
        shown.append(f"{name} (a symlink to {os.readlink(path)})" if path.is_symlink() else name)
    more = f", ... ({len(entries)} entries)" if len(entries) > _SHOWN else ""
    return ", ".join(shown) + more


def check_folder(folder: str | os.PathLike, command: str, overwrite: bool = False, option: str = "--output-dir") -> str:
    """Whether ``command`` may write into ``folder`` (read-only; nothing is created): ``"new"``,
    ``"empty"``, ``"ours"`` (marked by this command) or ``"overwrite"``; a one-line ConfigError
    naming ``option`` otherwise (a file, under a file, unwritable, someone else's folder, a link
    out of it)."""
    path = Path(folder).expanduser()
    check_output_dir_option(option, path)
    if not path.exists():
        _CHECKED[(os.path.realpath(path), command)] = "new"
        return "new"
    entries = sorted(os.listdir(path))
    commands = folder_commands(path)
    if not entries:
        state = "empty"
    elif commands is not None and _family(command) in map(_family, commands):
        state = "ours"
    elif overwrite:
        state = "overwrite"
    else:
        mine = [name for name in entries if name != MARKER] or entries  # (an unreadable marker alone: shown)
        if commands is not None:
            raise ConfigError(
                f"{option}: {folder} was written by procrl {', '.join(commands)} ({_contents(path, mine)}), "
                f"not by procrl {command}; give another folder, or --overwrite to write into it"
            )
        raise ConfigError(
            f"{option}: {folder} holds {_contents(path, mine)}, which procrl did not write; give a new or "
            "empty folder, or --overwrite to write into it"
        )
    link = link_out_of(path)
    if link is not None:
        raise ConfigError(
            f"{option}: {link[0]} is a symlink to {link[1]}, outside {folder}; procrl never writes through "
            "a link out of its folder: remove the link, or give another folder"
        )
    _CHECKED[(os.path.realpath(path), command)] = state
    return state


def claim_folder(folder: str | os.PathLike, command: str) -> Path:
    """Create ``folder`` (parents too) and mark it as written by ``command`` (kept when it already is).

    The claim is exclusive: when :func:`check_folder` found the folder new or empty a moment ago,
    another command may have claimed it since (``train`` and ``evaluate`` started together on one
    new folder): a marker of another command found now refuses this one, as the check would have."""
    path = Path(folder).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    commands = folder_commands(path) or []
    if command in commands:
        return path
    found_free = _CHECKED.get((os.path.realpath(path), command)) in ("new", "empty")
    if commands and found_free and _family(command) not in map(_family, commands):
        raise ConfigError(
            f"--output-dir: {folder} was claimed by procrl {', '.join(commands)} since it was checked, not by "
            f"procrl {command}; give another folder"
        )
    record = {
        "written_by": "procrl",
        "commands": [*commands, command],
        "folder": _identity(path),
        "what": "procrl writes into this folder again only because this file is here, in this folder",
    }
    data = (json.dumps(record, indent=2) + "\n").encode("utf-8")
    if not found_free or commands:
        write_file(path, MARKER, data)  # procrl's own marker gets this command, or --overwrite named the folder
        return path
    # a claim of a free folder: the marker is linked into place, which fails when another process placed one first
    try:
        write_bytes(path / MARKER, data, exclusive=True)
    except FileExistsError:
        if folder_commands(path) is None:  # an unreadable marker: not a claim, replaced
            write_file(path, MARKER, data)
            return path
        return claim_folder(folder, command)  # the other claim decides: ours joins it, or is refused
    return path


def write_file(folder: str | os.PathLike, name: str, data: str | bytes) -> Path:
    """Write ``folder/name`` completely or not at all (:func:`procrl.core.atomic.write_bytes`: a
    temporary file beside it, renamed over the name; a link under the name is replaced, never
    followed). OSError is left to the caller."""
    return write_bytes(Path(folder) / name, data.encode("utf-8") if isinstance(data, str) else data)
