"""Multiple-choice and yes/no answers: reading them from the endings real models write, the answer
block per kind, and accuracy / format on such rows (procrl/core/choices.py)."""

import pytest

from procrl.core.choices import (
    AnswerSpec,
    answer_block_start,
    answer_correct,
    answer_spec,
    format_options,
    gold_answer,
    gold_text,
    normalize_choices,
    predict_choice,
    predict_yes_no,
)
from procrl.core.text import segment_batch
from procrl.rewards import RewardBatch
from procrl.rewards.accuracy import AccuracyReward
from procrl.rewards.format import FormatReward

CSQA = {"label": ["A", "B", "C", "D", "E"], "text": ["ocean", "nightstand", "freezer", "volcano", "mailbox"]}
SPEC = AnswerSpec("choice", normalize_choices(CSQA))
REASONING = (
    "A book to read tonight should be close to the bed.\n"
    "A nightstand stands next to the bed, so the book is within reach.\n"
)


# --- one test per ending -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ending, rule",
    [
        ("So the answer is (B).", "answer_is"),
        ("The answer is (B)", "answer_is"),
        ("Answer: B", "answer_is"),
        ("**Answer: B**", "answer_is"),
        ("The final answer is B) nightstand.", "answer_is"),
        ("The answer is nightstand.", "answer_is"),
        ("**B**", "final_line"),
        ("**(B) nightstand**", "final_line"),
        ("(B) nightstand", "final_line"),
        ("B) nightstand", "final_line"),
        ("B. nightstand", "final_line"),
        ("Therefore, (B) is the best choice.", "final_line"),
        ("Nightstand.", "final_line"),
        ("$\\boxed{B}$", "boxed"),
        ("\\boxed{(B)}", "boxed"),
        ("\\boxed{\\text{nightstand}}", "boxed"),
    ],
)
def test_each_choice_ending_reads_its_option(ending, rule):
    assert predict_choice(REASONING + ending, SPEC) == ("B", rule)
    assert answer_correct(REASONING + ending, "B", SPEC) is True
    assert answer_correct(REASONING + ending, "C", SPEC) is False


def test_big_bench_mistake_style_endings():
    """PaLM 2's endings in BIG-Bench-Mistake: the answer sentence closing the last thought."""
    spec = answer_spec(None, ["The Great Gatsby.", "Ulysses.", "Moby Dick."])
    last = "At the end of the semester, Alice has The Great Gatsby. So the answer is (A)"
    assert predict_choice("Alice and Claire swap: Alice: Moby Dick.\n" + last, spec) == ("A", "answer_is")
    assert predict_choice("Alice has Ulysses.\nThe answer is Ulysses", spec) == ("B", "answer_is")


def test_precedence_box_then_answer_statement_then_final_line():
    both = REASONING + "The answer is (C).\nOn reflection: \\boxed{B}"
    assert predict_choice(both, SPEC) == ("B", "boxed")
    later = REASONING + "The answer is (B).\n(C) freezer"
    assert predict_choice(later, SPEC) == ("B", "answer_is")  # the statement wins over a later option line
    corrected = REASONING + "The answer is (C). No wait, the answer is (B)."
    assert predict_choice(corrected, SPEC) == ("B", "answer_is")  # the LAST statement


def test_a_statement_naming_two_options_is_wrong_not_its_first():
    for hedge in ("The answer is (A) or (B).", "Answer: B or C", "The answer is (B), (C) and (E)."):
        assert predict_choice(REASONING + hedge, SPEC) == (None, "ambiguous")
        assert answer_correct(REASONING + hedge, "B", SPEC) is False
    assert predict_choice(REASONING + "\\boxed{B or C}", SPEC) == (None, "ambiguous")
    assert predict_choice(REASONING + "Answer: B, C or E.", SPEC) == (None, "ambiguous")
    assert predict_choice(REASONING + "The answer is (B), A nightstand is by the bed.", SPEC) == ("B", "answer_is")
    # hedging in the final line too, and not passed on to the statement above it
    assert predict_choice(REASONING + "(B) nightstand or (E) mailbox", SPEC) == (None, "ambiguous")


def test_an_option_ruled_out_is_not_named():
    assert predict_choice(REASONING + "The answer is (B), not (C).", SPEC) == ("B", "answer_is")
    assert predict_choice(REASONING + "So (B) nightstand rather than (E) mailbox.", SPEC) == ("B", "final_line")
    # every option ruled out but a list of others: still two options named
    hedge = REASONING + "The answer is not (A), (B), (C), (D) or (E)."
    assert predict_choice(hedge, SPEC) == (None, "ambiguous")


def test_no_answer_and_the_article_a():
    assert predict_choice(REASONING + "A reader keeps it nearby.", SPEC) == (None, "none")
    assert predict_choice("", SPEC) == (None, "none")
    assert predict_choice(REASONING + "The answer is A because it is wet.", SPEC) == ("A", "answer_is")
    assert predict_choice(REASONING + "The answer is a volcano.", SPEC) == ("D", "answer_is")  # its text
    # the text alone must match exactly one option
    twins = AnswerSpec("choice", normalize_choices(["red apple", "Red apple", "pear"]))
    assert predict_choice("It is red.\nRed apple.", twins) == (None, "none")


