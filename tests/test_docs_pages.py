"""The user pages say what is: a commit id appears only in a results table's provenance column
("measured at", "results"), never in prose; the measurement logs live in benchmarks/<experiment>/README.md.
Checked on the pages whose lab logs moved out (the others follow as they move)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = ["docs/first-error.md", "docs/cpu-lab.md", "docs/architecture.md"]
# a commit id: 7 to 40 hex digits with at least one letter and one digit, standing alone
COMMIT = re.compile(r"(?<![\w/.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w/])")
PROVENANCE = ("measured at", "results")


def commit_ids_outside_provenance(text: str) -> list[str]:
    """Lines of ``text`` naming a commit outside a table column headed by one of :data:`PROVENANCE`."""
    found, columns = [], None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("|"):
            columns = None
        elif columns is None:  # a table's header row
            columns = [i for i, cell in enumerate(line.strip("|").split("|")) if cell.strip() in PROVENANCE]
        cells = line.strip("|").split("|") if line.startswith("|") else [line]
        for index, cell in enumerate(cells):
            if COMMIT.search(cell) and not (columns and index in columns):
                found.append(f"{number}: {line.strip()[:100]}")
    return found


@pytest.mark.parametrize("page", PAGES)
def test_no_commit_id_outside_a_provenance_column(page):
    assert commit_ids_outside_provenance((REPO / page).read_text()) == []


def test_the_check_sees_a_commit_in_prose_and_allows_one_in_a_provenance_column():
    table = "| model | accuracy | measured at |\n|---|---|---|\n| tiny | 0.37 | `ce47628` |\n"
    assert commit_ids_outside_provenance(table) == []
    assert commit_ids_outside_provenance("Measured at commit `ce47628`, 2026-12-01.") == [
        "1: Measured at commit `ce47628`, 2026-12-01."
    ]
    assert commit_ids_outside_provenance("| a | b |\n|---|---|\n| `ce47628` | 1 |") == ["3: | `ce47628` | 1 |"]
    assert commit_ids_outside_provenance("a digest 62251936ae7ba4e2 of 1000 rows") != []  # any hex id
    assert commit_ids_outside_provenance("1,000 rows and 2026-12-01 and dead1beef") == [
        "1: 1,000 rows and 2026-12-01 and dead1beef"
    ]


def test_the_reference_judges_rules_table_in_the_docs_is_current():
    from procrl.rewards.judges.reference.verdict import rules_table

    assert rules_table() in (REPO / "docs" / "first-error.md").read_text()
