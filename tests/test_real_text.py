"""The model-free rewards on text as real instruct models write it: the
arithmetic first-error verifier on LaTeX, unicode, markdown, bullets, units and currency, without
false alarms on algebra, conversions, rounding or fragments; answer extraction on real endings;
a chat model repeating ``#### N`` until its token limit.

Real rows: MR-GSM8K (github.com/dvlab-research/MR-GSM8K, MIT licence,
``eval_results/gpt4-grading/Claude_eval_results.json``; solutions written by MetaMath-7B, the
first wrong step labelled by humans), quoted with their uuid. The other cases are written here in
the notation real chat models use (Qwen2.5 / Llama-3 style), with numbers of our own.
"""

from __future__ import annotations

import pytest

from procrl.core.answers import extract_prediction
from procrl.core.text import segment
from procrl.rewards import RewardBatch, RewardMix, parse_rewards
from procrl.rewards.accuracy import AccuracyReward
from procrl.rewards.format import FormatReward, has_answer_line
from procrl.rewards.judges import JudgeItem
from procrl.rewards.judges.arithmetic import ArithmeticJudge
from procrl.rewards.quantities import check_step, find_claims


def verdict(completion: str) -> int | None:
    """The arithmetic judge's first wrong step on procrl's own segmentation (None: nothing checked)."""
    steps = tuple(step.text for step in segment(completion).steps)
    result = ArithmeticJudge().judge_one(JudgeItem("?", steps))
    return None if result.index == -1 and not result.checked_steps else result.index


def claims(text: str) -> list[tuple[str, bool]]:
    return [(f"{c.left} = {c.right}", c.correct) for c in find_claims(text)]


# --- MR-GSM8K rows (MIT): the human label and the verifier's verdict ------------------------------

MR_GSM8K = [
    # (uuid, steps as the model wrote them, labelled first error (0-based), whether the verifier finds it:
    # a calculation error is found at the labelled step; a reasoning error with true calculations is not)
    (
        "a8157e23-5920-4406-be0b-e18765b26b51",
        [
            "Step 1: Nancy saw 90 spiders.",
            "Step 2: She saw 1/3rd as many millipedes as spiders, so she saw 90/3 = 30 millipedes.",
            "Step 3: She saw a number of stink bugs equal to twice the number of millipedes minus 12, so she"
            " saw 2*30 - 12 = 58 stink bugs.",
            "Step 4: In total, Nancy saw 90 spiders + 30 millipedes + 58 stink bugs = 178 bugs.",
            "Step 5: #### 178",
            "Step 6: The answer is: 178",
        ],
        2,
        True,
    ),
    (
        "d724e2ca-16c5-43a5-b204-16ada5252ddf",
        [
            "Step 1: We know that the rug is 5 feet wider than the chair, so the rug is 3 + 5 = 8 feet wide.",
            "Step 2: We also know that the couch is 2 feet longer than twice the width of the rug, so"
            " the couch is 2 * 8 + 2 = 22 feet long.",
            "Step 3: Therefore, the couch is 22 feet long.",
            "Step 4: #### 22",
            "Step 5: The answer is: 22",
        ],
        1,
        True,
    ),
    (
        "011f88a5-9cec-495f-819f-bcd8d92a5efc",
        [
            "Step 1: If Mark weighs 150 pounds, and Susan weighs 20 pounds less than Mark, then"
            " Susan weighs 150 - 20 = 130 pounds.",
            "Step 2: If Bob weighs twice as much as Susan, then Bob weighs 130 * 2 = 260 pounds.",
            "Step 3: To find the average weight of the 3 friends, we add up their weights and divide by 3.",
            "Step 4: So the average weight is (150 + 130 + 260) / 3 = 440 / 3 = 140 pounds.",
            "Step 5: #### 140",
            "Step 6: The answer is: 140",
        ],
        3,
        True,
    ),
    # a reasoning error (Tom gains 15 mph, not 55): the calculation holds, rounded as written
    (
        "bd29bebd-0d3a-4700-90be-23c0c4c4e96c",
        [
            "Step 1:  We know that the distance between both is 75 miles, so the number of hours Tom has to drive to"
            " catch up with Bob is 75 / 55 = <<75/55=1.4>>1.4 hours.",
            "Step 2: The speed of both cars is also relevant, so we have to take into account that Bob"
            " is driving 75 miles / 55 hours = <<75/55=1.4>>1.4 hours.",
            "Step 3: So, the number of hours Tom has to drive to"
            " catch up with Bob is 1.4 hours + 1.4 hours = <<1.4+1.4=2.8>>2.8 hours.",
            "Step 4: #### 2.8",
        ],
        0,
        False,
    ),
]


