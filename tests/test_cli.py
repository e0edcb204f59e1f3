"""The ``procrl`` command line: every command lives in one module of procrl/launch/commands that
follows the package's convention, ``procrl --help`` lists each with its one line, and
``python -m procrl`` and the installed script both run procrl.launch.cli's main."""

import argparse
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

import procrl.launch.commands as commands_package
from procrl.launch import cli

REPO = Path(__file__).resolve().parents[1]
COMMANDS_DIR = Path(commands_package.__file__).parent


def _listed_commands(help_text: str) -> dict[str, str]:
    """Command name -> its line of help, from the ``commands:`` section of ``procrl --help``."""
    section = help_text.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    listed = {}
    for line in section.splitlines()[1:]:  # the first line is the COMMAND metavar
        match = re.fullmatch(r" {4}(\S+) {2,}(\S.*)", line)
        assert match, f"not one line 'name  help': {line!r}"
        listed[match.group(1)] = match.group(2)
    return listed


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_help_lists_every_command_on_one_line_even_in_a_narrow_terminal(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "40")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    listed = _listed_commands(capsys.readouterr().out)
    for command in cli.COMMANDS:
        assert listed.get(command.NAME) == command.HELP, command.NAME
    assert sorted(listed) == sorted(_subcommands())  # every command the parser knows, none twice
    assert all(listed.values())


def test_each_command_module_follows_the_convention():
    modules = sorted(p.stem for p in COMMANDS_DIR.glob("*.py") if not p.name.startswith("_"))
    assert sorted(m.__name__.rpartition(".")[2] for m in cli.COMMANDS) == modules  # each module registered once
    for command in cli.COMMANDS:
        name = command.__name__
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", command.NAME), name
        assert name.rpartition(".")[2] == command.NAME.replace("-", "_"), name
        assert isinstance(command.HELP, str) and command.HELP.endswith(".") and "\n" not in command.HELP, name
        assert len(inspect.signature(command.add_arguments).parameters) == 1, name  # the subcommand's parser
        assert len(inspect.signature(command.run).parameters) == 1, name  # the parsed arguments
        assert command.__doc__ and f"procrl {command.NAME}" in command.__doc__, name
    assert len({c.NAME for c in cli.COMMANDS}) == len(cli.COMMANDS)


def test_each_command_parses_into_its_own_handler():
    parsers = _subcommands()
    for command in cli.COMMANDS:
        assert parsers[command.NAME].get_default("handler") is command.run


def test_only_a_command_that_passes_unknown_flags_on_accepts_them(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["check", str(REPO / "recipes" / "gsm8k_tiny_smoke.yaml"), "--num_processes", "2"])
    assert exit_.value.code == 2
    assert "procrl: error: unrecognized arguments: --num_processes 2" in capsys.readouterr().err
    assert [c.NAME for c in cli.COMMANDS if getattr(c, "PASSES_UNKNOWN_FLAGS", False)] == ["train"]


def test_python_m_procrl_run_takes_procrl_train_arguments_and_refuses_others(capsys):
    """``python -m procrl.run`` (what accelerate launches) parses training's arguments as ``procrl train``
    does, from one definition, and, training in this process, has no accelerate flag to pass on."""
    from procrl.launch import run

    def options(parser: argparse.ArgumentParser) -> list:
        return [(a.dest, a.option_strings, a.default, a.help) for a in parser._actions if a.dest != "help"]

    assert options(run.parser()) == options(_subcommands()["train"])
    with pytest.raises(SystemExit) as exit_:
        run.main([str(REPO / "recipes" / "gsm8k_tiny_smoke.yaml"), "--num_processes", "2"])
    assert exit_.value.code == 2
    assert "python -m procrl.run: error: unrecognized arguments: --num_processes 2" in capsys.readouterr().err


def test_python_dash_m_procrl_is_the_procrl_command():
    done = subprocess.run(
        [sys.executable, "-m", "procrl", "--help"], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage: procrl [-h] COMMAND ...")
    assert {c.NAME: c.HELP for c in cli.COMMANDS}.items() <= _listed_commands(done.stdout).items()
    missing = subprocess.run([sys.executable, "-m", "procrl"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert missing.returncode == 2
    assert missing.stderr.splitlines()[-1] == "procrl: error: the following arguments are required: COMMAND"


def test_the_installed_script_runs_the_same_main():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"procrl": "procrl.launch.cli:main"}
    assert not (REPO / "procrl" / "cli.py").exists()
