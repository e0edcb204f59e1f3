"""A vLLM outside the range the installed TRL supports is refused in one line naming both
versions, by the pre-launch checks and by ``procrl check``. The installed vLLM is a real package
on ``sys.path`` (a ``vllm`` module and its ``dist-info`` in a temporary directory), read through
the same package metadata pip writes."""

from __future__ import annotations

import pytest

from procrl.launch.check import check_recipe
from procrl.launch.prelaunch import prelaunch_problems
from procrl.launch.versions import VLLM_EXTRA, installed_version, trl_vllm_range, vllm_version_problem
from procrl.recipe import load_recipe
from tests.helpers.launch import TINY_RECIPE


def install_fake_vllm(directory, monkeypatch, version: str) -> None:
    package = directory / "vllm"
    package.mkdir()
    (package / "__init__.py").write_text(f'__version__ = "{version}"\n')
    info = directory / f"vllm-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
    (info / "top_level.txt").write_text("vllm\n")
    monkeypatch.syspath_prepend(str(directory))


def test_trl_declares_the_range_procrl_reads():
    assert trl_vllm_range() is not None
    from packaging.specifiers import SpecifierSet

    supported = SpecifierSet(trl_vllm_range())
    assert "0.31.0" in supported and "0.31.1" not in supported and "0.21.0" not in supported
    # procrl's extra lies inside TRL's range
    extra = SpecifierSet(VLLM_EXTRA)
    assert all(v in supported for v in ("0.27.1", "0.28.0", "0.29.0", "0.30.0") if v in extra)
    assert "0.31.0" not in extra and "0.31.1" not in extra


@pytest.mark.parametrize(
    ("version", "refused"),
    [("0.33.0", True), ("0.31.1", True), ("0.21.0", True), ("0.30.0", False), ("0.31.0.post1", False)],
)
def test_a_vllm_outside_trls_range_is_refused_in_one_line(tmp_path, monkeypatch, version, refused):
    install_fake_vllm(tmp_path, monkeypatch, version)
    assert installed_version("vllm") == version
    problem = vllm_version_problem()
    if not refused:
        assert problem is None
        return
    assert problem is not None and "\n" not in problem
    assert f"vllm {version}" in problem and f"TRL {installed_version('trl')}" in problem
    assert trl_vllm_range() in problem and VLLM_EXTRA in problem


def test_prelaunch_and_check_refuse_it(tmp_path, monkeypatch, capsys):
    install_fake_vllm(tmp_path, monkeypatch, "0.33.0")
    recipe = load_recipe(TINY_RECIPE, ["trainer.use_vllm=true", "trainer.vllm_mode=server"])
    problems = [str(p) for p in prelaunch_problems(recipe, [], gpus=1)]
    assert any("vllm 0.33.0" in p and "trainer.use_vllm" in p for p in problems), problems
    broken = check_recipe(str(TINY_RECIPE), ["trainer.use_vllm=true", "trainer.vllm_mode=server"])
    assert [line for line in broken if line.startswith("trainer.use_vllm: vllm 0.33.0 is outside")]
    # without vLLM in the recipe nothing is refused
    assert not [line for line in check_recipe(str(TINY_RECIPE), []) if "vllm" in line]