@pytest.mark.parametrize("uuid, steps, label, found", MR_GSM8K, ids=[row[0][:8] for row in MR_GSM8K])
def test_mr_gsm8k_rows(uuid, steps, label, found):
    completion = "\n".join(steps)
    assert verdict(completion) == (label if found else -1)  # the human label, where it flags
    seg = segment(completion)
    assert [s.text for s in seg.steps] == [
        s.split(": ", 1)[1].strip() for s in steps if "####" not in s and "answer is" not in s
    ]


def test_trailing_answer_lines_of_mr_gsm8k_are_not_steps():
    completion = "\n".join(MR_GSM8K[0][1])
    assert [s.text for s in segment(completion).steps][-1].startswith("In total, Nancy saw")
    assert extract_prediction(completion) == (178.0, "hashes")
    assert has_answer_line(completion)


# --- real notation read, errors in it found -------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "the number of stamps is: \\[ 14 + 5 = 19 \\]",  # after a colon, LaTeX display
        "Weekly cost: $150 * 4 = $600 per month",  # currency and units on both sides
        "from what was left: 80 - 25 = 55.",
        "\\[ \\frac{360}{4} = 90 \\]",
        "\\( \\dfrac{3}{4} \\times 48 = 36 \\)",
        "4200 pounds ÷ 1500 pounds per trip = 2.8 trips",  # unicode operator, units, rounding
        "12 × 7 − 4 = 80 and 6 · 5 = 30 and 9 ⋅ 3 = 27",
        "\\[ \\text{Total sticks} = 7 \\text{ boxes} \\times 40 \\text{ sticks/box} = 280 \\text{ sticks} \\]",
        "Time = \\( \\frac{90 \\text{ GB}}{3 \\text{ GB/minute}} = 30 \\text{ minutes} \\)",
        "- Cost of peaches: \\( 5 \\text{ pounds} \\times \\$3.00/\\text{pound} = \\$15.00 \\)",  # bullet, \$
        "**Total:** 8 * 6 = 48 eggs",  # markdown bold label
        "It is **2 * 9 = 18** dollars",
        "2 (red bolts) + 3 (blue bolts) = 5 bolts",  # labels in parentheses
        "7 eggs * $3/egg = $21.",
        "\\[ 120\\% \\text{ of } 50{,}000 = 1.2 \\times 50{,}000 = 60{,}000 \\]",
        "25% of 80 = 20, so 40 percent of 80 = 32",
        "So, 6 + 9 = 15 and 4 times 5 = 20",  # comma lead-in, 'times'
        "New total = Old total + (Old total x 50%)\n= $40,000 + ($40,000 x 0.5)\n= $40,000 + $20,000\n= $60,000",
        "Joan's age = Jessa's age + 4\nJoan's age = 19 + 4\nJoan's age = 23",  # a name restated
        "\\[\n\\text{Difference} = 5000 - 3500\n\\]\n\\[\n\\text{Difference} = 1500\n\\]",
        "Let's calculate B = (-2 + 6 + 7 - 3) = (4 + 7 - 3) = (11 - 3) = 8.",  # parenthesised chain
        'Anne\'s height = 2 x 30" = 60"',
        "2x = 2(14) = 28",
        "\\[\n     -\\$120 + \\$75 = -\\$45\n     \\]",
        "2/3 of 90 = 60 and \\frac{1}{4} of 80 = 20",
        "\\[ 1{,}000{,}000 - 1 = 999\\,999 \\]",
        "(2) 5 + 3 = 8",  # an equation label
    ],
)
def test_real_notation_is_read_and_holds(text):
    found = find_claims(text)
    assert found, text
    assert all(claim.correct for claim in found), [(c.left, c.right) for c in found]


