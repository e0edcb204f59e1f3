"""procrl:tiny-reasoner: its training data, the shipped weights and their card, a reduced build
through the real command (a minute), and the held-out targets of the shipped model (slow)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from procrl.data.synthetic import FILLERS, HEDGES, HELD_OUT_SPLITS, generate_split
from procrl.models.reasoner import HELD_OUT_EXAMPLES, ReasonerSpec, training_rows
from procrl.rewards.quantities import first_wrong_step

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "recipes" / "gsm8k_tiny_cpu.yaml"


def test_training_rows_hold_the_controlled_flaws_and_no_held_out_question():
    spec = ReasonerSpec(train_examples=3000)
    rows = training_rows(spec)
    assert rows == training_rows(spec)  # deterministic
    counts = Counter((r["template"], r["slip"]) for r in rows)
    for template, (kind, rate, *_) in spec.habits.items():
        flawed, total = counts[(template, kind)], counts[(template, kind)] + counts[(template, None)]
        assert rate - 0.06 < flawed / total < rate + 0.06, (template, flawed, total)
        assert flawed / total > 0.5  # a habit: what greedy decoding reproduces
    others = [r for r in rows if r["template"] not in spec.habits]
    assert 0.01 < sum(r["slip"] is not None for r in others) / len(others) < 0.06
    writing = Counter((r["template"], r["writing"]) for r in rows)
    for template, (habit, rate) in spec.writing_habits.items():
        share = writing[(template, habit)] / (writing[(template, habit)] + writing[(template, None)])
        assert rate - 0.06 < share < rate + 0.06 and share > 0.5, (template, share)
    assert all(r["writing"] is None for r in rows if r["template"] not in spec.writing_habits)
    for row in rows:  # a writing habit adds one number-free sentence and changes nothing else
        if row["writing"] is not None:
            lines = row["completion"].split("\n")
            added = lines[-2] if row["writing"] == "hedge" else lines[0]
            assert added in (HEDGES if row["writing"] == "hedge" else FILLERS)
            assert not any(ch.isdigit() for ch in added)
    # the slips are drawn exactly as without the writing habits
    plain = training_rows(ReasonerSpec(train_examples=3000, writing_habits={}))
    assert [(r["template"], r["slip"]) for r in plain] == [(r["template"], r["slip"]) for r in rows]
    for row in rows[:300]:  # the flaws are what they claim, by the arithmetic judge's own check
        assert "#### " in row["completion"]
        steps = row["completion"].split("\n")[:-1]
        assert (first_wrong_step(steps) >= 0) == (row["slip"] is not None)
    held_out = {p["question"] for split in HELD_OUT_SPLITS for p in generate_split(split, HELD_OUT_EXAMPLES, 0)}
    assert not held_out & {r["prompt"] for r in rows}


def test_spec_changes_change_the_cache_key():
    assert ReasonerSpec().key() == ReasonerSpec().key()
    assert ReasonerSpec().key() != ReasonerSpec(train_examples=100).key()


def test_the_shipped_weights_are_the_default_spec_and_load_with_no_build(tmp_path, monkeypatch):
    from dataclasses import asdict

    from procrl.models.loading import model_source
    from procrl.models.reasoner import REASONER, SHIPPED_REASONER, shipped_card

    card = shipped_card()
    assert card["spec_key"] == ReasonerSpec().key(), "the default spec changed: rebuild and ship the reasoner"
    assert card["spec"] == json.loads(json.dumps(asdict(ReasonerSpec())))
    assert card["machine"]["cpu"] and card["machine"]["torch"] and card["build_seconds"] > 0
    assert card["flawed_rows"] == sum(
        n for k, n in card["rows_by_template_and_slip"].items() if not k.endswith("/clean")
    )
    assert set(card["files"]) == {p.name for p in SHIPPED_REASONER.iterdir()}
    monkeypatch.setenv("PROCRL_CACHE", str(tmp_path / "cache"))
    assert Path(model_source(REASONER).path) == SHIPPED_REASONER
    assert not (tmp_path / "cache").exists()  # nothing built, nothing cached


def test_a_reduced_build_runs_the_whole_pipeline(tmp_path):
    """``build-tiny-reasoner --train-examples N``: the real build on the spec's first N solutions,
    loadable by ``procrl evaluate`` like the shipped model."""
    out = tmp_path / "reasoner"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "procrl.launch.cli",
            "build-tiny-reasoner",
            "--output-dir",
            str(out),
            "--train-examples",
            "96",
            "--quiet",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "a reduced spec (96 examples)" in done.stdout
    card = json.loads((out / "reasoner_card.json").read_text())
    assert card["training_rows"] == 96 and card["spec"]["train_examples"] == 96
    assert card["spec_key"] == ReasonerSpec(train_examples=96).key() != ReasonerSpec().key()
    assert [r["completion"] for r in training_rows(ReasonerSpec(train_examples=96))] == [
        r["completion"] for r in training_rows(ReasonerSpec())[:96]
    ]  # the first N solutions of the full spec
    report_dir = tmp_path / "eval"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "procrl.launch.cli",
            "evaluate",
            "--recipe",
            str(RECIPE),
            "--model",
            str(out),
            "--split",
            "test",
            "--limit",
            "4",
            "--max-new-tokens",
            "32",
            "--output-dir",
            str(report_dir),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((report_dir / "report.json").read_text())["n"] == 4


def test_build_needs_an_output_dir_and_a_batch_of_examples(tmp_path, capsys):
    from procrl.launch.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["build-tiny-reasoner"])
    assert exit_info.value.code == 2 and "--output-dir" in capsys.readouterr().err
    assert main(["build-tiny-reasoner", "--output-dir", str(tmp_path / "r"), "--train-examples", "3"]) == 2
    assert "--train-examples: expected at least 8" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_reasoner_meets_its_held_out_targets(tmp_path):
    """The reasoner's contract, on 500 held-out problems, greedy: answer accuracy in [0.3, 0.8] and
    inflation (right answer, flagged step) >= 0.05; the reasoner writes its steps (>= 2 per
    completion on average), writes hedges and fillers that TRACE scores lower, and says something
    in its card about how it was built."""
    out = tmp_path / "eval"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "procrl.launch.cli",
            "evaluate",
            "--recipe",
            str(RECIPE),
            "--model",
            "procrl:tiny-reasoner",
            "--split",
            "test",
            "--limit",
            "500",
            "--batch-size",
            "50",
            "--output-dir",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["n"] == 500
    assert 0.3 <= report["answer_accuracy"] <= 0.8, report["answer_accuracy"]
    assert report["inflation"] >= 0.05, report["inflation"]
    assert report["reasoning_aware_accuracy"] < report["answer_accuracy"]
    assert report["behaviour"]["mean_steps"] >= 2.0
    # its writing habits reach greedy decoding, so TRACE has structure to tell apart: hedges
    # (Qualifier) and fillers (Monitoring) in some completions, a TRACE that is not one number
    trace = report["trace"]["trace"]
    assert trace["element_share"]["Qualifier"] > 0.02 and trace["element_share"]["Monitoring"] > 0.02, trace
    assert report["components"]["trace"]["std"] > 0.03 and sum(n > 0 for n in trace["score_histogram"]) >= 2
    from procrl.models.reasoner import shipped_card

    card = shipped_card()
    assert card["flawed_rows"] > 0 and card["parameters"] > 100_000 and card["build_seconds"] > 0