@pytest.mark.parametrize(
    "ending, value, rule",
    [
        ("So the answer is yes.", True, "answer_is"),
        ("The answer is: No, it could not.", False, "answer_is"),
        ("Answer: true", True, "answer_is"),
        ("Thus, the answer is false.", False, "answer_is"),
        ("Yes.", True, "final_line"),
        ("No, a goldfish needs water.", False, "final_line"),
        ("So, yes, it would.", True, "final_line"),
        ("**No**", False, "final_line"),
        ("True.", True, "final_line"),
        ("\\boxed{\\text{No}}", False, "boxed"),
    ],
)
def test_each_yes_no_ending(ending, value, rule):
    completion = "Goldfish breathe through gills in water.\nA desert has almost no water.\n" + ending
    assert predict_yes_no(completion) == (value, rule)


def test_yes_no_hedging_and_prose():
    assert predict_yes_no("It depends.\nThe answer is yes or no.") == (None, "ambiguous")
    assert predict_yes_no("The answer is no, there is no way that is true.") == (False, "answer_is")
    assert predict_yes_no("Goldfish need water.\nNo one has seen one in a desert.") == (None, "none")
    assert predict_yes_no("Goldfish need water.\nNo goldfish lives in sand.") == (None, "none")
    assert predict_yes_no("Goldfish need water.\nYes it could, in a tank.") == (True, "final_line")
    assert answer_correct("Goldfish need water.\nNo.", False, AnswerSpec("yes_no")) is True
    assert answer_correct("Goldfish need water.\nNo.", "yes", AnswerSpec("yes_no")) is False


# --- options, golds, specs -------------------------------------------------------------------------


def test_options_in_each_schema_and_golds():
    listed = normalize_choices([{"label": "A", "text": "ocean"}, {"label": "B", "text": "nightstand"}])
    assert [o.label for o in listed] == ["A", "B"]
    assert normalize_choices('{"text": ["x", "y"], "label": ["A", "B"]}')[1].text == "y"
    assert normalize_choices({"text": ["x"], "label": ["A", "B"]}) is None
    assert normalize_choices([{"label": "A", "text": "x"}, {"label": "A", "text": "y"}]) is None
    assert format_options(listed) == "Answer Choices: (A) ocean (B) nightstand"
    assert [gold_answer(g, SPEC) for g in ("B", "(B)", "nightstand", "Z", "")] == ["B", "B", "B", None, None]
    assert gold_text("B", SPEC) == "(B) nightstand"
    assert gold_text(True, AnswerSpec("yes_no")) == "yes"
    assert answer_spec(None, CSQA, "B").kind == "choice"
    assert answer_spec(None, None, False).kind == "yes_no"
    assert answer_spec(None, None, "#### 18").kind == "number"


# --- the answer block ------------------------------------------------------------------------------


def test_the_answer_block_per_kind():
    for ending in ("**B**", "(B) nightstand", "B) nightstand", "The answer is (B).", "Nightstand."):
        text = REASONING + ending
        assert answer_block_start(text, SPEC) == len(REASONING), ending
    joined = REASONING + "The answer is (B).\n**B**"
    assert answer_block_start(joined, SPEC) == len(REASONING)
    assert answer_block_start(REASONING.rstrip(), SPEC) is None
    sqa = "Goldfish need water.\nDeserts are dry.\nNo."
    assert answer_block_start(sqa, AnswerSpec("yes_no")) == sqa.index("No.")
    batch = RewardBatch.from_texts([REASONING + "**B**"], ["q"], ["B"], answer_kind=["choice"], choices=[CSQA])
    steps = [s.text for s in batch.segmentations[0].steps]
    assert steps == [
        "A book to read tonight should be close to the bed.",
        "A nightstand stands next to the bed, so the book is within reach.",
    ]
    # as a number row the option line would be a reasoning step
    assert len(segment_batch([REASONING + "**B**"])[0].steps) == 3


# --- accuracy and format on choice and yes/no rows -----------------------------------------------


def test_accuracy_and_format_on_rows_of_each_kind():
    completions = [
        REASONING + "So the answer is (B).",
        REASONING + "The answer is (B) or (C).",
        "**B**",
        "Goldfish need water.\nSo the answer is no.",
        "Goldfish need water.",
    ]
    batch = RewardBatch.from_texts(
        completions,
        ["q"] * 5,
        ["B", "B", "B", "no", "no"],
        answer_kind=["choice", "choice", "choice", "yes_no", "yes_no"],
        choices=[CSQA, CSQA, CSQA, None, None],
    )
    accuracy = AccuracyReward(AccuracyReward.Settings(), name="accuracy").score(batch)
    assert accuracy.scores == [1.0, 0.0, 1.0, 1.0, 0.0]
    assert accuracy.details[1]["rule"] == "ambiguous"
    assert accuracy.metrics["ambiguous_fraction"] == pytest.approx(0.2)
    form = FormatReward(FormatReward.Settings(require_reasoning=True), name="format").score(batch)
    assert form.scores == [1.0, 0.0, 0.0, 1.0, 0.0]  # hedge: no answer; "**B**" alone: no reasoning


def test_rows_without_a_kind_keep_reading_numbers():
    batch = RewardBatch.from_texts(["3 + 4 = 7\n#### 7"], ["q"], ["#### 7"])
    assert AccuracyReward(AccuracyReward.Settings(), name="a").score(batch).scores == [1.0]
    assert batch.answer_specs[0].kind == "number"