@pytest.mark.parametrize(
    "text",
    [
        "the number of stamps is: \\[ 14 + 5 = 20 \\]",
        "Weekly cost: $150 * 4 = $650 per month",
        "from what was left: 80 - 25 = 45.",
        "\\[ \\frac{360}{4} = 80 \\]",
        "4200 pounds ÷ 1500 pounds per trip = 3.8 trips",
        "\\[ \\text{Total sticks} = 7 \\text{ boxes} \\times 40 \\text{ sticks/box} = 260 \\text{ sticks} \\]",
        "- Cost of peaches: \\( 5 \\text{ pounds} \\times \\$3.00/\\text{pound} = \\$18.00 \\)",
        "**Total:** 8 * 6 = 46 eggs",
        "2 (red bolts) + 3 (blue bolts) = 6 bolts",
        "7 eggs * $3/egg = $24.",
        "New total = Old total + (Old total x 50%)\n= $40,000 + ($40,000 x 0.5)\n= $40,000 + $20,000\n= $70,000",
        "Joan's age = Jessa's age + 4\nJoan's age = 19 + 4\nJoan's age = 24",
        "Let's calculate B = (-2 + 6 + 7 - 3) = (5 + 7 - 3) = (12 - 3) = 9.",
        "3 pounds + 36 pounds + 2100 pounds + 900 pounds = 2939 pounds",  # Llama-style, a slip
        "2/3 of 90 = 50",
        "(1) 5 + 3 = 9",
        "3 apples + 4 apples = 3 + 5 = 8",
        # count nouns of different kinds are summed, not converted (Llama-3.2-3B's style)
        "160 sheets + 80 comforters + 320 pillow cases + 640 towels = 1280",
    ],
)
def test_wrong_results_in_real_notation_are_found(text):
    assert check_step(text), text


@pytest.mark.parametrize(
    "text",
    [
        # algebra
        "2x + 3 = 7",
        "3 + 5 = 2x",
        "50-6 = 4(B-3)",
        "1/3 wall = 4 days / x days",
        "12 x 5 = 3 x x",
        "y + 3y = 48",
        "\\[ 2r + 4(r + 1) = 40 \\]",
        "\\frac{900 \\text{ yen}}{\\$6.00} = \\frac{45000 \\text{ yen}}{x \\text{ dollars}}",
        # unit conversions
        "1 hour + 30 minutes = 90 minutes",
        "15 minutes * 4 = 1 hour",
        "12 x 25 cents = $3.00.",
        "$3 + 50 cents = $3.50",
        "8 pencils x 25 cents/pencil = 8 x 0.25 = $2",
        "2 dozen + 6 = 30",
        # rounding as written
        "25 / 4 = 6 boxes",
        "100 / 3 = 33 (rounded down)",
        "150 x 2/3 = 150 x 0.67 = 100",
        "1.4167 minutes/carrot * 24 carrots = 34 minutes",
        "(85 / 150) x 100\n= 0.5667 x 100\n= 56.67%",
        "0.3 x $46,153 = $13,845",
        "$46,153 + $13,845 = $60,000",
        "3500 / 2250 = approximately 1.5",
        # fragments and sizes
        "\\sqrt{16} + 2 = 6",
        "half of (3 + 5) = 4",
        "f(3) + 2 = 9",
        "X*1/4 = 5",
        "6:00+48 = 54",
        "\\text{Number of 2 x 6 boards} = \\frac{\\$30}{\\$5} = 6",
        "Total cost for 2x6x8 boards = 6 \\times 9 = \\$54",
        "3 cups / 1 cup/8 limes = 3 x 8 = 24 limes",
        "12 (4 + 8) = 12",
        "500,000 * 3 = $1.5 million",
        "5:00 pm - 3 hours = 2:00 pm",
        "The friends get 6 x 2 = 12 eggs from one box x 2",
        "2/5 of 15 tens = 2/5 x 15 x $10 = 2/5 x $150 = $60",  # the right side spells a unit out
        # kept from before
        "1 hour = 60 minutes",
        "15% of $80 = (15/100)*$80 = $12",
        "There are 60 minutes x 3/4 = 45 minutes",
        "Step 2 = the hard part",
        "a = b + c",
    ],
)
def test_no_false_alarm(text):
    assert check_step(text) == [], [(c.left, c.right) for c in check_step(text)]


def test_instruct_style_solution_is_verified_step_by_step():
    completion = (
        "To find the total, we follow these steps:\n\n"
        "1. **Eggs used per day:**\n   \\[\n   5 + 3 = 8\n   \\]\n\n"
        "2. **Eggs left to sell:**\n   \\[\n   \\text{Remaining eggs} = 20 - 8 = 12\n   \\]\n\n"
        "3. **Money from the sales:**\n   \\[\n   12 \\text{ eggs} \\times \\$3/\\text{egg} = \\$36\n   \\]\n\n"
        "Thus, she makes \\(\\boxed{36}\\) dollars every day."
    )
    assert verdict(completion) == -1
    slipped = completion.replace("20 - 8 = 12", "20 - 8 = 11")
    assert verdict(slipped) == 1  # the introduction ends with a colon: one step with item 1
    assert extract_prediction(completion) == (36.0, "boxed")


