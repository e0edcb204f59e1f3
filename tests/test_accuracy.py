"""Answer extraction and accuracy: 30+ formats, adversarial ones included; GSM8K references."""

from __future__ import annotations

import json

import pytest

from procrl.core.answers import extract_prediction, parse_gold, parse_number
from procrl.launch import cli
from procrl.rewards import RewardBatch
from procrl.rewards.accuracy import AccuracyReward
from procrl.rewards.format import FormatReward, has_answer_line, partial_format_score

# (completion, gold, expected score)
CASES = [
    ("#### 72", "72", 1.0),
    ("So she sold 72 clips.\n#### 72", "#### 72", 1.0),
    ("The answer is 72.", "72", 1.0),
    ("The answer is: 72", "72", 1.0),
    ("the final answer is 72", "72", 1.0),
    ("Therefore, the answer is \\boxed{72}.", "72", 1.0),
    ("\\boxed{72}", "72", 1.0),
    ("\\boxed{72.0}", "72", 1.0),
    ("#### 72.0", "72", 1.0),
    ("#### 72.00", "72", 1.0),
    ("The answer is $1,000.50.", "1000.5", 1.0),
    ("#### $1,000.50", "1000.50", 1.0),
    ("#### 1,000", "1000", 1.0),
    ("The answer is 1 000", "1", 1.0),  # a space is not a thousands separator: first number wins
    ("#### -3", "-3", 1.0),
    ("The answer is −3", "-3", 1.0),  # unicode minus
    ("\\boxed{-3}", "-3", 1.0),
    ("#### 3/4", "0.75", 1.0),
    ("\\boxed{\\frac{3}{4}}", "0.75", 1.0),
    ("\\boxed{\\dfrac{3}{4}}", "3/4", 1.0),
    ("\\boxed{-\\frac{1}{2}}", "-0.5", 1.0),
    ("The answer is 50%.", "50", 1.0),
    ("#### 18 dollars", "18", 1.0),
    ("The answer is 18 dollars per hour, which is nice.", "18", 1.0),
    ("He pays 5 + 7 = 12 dollars in total.", "12", 1.0),  # last number
    ("She had 3 apples, then 5, then 9", "9", 1.0),
    ("#### 5\nThe answer is 7", "5", 1.0),  # '####' wins over 'answer is'
    ("\\boxed{4} and later the answer is 9", "4", 1.0),  # boxed wins over 'answer is'
    ("\\boxed{1} then \\boxed{2}", "2", 1.0),  # last box
    ("The answer is 0.5", ".5", 1.0),
    ("#### 1e3", "1", 1.0),  # '1e3' is not scientific notation in GSM8K: the '1' is taken
    ("no number here", "72", 0.0),
    ("", "72", 0.0),
    ("   \n  ", "72", 0.0),
    ("#### 71", "72", 0.0),
    ("\\boxed{72", "72", 1.0),  # unbalanced box falls through to the last number
    ("\\boxed{}", "0", 0.0),
    ("The answer is 72.000001", "72", 1.0),  # within 1e-6
    ("The answer is 72.01", "72", 0.0),
    ("#### 100000000", "100,000,000", 1.0),
    ("I got 3 cats and 4 dogs. The answer is seven.", "7", 0.0),  # words are not parsed
]


@pytest.mark.parametrize("completion,gold,expected", CASES, ids=[repr(c[0])[:40] for c in CASES])
def test_accuracy_formats(completion, gold, expected):
    output = AccuracyReward().score(RewardBatch.from_texts([completion], golds=[gold]))
    assert output.scores == [expected]


def test_at_least_thirty_formats():
    assert len(CASES) >= 30


def test_no_gold_means_no_opinion():
    output = AccuracyReward().score(RewardBatch.from_texts(["#### 5"], golds=[None]))
    assert output.scores == [None]


@pytest.mark.parametrize(
    "text,value",
    [
        ("$1,000.50", 1000.5),
        ("-3", -3.0),
        ("3/4", 0.75),
        ("72.0", 72.0),
        ("\\frac{3}{4}", 0.75),
        ("50%", 50.0),
        ("abc", None),
        ("", None),
        (None, None),
        ("1/0", None),
    ],
)
def test_parse_number(text, value):
    assert parse_number(text) == value


def test_parse_gold_gsm8k_and_bare():
    assert parse_gold("step\n#### 1,234") == 1234.0
    assert parse_gold("42") == 42.0
    assert parse_gold(7) == 7.0
    assert parse_gold(None) is None


def test_extraction_rule_reported():
    assert extract_prediction("#### 3")[1] == "hashes"
    assert extract_prediction("\\boxed{3}")[1] == "boxed"
    assert extract_prediction("answer is 3")[1] == "answer_is"
    assert extract_prediction("3 apples")[1] == "last_number"
    assert extract_prediction("none")[1] == "none"


@pytest.mark.parametrize(
    "completion,strict,partial",
    [
        ("2 + 2 = 4\n#### 4", 1.0, 1.0),
        ("2 + 2 = 4\nThe answer is 4.", 1.0, 1.0),
        ("2 + 2 = 4\nSo the answer is \\boxed{4}", 1.0, 1.0),
        ("#### 4\nsome trailing chatter", 0.0, 0.5),
        ("2 + 2 = 4", 0.0, 0.25),
        ("no digits at all", 0.0, 0.0),
        ("####", 0.0, 0.5),
        ("", 0.0, 0.0),
    ],
)
def test_format_reward(completion, strict, partial):
    batch = RewardBatch.from_texts([completion])
    assert FormatReward().score(batch).scores == [strict]
    assert FormatReward(FormatReward.Settings(partial=True)).score(batch).scores == [partial]
    assert has_answer_line(completion) == (strict == 1.0)
    assert partial_format_score(completion) == partial


def test_score_gsm8k_references_reach_full_accuracy(gsm8k_train, tmp_path, tiny_recipe, capsys):
    rows = [json.loads(line) for line in gsm8k_train.read_text().splitlines() if line.strip()]
    source = tmp_path / "in.jsonl"
    source.write_text(
        "\n".join(
            json.dumps({"question": r["question"], "completion": r["answer"], "answer": r["answer"]}) for r in rows
        )
    )
    output = tmp_path / "out.jsonl"
    code = cli.main(
        [
            "score",
            "--recipe",
            str(tiny_recipe),
            "--input",
            str(source),
            "--output",
            str(output),
            "--quiet",
            "--batch-size",
            "512",
        ]
    )
    assert code == 0
    scored = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(scored) == len(rows) == 7473
    correct = sum(1 for r in scored if r["rewards"]["accuracy"] == 1.0)
    assert correct / len(scored) >= 0.995, correct / len(scored)
    first = scored[0]
    assert {"rewards", "reward", "steps", "diagnostics"} <= set(first)
    assert first["steps"] and all({"text", "start", "end"} <= set(s) for s in first["steps"])
    assert "accuracy" in capsys.readouterr().out
