"""A folder procrl did not create is never written into: train's output dir, evaluate's,
validate's and eval-judge's report dirs follow one rule (procrl/core/folders.py): new or empty,
marked as procrl's by the same command, or named by --overwrite; a symlink in it that leads out
of it is refused in every case; anything else is one line saying what is there, nothing written.
The refusals come before any model loads, so none of these tests trains."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.core.folders import MARKER, check_folder, claim_folder, write_file
from procrl.evaluation.evaluate import run as ev
from tests.helpers.cli import ONE_STEP, assert_one_line_error, cli, snapshot
from tests.helpers.launch import REPO, TINY_RECIPE

VALIDATE_DATA = REPO / "tests" / "data" / "validate" / "processbench_format.jsonl"
VALIDATE = [
    "--recipe",
    REPO / "recipes" / "gsm8k_trace.yaml",
    "--set",
    "rewards.trace.tagger=cues",
    "--set",
    "rewards.first_error.backend=arithmetic",
    "--data",
    VALIDATE_DATA,
    "--component",
    "accuracy",
    "--quiet",
]


def users_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "README.md").write_text("my notes")
    (path / "config.json").write_text('{"mine": true}')
    return path


# --- the rule itself ---------------------------------------------------------------------------------


def test_the_rule_new_empty_ours_overwrite_and_everything_else(tmp_path):
    assert check_folder(tmp_path / "new", "evaluate") == "new"
    (tmp_path / "empty").mkdir()
    assert check_folder(tmp_path / "empty", "evaluate") == "empty"
    ours = claim_folder(tmp_path / "ours", "validate")
    write_file(ours, "report.json", "{}")
    assert check_folder(ours, "validate") == "ours"
    assert check_folder(ours, "eval-judge") == "ours"  # it writes validate's files
    with pytest.raises(ConfigError, match=r"was written by procrl validate \(report.json\), not by procrl evaluate; "):
        check_folder(ours, "evaluate")
    assert check_folder(ours, "evaluate", overwrite=True) == "overwrite"
    mine = users_folder(tmp_path / "mine")
    with pytest.raises(ConfigError) as refused:
        check_folder(mine, "train", option="output_dir")
    assert str(refused.value) == (
        f"output_dir: {mine} holds README.md, config.json, which procrl did not write; give a "
        "new or empty folder, or --overwrite to write into it"
    )
    assert check_folder(mine, "train", overwrite=True) == "overwrite"
    (mine / "notes").mkdir()
    (mine / "notes" / "link").symlink_to(tmp_path / "elsewhere.txt")  # deep inside, leading out
    with pytest.raises(
        ConfigError,
        match=f"{mine / 'notes' / 'link'} is a symlink to {tmp_path / 'elsewhere.txt'}, "
        f"outside {mine}; procrl never writes through a link out of its folder",
    ):
        check_folder(mine, "train", overwrite=True)
    (mine / "notes" / "link").unlink()
    (mine / "notes" / "inside").symlink_to(mine / "README.md")  # a link that stays inside is no problem
    assert check_folder(mine, "train", overwrite=True) == "overwrite"
    assert json.loads((ours / MARKER).read_text())["commands"] == ["validate"]


def test_write_file_replaces_a_link_and_never_writes_through_it(tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("theirs")
    folder = claim_folder(tmp_path / "report", "evaluate")
    (folder / "report.md").symlink_to(outside)
    write_file(folder, "report.md", "ours")
    assert outside.read_text() == "theirs" and not (folder / "report.md").is_symlink()
    assert (folder / "report.md").read_text() == "ours"


# --- train -----------------------------------------------------------------------------------------


def test_train_refuses_a_folder_holding_the_users_files_before_anything_loads(tmp_path, capsys):
    mine = users_folder(tmp_path / "mydir")
    before = snapshot(mine)
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", mine, *ONE_STEP)
    assert_one_line_error(
        result, f"output_dir: {mine} holds README.md, config.json, which procrl did not write", "--overwrite"
    )
    assert snapshot(mine) == before


def test_train_never_writes_through_a_symlink_out_of_its_folder(tmp_path, capsys):
    outside = tmp_path / "elsewhere" / "README.md"
    outside.parent.mkdir()
    outside.write_text("the user's readme")
    mine = tmp_path / "mydir"
    mine.mkdir()
    (mine / "README.md").symlink_to(outside)
    for flags in ([], ["--overwrite"]):
        result = cli(capsys, "train", TINY_RECIPE, "--output-dir", mine, *ONE_STEP, *flags)
        assert_one_line_error(result, "output_dir:", "README.md")
    assert "is a symlink to" in result.errors[0] and f"outside {mine}" in result.errors[0]
    assert outside.read_text() == "the user's readme" and sorted(p.name for p in mine.iterdir()) == ["README.md"]


def test_a_folder_holding_a_run_keeps_its_own_refusal(tmp_path, capsys):
    """The output dir of a run (written by procrl train) still needs --resume or --overwrite."""
    out = claim_folder(tmp_path / "run", "train")
    (out / "checkpoint-3").mkdir()
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP)
    assert_one_line_error(result, "already holds a run (checkpoint-3)", "--resume", "--overwrite")


# --- evaluate ---------------------------------------------------------------------------------------


@pytest.fixture
def no_generation(monkeypatch):
    monkeypatch.setattr(
        ev, "generate_completions", lambda source, prompts, *a, **k: (["#### 1"] * len(prompts), "transformers")
    )


EVALUATE = [
    "evaluate",
    "--recipe",
    TINY_RECIPE,
    "--set",
    "rewards.trace=false",
    "--model",
    "procrl:tiny-qwen2",
    "--limit",
    "2",
]


def test_evaluate_refuses_a_folder_holding_the_users_plot(tmp_path, capsys, no_generation):
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "component_distributions.png").write_bytes(b"my own figure")
    result = cli(capsys, *EVALUATE, "--output-dir", rep)
    assert_one_line_error(result, f"--output-dir: {rep} holds component_distributions.png, which procrl did not write")
    assert (rep / "component_distributions.png").read_bytes() == b"my own figure"
    assert sorted(p.name for p in rep.iterdir()) == ["component_distributions.png"]
    # named by --overwrite: written, the rest of the folder kept
    (rep / "notes.txt").write_text("kept")
    assert cli(capsys, *EVALUATE, "--output-dir", rep, "--overwrite").code == 0
    assert (rep / "notes.txt").read_text() == "kept" and (rep / "report.json").is_file()


def test_evaluate_writes_again_into_its_own_folder_but_not_through_a_link_out(tmp_path, capsys, no_generation):
    rep = tmp_path / "rep"
    assert cli(capsys, *EVALUATE, "--output-dir", rep).code == 0
    assert json.loads((rep / MARKER).read_text())["commands"] == ["evaluate"]
    assert cli(capsys, *EVALUATE, "--output-dir", rep).code == 0  # its own folder: the report replaced
    outside = tmp_path / "mine.md"
    outside.write_text("mine")
    (rep / "report.md").unlink()
    (rep / "report.md").symlink_to(outside)
    result = cli(capsys, *EVALUATE, "--output-dir", rep, "--overwrite")
    assert_one_line_error(result, f"{rep / 'report.md'} is a symlink to {outside}, outside {rep}")
    assert outside.read_text() == "mine"


def test_evaluate_refuses_the_folder_another_command_wrote(tmp_path, capsys, no_generation):
    out = claim_folder(tmp_path / "run", "train")
    (out / "recipe.yaml").write_text("recipe: procrl/v1\n")
    result = cli(capsys, *EVALUATE, "--output-dir", out)
    assert_one_line_error(result, f"{out} was written by procrl train (recipe.yaml), not by procrl evaluate")


# --- validate and eval-judge -----------------------------------------------------------------------------


def test_validate_refuses_a_users_folder_and_a_link_to_one(tmp_path, capsys):
    mine = users_folder(tmp_path / "mine")
    link = tmp_path / "link"
    link.symlink_to(mine, target_is_directory=True)
    before = snapshot(mine)
    for folder in (mine, link):
        result = cli(capsys, "validate", *VALIDATE, "--output-dir", folder)
        assert_one_line_error(
            result, f"--output-dir: {folder} holds README.md, config.json, which procrl did not write"
        )
        judged = cli(capsys, "eval-judge", *VALIDATE[:-3], "--output-dir", folder)
        assert_one_line_error(
            judged, f"--output-dir: {folder} holds README.md, config.json, which procrl did not write"
        )
    assert snapshot(mine) == before


def test_validate_writes_again_into_its_own_default_folder(tmp_path, capsys, monkeypatch):
    """The default folder is validate/<recipe>--<data>: a second run on the same recipe and data
    replaces the first one's report there (it is procrl's); a folder of that name that procrl did
    not write is refused, not numbered around."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "validate" / "gsm8k_trace--processbench_format"
    assert cli(capsys, "validate", *VALIDATE).code == 0
    assert cli(capsys, "validate", *VALIDATE).code == 0
    assert sorted(p.name for p in (tmp_path / "validate").iterdir()) == [folder.name]
    assert sorted(p.name for p in folder.iterdir()) == [
        MARKER,
        "report.json",
        "report.md",
        "rows.jsonl",
        "validate.png",
    ]
    for name in (MARKER, "report.json", "report.md", "rows.jsonl", "validate.png"):
        (folder / name).unlink()
    (folder / "mine.txt").write_text("mine")
    result = cli(capsys, "validate", *VALIDATE)
    assert_one_line_error(
        result, f"--output-dir: {Path('validate') / folder.name} holds mine.txt, which procrl did not write"
    )


