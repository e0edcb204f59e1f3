"""One liveness check for every holder of a place (procrl/core/processes.py): the output dir's lock
and a reasoner build's temporary folder read the same record the same way."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from procrl.core.processes import holder_gone, holder_record, process_alive, process_start_time
from procrl.models.reasoner import BUILD_MARKER, _remove_stale_builds
from procrl.trainers.output_dir import RunLock


def ended_child_record() -> dict:
    """The holder record of a process that has exited (taken while it ran)."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    record = {"pid": child.pid, "host": socket.gethostname(), "start_time": process_start_time(child.pid)}
    child.communicate(b"")
    return record


def test_this_process_is_alive_and_an_ended_one_is_gone():
    assert process_alive(holder_record()["pid"], holder_record()["start_time"])
    assert not holder_gone(holder_record())
    record = ended_child_record()
    assert record["start_time"] is not None and not process_alive(record["pid"]) and holder_gone(record)
    assert not process_alive(0) and not process_alive(-1)


def test_a_reused_pid_counts_as_gone_and_what_cannot_be_decided_as_running():
    me = holder_record()
    assert holder_gone({**me, "start_time": str(int(me["start_time"]) + 1)})  # another process under this PID
    assert not holder_gone({**me, "host": me["host"] + "-elsewhere"})  # another host: not checkable here
    for record in (None, {}, "123", {"pid": True, "host": me["host"]}, {"pid": "1", "host": me["host"]}):
        assert not holder_gone(record)


def test_the_lock_and_a_build_folder_agree_on_one_record(tmp_path):
    gone, alive = ended_child_record(), holder_record()
    lock = RunLock(str(tmp_path / "run"))
    assert lock.stale(gone) and not lock.stale(alive)
    output = tmp_path / "reasoner"
    for suffix, record in (("1", gone), ("2", alive)):
        folder = tmp_path / f"reasoner.partial{suffix}"
        folder.mkdir()
        (folder / BUILD_MARKER).write_text(json.dumps(record))
    unreadable = tmp_path / "reasoner.partial3"
    unreadable.mkdir()
    (unreadable / BUILD_MARKER).write_text("not a record")
    assert _remove_stale_builds(output) == ["reasoner.partial1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reasoner.partial2", "reasoner.partial3"]
