"""``python scripts/gpu_bundle.py``: the carry bundle for the GPU machine. Building it downloads
from the package index (not in CI); these tests check what decides whether a file may travel and
what the script may remove."""

from __future__ import annotations

import json
import sys

import pytest

from tests.helpers.launch import REPO

sys.path.insert(0, str(REPO / "scripts"))

import gpu_bundle  # noqa: E402


@pytest.mark.parametrize(
    ("name", "python", "fits"),
    [
        ("trl-1.16.0-py3-none-any.whl", "3.12", True),
        ("multiprocess-0.70.19-py312-none-any.whl", "3.12", True),
        ("multiprocess-0.70.19-py311-none-any.whl", "3.12", False),  # another CPython's
        ("pydantic_core-2.50.5-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "3.12", True),
        ("pydantic_core-2.50.5-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "3.12", False),
        ("pyarrow-21.0.0-cp312-cp312-manylinux_2_28_aarch64.whl", "3.12", False),  # not x86-64
        ("pyarrow-21.0.0-cp312-cp312-macosx_12_0_x86_64.whl", "3.12", False),
        ("foo-1.0-cp39-abi3-manylinux_2_28_x86_64.whl", "3.12", False),  # python tag cp39 only
        ("foo-1.0-cp312-abi3-manylinux_2_28_x86_64.whl", "3.12", True),
        ("foo-1.0-py2-none-any.whl", "3.12", False),
        ("not-a-wheel.whl", "3.12", False),
    ],
)
def test_a_wheel_travels_only_when_it_installs_on_the_target(name, python, fits):
    assert gpu_bundle.wheel_fits(name, python) is fits


def test_a_rebuild_removes_only_what_the_manifest_lists(tmp_path):
    dest = tmp_path / "bundle"
    (dest / "gsm8k").mkdir(parents=True)
    (dest / "trl-1.16.0-py3-none-any.whl").write_bytes(b"wheel")
    (dest / "gsm8k" / "train.jsonl").write_text("{}\n")
    (dest / "mine.txt").write_text("a file the script did not write")
    manifest = {
        "wheels": [{"file": "trl-1.16.0-py3-none-any.whl"}, {"file": "../../escape.whl"}],
        "data": [{"file": "train.jsonl"}],
    }
    (tmp_path / "escape.whl").write_bytes(b"outside")
    (dest / gpu_bundle.MANIFEST).write_text(json.dumps(manifest))
    gpu_bundle.clear_previous(dest)
    assert sorted(p.name for p in dest.rglob("*")) == ["mine.txt"]
    assert (tmp_path / "escape.whl").read_bytes() == b"outside"  # a manifest names files in dest only


def test_a_folder_the_script_did_not_fill_is_refused(tmp_path, capsys):
    dest = tmp_path / "bundle"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit) as stop:
        gpu_bundle.clear_previous(dest)
    assert stop.value.code == 2
    assert "holds files this script did not write" in capsys.readouterr().err
    assert (dest / "notes.txt").read_text() == "mine"
    (dest / gpu_bundle.MANIFEST).write_text("not json")
    with pytest.raises(SystemExit):
        gpu_bundle.clear_previous(dest)
    assert "is not this script's manifest" in capsys.readouterr().err
    gpu_bundle.clear_previous(tmp_path / "absent")  # nothing there: nothing to do
    empty = tmp_path / "empty"
    empty.mkdir()
    gpu_bundle.clear_previous(empty)


def test_bad_arguments_stop_before_anything_is_downloaded(tmp_path, capsys):
    with pytest.raises(SystemExit):
        gpu_bundle.main(["--python-version", "3.12; rm -rf /", "--gsm8k", str(tmp_path)])
    assert "is not MAJOR.MINOR" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        gpu_bundle.main(["--gsm8k", str(tmp_path)])  # no train.jsonl there
    assert "--gsm8k: no train.jsonl and LICENSE" in capsys.readouterr().err
    (tmp_path / "train.jsonl").write_text("{}\n")
    (tmp_path / "LICENSE").write_text("MIT\n")
    with pytest.raises(SystemExit):  # inside the repository and not ignored: it would be committed
        gpu_bundle.main(["--gsm8k", str(tmp_path), "--dest", str(REPO / "benchmarks" / "bundle-here")])
    assert "is inside the repository and not ignored by git" in capsys.readouterr().err
    assert not (REPO / "benchmarks" / "bundle-here").exists()


def test_the_device_call_stops_in_one_line_without_its_out_folder_bundle_or_a_new_site(tmp_path):
    import os
    import subprocess

    call = REPO / "scripts" / "gpu_call.sh"

    def run(env: dict, cwd) -> subprocess.CompletedProcess:
        clean = {k: v for k, v in os.environ.items() if k not in ("OUT", "SITE", "BUNDLE")}
        return subprocess.run(["bash", str(call)], cwd=cwd, env={**clean, **env}, capture_output=True, text=True)

    no_out = run({}, tmp_path)
    assert no_out.returncode == 2 and no_out.stderr == "gpu_call: set OUT to the folder that receives the results\n"
    out = tmp_path / "out"
    no_bundle = run({"OUT": str(out)}, tmp_path)
    assert no_bundle.returncode == 2
    assert no_bundle.stderr.startswith("gpu_call: no carry bundle in .gpu-bundle (build it with")
    assert not out.exists()  # nothing written before the checks pass
    bundle = tmp_path / ".gpu-bundle"
    (bundle / "gsm8k").mkdir(parents=True)
    (bundle / "x-1.0-py3-none-any.whl").write_bytes(b"")
    (bundle / "gsm8k" / "train.jsonl").write_text("{}\n")
    site = tmp_path / "site"
    site.mkdir()
    (site / "keep.txt").write_text("mine")
    existing = run({"OUT": str(out), "SITE": str(site), "PYTHON": sys.executable}, tmp_path)
    assert existing.returncode == 2 and existing.stderr.startswith("gpu_call: SITE=")
    assert not out.exists()
    assert (site / "keep.txt").read_text() == "mine"