# --- train-tagger ---------------------------------------------------------------------------------------


def test_train_tagger_refuses_a_users_folder_before_training(tmp_path, capsys, monkeypatch):
    import transformers

    from procrl.trainers.tagger import write_tiny_encoder

    write_tiny_encoder(tmp_path / "encoder")
    data = tmp_path / "labelled.jsonl"
    data.write_text(
        "".join(
            json.dumps({"sentence": f"First we add {i} and 3.", "labels": ["Claim"] if i % 2 else []}) + "\n"
            for i in range(6)
        )
    )

    def no_training(*args, **kwargs):
        raise AssertionError("the encoder was loaded")

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", no_training)
    mine = users_folder(tmp_path / "mine")
    result = cli(
        capsys, "train-tagger", "--data", data, "--base", tmp_path / "encoder", "--output-dir", mine, "--epochs", "1"
    )
    assert_one_line_error(result, f"--output-dir: {mine} holds README.md, config.json, which procrl did not write")
    assert (mine / "config.json").read_text() == '{"mine": true}'


# --- one rule, every command that writes a folder ------------------------------------------------------


def _command_args(command: str, tmp_path: Path) -> list:
    """Arguments that take ``command`` to its folder check (the folder is given after them)."""
    if command == "train":
        return ["train", TINY_RECIPE, *ONE_STEP, "--output-dir"]
    if command == "evaluate":
        return [*EVALUATE, "--output-dir"]
    if command in ("validate", "eval-judge"):
        return [command, *(VALIDATE if command == "validate" else VALIDATE[:-3]), "--output-dir"]
    from procrl.trainers.tagger import write_tiny_encoder

    write_tiny_encoder(tmp_path / "encoder")
    data = tmp_path / "labelled.jsonl"
    data.write_text(
        "".join(
            json.dumps({"sentence": f"First we add {i} and 3.", "labels": ["Claim"] if i % 2 else []}) + "\n"
            for i in range(6)
        )
    )
    return ["train-tagger", "--data", data, "--base", tmp_path / "encoder", "--epochs", "1", "--output-dir"]


