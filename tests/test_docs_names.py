"""What the docs name exists: every dotted ``procrl.…`` name in README.md, docs/*.md and the strings (docstrings,
messages) and comments of procrl, benchmarks/, examples/ and scripts/ resolves (the module imports, the rest is an
attribute of it), and every ``procrl <command> --option`` they show is an option of that command's parser.

A failure lists every unresolved name with its file and line, so that one run shows all of them."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# procrl.a.b, procrl.a.b:attr.sub; not a file name (.procrl.lock) nor a path (~/.cache/procrl.x)
DOTTED = re.compile(r"(?<![\w./-])procrl(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?")
# `procrl <command> ...` up to what ends a command in prose or a shell line
COMMAND = re.compile(r"(?<![\w./-])procrl(?: +(?P<command>[a-z][a-z0-9-]*))?(?P<rest>[^`;|&\n]*)")
OPTION = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
# Modules a page tells the reader to write: they exist once the reader follows it
WRITTEN_BY_THE_READER = {"procrl.rewards.closeness": "docs/writing-a-component.md builds it"}


def markdown_pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def python_files() -> list[Path]:
    """procrl's modules and what a reader runs beside them (benchmarks, examples, scripts); not the tests, which
    name what does not exist on purpose."""
    folders = ("procrl", "benchmarks", "examples", "scripts")
    return sorted(path for folder in folders for path in (REPO / folder).rglob("*.py"))


def _join_code_spans(text: str) -> str:
    """The text with the newlines inside inline code spans (outside fenced blocks) made spaces, so that a
    command wrapped over two lines of prose reads as one; same length, so offsets keep their line."""
    out, in_fence = [], False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            out.append("\0" * len(line.rstrip("\n")) + line[len(line.rstrip("\n")) :])  # a fence pairs no span
        else:
            out.append(line if not in_fence else line.replace("`", "\0"))
    joined = "".join(out)
    joined = re.sub(r"`[^`\0]+`", lambda m: m.group(0).replace("\n", " "), joined)
    kept = [original if marked == "\0" else marked for original, marked in zip(text, joined)]
    return "".join(kept)


def _join_continuations(text: str) -> str:
    """Shell line continuations (a backslash before the newline) made spaces, length kept."""
    return re.sub(r"\\\n", "  ", text)


def _python_texts(path: Path) -> Iterator[tuple[int, str]]:
    """(first line, text) of every string literal (f-strings' literal parts included) and comment of a file."""
    source = path.read_text()
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def texts() -> Iterator[tuple[str, int, str]]:
    """(file, first line, text) of everything a reader is shown."""
    for page in markdown_pages():
        yield str(page.relative_to(REPO)), 1, page.read_text()
    for path in python_files():
        for line, text in _python_texts(path):
            yield str(path.relative_to(REPO)), line, text


def _found(pattern: re.Pattern, text: str, original: str | None = None) -> Iterator[tuple[int, re.Match]]:
    """(line offset within the text, match) of each match; ``original``: the text before newlines were
    joined (same length), whose lines the offsets count."""
    for match in pattern.finditer(text):
        yield (original or text).count("\n", 0, match.start()), match


def unresolved(name: str) -> str | None:
    """Why ``name`` (``procrl.a.b.attr`` or ``procrl.a.b:attr``) does not resolve; None when it does."""
    dotted, colon, attributes = name.partition(":")
    if dotted in WRITTEN_BY_THE_READER:
        return None
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        module = ".".join(parts[:end])
        try:
            if importlib.util.find_spec(module) is not None:
                break
        except ImportError:  # a parent is a module, not a package: a shorter prefix is the module
            continue
    rest = parts[end:]
    if colon and rest:
        return f"no module {dotted}"
    rest += attributes.split(".") if colon else []
    if not rest:
        return None
    if module.endswith("__main__"):
        return f"{module} is the command line, not a module to take {'.'.join(rest)} from"
    target = importlib.import_module(module)
    for depth, attribute in enumerate(rest):
        if not hasattr(target, attribute):
            owner = ".".join([module, *rest[:depth]])
            return f"{owner} has no attribute {attribute!r}"
        target = getattr(target, attribute)
    return None


def test_every_dotted_procrl_name_resolves():
    problems, seen = [], {}
    for file, first_line, text in texts():
        for offset, match in _found(DOTTED, text):
            name = match.group(0)
            if name not in seen:
                seen[name] = unresolved(name)
            if seen[name]:
                problems.append(f"{file}:{first_line + offset}: {name} ({seen[name]})")
    assert len(seen) > 100  # the scan reads the docs and the docstrings
    assert not problems, f"{len(problems)} dotted names do not resolve:\n" + "\n".join(problems)


def test_unresolved_says_why():
    assert unresolved("procrl.rewards.registry.REWARDS") is None
    assert unresolved("procrl.rewards.receval:split_rcus") is None
    assert unresolved("procrl.rewards") is None
    assert unresolved("procrl.text") == "procrl has no attribute 'text'"
    assert unresolved("procrl.rewards.registry.NOPE") == "procrl.rewards.registry has no attribute 'NOPE'"
    assert unresolved("procrl.rewards.nope:f") == "no module procrl.rewards.nope"
    assert [m.group(0) for m in DOTTED.finditer("see procrl.core.text. Not .procrl.lock or ~/.x/procrl.y")] == [
        "procrl.core.text"
    ]


def _parsers() -> dict[str | None, set[str]]:
    """Command (None: ``procrl`` itself) -> the option strings its parser takes."""
    import argparse

    from procrl.launch.cli import build_parser

    parser = build_parser()
    options: dict[str | None, set[str]] = {None: set(parser._option_string_actions)}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, subparser in action.choices.items():
                options[command] = set(subparser._option_string_actions)
    from accelerate.commands.launch import launch_command_parser

    # train passes the flags it does not know on to accelerate launch, which must know them
    options["train"] |= set(launch_command_parser()._option_string_actions)
    return options


def command_mentions(text: str, commands) -> Iterator[tuple[int, str | None, str]]:
    """(line offset, command, option) of each ``--option`` shown after ``procrl <command>`` (or ``procrl``)."""
    joined = _join_continuations(_join_code_spans(text))
    for offset, match in _found(COMMAND, joined, text):
        command, rest = match.group("command"), match.group("rest")
        if command is not None and command not in commands:
            continue  # prose: "procrl puts ..."
        if command is None and not rest.lstrip().startswith("-"):
            continue
        for option in OPTION.findall(rest):
            yield offset, command, option


def test_every_option_shown_with_a_command_exists():
    options = _parsers()
    problems, count = [], 0
    for file, first_line, text in texts():
        for offset, command, option in command_mentions(text, options):
            count += 1
            if option not in options[command]:
                shown = f"procrl {command}" if command else "procrl"
                problems.append(f"{file}:{first_line + offset}: {shown} {option} (no such option of {shown})")
    assert count > 50  # the scan reads the docs' commands
    assert not problems, f"{len(problems)} options do not exist:\n" + "\n".join(problems)


def test_command_mentions_read_wrapped_spans_and_continuations():
    commands = {"train": set(), "check": set()}
    text = (
        "Run `procrl check R [--set K=V] [--load-models\n--probe-judge]`; then --later.\n"
        "```bash\nprocrl train r.yaml \\\n  --resume  # comment\n```\nprocrl puts --nothing"
    )
    assert list(command_mentions(text, commands)) == [
        (0, "check", "--set"),
        (0, "check", "--load-models"),
        (0, "check", "--probe-judge"),
        (3, "train", "--resume"),
    ]
