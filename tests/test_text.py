"""The shared step/sentence segmentation (docs/spec.md section 0)."""

from __future__ import annotations

from procrl.core.text import answer_line_start, reasoning_end, segment, segment_batch, split_sentences


def texts(spans):
    return [s.text for s in spans]


def test_blank_lines_win_over_newlines():
    completion = "First we add.\nStill first.\n\nThen we multiply.\n\n#### 6"
    seg = segment(completion)
    assert texts(seg.steps) == ["First we add.\nStill first.", "Then we multiply."]


def test_single_newlines_when_no_blank_lines():
    seg = segment("a is 2.\nb is 3.\nSo a + b = 5.\nThe answer is 5.")
    assert texts(seg.steps) == ["a is 2.", "b is 3.", "So a + b = 5."]


def test_sentences_when_one_line():
    seg = segment("We have 3 apples. We buy 2 more. So 3 + 2 = 5. The answer is 5.")
    assert texts(seg.steps) == ["We have 3 apples.", "We buy 2 more.", "So 3 + 2 = 5."]


def test_a_lead_in_ending_with_a_colon_is_one_step_with_what_it_introduces():
    qwen = (
        "To find the total, we follow these steps:\n\n1. **Eggs used per day:**\n   5 + 3 = 8\n\n"
        "Next, we subtract the eggs used:\n\n\\[\n20 - 8 = 12\n\\]\n\nSo she sells 12 eggs.\n\n#### 12"
    )
    seg = segment(qwen)
    assert texts(seg.steps) == [
        "To find the total, we follow these steps:\n\n1. **Eggs used per day:**\n   5 + 3 = 8",
        "Next, we subtract the eggs used:\n\n\\[\n20 - 8 = 12\n\\]",
        "So she sells 12 eggs.",
    ]
    assert seg.steps[1].start == qwen.index("Next") and qwen[seg.steps[1].end - 2 : seg.steps[1].end] == "\\]"
    # lines too, and a bold heading; a colon inside a step is no lead-in, nor is a last piece
    llama = "The total number of flashlights is:\n2 x 8 = 16\n**Candles:**\n4 x 4 = 16\nSo: 16 + 16 = 32\nTotal:"
    assert texts(segment(llama).steps) == [
        "The total number of flashlights is:\n2 x 8 = 16",
        "**Candles:**\n4 x 4 = 16",
        "So: 16 + 16 = 32",
        "Total:",
    ]


def test_step_prefixes_stripped_but_offsets_kept():
    completion = "Step 1: Add 2 and 3.\nStep 2: Multiply by 4.\n3. Subtract 1.\n#### 19"
    seg = segment(completion)
    assert texts(seg.steps) == ["Add 2 and 3.", "Multiply by 4.", "Subtract 1."]
    assert [completion[s.start : s.end] for s in seg.steps] == [
        "Step 1: Add 2 and 3.",
        "Step 2: Multiply by 4.",
        "3. Subtract 1.",
    ]


def test_sentences_do_not_split_decimals_money_abbreviations_equations():
    line = "He pays $1.50 each, e.g. for 3.5 kg of apples. That is approx. 5.25 dollars. Total = 2.5 + 2.75 = 5.25."
    sentences = texts(split_sentences(line))
    assert sentences == [
        "He pays $1.50 each, e.g. for 3.5 kg of apples.",
        "That is approx. 5.25 dollars.",
        "Total = 2.5 + 2.75 = 5.25.",
    ]


def test_sentence_offsets_point_into_the_text():
    completion = "  A is 1. B is 2.\nC is 3."
    for span in segment(completion).sentences:
        assert completion[span.start : span.end] == span.text


def test_answer_line_forms_are_removed_from_reasoning():
    for tail in [
        "#### 5",
        "The answer is 5.",
        "So the answer is \\boxed{5}.",
        "\\boxed{5}",
        "Therefore, the final answer is 5",
    ]:
        completion = f"2 + 3 = 5.\n{tail}"
        assert segment(completion).reasoning == "2 + 3 = 5.", tail
    # an answer mentioned mid-line keeps the reasoning before it on that line
    completion = "2 + 3 = 5, so the answer is 5."
    assert completion[: reasoning_end(completion)] == "2 + 3 = 5, so"


def test_answer_mid_reasoning_is_reasoning():
    completion = "The answer is not obvious.\nWe compute 2 + 2 = 4.\n#### 4"
    assert texts(segment(completion).steps) == ["The answer is not obvious.", "We compute 2 + 2 = 4."]


def test_think_tags_removed_offsets_unchanged():
    completion = "<think>We add 2 and 2. That gives 4.</think>\nThe answer is 4."
    seg = segment(completion)
    assert texts(seg.steps) == ["We add 2 and 2.", "That gives 4."]
    assert completion[seg.steps[0].start : seg.steps[0].end] == "We add 2 and 2."


def test_sentence_to_step_map():
    seg = segment("A is 1. B is 2.\nC is 3.\n#### 3")
    assert texts(seg.sentences) == ["A is 1.", "B is 2.", "C is 3."]
    assert seg.sentence_step == (0, 0, 1)


def test_degenerate_inputs():
    for completion in ["", "   ", "\n\n\n", "#### 5", "\\boxed{"]:
        seg = segment(completion)
        assert all(s.text for s in seg.steps)
    assert segment("").steps == ()
    assert answer_line_start("") is None


def test_batch_equals_single():
    completions = ["A is 1.\nB is 2.", "One. Two. Three.", "", "x\n\ny\n\n#### 1"]
    assert segment_batch(completions) == [segment(c) for c in completions]


def test_many_steps_and_long_text():
    completion = "\n".join(f"Step {i}: {i} + 1 = {i + 1}." for i in range(500)) + "\n#### 500"
    assert len(segment(completion).steps) == 500
    long = "word " * 40_000
    assert len(segment(long).steps) == 1