@pytest.mark.parametrize("command", ["train", "evaluate", "validate", "eval-judge", "train-tagger"])
def test_every_command_refuses_another_commands_folder_and_a_link_out(tmp_path, capsys, command):
    """The same two refusals, before any model loads: a folder another procrl command wrote (without
    --overwrite), and a link out of the folder (--overwrite included); nothing is written."""
    args = _command_args(command, tmp_path)
    other = "evaluate" if command in ("validate", "eval-judge") else "validate"
    theirs = claim_folder(tmp_path / "theirs", other)
    (theirs / "report.json").write_text("{}")
    before = snapshot(theirs)
    option = "output_dir" if command == "train" else "--output-dir"
    result = cli(capsys, *args, theirs)
    assert_one_line_error(
        result, f"{option}: {theirs} was written by procrl {other} (report.json), not by procrl {command}"
    )
    outside = tmp_path / "elsewhere.md"
    outside.write_text("the user's")
    (theirs / "notes.md").symlink_to(outside)
    result = cli(capsys, *args, theirs, "--overwrite")
    assert_one_line_error(result, f"{theirs / 'notes.md'} is a symlink to {outside}, outside {theirs}")
    (theirs / "notes.md").unlink()
    assert snapshot(theirs) == before and outside.read_text() == "the user's"


