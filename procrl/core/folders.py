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


def _family(command: str) -> str:
    return _SAME_FILES.get(command, command)


def folder_commands(folder: str | os.PathLike) -> list[str] | None:
    """The commands the marker of ``folder`` names, or None when it holds no (readable) marker."""
    try:
        record = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    commands = record.get("commands") if isinstance(record, dict) else None
    if not isinstance(commands, list) or record.get("written_by") != "procrl":
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
    return state


def claim_folder(folder: str | os.PathLike, command: str) -> Path:
    """Create ``folder`` (parents too) and mark it as written by ``command`` (kept when it already is)."""
    path = Path(folder).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    commands = folder_commands(path) or []
    if command not in commands:
        record = {
            "written_by": "procrl",
            "commands": [*commands, command],
            "what": "procrl writes into this folder again only because this file is here",
        }
        write_file(path, MARKER, json.dumps(record, indent=2) + "\n")
    return path


def write_file(folder: str | os.PathLike, name: str, data: str | bytes) -> Path:
    """Write ``folder/name`` completely or not at all (:func:`procrl.core.atomic.write_bytes`: a
    temporary file beside it, renamed over the name; a link under the name is replaced, never
    followed). OSError is left to the caller."""
    return write_bytes(Path(folder) / name, data.encode("utf-8") if isinstance(data, str) else data)