def test_llama_style_solution_is_verified():
    completion = (
        "Let's break it down step by step.\n\n"
        "The van travels 50 miles per hour for 6 hours:\n"
        "Distance = Speed x Time\nDistance = 50 miles/hour x 6 hours\nDistance = 300 miles\n\n"
        "The truck travels 40 miles per hour for 7 hours:\n"
        "Distance = 40 miles/hour x 7 hours\nDistance = 280 miles\n\n"
        "Difference = 300 miles - 280 miles\nDifference = 20 miles\n\n"
        "The final answer is 20."
    )
    assert verdict(completion) == -1
    assert verdict(completion.replace("Distance = 280 miles", "Distance = 270 miles")) == 2
    assert extract_prediction(completion) == (20.0, "answer_is")


def test_algebra_only_solution_has_nothing_checkable():
    completion = "Let x be the number.\n\nx + 3x = 36\n\n4x = 36\n\nx = 9\n\nThe final answer is 9."
    assert verdict(completion) is None  # unverified: the component gives it unverified_score


# --- answer extraction on real endings ------------------------------------------------------------

ENDINGS = [
    # (completion, gold, expected accuracy, rule)
    ("... 12 + 14 = 26\nSo she spends a total of 26 hours.", "26", 1.0, "last_number"),
    ("She makes 9 * 2 = 18 dollars.\n**18**", "18", 1.0, "bold"),
    ("She makes 9 * 2 = 18 dollars.\n**Answer: 18**", "18", 1.0, "answer_is"),
    ("Thus, the total is **64** dollars for 16 glasses.", "64", 1.0, "bold"),
    ("So the price is \\boxed{\\$12,500}.", "12500", 1.0, "boxed"),
    ("The answer is: $\\boxed{42}$", "42", 1.0, "boxed"),
    ("Final Answer: The total cost of 12 gallons after the discount is $33.00.", "33", 1.0, "answer_is"),
    ("The final answer is 9 * $2 = $18.", "18", 1.0, "answer_is"),
    ("The final answer is $18. I hope it is correct.", "18", 1.0, "answer_is"),
    (
        "#### Step 3: Net profit\nProfit = $90 - $41 = $49\n\n\\[\\boxed{49}\\]",
        "49",
        1.0,
        "boxed",
    ),  # a heading is no answer
    ("#### 1. Cost of the shirts\n2 x 15 = 30\n#### 30", "30", 1.0, "hashes"),
    ("9 + 5 = 14.\n#### 14\nThe answer is: 14", "14", 1.0, "hashes"),
    ("#### 5\nThe answer is 7", "5", 1.0, "hashes"),  # several answer lines: the first #### wins
    ("\\boxed{1} then \\boxed{2}", "2", 1.0, "boxed"),  # the last box
    ("The answer is 3. No wait, the answer is 4.", "4", 1.0, "answer_is"),  # the last 'answer is'
]


@pytest.mark.parametrize("completion, gold, expected, rule", ENDINGS, ids=[repr(e[0])[-30:] for e in ENDINGS])
def test_answer_extraction_on_real_endings(completion, gold, expected, rule):
    assert extract_prediction(completion)[1] == rule
    assert AccuracyReward().score(RewardBatch.from_texts([completion], golds=[gold])).scores == [expected]


@pytest.mark.parametrize(
    "completion, answer_line",
    [
        ("2 + 3 = 5\n**Answer: 5**", True),
        ("2 + 3 = 5\n**5**", True),
        ("2 + 3 = 5\nStep 4: #### 5\nStep 5: The answer is: 5", True),
        ("2 + 3 = 5\nSo she has 5 apples.", False),  # a prose ending is an answer, not the answer format
        ("2 + 3 = 5\n\nTherefore, she has:\n\\[\n\\boxed{5}\n\\]", True),  # Qwen's display box
        ("2 + 3 = 5\n\\[ \\boxed{5} \\]", True),
        ("2 + 3 = 5\n\\]", False),
    ],
)
def test_format_reads_real_answer_lines(completion, answer_line):
    assert has_answer_line(completion) is answer_line


def test_a_display_box_is_one_answer_block():
    completion = "We add: 2 + 3 = 5.\n\nTherefore, the total is:\n\\[\n\\boxed{5}\n\\]"
    assert [s.text for s in segment(completion).steps] == ["We add: 2 + 3 = 5.", "Therefore, the total is:"]


