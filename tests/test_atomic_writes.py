"""procrl has one atomic write (procrl/core/atomic.py): a temporary file beside the name, flushed
to disk, renamed over it. Every file of a folder a command writes, score's output, the final
model's files and the published directories go through it."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from procrl.core.atomic import publish_directory, replace_file, write_bytes
from procrl.core.folders import write_file

PACKAGE = Path(__file__).resolve().parents[1] / "procrl"
# renames outside core/atomic.py that write nothing: an incomplete checkpoint moved aside, under a new name
NOT_WRITES = {"procrl/trainers/checkpoints.py": 1}


def _default_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def test_no_other_module_renames_a_temporary_file_into_place():
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = path.relative_to(PACKAGE.parent).as_posix()
        if name == "procrl/core/atomic.py":
            continue
        count = len(
            re.findall(
                r"\bos\.replace\(|\bos\.rename\(|\.rename\(|mkstemp\(|\.replace\((?:temporary|staged)",
                path.read_text(encoding="utf-8"),
            )
        )
        if count:
            found[name] = count
    assert found == NOT_WRITES


def test_write_bytes_keeps_the_replaced_files_mode_and_gives_a_new_one_the_umask_default(tmp_path):
    new = write_bytes(tmp_path / "new.json", b"{}")
    assert new.read_bytes() == b"{}" and stat.S_IMODE(new.stat().st_mode) == _default_mode()  # not mkstemp's 0600
    kept = tmp_path / "kept.json"
    kept.write_text("old")
    kept.chmod(0o640)
    write_bytes(kept, b"new")
    assert kept.read_text() == "new" and stat.S_IMODE(kept.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.json", "new.json"]  # no temporary file left


def test_a_failed_write_leaves_the_file_as_it_was_and_no_temporary_file(tmp_path):
    report = tmp_path / "report.md"
    report.write_text("the earlier report")
    with pytest.raises(TypeError):
        write_bytes(report, "not bytes")  # the write itself fails, after the temporary file exists
    assert report.read_text() == "the earlier report" and [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_a_folders_file_replaces_a_link_under_its_name(tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("theirs")
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "report.md").symlink_to(outside)
    write_file(folder, "report.md", "ours")
    assert outside.read_text() == "theirs" and not (folder / "report.md").is_symlink()


def test_publish_directory_keeps_the_first_copy(tmp_path):
    final = tmp_path / "model"
    first, second = tmp_path / "model.partial1", tmp_path / "model.partial2"
    for folder, text in ((first, "first"), (second, "second")):
        folder.mkdir()
        (folder / "config.json").write_text(text)
    assert publish_directory(first, final) and (final / "config.json").read_text() == "first"
    assert not publish_directory(second, final)  # another process published it first
    assert (final / "config.json").read_text() == "first" and sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_replace_file_from_another_file_system_gets_a_regular_mode(tmp_path):
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev or not os.access(shm, os.W_OK):
        pytest.skip("needs /dev/shm on another file system than the test's folder")
    staged = shm / f"procrl-test-{os.getpid()}.bin"
    staged.write_bytes(b"weights")
    destination = tmp_path / "model.safetensors"
    try:
        replace_file(staged, destination)
    finally:
        staged.unlink(missing_ok=True)
    assert destination.read_bytes() == b"weights" and stat.S_IMODE(destination.stat().st_mode) == _default_mode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.safetensors"]
