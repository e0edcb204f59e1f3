"""The docs' Python runs: every ```python block of README.md and docs/*.md is executed, unless the line before
its fence says why it is not run, as ``<!-- not run: an excerpt of procrl/rewards/registry.py -->``.

A page's blocks run in order, in one module, as a reader would take them (a later block may use what an earlier
one defines), from the repository's root, offline; the ``test_*`` functions its blocks define are then called,
with the pytest fixtures they name."""

from __future__ import annotations

import inspect
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^\s*```\s*(?P<info>[\w+-]*)")
NOT_RUN = re.compile(r"^\s*<!--\s*not run\s*:(?P<reason>.*?)-->\s*$")
PYTHON = {"python", "py", "python3"}


@dataclass
class Block:
    page: str
    line: int  # of the opening fence
    code: str
    not_run: str | None  # the reason, when marked


def python_blocks(text: str, page: str) -> list[Block]:
    """The fenced Python blocks of a Markdown text, each with the not-run reason on the line before its fence."""
    blocks, lines, index = [], text.splitlines(), 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if not fence:
            index += 1
            continue
        end = next((j for j in range(index + 1, len(lines)) if lines[j].strip() == "```"), len(lines))
        if fence.group("info").lower() in PYTHON:
            marker = NOT_RUN.match(lines[index - 1]) if index else None
            reason = marker.group("reason").strip() if marker else None
            blocks.append(Block(page, index + 1, "\n".join(lines[index + 1 : end]) + "\n", reason))
        index = end + 1
    return blocks


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks_by_page() -> dict[str, list[Block]]:
    found = {}
    for page in pages():
        name = str(page.relative_to(REPO))
        blocks = python_blocks(page.read_text(), name)
        if blocks:
            found[name] = blocks
    return found


def register_answer_closeness(module: types.ModuleType, monkeypatch) -> None:
    """The page's registry line (its block 2, an excerpt of the registry), for the page's module."""
    from procrl.rewards.registry import REWARDS

    monkeypatch.setitem(REWARDS, "answer_closeness", f"{module.__name__}:AnswerCloseness")


# What a page's not-run blocks tell the reader to do, done before its tests are called.
PREPARE = {"docs/writing-a-component.md": register_answer_closeness}


def test_the_docs_have_python_blocks():
    found = blocks_by_page()
    assert "README.md" in found and "docs/writing-a-component.md" in found
    assert any(block.not_run is None for blocks in found.values() for block in blocks)


def test_a_not_run_marker_gives_its_reason():
    text = (
        "<!-- not run: needs a GPU -->\n```python\nimport cuda\n```\n<!-- not run: -->\n```py\nx\n```\n"
        "```bash\nls\n```\n```python\nprint(1)\n```\n"
    )
    blocks = python_blocks(text, "page.md")
    assert [(b.line, b.not_run, b.code) for b in blocks] == [
        (2, "needs a GPU", "import cuda\n"),
        (6, "", "x\n"),
        (12, None, "print(1)\n"),
    ]


@pytest.mark.parametrize("page", sorted(blocks_by_page()))
def test_every_python_block_runs_or_says_why_not(page, request, monkeypatch):
    blocks = blocks_by_page()[page]
    unexplained = [f"{page}:{b.line}" for b in blocks if b.not_run == ""]
    assert not unexplained, f"a not-run marker without its reason: {', '.join(unexplained)}"
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(sys, "path", list(sys.path))  # what a block's commands put on the import path goes
    module = types.ModuleType("procrl_docs_" + re.sub(r"\W", "_", Path(page).stem))
    module.__file__ = str(REPO / page)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for block in blocks:
        if block.not_run is None:
            code = compile("\n" * block.line + block.code, str(REPO / page), "exec")  # tracebacks give the page's line
            exec(code, module.__dict__)
    if page in PREPARE:
        PREPARE[page](module, monkeypatch)
    tests = {name: value for name, value in vars(module).items() if name.startswith("test_") and callable(value)}
    for test in tests.values():
        fixtures = {parameter: request.getfixturevalue(parameter) for parameter in inspect.signature(test).parameters}
        test(**fixtures)
