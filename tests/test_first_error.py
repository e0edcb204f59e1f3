"""First-error reward: penalty formulas, verdict parsing, the safe arithmetic evaluator, the
arithmetic verifier on GSM8K train references and on perturbed copies, the component through
the reward mix, and ``procrl eval-judge``."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from procrl.data.perturb import build_processbench, perturb_solution, reference_steps
from procrl.evaluation.judge_eval import processbench_metrics, read_processbench, sweep_thresholds
from procrl.launch.cli import main
from procrl.rewards import RewardBatch, RewardMix, RewardOutput, parse_rewards
from procrl.rewards.first_error import (
    FirstErrorReward,
    build_prompt,
    first_error_penalty,
    first_error_step_scores,
    parse_verdict,
)
from procrl.rewards.judges import FAILURE_KINDS, JudgeItem
from procrl.rewards.judges.arithmetic import ArithmeticJudge
from procrl.rewards.judges.settings import OpenAISettings, PRMSettings
from procrl.rewards.quantities import (
    NotArithmeticError,
    check_step,
    evaluate,
    find_claims,
    first_wrong_step,
    values_match,
)

REPO = Path(__file__).resolve().parents[1]
TRAIN = REPO.parent / "shared" / "data" / "gsm8k" / "train.jsonl"


@pytest.fixture(scope="module")
def train_rows():
    if not TRAIN.is_file():
        pytest.skip(f"GSM8K train data not found at {TRAIN}")
    return [json.loads(line) for line in TRAIN.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- penalties ---------------------------------------------------------------------------------


def test_position_penalty_is_minus_remaining_fraction():
    assert first_error_penalty(0, 4, "position") == -1.0
    assert first_error_penalty(1, 4, "position") == -0.75
    assert first_error_penalty(3, 4, "position") == -0.25
    assert first_error_penalty(-1, 4, "position") == 0.0
    # the padding caveat: the same error after three restatement steps costs a quarter
    assert first_error_penalty(0, 1, "position") == -1.0 and first_error_penalty(3, 4, "position") == -0.25


def test_flat_and_correct_only_penalties():
    assert first_error_penalty(2, 5) == -1.0  # flat is the default: padding cannot shrink it
    assert first_error_penalty(0, 1) == first_error_penalty(3, 4) == -1.0
    assert first_error_penalty(2, 5, "flat") == -1.0
    assert first_error_penalty(-1, 5, "flat") == 0.0
    assert first_error_penalty(2, 5, "correct_only", answer_correct=True) == -1.0
    assert first_error_penalty(2, 5, "correct_only", answer_correct=False) == 0.0
    assert first_error_penalty(2, 5, "correct_only", answer_correct=None) is None


def test_penalty_rejects_bad_index():
    with pytest.raises(ValueError):
        first_error_penalty(4, 4)
    with pytest.raises(ValueError):
        first_error_penalty(-2, 4)
    with pytest.raises(ValueError):
        first_error_penalty(0, 0)


def test_dense_step_scores():
    assert first_error_step_scores(1, 4) == [0.0, -1.0, 0.0, 0.0]
    assert first_error_step_scores(-1, 3) == [0.0, 0.0, 0.0]


# --- prompt and verdicts -----------------------------------------------------------------------


def test_prompt_tags_steps_from_zero_and_shows_gold_only_in_reference_mode():
    prompt = build_prompt("How many?", ["First step.", "Second step."])
    assert "<step_0>\nFirst step.\n</step_0>" in prompt and "<step_1>\nSecond step.\n</step_1>" in prompt
    assert "\\boxed{-1}" in prompt and "Category:" not in prompt and "42" not in prompt
    with_gold = build_prompt("How many?", ["a"], gold="42", categories=True)
    assert "42" in with_gold and "Category: Misinterpretation" in with_gold


@pytest.mark.parametrize(
    "reply, index, status",
    [
        ("Step 1 is fine... wait, step 2 is wrong. \\boxed{2}", 2, "ok"),
        ("All good. \\boxed{-1}", -1, "ok"),
        ("First I thought \\boxed{0} but actually \\boxed{3}", 3, "ok"),  # the last box wins
        ("\\boxed{\\text{Step 1}}", 1, "ok"),
        ("\\boxed{ 0 }.", 0, "ok"),
        ("The earliest error is in step 2.", None, "no_verdict"),
        ("\\boxed{two}", None, "no_verdict"),
        ("\\boxed{2.5}", None, "no_verdict"),
        ("", None, "no_verdict"),
        (None, None, "no_verdict"),
        ("\\boxed{4}", None, "out_of_range"),
        ("\\boxed{-2}", None, "out_of_range"),
        # what real chat models put in the box (procrl/rewards/judges/prompt.py)
        ("The earliest wrong step in the solution is \\boxed{-1}.", -1, "ok"),  # SmolLM2-135M-Instruct, verbatim
        ("\\boxed{<step_2>}", 2, "ok"),  # the prompt's own step tag
        ("\\boxed{\\text{step } 2}", 2, "ok"),
        ("\\boxed{\\textbf{1}}", 1, "ok"),
        ("**Answer:** $\\boxed{\\mathbf{0}}$", 0, "ok"),
        ("\\boxed{{2}}", 2, "ok"),
        ("\\boxed{step_{3}}", 3, "ok"),
        ("\\boxed{\\#1}", 1, "ok"),
        ("\\boxed{1, 2}", None, "no_verdict"),
        ("\\boxed{2/3}", None, "no_verdict"),
        # a reply that only repeats the instructions gave no verdict: never read as -1 (no error)
        (
            "Explain your checking briefly, then give the index of the earliest wrong step in \\boxed{}, for example "
            "\\boxed{2}. If every step is correct, give \\boxed{-1}.",
            None,
            "no_verdict",
        ),
        ("for example \\boxed{2}. If every step is correct, give \\boxed{-1}. Step 1 is wrong: \\boxed{1}", 1, "ok"),
    ],
)
def test_parse_verdict(reply, index, status):
    parsed = parse_verdict(reply, num_steps=4)
    assert (parsed.index, parsed.status) == (index, status)


def test_parse_category():
    assert parse_verdict("\\boxed{1}\nCategory: Hallucination", 3).category == "Hallucination"
    assert parse_verdict("\\boxed{1}\n**Category:** reasoning", 3).category == "Reasoning"
    assert parse_verdict("\\boxed{1}", 3).category is None
    assert parse_verdict("\\boxed{-1}\nCategory: Reasoning", 3).category is None  # no error, no category


# --- safe evaluator ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression, value",
    [
        ("48/2", 24),
        ("0.2 x 50", 10),
        ("3 × 4 + 1", 13),
        ("12 ÷ 4", 3),
        ("$1,200 - $200", 1000),
        ("50% * 80", 40),
        ("(3+4)*2", 14),
        ("2(3+4)", 14),
        ("-5 + 3", -2),
        (".25*100", 25),
        ("2^3", 8),
    ],
)
def test_evaluate(expression, value):
    assert evaluate(expression) == pytest.approx(value)


@pytest.mark.parametrize(
    "expression",
    ["__import__('os').system('true')", "a + b", "2 ** 1000", "9**9**9", "1/0", "3 4", "", "1" * 300, "len([1])"],
)
def test_evaluate_refuses_non_arithmetic(expression):
    with pytest.raises(NotArithmeticError):
        evaluate(expression)


@pytest.mark.parametrize(
    "computed, written, ok",
    [
        (10 / 3, "3.33", True),
        (10 / 3, "3.3", True),
        (2 / 3, "0.67", True),
        (2 / 3, "0.66", True),
        (10 / 3, "3.4", False),
        (3.5, "3", False),
        (-2 / 3, "-0.67", True),
        (24.0, "24", True),
        (24.0, "25", False),
    ],
)
def test_values_match_allows_only_the_written_rounding(computed, written, ok):
    assert values_match(computed, float(written), written) is ok


def test_claims_in_a_step():
    assert check_step("Natalia sold 48/2 = <<48/2=24>>24 clips in May.") == []
    wrong = check_step("Natalia sold 48/2 = <<48/2=25>>25 clips in May.")
    assert {c.kind for c in wrong} == {"annotation", "equation"}
    assert check_step("She earned 0.2 x 50 = $10.") == []
    assert [c.right for c in check_step("She earned 0.2 x 50 = $12.")] == ["$12"]
    assert check_step("So 3*2 = 6*4 = 24 pages.") == []  # a chain: each '=' states its own result
    assert check_step("That is 10/3 = 3.33 each, and 2/3 = 0.67.") == []  # rounding as written
    assert check_step("10/50*100 = 20% of them.") == []
    assert len(check_step("He has 7 + 5 = 13 apples.")) == 1
    assert len(check_step("The total is 1,200 + 300 = 1,500 dollars.")) == 0
    assert len(check_step("The total is 1,200 + 300 = 1,600 dollars.")) == 1


def test_latex_and_markdown_equations():
    assert check_step("So $3 \\times 4 = 12$ apples.") == []
    assert len(check_step("So $3 \\times 4 = 13$ apples.")) == 1
    assert check_step("\\(6 \\div 2 = 3\\) and \\[ 12 \\cdot 3 = 36 \\]") == []
    assert len(check_step("\\(6 \\div 2 = 4\\)")) == 1
    assert check_step("It is **2 * 5 = 10** dollars") == []
    assert len(check_step("It is **2 * 5 = 11** dollars")) == 1
    assert check_step("so 2**3 = 8") == [] and len(check_step("so 2**3 = 9")) == 1


def test_statements_that_are_not_calculations_are_skipped():
    for text in [
        "1 hour = 60 minutes",
        "Let x = 5 apples",
        "2x + 3 = 7",
        "15% of $80 = (15/100)*$80 = $12",
        "There are 60 minutes x 3/4 = 45 minutes",
        "Step 2 = the hard part",
        "a = b + c",
    ]:
        assert check_step(text) == [], text
    assert find_claims("no numbers here") == []


def test_first_wrong_step():
    assert first_wrong_step(["2 + 2 = 4", "4 * 3 = 12", "12 - 1 = 11"]) == -1
    assert first_wrong_step(["2 + 2 = 4", "4 * 3 = 13", "13 - 1 = 11"]) == 1


# --- GSM8K references and perturbations ----------------------------------------------------------


def test_verifier_accepts_at_least_99_percent_of_train_references(train_rows):
    judge = ArithmeticJudge()
    items = [JudgeItem(r["question"], tuple(reference_steps(r["answer"])[0])) for r in train_rows]
    verdicts = judge.judge_sync(items)
    accepted = sum(v.index == -1 for v in verdicts) / len(verdicts)
    assert len(verdicts) == 7473
    assert accepted >= 0.99, accepted


def test_perturbation_changes_one_result_in_step_j(train_rows):
    rng = random.Random(0)
    answer = train_rows[0]["answer"]  # Natalia: 48/2 = <<48/2=24>>24 ; 48+24 = <<48+24=72>>72
    original, _ = reference_steps(answer)
    steps, j = perturb_solution(answer, rng)
    assert len(steps) == len(original)
    assert [i for i, (a, b) in enumerate(zip(original, steps)) if a != b] == [j]
    assert perturb_solution("No calculations here.\n#### 3", rng) is None


def test_verifier_finds_the_changed_step_in_at_least_95_percent_of_200_perturbations(train_rows):
    records = build_processbench(train_rows, num_errors=200, num_correct=0, seed=0)
    assert len(records) == 200 and all(r["label"] >= 0 for r in records)
    hits = sum(first_wrong_step(r["steps"]) == r["label"] for r in records)
    assert hits / 200 >= 0.95, hits


# --- the component ---------------------------------------------------------------------------


def _mix(**settings):
    return RewardMix(parse_rewards({"first_error": {"backend": "arithmetic", **settings}}))


def test_component_scores_through_the_mix_with_steps_of_the_shared_segmentation():
    completions = [
        "Step 1: 3 + 4 = 7 apples.\nStep 2: 7 * 2 = 14 apples.\n#### 14",
        "3 + 4 = 8 apples.\n8 * 2 = 16 apples.\nSo 16 - 1 = 15.\n#### 15",
        "First 3 + 4 = 7.\nThen 7 * 2 = 15.\n#### 15",
        "#### 14",  # no reasoning steps
    ]
    mix = _mix()
    batch = RewardBatch.from_texts(completions, ["q"] * 4, ["14"] * 4)
    output = mix.compute("first_error", batch)
    assert output.scores == [0.0, -1.0, -1.0, -1.0]  # flat; no steps: no_steps_score -1
    assert output.step_scores == [[0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, -1.0], []]
    assert _mix(penalty="position").compute("first_error", batch).scores == [0.0, -1.0, -0.5, -1.0]
    for i, steps in enumerate(output.step_scores[:3]):
        assert len(steps) == len(batch.segmentations[i].steps)
    assert [d["index"] for d in output.details] == [-1, 0, 1, None]
    assert [d["num_steps"] for d in output.details] == [2, 3, 2, 0]
    assert output.details[3]["verdict"] == "no_steps"
    assert set(output.failures) >= set(FAILURE_KINDS)  # every kind reported, zeros included
    assert output.failures["no_steps"] == 1 and sum(output.failures.values()) == 1
    assert output.metrics["error_found_fraction"] == pytest.approx(2 / 3)
    assert output.metrics["mean_relative_position"] == pytest.approx((0 / 3 + 1 / 2) / 2)
    assert [d["checked_steps"] for d in output.details] == [2, 3, 2, 0]
    assert output.metrics["no_steps_fraction"] == 0.25 and output.metrics["failed_fraction"] == 0.0


def test_no_steps_and_unverified_scores_are_defined_and_configurable():
    hedging = "I think the answer could be this.\nIt might be right, but I am not sure.\nProbably.\n#### 14"
    prose = "She buys some apples and then some more.\nThat makes the total.\n#### 14"
    checked = "She buys 3 + 4 = 7 apples.\nThen she doubles them.\n#### 14"  # one checkable step is enough
    batch = RewardBatch.from_texts(["#### 14", hedging, prose, checked], ["q"] * 4, ["14"] * 4)
    output = _mix().compute("first_error", batch)
    assert output.scores == [-1.0, -1.0, -1.0, 0.0]
    assert [d["verdict"] for d in output.details] == ["no_steps", "unverified", "unverified", "ok"]
    assert [d["checked_steps"] for d in output.details] == [0, 0, 0, 1]
    assert [d["index"] for d in output.details] == [None, None, None, -1]
    # unverified: the score sits on the last step (dense credit sees it), no steps: no step scores
    assert output.step_scores == [[], [0.0, 0.0, -1.0], [0.0, -1.0], [0.0, 0.0]]
    assert output.metrics["unverified_fraction"] == 0.5 and output.failures["no_steps"] == 1
    custom = _mix(no_steps_score=-0.5, unverified_score=-0.25).compute("first_error", batch)
    assert custom.scores == [-0.5, -0.25, -0.25, 0.0]
    # correct_only: the scores apply to right answers only (accuracy already prices wrong ones)
    wrong = RewardBatch.from_texts(["#### 14", hedging], ["q"] * 2, ["15"] * 2)
    assert _mix(penalty="correct_only").compute("first_error", wrong).scores == [0.0, 0.0]
    assert _mix(penalty="correct_only").compute("first_error", batch).scores == [-1.0, -1.0, -1.0, 0.0]


def test_scores_of_no_opinion_must_not_beat_checked_and_correct():
    from procrl.core.config import ConfigError

    for key in ("no_steps_score", "unverified_score"):
        with pytest.raises(ConfigError, match=rf"rewards\.first_error\.{key}: must be <= 0"):
            parse_rewards({"first_error": {key: 0.5}})


def test_hand_written_worked_slip_answer_hedging_padding_cases():
    """docs/spec.md's integrity rule on one problem: W (worked), S (one slipped calculation, final
    answer kept), P (S after three restatement steps), A (answer alone), H (hedging)."""
    worked = "She sold 48 / 2 = 24 clips in May.\nAltogether she sold 48 + 24 = 72 clips.\n#### 72"
    slip = "She sold 48 / 2 = 26 clips in May.\nAltogether she sold 48 + 24 = 72 clips.\n#### 72"
    padded = "Let us restate the problem.\nWe know what she sold in April.\nWe need the total.\n" + slip
    hedging = "I think the answer is probably this.\nIt seems about right.\nI am fairly sure.\n#### 72"
    batch = RewardBatch.from_texts([worked, slip, padded, "#### 72", hedging], ["q"] * 5, ["72"] * 5)
    for penalty in ("flat", "correct_only"):
        w, s, p, a, h = _mix(penalty=penalty).compute("first_error", batch).scores
        assert w == 0.0 and w > s and w > a and w > h and p <= s, (penalty, w, s, p, a, h)
    w, s, p, a, h = _mix(penalty="position").compute("first_error", batch).scores
    assert w > s and w > a and w > h
    assert p > s  # the documented caveat of `position`: padding shrinks it (-0.4 vs -1)


def test_judge_failures_get_the_group_mean_by_default():
    from procrl.rewards.fallback import GROUP_MEAN

    mix = _mix()
    assert mix.specs["first_error"].fallback == GROUP_MEAN
    outputs = {"first_error": RewardOutput(scores=[0.0, -1.0, None, -1.0, None, None])}
    resolved, results = mix.resolve(outputs, groups=[0, 0, 0, 1, 1, 2])
    # group 0: mean(0, -1) = -0.5; group 1: -1; group 2 has no score: the batch mean (-2/3)
    assert resolved["first_error"].scores == pytest.approx([0.0, -1.0, -0.5, -1.0, -1.0, -2 / 3])
    assert (results["first_error"].from_group, results["first_error"].from_batch) == (2, 1)
    numeric = RewardMix(parse_rewards({"first_error": {"fallback": -0.5}}))
    assert numeric.resolve(outputs, groups=[0, 0, 0, 1, 1, 2])[0]["first_error"].scores == [
        0.0,
        -1.0,
        -0.5,
        -1.0,
        -0.5,
        -0.5,
    ]


def test_reference_shows_the_gold_final_answer_by_default():
    from procrl.rewards.first_error import reference_text

    gold = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n#### 72"
    assert reference_text(gold, False) is None
    assert reference_text(gold, True) == reference_text(gold, "answer") == "72"
    assert reference_text(gold, "solution") == gold
    assert reference_text("72", "answer") == "72" and reference_text(None, "answer") is None
    component = FirstErrorReward(OpenAISettings(model="judge", reference="answer"))
    assert component.make_item("q", ("a",), gold).gold == "72"
    prompt = build_prompt("q", ["a"], component.make_item("q", ("a",), gold).gold)
    assert "Correct final answer (for your reference): 72" in prompt and "<<" not in prompt


def test_flat_and_correct_only_in_the_component():
    wrong_reasoning_right_answer = "3 + 4 = 8.\nSo 7 * 2 = 14.\n#### 14"
    wrong_reasoning_wrong_answer = "3 + 4 = 8.\nSo 8 * 2 = 16.\n#### 16"
    batch = RewardBatch.from_texts([wrong_reasoning_right_answer, wrong_reasoning_wrong_answer], golds=["14", "14"])
    assert _mix(penalty="flat").compute("first_error", batch).scores == [-1.0, -1.0]
    output = _mix(penalty="correct_only").compute("first_error", batch)
    assert output.scores == [-1.0, 0.0]
    assert output.step_scores == [[-1.0, 0.0], [0.0, 0.0]]
    no_gold = RewardBatch.from_texts([wrong_reasoning_right_answer])
    assert _mix(penalty="correct_only").compute("first_error", no_gold).scores == [None]


def test_component_on_gsm8k_references_via_segmentation(train_rows):
    rows = train_rows[:300]
    batch = RewardBatch.from_texts(
        [r["answer"] for r in rows], [r["question"] for r in rows], [r["answer"] for r in rows]
    )
    output = _mix().compute("first_error", batch)
    # 292 of these 300 references score 0 (checked, no error). 5 solve by algebra ("Let p be
    # ...", "4 * x + 600 = 10000"): nothing the verifier can check, so unverified (-1) like any
    # chain it cannot check (over all 7,473 train references: 98.5% verified, 1.0% unverified,
    # 0.5% with a flagged calculation). The rest: calculations the verifier flags.
    assert sum(score == 0.0 for score in output.scores) >= 0.97 * len(rows)
    unverified = [d for d in output.details if d["verdict"] == "unverified"]
    assert len(unverified) <= 0.02 * len(rows) and all(d["checked_steps"] == 0 for d in unverified)
    assert all(s == 0.0 or s == -1.0 for s in output.scores)


def test_settings_validation_and_needs_model():
    from procrl.core.config import ConfigError

    with pytest.raises(ConfigError, match="model"):
        parse_rewards({"first_error": {"backend": "openai"}})
    with pytest.raises(ConfigError, match="penalty"):
        parse_rewards({"first_error": {"penalty": "linear"}})
    with pytest.raises(ConfigError, match="NAME of an environment variable"):
        parse_rewards({"first_error": {"backend": "openai", "model": "m", "api_key_env": "sk-abc123-secret"}})
    with pytest.raises(ConfigError, match="threshold"):
        parse_rewards({"first_error": {"backend": "prm", "model": "m", "threshold": 1.5}})
    assert FirstErrorReward(PRMSettings(model="Qwen/Qwen2.5-Math-PRM-7B")).needs_model() == "Qwen/Qwen2.5-Math-PRM-7B"
    assert FirstErrorReward(OpenAISettings(model="judge")).needs_model() is None
    assert FirstErrorReward().needs_model() is None


# --- meta-evaluation -----------------------------------------------------------------------------


def test_processbench_metrics():
    labels = [-1, -1, -1, -1, 0, 1, 2, 5]
    predictions = [-1, -1, 2, None, 0, 0, -1, 5]
    metrics = processbench_metrics(labels, predictions)
    assert metrics["acc_cor"] == 0.5 and metrics["acc_err"] == 0.5
    assert metrics["f1"] == pytest.approx(0.5)
    assert metrics["no_verdict"] == 1 and metrics["n"] == 8
    by_label = metrics["confusion"]["error_by_label"]
    assert by_label["1"]["early"] == 1 and by_label["2"]["missed"] == 1 and by_label["4+"]["exact"] == 1
    assert metrics["confusion"]["all_correct"] == {"n": 4, "correct": 2, "false_alarm": 1, "no_verdict": 1}
    lopsided = processbench_metrics([-1, 0], [-1, -1])
    assert lopsided["f1"] == 0.0


def test_threshold_sweep_finds_the_separating_threshold():
    labels = [-1, -1, 1, 0]
    probabilities = [[0.9, 0.8], [0.7, 0.9], [0.9, 0.4], [0.3, 0.9]]
    sweep = sweep_thresholds(labels, probabilities, thresholds=[0.2, 0.5, 0.75, 0.95])
    assert sweep["best"]["threshold"] == 0.5 and sweep["best"]["f1"] == 1.0
    assert [round(r["f1"], 3) for r in sweep["thresholds"]] == [0.0, 1.0, 0.667, 0.0]


def test_read_processbench_rejects_bad_records(tmp_path):
    from procrl.core.config import ConfigError

    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"problem": "p", "steps": ["a", "b"], "label": 2}) + "\n")
    with pytest.raises(ConfigError, match="label"):
        read_processbench(path)
    path.write_text(json.dumps([{"problem": "p", "steps": ["a"], "label": -1}]))
    assert read_processbench(path)[0]["label"] == -1


def test_eval_judge_cli_on_perturbed_gsm8k(tmp_path, capsys, train_rows):
    data = tmp_path / "processbench.jsonl"
    records = build_processbench(train_rows, num_errors=100, num_correct=100, seed=1)
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    code = main(
        [
            "eval-judge",
            "--recipe",
            str(REPO / "recipes" / "gsm8k_judge.yaml"),
            "--set",
            "rewards.first_error.backend=arithmetic",
            "--data",
            str(data),
            "--json",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == 200 and report["no_verdict"] == 0
    for key in ("f1", "acc_err", "acc_cor"):
        assert 0.95 <= report[key] <= 1.0, (key, report[key])
    assert math.isclose(
        report["f1"], 2 * report["acc_err"] * report["acc_cor"] / (report["acc_err"] + report["acc_cor"])
    )
    code = main(
        [
            "eval-judge",
            "--recipe",
            str(REPO / "recipes" / "gsm8k_judge.yaml"),
            "--set",
            "rewards.first_error.backend=arithmetic",
            "--data",
            str(data),
            "--limit",
            "20",
        ]
    )
    assert code == 0
    table = capsys.readouterr().out
    assert "acc_err" in table and "F1" in table and "samples: 20" in table


def test_eval_judge_needs_only_the_judge(tmp_path, capsys):
    """A recipe holding just a first_error component (no model, no trainer) meta-evaluates."""
    recipe = tmp_path / "judge_only.yaml"
    recipe.write_text("recipe: procrl/v1\nrewards:\n  first_error: {backend: arithmetic}\n")
    data = tmp_path / "pb.jsonl"
    data.write_text(
        json.dumps({"problem": "2 apples and 3 apples?", "steps": ["2 + 3 = 6 apples."], "label": 0}) + "\n"
    )
    assert main(["eval-judge", "--recipe", str(recipe), "--data", str(data), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["acc_err"] == 1.0


def test_eval_judge_cli_errors(tmp_path, capsys):
    recipe = str(REPO / "recipes" / "gsm8k_judge.yaml")
    assert main(["eval-judge", "--recipe", recipe, "--data", str(tmp_path / "missing.jsonl")]) == 2
    assert "not found" in capsys.readouterr().err
    assert main(["eval-judge", "--recipe", recipe, "--component", "accuracy", "--data", str(tmp_path / "x")]) == 2


def test_judge_recipe_checks_without_network_for_every_backend():
    recipe = str(REPO / "recipes" / "gsm8k_judge.yaml")
    assert main(["check", recipe, "--set", "rewards.first_error.backend=arithmetic"]) == 0
    assert (
        main(
            [
                "check",
                recipe,
                "--set",
                "rewards.first_error.backend=prm",
                "--set",
                "rewards.first_error.model=Qwen/Qwen2.5-Math-PRM-7B",
                "--set",
                "rewards.first_error.trust_remote_code=true",
            ]
        )
        == 0
    )
