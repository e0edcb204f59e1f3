"""procrl:tiny-reasoner: its training data (fast) and its held-out targets (slow: builds the
reasoner once per cache, ~7 minutes on 2 cores; every later test reuses the cached build)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from procrl.core.arithmetic import first_wrong_step
from procrl.data.synthetic import HELD_OUT_SPLITS, generate_split
from procrl.models.reasoner import HELD_OUT_EXAMPLES, ReasonerSpec, training_rows

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
    for row in rows[:300]:  # the flaws are what they claim, by the arithmetic judge's own check
        steps, answer = row["completion"].split("\n")[:-1], row["completion"].rsplit("#### ", 1)[1]
        assert (first_wrong_step(steps) >= 0) == (row["slip"] is not None)
    held_out = {p["question"] for split in HELD_OUT_SPLITS for p in generate_split(split, HELD_OUT_EXAMPLES, 0)}
    assert not held_out & {r["prompt"] for r in rows}


def test_spec_changes_change_the_cache_key():
    assert ReasonerSpec().key() == ReasonerSpec().key()
    assert ReasonerSpec().key() != ReasonerSpec(train_examples=100).key()


@pytest.mark.slow
def test_reasoner_meets_its_held_out_targets(tmp_path):
    """The issue's contract, on 500 held-out problems, greedy: answer accuracy in [0.3, 0.8] and
    inflation (right answer, flagged step) >= 0.05; the reasoner writes its steps (>= 2 per
    completion on average) and says something in its card about how it was built."""
    out = tmp_path / "eval"
    result = subprocess.run([sys.executable, "-m", "procrl.cli", "evaluate", "--recipe", str(RECIPE), "--model",
                             "procrl:tiny-reasoner", "--split", "test", "--limit", "500", "--batch-size", "50",
                             "--output-dir", str(out)], cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["n"] == 500
    assert 0.3 <= report["answer_accuracy"] <= 0.8, report["answer_accuracy"]
    assert report["inflation"] >= 0.05, report["inflation"]
    assert report["reasoning_aware_accuracy"] < report["answer_accuracy"]
    assert report["behaviour"]["mean_steps"] >= 2.0
    from procrl.models.reasoner import ensure_tiny_reasoner

    card = json.loads((ensure_tiny_reasoner() / "reasoner_card.json").read_text())
    assert card["flawed_rows"] > 0 and card["parameters"] > 100_000 and card["build_seconds"] > 0
