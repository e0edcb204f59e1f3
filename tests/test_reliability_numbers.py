"""Numbers stay exact where they are integers, whatever their length, and a number too long for
Python's int-string limit is a one-line error, never a traceback (docs/reliability.md#bounded)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from procrl.core.answers import answers_match, extract_prediction, parse_gold, parse_number
from procrl.rewards import RewardBatch
from procrl.rewards.accuracy import AccuracyReward
from tests.helpers.cli import ONE_STEP, assert_one_line_error, cli
from tests.helpers.launch import TINY_RECIPE

TWENTY_DIGITS = "12345678901234567890"
FOUR_HUNDRED_ONE = "7" * 401
LONGER_THAN_PYTHON_READS = "9" * 5001  # sys.get_int_max_str_digits() is 4,300 by default
ACCURACY_ONLY = ["--set", "rewards.format=false", "--set", "rewards.trace=false"]


def accuracy(completion: str, gold) -> float | None:
    return AccuracyReward().score(RewardBatch.from_texts([completion], golds=[gold])).scores[0]


@pytest.mark.parametrize(
    "completion, gold, expected",
    [
        (f"#### {2**53 + 1}", str(2**53), 0.0),  # equal as floats
        (f"#### {2**53 + 1}", str(2**53 + 1), 1.0),
        (f"The answer is {TWENTY_DIGITS[:-1]}1.", TWENTY_DIGITS, 0.0),
        (f"The answer is {TWENTY_DIGITS}.", TWENTY_DIGITS, 1.0),
        (f"#### {FOUR_HUNDRED_ONE}", FOUR_HUNDRED_ONE, 1.0),  # its float is inf
        (f"#### {FOUR_HUNDRED_ONE[:-1]}8", FOUR_HUNDRED_ONE, 0.0),
        (f"\\boxed{{{LONGER_THAN_PYTHON_READS}}}", f"#### {LONGER_THAN_PYTHON_READS}", 1.0),
        (f"#### {LONGER_THAN_PYTHON_READS[:-1]}8", LONGER_THAN_PYTHON_READS, 0.0),
        (f"#### {2**53 + 1}", 2**53, 0.0),  # a numeric gold (a JSON number) is exact too
        (f"#### {2**53 + 1}", 2**53 + 1, 1.0),
        (f"#### -{2**53 + 1}", f"-{2**53 + 1}", 1.0),
        (f"#### {TWENTY_DIGITS}.5", f"{TWENTY_DIGITS}.5", 1.0),
        (f"#### {TWENTY_DIGITS}.5", f"{TWENTY_DIGITS}.6", 0.0),
    ],
)
def test_integers_compare_exactly_whatever_their_length(completion, gold, expected):
    assert accuracy(completion, gold) == expected


def test_the_usual_comparison_is_unchanged():
    assert answers_match(parse_number("72.000001"), parse_gold("72"))  # within 1e-6
    assert not answers_match(parse_number("72.01"), parse_gold("72"))
    assert answers_match(parse_number("3/4"), parse_gold("0.75")) and answers_match(parse_number("\\frac{3}{4}"), 0.75)
    assert answers_match(0.1 + 0.2, 0.3) and answers_match(72.0, 72) and not answers_match(None, 72)
    assert answers_match(parse_number("1/3"), 0.333333) and not answers_match(parse_number("1/3"), 0.33333)
    assert answers_match(parse_number("-\\frac{1}{2}"), -0.5)
    value = parse_number("$1,000.50")
    assert value == 1000.5 and json.dumps(value) == "1000.5" and pickle.loads(pickle.dumps(value)).exact == value.exact
    assert parse_number("1/0") is None and parse_gold(float("inf")) is None


def test_majority_votes_keep_long_integers_apart():
    from procrl.observe.eval_metrics import SampleOutcome, majority_answer, summarize

    near = [parse_number(str(2**53 + 1)), parse_number(str(2**53)), parse_number(str(2**53 + 1))]
    assert majority_answer(near).exact == 2**53 + 1
    outcomes = [SampleOutcome(problem=0, correct=None, verdict=None, answer=a) for a in near]
    assert summarize(outcomes, judged=False, golds=[parse_gold(str(2**53))])["maj@3"] == 0.0
    long = [
        SampleOutcome(problem=0, correct=None, verdict=None, answer=extract_prediction(f"#### {FOUR_HUNDRED_ONE}")[0])
    ]
    assert summarize(long, judged=False, golds=[parse_gold(FOUR_HUNDRED_ONE)])["maj@1"] == 1.0  # inf as a float


def test_a_negative_or_infinite_tolerance_is_refused_at_validation(tmp_path, capsys):
    out = tmp_path / "run"
    for bad, words in (("-1", (">= 0", "got -1")), ("-1.0e-9", (">= 0",)), (".inf", ("finite",)), (".nan", ())):
        for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
            assert_one_line_error(
                cli(capsys, *argv, "--set", f"rewards.accuracy.tolerance={bad}"), "rewards.accuracy.tolerance", *words
            )
    assert not out.exists()
    assert cli(capsys, "check", TINY_RECIPE, "--set", "rewards.accuracy.tolerance=0").code == 0


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_score_reads_integers_of_any_length_exactly(tmp_path, capsys):
    rows = [
        {"completion": f"#### {2**53 + 1}", "answer": str(2**53)},
        {"completion": f"#### {TWENTY_DIGITS[:-1]}1", "answer": TWENTY_DIGITS},
        {"completion": f"#### {FOUR_HUNDRED_ONE}", "answer": FOUR_HUNDRED_ONE},
        {"completion": f"#### {LONGER_THAN_PYTHON_READS}", "answer": LONGER_THAN_PYTHON_READS},
    ]
    source = write_lines(
        tmp_path / "in.jsonl",
        [json.dumps(r) for r in rows] + [f'{{"completion": "#### {2**53 + 1}", "answer": {2**53 + 1}}}'],
    )  # a JSON number gold
    out = tmp_path / "out.jsonl"
    result = cli(
        capsys, "score", "--recipe", TINY_RECIPE, *ACCURACY_ONLY, "--input", source, "--output", out, "--quiet"
    )
    assert result.code == 0, result.err[-2000:]
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["rewards"]["accuracy"] for row in scored] == [0.0, 0.0, 1.0, 1.0, 1.0]
    reported = [row["diagnostics"]["accuracy"] for row in scored]  # as exact as the comparison
    assert (reported[0]["predicted"], reported[0]["gold"]) == (2**53 + 1, 2**53)
    assert reported[2]["predicted"] == int(FOUR_HUNDRED_ONE)
    assert reported[3]["predicted"] == reported[3]["gold"] == LONGER_THAN_PYTHON_READS  # as digits: too long for int


def test_a_json_integer_past_pythons_limit_is_a_one_line_error_in_score_and_check(tmp_path, capsys):
    row = f'{{"completion": "#### 5", "answer": {LONGER_THAN_PYTHON_READS}}}'
    for name, lines in (
        ("lines.jsonl", ['{"completion": "#### 4", "answer": "4"}', row]),
        ("array.json", ["[", '{"completion": "#### 4", "answer": "4"},', row, "]"]),
    ):
        source = write_lines(tmp_path / name, lines)
        out = tmp_path / "out.jsonl"
        result = cli(capsys, "score", "--recipe", TINY_RECIPE, "--input", source, "--output", out, "--quiet")
        assert_one_line_error(result, f"{source}:", "5,001 digits", "give it as a string")
        assert not out.exists()
    data = write_lines(
        tmp_path / "train.jsonl",
        [
            '{"question": "How many?", "answer": "#### 4"}',
            f'{{"question": "How many more?", "answer": {LONGER_THAN_PYTHON_READS}}}',
        ],
    )
    assert_one_line_error(
        cli(capsys, "check", TINY_RECIPE, "--set", f"data.dataset={data}"),
        f"{data}:2",
        "5,001 digits",
        "give it as a string",
    )


def test_training_data_integers_that_datasets_would_round_are_refused(tmp_path, capsys):
    """datasets reads a JSON number column as 64-bit: 2**53 + 1 would train against 2**53, and a
    401-digit one against inf; as text it stays exact."""
    rounded = write_lines(
        tmp_path / "rounded.jsonl",
        ['{"question": "How many?", "answer": 4}', f'{{"question": "How many more?", "answer": {2**53 + 1}}}'],
    )
    assert_one_line_error(
        cli(capsys, "check", TINY_RECIPE, "--set", f"data.dataset={rounded}"),
        f"{rounded}:2",
        "16 digits",
        "give it as a string",
    )
    as_text = write_lines(
        tmp_path / "text.jsonl",
        [
            '{"question": "How many?", "answer": 4}',
            f'{{"question": "How many more?", "answer": "{LONGER_THAN_PYTHON_READS}"}}',
        ],
    )
    result = cli(capsys, "check", TINY_RECIPE, "--set", f"data.dataset={as_text}")
    assert result.code == 0 and "Traceback" not in result.err, result.err[-2000:]


# --- an answer is its whole expression ----------------------------------------------------------------


@pytest.mark.parametrize(
    "completion, gold, expected",
    [
        ("So 2 to the 10th is \\boxed{2^{10}}", "1024", 1.0),
        ("So 2 to the 10th is \\boxed{2^{10}}", "2", 0.0),  # never the prefix 2
        ("#### 2^10", "2", 0.0),
        ("#### 2^10", "1024", 1.0),
        ("\\boxed{(-2)^{2}}", "-2", 0.0),
        ("\\boxed{(-2)^{2}}", "4", 1.0),
        ("#### 3 * 10^3 apples", "3000", 1.0),
        ("#### 2**5", "32", 1.0),
        ("\\boxed{2^{-2}}", "0.25", 1.0),
        ("\\boxed{3 \\times 10^{3}}", "3000", 1.0),  # read right before: unchanged
        ("\\boxed{\\sqrt{16}}", "4", 1.0),
        ("5^2 = 25, so the answer is 25.", "25", 1.0),
    ],
)
def test_an_answer_with_a_power_is_read_as_its_whole_expression(completion, gold, expected):
    assert accuracy(completion, gold) == expected


def test_a_power_too_long_to_compute_is_no_answer_rather_than_its_base():
    """2^{10^9} is not computed (its value has 300 million digits): no number, not 2."""
    value, rule = extract_prediction("#### 2^1000000000")
    assert value is None or value != 2, (value, rule)
    assert parse_number("2^{1000000000}") is None


def test_a_json_number_past_floats_range_is_a_one_line_error_in_score_check_and_train(tmp_path, capsys):
    """1e309 is inf as a float: no answer can be compared with it. Training data holding it was
    accepted by check and ended train with a traceback after the model had loaded."""
    data = write_lines(
        tmp_path / "train.jsonl",
        ['{"question": "How many?", "answer": 4}', '{"question": "How many more?", "answer": 1e309}'],
    )
    assert_one_line_error(
        cli(capsys, "check", TINY_RECIPE, "--set", f"data.dataset={data}"), f"{data}:2", "1e309", "give it as a string"
    )
    result = cli(
        capsys, "train", TINY_RECIPE, "--output-dir", tmp_path / "run", *ONE_STEP, "--set", f"data.dataset={data}"
    )
    assert_one_line_error(result, f"{data}:2", "1e309")
    rows = write_lines(tmp_path / "rows.jsonl", ['{"completion": "#### 4", "answer": 1e309}'])
    result = cli(capsys, "score", "--recipe", TINY_RECIPE, "--input", rows, "--output", tmp_path / "o.jsonl", "--quiet")
    assert_one_line_error(result, f"{rows}:1", "1e309")