# --- a chat model repeating '#### N' until its token limit ---------------------------------------

WORKED = "Each box holds 12 apples, so 4 boxes hold 4 * 12 = 48 apples.\nShe keeps all of them."
REPEATS = WORKED + "\n#### 48" * 40 + "\n#### 4"  # cut short by the token limit


def test_repeated_answer_lines_are_not_reasoning_steps():
    assert [s.text for s in segment(REPEATS).steps] == [s.text for s in segment(WORKED + "\n#### 48").steps]
    assert segment(REPEATS).reasoning == WORKED


def test_repeated_answer_lines_keep_accuracy_and_format():
    assert extract_prediction(REPEATS) == (48.0, "hashes")  # the first answer line, not the cut copy
    batch = RewardBatch.from_texts([REPEATS], golds=["48"])
    assert AccuracyReward().score(batch).scores == [1.0]
    # forty answer lines to the token limit: the answer is read, but it has not ended (looping on
    # the answer line is not the format: test_a_looping_answer_line_is_not_the_format)
    assert FormatReward().score(batch).scores == [0.0]
    once = RewardBatch.from_texts([WORKED + "\n#### 48"], golds=["48"])
    assert FormatReward().score(once).scores == [1.0]


def test_repeated_answer_lines_do_not_pay_as_padding():
    """Every component that reads steps gives the repeats what it gives the single answer line
    (format gives them less: a looping answer line is not the format)."""
    mix = RewardMix(
        parse_rewards(
            {
                "accuracy": {"weight": 1.0},
                "format": {"weight": 0.1},
                "first_error": {"weight": 0.5, "backend": "arithmetic", "penalty": "position"},
                "trace": {"weight": 0.1, "tagger": "cues"},
            }
        )
    )
    once = mix.score_all(RewardBatch.from_texts([WORKED + "\n#### 48"], golds=["48"]))
    repeated = mix.score_all(RewardBatch.from_texts([REPEATS], golds=["48"]))
    for name in once:
        if name == "format":
            assert repeated[name].scores == [0.0] and once[name].scores == [1.0]
        else:
            assert repeated[name].scores == once[name].scores, name
    slipped = WORKED.replace("= 48 apples", "= 46 apples")
    padded = mix.score_all(RewardBatch.from_texts([slipped + "\n#### 48" * 40], golds=["48"]))
    assert padded["first_error"].scores == [-1.0]  # the repeats do not dilute the position penalty


# --- SmolLM2-135M-Instruct's endings (outputs of `procrl evaluate` on GSM8K test problems) ------


def test_hashes_line_holding_an_equation_states_its_result():
    from procrl.core.answers import extract_prediction

    assert extract_prediction("#### 72 * 16 = 1080\n\nSo, Kylar needs to pay $1080 for 16 glasses.") == (
        1080.0,
        "hashes",
    )
    # the first #### line wins, and a copy cut at the token limit does not change it
    assert extract_prediction("A robe takes 2 bolts.\n#### 2 * 2 = 4\n#### 4 = 4\n#### 4 = 4\n#### 4 =") == (
        4.0,
        "hashes",
    )
    assert extract_prediction("He pays 3 x 4 = 12.\n#### 12 =") == (12.0, "hashes")


def test_a_looping_answer_line_is_not_the_format():
    from procrl.rewards.format import FormatReward, has_answer_line

    loops = [
        "A robe takes 2 bolts.\n#### 2 * 2 = 4" + "\n#### 4 = 4" * 30 + "\n#### 4 =",
        "She has 2 + 1 = 3 apples.\n" + "The answer is 3.\n" * 30,
        "She has 2 + 1 = 3 apples.\n" + "The answer is 3. " * 30,
    ]
    ended = [
        "She has 2 + 1 = 3 apples.\nThe answer is 3.",
        "She has 2 + 1 = 3 apples.\nThe answer is 3.\n#### 3",  # two notations of one answer
        "She has 2 + 1 = 3 apples.\n\\[\n\\boxed{3}\n\\]",
    ]
    assert [has_answer_line(c) for c in loops] == [False] * 3
    assert [has_answer_line(c) for c in ended] == [True] * 3
    partial = FormatReward(FormatReward.Settings(partial=True))
    from procrl.rewards import RewardBatch

    scores = partial.score(RewardBatch.from_texts(loops + ended, ["q"] * 6, ["#### 3"] * 6)).scores
    assert scores[:3] == [0.5] * 3 and scores[3:] == [1.0] * 3  # a marker, not an ended answer
