"""benchmarks/reference_judge_corpora.py: the labelled fresh corpus read from a fetched repository
(a real git repository built here), its labels file, and the split by question."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import reference_judge_corpora as corpora  # noqa: E402

QUESTION = "Tom has 3 apples and buys 4 more. How many apples does he have?"
GOLD = "Tom has 3 + 4 = <<3+4=7>>7 apples.\n#### 7"


def _labels(path: Path = corpora.FRESH_LABELS) -> list[list[str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    body = [line for line in lines if not line.startswith("#")]
    assert body[0] == "model\tindex\tfirst_error\tnote"
    return [line.split("\t") for line in body[1:]]


def test_the_fresh_labels_file_is_well_formed():
    rows = _labels()
    assert all(len(row) == 4 for row in rows)
    assert len({(model, index) for model, index, _, _ in rows}) == len(rows) == 360
    assert {model for model, *_ in rows} == {"qwen25-7b", "llama32-3b", "llama31-8b"}
    for model, index, label, note in rows:
        assert 0 <= int(index) < 1319
        assert label == "x" or int(label) >= -1
        assert label != "x" or note.strip(), (model, index)  # an excluded row says why
    assert sum(label == "x" for _, _, label, _ in rows) == 31


def test_the_second_draw_labels_file_is_well_formed():
    rows = _labels(corpora.FRESH_SECOND_LABELS)
    assert all(len(row) == 4 for row in rows)
    assert len({(model, index) for model, index, _, _ in rows}) == len(rows) == 168
    assert {model for model, *_ in rows} == {"qwen25-7b-fs", "llama32-3b", "llama31-8b"}
    first = {(model, index) for model, index, _, _ in _labels()}
    assert not first & {(model, index) for model, index, _, _ in rows}  # no row of the first draw again
    for model, index, label, note in rows:
        assert 0 <= int(index) < 1319
        assert label == "x" or int(label) >= -1
        assert note.strip(), (model, index)  # every row says why
    assert sum(label == "x" for _, _, label, _ in rows) == 4


def test_the_tuning_labels_file_is_well_formed():
    rows = _labels(corpora.FRESH_TUNING_LABELS)
    assert all(len(row) == 4 for row in rows)
    assert len({(model, index) for model, index, _, _ in rows}) == len(rows) == 282
    assert {model for model, *_ in rows} <= set(corpora.FRESH_SOURCES)
    others = {(m, i) for f in (corpora.FRESH_LABELS, corpora.FRESH_SECOND_LABELS) for m, i, _, _ in _labels(f)}
    assert not others & {(model, index) for model, index, _, _ in rows}
    for model, index, label, note in rows:
        assert 0 <= int(index) < 1319
        assert label == "x" or int(label) >= -1
        assert label != "x" or note.strip(), (model, index)
    assert sum(label == "x" for _, _, label, _ in rows) == 48


def _repository(tmp_path: Path, solutions: dict[str, list[dict]]) -> str:
    work = tmp_path / "llm-reasoning"
    for model, path in corpora.FRESH_SOURCES.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(json.dumps(solutions.get(model, [])), encoding="utf-8")
    run = {"cwd": work, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q"], **run)
    subprocess.run(["git", "add", "-A"], **run)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "results"], **run)
    return str(work)


def test_fresh_rows_are_read_from_the_repository_with_their_labels(tmp_path, monkeypatch):
    solution = {"question": QUESTION, "correct": "7.0"}
    solutions = {
        "qwen25-7b": [
            {**solution, "response": "3 + 4 = 7\nSo \\boxed{7}", "predicted": "4.0"},  # misread by the extractor
            {**solution, "response": "3 * 4 = 12\nThe answer is 12", "predicted": "12.0"},
        ],
        "llama32-3b": [{**solution, "response": "3 + 5 = 8\nThe final answer is 8", "predicted": "8.0"}],
    }
    labels = tmp_path / "labels.tsv"
    labels.write_text(
        "# a header comment\nmodel\tindex\tfirst_error\tnote\n"
        "qwen25-7b\t0\t-1\textraction: boxed 7\nqwen25-7b\t1\t0\tmultiplies\nllama32-3b\t0\tx\tgold ambiguous\n",
        encoding="utf-8",
    )
    test_split = tmp_path / "test.jsonl"
    test_split.write_text(json.dumps({"question": QUESTION, "answer": GOLD}) + "\n", encoding="utf-8")
    monkeypatch.setattr(corpora, "FRESH_LABELS", labels)
    path = corpora.fresh(_repository(tmp_path, solutions), str(test_split), tmp_path / "out")
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["qwen25-7b-0", "qwen25-7b-1"]  # the excluded row is left out
    sound, flawed = rows
    assert sound["first_error"] == -1 and sound["answer_correct"] is True  # a right answer misread is right
    assert flawed["first_error"] == 0 and flawed["answer_correct"] is False
    assert sound["answer"] == GOLD and sound["completion"].endswith("\\boxed{7}")


def test_a_snapshot_without_the_results_file_builds_nothing(tmp_path, monkeypatch, capsys):
    work = tmp_path / "empty"
    work.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    labels = tmp_path / "labels.tsv"
    labels.write_text("model\tindex\tfirst_error\tnote\nqwen25-7b\t0\t-1\tsound\n", encoding="utf-8")
    monkeypatch.setattr(corpora, "FRESH_LABELS", labels)
    test_split = tmp_path / "test.jsonl"
    test_split.write_text(json.dumps({"question": QUESTION, "answer": GOLD}) + "\n", encoding="utf-8")
    assert corpora.fresh(str(work), str(test_split), tmp_path / "out") is None
    assert "not in the snapshot" in capsys.readouterr().err


@pytest.mark.parametrize("question", [QUESTION, "  " + QUESTION + "\n"])
def test_the_split_is_a_fixed_function_of_the_question(question):
    assert corpora.held_out(question) == corpora.held_out(QUESTION)