def test_eval_judge_writes_into_validates_folder_and_keeps_what_overwrite_names(tmp_path, capsys):
    """validate and eval-judge write the same files: each one's folder is the other's; a user's
    folder named by --overwrite is written into, its other files kept."""
    folder = tmp_path / "report"
    assert cli(capsys, "validate", *VALIDATE, "--output-dir", folder).code == 0
    assert cli(capsys, "eval-judge", *VALIDATE[:-3], "--output-dir", folder).code == 0
    assert json.loads((folder / MARKER).read_text())["commands"] == ["validate", "eval-judge"]
    mine = users_folder(tmp_path / "mine")
    assert cli(capsys, "eval-judge", *VALIDATE[:-3], "--output-dir", mine, "--overwrite").code == 0
    assert (mine / "README.md").read_text() == "my notes" and (mine / "report.json").is_file()


# --- what a marker proves ---------------------------------------------------------------------------------


def test_a_marker_copied_into_a_users_folder_proves_nothing(tmp_path, capsys):
    """A marker names the folder procrl wrote it in (its device and inode): copied with the
    files of a run into a user's folder (``cp``, a backup), it does not make that folder procrl's."""
    import shutil

    ours = claim_folder(tmp_path / "run", "train")
    mine = users_folder(tmp_path / "mine")
    shutil.copy(ours / MARKER, mine / MARKER)
    before = snapshot(mine)
    with pytest.raises(ConfigError, match="holds README.md, config.json, which procrl did not write"):
        check_folder(mine, "train", option="output_dir")
    result = cli(capsys, "train", TINY_RECIPE, "--output-dir", mine, *ONE_STEP)
    assert_one_line_error(result, f"output_dir: {mine} holds README.md, config.json, which procrl did not write")
    assert snapshot(mine) == before
    assert check_folder(ours, "train") == "ours"  # in its own folder it still proves it


def test_two_commands_started_on_one_new_folder_do_not_both_write_it(tmp_path):
    """train and evaluate at the same moment: both find the folder new; the first claim wins and
    the second is refused when it claims, before it writes a file."""
    folder = tmp_path / "shared"
    assert check_folder(folder, "train", option="output_dir") == "new"
    assert check_folder(folder, "evaluate") == "new"
    claim_folder(folder, "train")
    with pytest.raises(ConfigError, match=f"{folder} was claimed by procrl train since it was checked"):
        claim_folder(folder, "evaluate")
    assert json.loads((folder / MARKER).read_text())["commands"] == ["train"]
    # eval-judge after validate (the same files) joins it; a folder found procrl's keeps working as before
    claim_folder(tmp_path / "rep", "validate")
    assert check_folder(tmp_path / "rep", "eval-judge") == "ours"
    claim_folder(tmp_path / "rep", "eval-judge")


def _hostile_marker(folder: Path, kind: str) -> None:
    import os

    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    marker = folder / MARKER
    if kind == "fifo":
        os.mkfifo(marker)
    elif kind == "dev-zero":
        marker.symlink_to("/dev/zero")
    else:  # JSON nested 200,000 deep
        marker.write_text("[" * 200_000 + "]" * 200_000)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "nested"])
def test_a_hostile_marker_is_read_bounded_and_proves_nothing(tmp_path, capsys, kind):
    """A marker that is a FIFO (train and evaluate hung), a link to /dev/zero (read whole:
    MemoryError) or JSON nested 200,000 deep (RecursionError): the folder is not procrl's, and
    each command says so in one line, at once."""
    for command, args in (
        ("train", ["train", TINY_RECIPE, *ONE_STEP, "--output-dir"]),
        ("evaluate", [*EVALUATE, "--output-dir"]),
        ("validate", ["validate", *VALIDATE, "--output-dir"]),
    ):
        folder = tmp_path / f"{command}-{kind}"
        _hostile_marker(folder, kind)
        result = cli(capsys, *args, folder)
        assert_one_line_error(result, f"{folder} holds", "which procrl did not write")
