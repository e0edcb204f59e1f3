"""The reference first-error judge (procrl/rewards/judges/reference/) on hand-written steps:
each step's quantities against the question's numbers and the gold solution's values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.rewards import RewardBatch, RewardMix, parse_rewards
from procrl.rewards.first_error import FirstErrorReward
from procrl.rewards.judges import JudgeItem, build_judge
from procrl.rewards.judges.reference import ReferenceJudge, ReferenceRules, judge_steps, read_reference
from procrl.rewards.judges.settings import ReferenceSettings

DATA = Path(__file__).parent / "data"

# GSM8K test problems with their gold solutions (openai/gsm8k, MIT)
JANET = (
    "Janet’s ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins for her "
    "friends every day with four. She sells the remainder at the farmers' market daily for $2 per fresh duck egg. "
    "How much in dollars does she make every day at the farmers' market?"
)
JANET_GOLD = (
    "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\n"
    "She makes 9 * 2 = $<<9*2=18>>18 every day at the farmer’s market.\n#### 18"
)
TRACY = (
    "Tracy used a piece of wire 4 feet long to support tomato plants in the garden. The wire was cut into pieces "
    "6 inches long. How many pieces did she obtain?"
)
TRACY_GOLD = (
    "If Tracy used a piece of wire 4 feet long, since 1 foot is equal to 12 inches, the total length of the wire "
    "in inches was 12*4=<<12*4=48>>48 inches.\nSince the wire was cut into pieces 6 inches long, Tracy obtained "
    "48/6=<<48/6=8>>8 pieces\n#### 8"
)
KYLAR = (
    "Kylar went to the store to buy glasses for his new apartment. One glass costs $5, but every second glass costs "
    "only 60% of the price. Kylar wants to buy 16 glasses. How much does he need to pay for them?"
)
KYLAR_GOLD = (
    "The discount price of one glass is 60/100 * 5 = $<<60/100*5=3>>3.\nIf every second glass is cheaper, that "
    "means Kylar is going to buy 16 / 2 = <<16/2=8>>8 cheaper glasses.\nSo for the cheaper glasses, Kylar is "
    "going to pay 8 * 3 = $<<8*3=24>>24.\nAnd for the regular-priced glasses, Kylar will pay 8 * 5 = "
    "$<<8*5=40>>40.\nSo in total Kylar needs to pay 24 + 40 = $<<24+40=64>>64 for the glasses he wants to buy.\n"
    "#### 64"
)
ADAM = (
    "Adam really wants to ride the biggest roller coaster at the park. You have to be 4 feet tall to ride it. Adam’s "
    "height is 40 inches and he grows 2 inches a year. How many years until he is tall enough to ride it?"
)
ADAM_GOLD = (
    "Adam needs to grow 8 inches because 48 -40= <<48-40=8>>8\nIt will take 4 years because 8/2=<<8/2=4>>4\n#### 4"
)
ISAIAS = (
    "To make a profit of $2000, Isaias has to sell the chickens he planned to take to the market from his farm at "
    "$50 per chicken. If Isaias has 300 chickens on his farm and plans to sell 3/5 of them, for how much money did "
    "Isaias buy the chicken he took to the market for sale?"
)
ISAIAS_GOLD = (
    "Isaias plans to sell 3/5*300 = <<3/5*300=180>>180 chickens from his farm.\nTo make his profit, Isaias sells "
    "all the chicken he took to the market for $50*180 = $<<50*180=9000>>9000\nThe price at which Isaias bought "
    "the chicken is $9000-$2000 = $<<9000-2000=7000>>7000.\n#### 7000"
)


def verdict(question, steps, gold, **rules):
    return judge_steps(question, tuple(steps), gold, ReferenceRules(**rules))


def test_the_gold_solution_itself_is_checked_and_correct():
    result = verdict(JANET, JANET_GOLD.splitlines()[:2], JANET_GOLD)
    assert result.index == -1 and result.checked_steps == 2


def test_sound_alternative_decomposition_is_not_flagged():
    # the gold never states 3 + 4 = 7 (regrouping of 16 - 3 - 4), nor 16 - 7
    steps = [
        "She uses 3 + 4 = 7 eggs every day.",
        "So she has 16 - 7 = 9 eggs left to sell.",
        "She makes 9 x $2 = $18 every day.",
    ]
    assert verdict(JANET, steps, JANET_GOLD).index == -1
    # the same in prose, no equation: "use 7" is off the gold's path but the next step reaches 9 from
    # it (16 - 7); 9 and 18 are then worked out from established values
    prose = ["Breakfast and muffins use 7 eggs a day.", "That leaves 9 eggs.", "At $2 each she makes $18."]
    result = verdict(JANET, prose, JANET_GOLD)
    assert result.index == -1 and result.checked_steps == 3
    # with regroup, 7 = 3 + 4 is a partial result of the gold's 16 - 3 - 4 (on the path, but stated
    # from the question's numbers alone: accepted, not counted as checked)
    result = verdict(JANET, prose, JANET_GOLD, transformations=["regroup", "units", "percent", "rounding"])
    assert result.index == -1 and result.checked_steps == 2


def test_off_path_value_that_leads_back_to_the_gold_is_accepted_only_with_lookahead():
    # 300 * 50 = 15000 is never in the gold (it takes 3/5 first); the solution then reaches 9000 from it
    decomposed = [
        "Selling all 300 chickens at $50 would bring 300 * 50 = $15000.",
        "He sells 3/5 of them, so he gets 15000 * 3/5 = $9000.",
        "So he paid $9000 - $2000 = $7000.",
    ]
    assert verdict(ISAIAS, decomposed, ISAIAS_GOLD).index == -1
    assert verdict(ISAIAS, decomposed, ISAIAS_GOLD, off_path="flag").index == 0  # the strict rule flags it


def test_wrong_operation_on_right_numbers_is_flagged_where_it_is_stated():
    # every equation is true; 9000 + 2000 is not on the gold's path and leads nowhere
    steps = [
        "He sells 300 * 3/5 = 180 chickens.",
        "He makes 180 * $50 = $9000.",
        "To make a profit of $2000 he needs $9000 + $2000 = $11000.",
        "So he bought the chickens for $11000.",
    ]
    result = verdict(ISAIAS, steps, ISAIAS_GOLD)
    assert result.index == 2 and "11000" in result.note
    assert build_judge_arithmetic(steps) == -1  # the arithmetic judge sees nothing wrong
    # the naive rule (any value derivable from known values) lets it through
    assert verdict(ISAIAS, steps, ISAIAS_GOLD, off_path="derivable").index == -1
    # 16 + 7 for 16 - 7: the sound 3 + 4 = 7 leads nowhere in this solution, so the first value off
    # the path that leads nowhere is 7; with regroup 7 is a partial result of the gold's and 23 is flagged
    janet = ["She uses 3 + 4 = 7 eggs.", "She has 16 + 7 = 23 eggs.", "She makes 23 * 2 = $46."]
    assert verdict(JANET, janet, JANET_GOLD).index == 0
    assert verdict(JANET, janet, JANET_GOLD, transformations=["regroup", "units", "percent", "rounding"]).index == 1


def build_judge_arithmetic(steps) -> int:
    from procrl.rewards.judges.arithmetic import ArithmeticJudge

    return ArithmeticJudge().judge_one(JudgeItem(None, tuple(steps))).index


def test_misread_quantity_is_flagged_at_the_step_that_states_it():
    steps = [
        "He has 400 chickens and sells 3/5 of them.",
        "He sells 400 * 3/5 = 240 chickens.",
        "He makes 240 * $50 = $12000.",
        "He paid $12000 - $2000 = $10000.",
    ]
    result = verdict(ISAIAS, steps, ISAIAS_GOLD)
    assert result.index == 0 and "400" in result.note


def test_units_another_unit_the_step_names():
    # the gold works in inches; this solution in feet (6 inches = 0.5 feet), the same answer
    steps = ["Each piece is 6 inches, which is 0.5 feet.", "So she gets 4 / 0.5 = 8 pieces."]
    assert verdict(TRACY, steps, TRACY_GOLD).index == -1
    # a conversion factor of two units the step names is known (12 inches per foot)
    assert verdict(TRACY, ["The wire is 4 x 12 = 48 inches long.", "48 / 6 = 8 pieces."], TRACY_GOLD).index == -1
    # a wrong operation after a right conversion
    wrong = ["Each piece is 6 inches, which is 0.5 feet.", "So she gets 4 / 0.5 + 1 = 9 pieces."]
    assert verdict(TRACY, wrong, TRACY_GOLD).index == 1
    # strict off-path rule: the conversion alone accepts 0.5 feet (6 inches); without units it is off the path
    assert verdict(TRACY, steps, TRACY_GOLD, off_path="flag").index == -1
    assert (
        verdict(TRACY, steps, TRACY_GOLD, off_path="flag", transformations=["regroup", "percent", "rounding"]).index
        == 0
    )
    # a unit mix-up: feet times inches
    assert verdict(TRACY, ["She gets 4 x 6 = 24 pieces."], TRACY_GOLD).index == 0


def test_percent_as_written_and_as_a_fraction():
    steps = [
        "One glass costs $5 and every second glass costs 60% of it: 0.6 x $5 = $3.",
        "He buys 16 / 2 = 8 glasses at each price.",
        "8 x $5 + 8 x $3 = $40 + $24 = $64.",
    ]
    assert verdict(KYLAR, steps, KYLAR_GOLD).index == -1
    discount = [
        "Every second glass is 100% - 60% = 40% cheaper, so it costs $5 - $2 = $3.",
        "8 glasses at $5 and 8 at $3: $40 + $24 = $64.",
    ]
    assert verdict(KYLAR, discount, KYLAR_GOLD).index == -1
    wrong = ["60% of 16 glasses is 9.6 glasses.", "9.6 x $3 = $28.80."]
    assert verdict(KYLAR, wrong, KYLAR_GOLD).index == 0


def test_rounding_as_written():
    # Llama-3.1-8B-Instruct's sound solution: 40 / 12 = 3.33 feet, 4 - 3.33 = 0.67, 0.67 x 12 = 8
    steps = [
        "First convert his height to feet: 40 inches / 12 = 3.33 feet.",
        "He needs 4 feet - 3.33 feet = 0.67 feet.",
        "That is 0.67 feet x 12 inches/foot = 8 inches.",
        "8 inches / 2 inches/year = 4 years.",
    ]
    assert verdict(ADAM, steps, ADAM_GOLD).index == -1
    # a value rounded the wrong way is not the gold's
    assert verdict(ADAM, ["He needs 48 - 40 = 8 inches.", "8 / 3 = 2.7 years."], ADAM_GOLD).index == 1


def test_real_notation_latex_currency_markdown():
    steps = [r"**Eggs left:** \( 16 - 3 - 4 = 9 \)", r"**Money:** \[ 9 \times \$2 = \$18 \]"]
    result = verdict(JANET, steps, JANET_GOLD)
    assert result.index == -1 and result.checked_steps == 2
    assert verdict(JANET, [r"\[ 16 - 3 - 4 = 9 \]", r"\[ 9 \times \$3 = \$27 \]"], JANET_GOLD).index == 1


def test_math_style_gold_with_equalities_and_boxed_answer():
    question = "What is half of 30, plus 4?"
    gold = r"Half of 30 is $\frac{1}{2} \cdot 30 = 15$. Then $15 + 4 = \boxed{19}$."
    reference = read_reference(question, gold)
    assert reference is not None and reference.answer == 19 and reference.gold.has(15)
    assert verdict(question, [r"$30 / 2 = 15$", r"$15 + 4 = 19$"], gold).index == -1
    assert verdict(question, [r"$30 \times 2 = 60$", r"$60 + 4 = 64$"], gold).index == 0


def test_a_false_calculation_is_an_error_too():
    steps = ["She has 16 - 3 - 4 = 9 eggs.", "She makes 9 * 2 = $19."]
    assert verdict(JANET, steps, JANET_GOLD).index == 1
    # without check_arithmetic a false calculation landing on the path passes (9 * 2 = 18 states 18)
    assert (
        verdict(
            JANET, ["16 - 3 - 4 = 10 eggs are left.", "She makes 9 * 2 = $18."], JANET_GOLD, check_arithmetic=False
        ).index
        == 0
    )  # 10 is still off the path


def test_what_nothing_checked_looks_like():
    hedging = ["I think the answer is probably this.", "It seems about right, but I am not sure."]
    assert verdict(JANET, hedging, JANET_GOLD).checked_steps == 0
    copied = ["Janet's ducks lay 16 eggs per day.", "She eats 3 and bakes with 4.", "Each egg sells for $2."]
    result = verdict(JANET, copied, JANET_GOLD)
    assert result.index == -1 and result.checked_steps == 0  # the question's numbers alone: nothing worked out
    early = ["She makes $18 every day.", "That is what she makes at the market."]
    result = verdict(JANET, early, JANET_GOLD)
    assert result.index == -1 and result.checked_steps == 0  # the gold answer, not worked out: a leap
    assert verdict(JANET, early, JANET_GOLD, leap="flag").index == 0


def test_no_gold_solution_is_no_opinion():
    assert read_reference(JANET, "18") is None and read_reference(JANET, "#### 18") is None
    result = verdict(JANET, ["She has 16 - 3 - 4 = 9 eggs."], "18")
    assert result.index is None and result.status == "no_reference"


def test_component_scores_through_the_reference_backend():
    (spec,) = parse_rewards({"first_error": {"backend": "reference"}})
    mix = RewardMix([spec])
    completions = [
        "She uses 3 + 4 = 7 eggs.\nShe sells 16 - 7 = 9 eggs.\nShe makes 9 x $2 = $18.\n#### 18",
        "She uses 3 + 4 = 7 eggs.\nShe has 16 + 7 = 23 eggs.\nShe makes 23 x $2 = $46.\n#### 46",
        "I think it is about right.\nProbably.\n#### 18",
        "#### 18",
        "She uses 3 + 4 = 7 eggs.\nShe sells 16 - 7 = 9 eggs.\n#### 18",
    ]
    golds = [JANET_GOLD] * 4 + ["18"]
    outputs = mix.score_all(RewardBatch.from_texts(completions, [JANET] * 5, golds))
    output = outputs["first_error"]
    assert output.scores[:4] == [0.0, -1.0, -1.0, -1.0]
    assert output.scores[4] is None  # a bare gold answer: no opinion, resolved by the fallback
    assert output.failures["no_reference"] == 1
    assert [d["verdict"] for d in output.details] == ["ok", "ok", "unverified", "no_steps", "no_reference"]
    assert output.step_scores[1] == [-1.0, 0.0, 0.0]
    assert "7" in output.details[1]["unreachable"]
    assert output.metrics["no_reference_fraction"] == pytest.approx(0.2)
    assert output.metrics["unverified_fraction"] == pytest.approx(0.2)


def test_the_judge_always_sees_the_whole_gold_solution():
    component = FirstErrorReward(ReferenceSettings())
    assert component.make_item(JANET, ("x",), JANET_GOLD).gold == JANET_GOLD
    with pytest.raises(
        ConfigError,
        match=r"^rewards\.first_error\.reference: backend 'reference' does not read "
        r"reference; only backends 'openai', 'hf' do$",
    ):
        parse_rewards({"first_error": {"backend": "reference", "reference": "answer"}})


def test_settings_reach_the_judge_and_are_validated_with_did_you_mean():
    settings = ReferenceSettings(
        max_depth=2, transformations=["units"], off_path="flag", leap="flag", check_arithmetic=False
    )
    judge = build_judge(settings)
    assert isinstance(judge, ReferenceJudge)
    assert judge.rules == ReferenceRules(
        max_depth=2, transformations=("units",), off_path="flag", leap="flag", check_arithmetic=False
    )
    with pytest.raises(
        ConfigError, match=r"rewards\.first_error\.max_deph: unknown key \(did you mean 'max_depth'\?\)"
    ):
        parse_rewards({"first_error": {"backend": "reference", "max_deph": 2}})
    with pytest.raises(ConfigError, match=r"transformations\[0\]: invalid value 'unit'.*did you mean 'units'"):
        parse_rewards({"first_error": {"backend": "reference", "transformations": ["unit"]}})
    with pytest.raises(ConfigError, match=r"off_path: invalid value 'look_ahead'.*did you mean 'lookahead'"):
        parse_rewards({"first_error": {"backend": "reference", "off_path": "look_ahead"}})
    with pytest.raises(ConfigError, match=r"backend: invalid value 'referense'.*did you mean 'reference'"):
        parse_rewards({"first_error": {"backend": "referense"}})
    with pytest.raises(ConfigError, match=r"max_depth: must be 0, 1 or 2"):
        parse_rewards({"first_error": {"backend": "reference", "max_depth": 3}})


def test_the_gold_is_read_once_and_each_item_costs_the_same(monkeypatch):
    """Fifty items on one gold solution: the gold is read once, and the judge's work (values inserted
    into its sets, counted) is fifty times one item's once the gold is read."""
    calls = _count_adds(monkeypatch)
    read_reference.cache_clear()
    judge = ReferenceJudge()
    item = JudgeItem(
        JANET, ("She uses 3 + 4 = 7 eggs.", "She sells 16 - 7 = 9 eggs.", "She makes 9 x $2 = $18."), JANET_GOLD
    )
    assert judge.judge_sync([item])[0].index == -1  # reads the gold
    with_gold, calls["n"] = calls["n"], 0
    assert judge.judge_sync([item])[0].index == -1
    one, calls["n"] = calls["n"], 0
    verdicts = judge.judge_sync([item] * 50)
    assert all(v.index == -1 for v in verdicts)
    assert read_reference.cache_info().misses == 1
    assert 0 < one < with_gold and calls["n"] == 50 * one, (with_gold, one, calls["n"])


def test_validate_prints_the_reference_judge_next_to_the_arithmetic_one(tmp_path, capsys):
    """The recipe's two judges on the shipped real MR-GSM8K fixture (250 flawed solutions, MIT):
    localisation of each, side by side, through procrl validate."""
    import json
    from pathlib import Path

    from procrl.launch.cli import main

    repo = Path(__file__).resolve().parent.parent
    out = tmp_path / "v"
    assert (
        main(
            [
                "validate",
                "--recipe",
                str(repo / "recipes" / "gsm8k_reference.yaml"),
                "--data",
                str(repo / "tests" / "data" / "validate" / "mr_gsm8k_sample.json"),
                "--output-dir",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    table = capsys.readouterr().out
    lines = {
        line.split()[0]: line for line in table.splitlines() if line.startswith(("first_error ", "arithmetic_check "))
    }
    assert set(lines) == {"first_error", "arithmetic_check"} and "acc_err" in table and "F1" in table
    report = json.loads((out / "report.json").read_text())
    reference, arithmetic = report["components"]["first_error"], report["components"]["arithmetic_check"]
    assert (reference["backend"], arithmetic["backend"]) == ("reference", "arithmetic")
    assert arithmetic["weight"] == 0.0
    # measured on these 250: the reference judge localises the labelled first error about twice as often
    assert reference["localisation"]["acc_err"] > 1.5 * arithmetic["localisation"]["acc_err"]
    assert reference["localisation"]["error_found"] > 0.6 > arithmetic["localisation"]["error_found"]
    assert reference["failures"]["no_reference"] <= 10  # MR-GSM8K's few reversed rows whose gold is a bare number


# --- a wrong final answer names a step ------------------------------------------------------------

MIA = "Mia buys 2 packs of 12 stickers. She puts 4 stickers on each page. How many pages does she fill?"
MIA_GOLD = "She has 2 * 12 = <<2*12=24>>24 stickers.\nShe fills 24 / 4 = <<24/4=6>>6 pages.\n#### 6"
SAM = "Sam read 10 pages on Monday and 6 more pages on Tuesday than on Monday. How many pages did he read in all?"
SAM_GOLD = "On Tuesday he read 10 + 6 = <<10+6=16>>16 pages.\nIn all he read 10 + 16 = <<10+16=26>>26 pages.\n#### 26"


def test_a_misread_each_with_a_wrong_answer_is_blamed_where_it_is_computed():
    # "4 stickers on each page" read as 12 on each page: 24 / 12 = 2 lands on a constant, every
    # value is known, and no calculation is false; the wrong answer 2 names the step computing it
    steps = ["She has 2 * 12 = 24 stickers.", "Each page holds 12 stickers, so she fills 24 / 12 = 2 pages."]
    assert verdict(MIA, steps, MIA_GOLD).index == -1  # without the answer: nothing to see
    result = judge_steps(MIA, tuple(steps), MIA_GOLD, answer=2.0)
    assert result.index == 1 and "final answer 2" in result.note
    assert (
        judge_steps(MIA, ("She has 2 * 12 = 24 stickers.", "She fills 24 / 4 = 6 pages."), MIA_GOLD, answer=6.0).index
        == -1
    )  # the right answer: no change


def test_a_wrong_operation_stated_in_words_with_a_gold_value_as_answer():
    # "6 more pages on Tuesday than on Monday" taken as the total: 10 + 6 = 16 is on the gold's path
    steps = ["Sam read 10 pages on Monday.", "On Tuesday he read 6 more, so in all he read 10 + 6 = 16 pages."]
    assert judge_steps(SAM, tuple(steps), SAM_GOLD, answer=16.0).index == 1


TRIP = "A school trip costs $300. The school pays half of it and John has $50. How much more money does John need?"
TRIP_GOLD = (
    "The school pays 300 / 2 = <<300/2=150>>150.\nJohn has 150 + 50 = <<150+50=200>>200.\n"
    "He needs 300 - 200 = <<300-200=100>>100 more.\n#### 100"
)
ANDREA = "Andrea had $36. She spent $11 on a sweater and gave her brother $4. How much did she save?"
ANDREA_GOLD = "She spent 11 + 4 = <<11+4=15>>15.\nShe saved 36 - 15 = <<36-15=21>>21.\n#### 21"


def test_a_gold_value_taken_as_the_answer_is_blamed_where_it_is_committed_as_the_answer():
    # the school's half is right at step 0; "300 - 150 = 150" forgets John's $50 and commits the
    # gold's 150 as the answer: every value is on the path, the last calculation of it is the error
    steps = ["The school pays $300 / 2 = $150.", "So John needs $300 - $150 = $150 more."]
    assert judge_steps(TRIP, tuple(steps), TRIP_GOLD).index == -1  # without the answer: nothing to see
    result = judge_steps(TRIP, tuple(steps), TRIP_GOLD, answer=150.0)
    assert result.index == 1 and "final answer 150" in result.note
    # stated without a calculation after it: the calculation is still the one named
    assert judge_steps(TRIP, (*steps[:1], "John needs $150 more."), TRIP_GOLD, answer=150.0).index == 0
    # the right chain: no change
    right = ("The school pays $300 / 2 = $150.", "He has $150 + $50 = $200.", "He needs $300 - $200 = $100.")
    assert judge_steps(TRIP, right, TRIP_GOLD, answer=100.0).index == -1


def test_a_gold_value_taken_as_the_answer_through_an_equation_is_blamed_where_it_is_set_up():
    # "x - $15 = $0" sets up the wrong equation (she had $36): its solution 15 is the gold's spending,
    # and the later "x = $15" only solves it
    steps = [
        "Let x be what Andrea saved.",
        "She spent $11 + $4 = $15.",
        "She was left with nothing, so x - $15 = $0.",
        "Adding $15 to both sides, x = $15.",
    ]
    result = judge_steps(ANDREA, tuple(steps), ANDREA_GOLD, answer=15.0)
    assert result.index == 2 and "final answer 15" in result.note


def test_a_wrong_answer_is_blamed_on_the_first_value_off_the_path():
    # 13 leaves the gold's path (the lookahead lets it through: 13 - 4 = 9 comes back to it), and the
    # answer 18 + 9 = 27 is wrong: the chain left the path at step 0 (not where the answer is stated)
    steps = [
        "She has 16 - 3 = 13 eggs after breakfast.",
        "Then 13 - 4 = 9 eggs are left.",
        "She makes 9 x $2 = $18.",
        "With the 9 eggs she keeps, that is 18 + 9 = 27.",
    ]
    assert judge_steps(JANET, tuple(steps[:3]), JANET_GOLD, answer=18.0).index == -1
    result = judge_steps(JANET, tuple(steps), JANET_GOLD, answer=27.0)
    assert result.index == 3  # 27 is off the path and leads nowhere: flagged by the rule itself
    wrong_label = ["She has 16 - 3 = 13 eggs after breakfast.", "Then 13 - 4 = 9 eggs are left.", "She makes $9."]
    assert judge_steps(JANET, tuple(wrong_label), JANET_GOLD, answer=9.0).index == 0


def test_a_wrong_answer_without_a_verdict_stays_no_opinion_and_never_blames_the_answer_line():
    result = judge_steps(JANET, ("She has 16 - 3 - 4 = 9 eggs.",), "18", answer=9.0)
    assert result.index is None and result.status == "no_reference"
    # the answer only in the answer line (no step states it): no step to name
    result = judge_steps(JANET, ("She has 16 - 3 - 4 = 9 eggs.", "She makes 9 * 2 = $18."), JANET_GOLD, answer=20.0)
    assert result.index == -1
    (spec,) = parse_rewards({"first_error": {"backend": "reference"}})
    output = RewardMix([spec]).score_all(
        RewardBatch.from_texts(
            ["She has 2 * 12 = 24 stickers.\nEach page holds 12 stickers, so she fills 24 / 12 = 2 pages.\n#### 2"],
            [MIA],
            [MIA_GOLD],
        )
    )["first_error"]
    assert output.scores == [-1.0] and output.details[0]["index"] == 1  # through the component: the answer line read


def _mr_gsm8k_row(uuid):
    import json
    from pathlib import Path

    rows = json.loads((Path(__file__).parent / "data" / "validate" / "mr_gsm8k_sample.json").read_text())
    row = next(r for r in rows if r["uuid"] == uuid)
    steps = tuple(s.split(": ", 1)[1] for s in row["model_output_steps"] if "####" not in s and "answer is" not in s)
    return row, steps


@pytest.mark.parametrize(
    "uuid, answer, step",
    [
        ("893fac38-641f-410e-9a0d-498a2ed57d31", 3.0, 1),  # misread "each": 10 M&M per small bag taken as 10 ounces
        ("328906bd-02bb-46d5-821a-a54a6936ee9a", 2.0, 2),  # in words: "two-thirds are to family, so 6 emails left"
        ("1884c208-2140-43a7-99bf-30a21a7590bf", 4.0, 3),  # the wrong answer restated, no false calculation
        ("906504f1-b345-4a1b-b88e-2aa4c63d2a21", 20.0, 2),  # the gold's 20 committed as the answer: "20-0 = 20"
    ],
)
def test_real_mr_gsm8k_wrong_answers_are_blamed_on_the_labelled_step(uuid, answer, step):
    """Real flawed solutions of MR-GSM8K (MIT; tests/data/validate) whose every calculation is true and
    lands on a known value: the human label (1-based in the data) is the step named."""
    row, steps = _mr_gsm8k_row(uuid)
    assert int(row["model_output_solution_first_error_step"]) - 1 == step
    assert judge_steps(row["question"], steps, row["ground_truth_solution"]).index == -1
    assert judge_steps(row["question"], steps, row["ground_truth_solution"], answer=answer).index == step


def test_the_stated_final_answer_is_an_explicit_one():
    from procrl.rewards.judges.reference import stated_final_answer

    assert stated_final_answer("So 3 bags.\n#### 3") == 3.0
    assert stated_final_answer("The answer is: 12") == 12.0
    assert stated_final_answer("She has 16 - 3 = 13 eggs") is None  # a solution cut short states no answer
    assert stated_final_answer(None) is None


def test_the_concluded_answer_is_what_a_closing_sentence_concludes():
    from procrl.rewards.judges.reference import concluded_answer

    assert concluded_answer("x = 4.\n\nSo, Soledad needs to hike 185 miles per day to finish on time.") == 185.0
    assert concluded_answer("He has 7 + 4 = 11.\n\nIn total, Randy now has 11 + 7 + 7 = 25 cookies.") == 25.0
    assert concluded_answer("Therefore, Brian will walk 70 / 2 = 35 miles in 7 days.") == 35.0  # after the "="
    assert concluded_answer("So, Sally got $1,200 more, and $1,200 was withheld.") == 1200.0  # one value, twice
    assert concluded_answer("Therefore, it takes Carla 120 minutes to download the 200 GB file.") is None  # which?
    assert concluded_answer("So 3 bags.\n#### 3") is None  # an explicit answer is stated_final_answer's
    assert concluded_answer("She has 16 - 3 = 13 eggs.") is None  # no conclusion drawn
    assert concluded_answer(None) is None


# few-shot replies state no answer line: they close with a conclusion. Every quantity here is
# accepted ("$18 + $3 = $21" is one operation with a question number from the gold's answer, as a
# decomposition would be), so without the conclusion the chain is "no error"
JANET_FEW_SHOT = (
    "She has 16 - 3 - 4 = 9 eggs left to sell.",
    "She makes 9 x $2 = $18 from them.",
    "Her family pays $3 for the eggs she eats, so $18 + $3 = $21.",
    "So, Janet makes $21 every day.",
)


def test_a_wrong_conclusion_off_the_path_is_a_wrong_answer():
    from procrl.rewards.judges.reference import concluded_answer

    concluded = concluded_answer("\n\n".join(JANET_FEW_SHOT))
    assert concluded == 21.0
    assert judge_steps(JANET, JANET_FEW_SHOT, JANET_GOLD).index == -1
    result = judge_steps(JANET, JANET_FEW_SHOT, JANET_GOLD, concluded=concluded)
    assert result.index == 2 and "final answer 21" in result.note  # where the chain left the path


def test_a_conclusion_on_the_path_or_the_gold_answer_is_no_wrong_answer():
    # a solution cut short closes on a value of the gold's path: it states no final answer
    cut = ("She has 16 - 3 - 4 = 9 eggs left.", "So, Janet sells 9 eggs.")
    assert judge_steps(JANET, cut, JANET_GOLD, concluded=9.0).index == -1
    assert judge_steps(JANET, cut, JANET_GOLD, answer=9.0).index == 0  # an explicit answer of 9 is wrong
    sound = ("She has 16 - 3 - 4 = 9 eggs.", "She makes 9 x $2 = $18.", "So, Janet makes $18 every day.")
    assert judge_steps(JANET, sound, JANET_GOLD, concluded=18.0).index == -1
    copied = ("Janet's ducks lay 16 eggs per day.", "So, the ducks lay 16 eggs.")
    assert judge_steps(JANET, copied, JANET_GOLD, concluded=16.0).index is not None  # a question number
    assert judge_steps(JANET, copied, JANET_GOLD, concluded=16.0).index == judge_steps(JANET, copied, JANET_GOLD).index


def test_the_component_reads_a_few_shot_conclusion():
    (spec,) = parse_rewards({"first_error": {"backend": "reference"}})
    output = RewardMix([spec]).score_all(RewardBatch.from_texts(["\n\n".join(JANET_FEW_SHOT)], [JANET], [JANET_GOLD]))[
        "first_error"
    ]
    assert output.scores == [-1.0] and output.details[0]["index"] == 2


# --- bounded work -------------------------------------------------------------------------------


def _count_adds(monkeypatch):
    from procrl.rewards.judges import reference

    calls = {"n": 0}
    add = reference.Values.add

    def counted(self, value):
        calls["n"] += 1
        return add(self, value)

    monkeypatch.setattr(reference.Values, "add", counted)
    return calls


def test_the_judge_s_work_grows_linearly_with_the_completion(monkeypatch):
    """Values inserted into the judge's sets, counted: 4x the steps is at most ~4x the work (a set
    of known values rebuilt at every quantity is quadratic)."""
    calls = _count_adds(monkeypatch)
    line = ("She uses 3 + 4 = 7 eggs.", "She sells 16 - 7 = 9 eggs.", "She makes 9 x $2 = $18.")
    work = []
    for repeats in (10, 40):
        read_reference.cache_clear()
        calls["n"] = 0
        assert judge_steps(JANET, line * repeats, JANET_GOLD).index == -1
        work.append(calls["n"])
    assert work[1] <= 5 * work[0], work


def test_a_long_gold_is_read_in_linear_work_and_a_huge_one_is_capped(monkeypatch):
    from procrl.rewards.judges import reference
    from procrl.rewards.judges.reference import gold as gold_reading

    def gold(lines):
        return (
            JANET_GOLD.split("####")[0]
            + "".join(f"She adds {i} + 1 = <<{i}+1={i + 1}>>{i + 1} eggs.\n" for i in range(lines))
            + "#### 18"
        )

    calls = {"n": 0}
    flatten = gold_reading._flatten

    def counted(*args):
        calls["n"] += 1
        return flatten(*args)

    monkeypatch.setattr(gold_reading, "_flatten", counted)
    work = []
    for lines in (50, 200):  # each gold result feeds the next calculation: expanded, a chain that grows
        read_reference.cache_clear()
        calls["n"] = 0
        read_reference(JANET, gold(lines))
        work.append(calls["n"])
    assert work[1] <= 5 * work[0], work
    read_reference.cache_clear()
    huge = gold(25_000)  # ~1 MB
    assert len(huge) > 900_000
    result = judge_steps(
        JANET, ("She uses 3 + 4 = 7 eggs.", "She sells 16 - 7 = 9 eggs.", "She makes 9 x $2 = $18."), huge
    )
    assert result.index == -1 and result.status == "ok"
    assert f"first {reference.MAX_READ_CHARS} characters" in result.note
    assert read_reference(JANET, huge).answer == 18.0  # the answer line is read wherever it is


def test_more_quantities_than_the_judge_reads_is_too_long_unless_an_error_comes_first():
    from procrl.rewards.judges import reference

    line = ("She uses 3 + 4 = 7 eggs.", "She sells 16 - 7 = 9 eggs.", "She makes 9 x $2 = $18.")
    repeats = reference.MAX_QUANTITIES // 8 + 1  # 8 quantities per repeat
    result = judge_steps(JANET, line * repeats, JANET_GOLD)
    assert result.index is None and result.status == "too_long"
    wrong = ("She has 16 - 3 = 12 eggs.",) + line * repeats
    assert judge_steps(JANET, wrong, JANET_GOLD).index == 0  # an error among the quantities read is still found
    (spec,) = parse_rewards({"first_error": {"backend": "reference"}})
    output = RewardMix([spec]).score_all(RewardBatch.from_texts(["\n".join(line * repeats)], [JANET], [JANET_GOLD]))
    assert output["first_error"].failures["too_long"] == 1  # counted; the fallback gives the score


def test_a_chain_ending_on_the_gold_answer_is_not_blamed_for_its_answer_line():
    # "our answer is 5/24 ... so m + n = 29": the answer line read (5/24) is not what the chain ends on
    steps = ["She uses 3 + 4 = 7 eggs.", "She sells 16 - 7 = 9 eggs.", "She makes 9 x $2 = $18."]
    assert judge_steps(JANET, tuple(steps), JANET_GOLD, answer=9.0).index == -1


SHELVES = "Each of 4 shelves holds 5 boxes, and each box holds 6 books. How many books are there?"
SHELVES_GOLD = "There are 4 * 5 = <<4*5=20>>20 boxes.\nThey hold 20 * 6 = <<20*6=120>>120 books.\n#### 120"


def test_a_decomposition_one_operation_from_the_answer_is_not_the_error():
    # 5 * 6 = 30 books per shelf is off the gold's path, and 4 x 30 is the gold's answer: a correct
    # decomposition the gold does not write; the error is the step after it
    assert (
        verdict(SHELVES, ["Each shelf holds 5 * 6 = 30 books.", "So there are 30 * 4 = 120 books."], SHELVES_GOLD).index
        == -1
    )
    assert (
        verdict(SHELVES, ["Each shelf holds 5 * 6 = 30 books.", "So there are 30 + 4 = 34 books."], SHELVES_GOLD).index
        == 1
    )
    # a wrong operation whose result is one operation from nothing on the path is still flagged there
    assert (
        verdict(SHELVES, ["Each shelf holds 5 + 6 = 11 books.", "So there are 11 * 4 = 44 books."], SHELVES_GOLD).index
        == 0
    )


def test_real_decomposition_then_a_wrong_operation_is_blamed_on_the_wrong_one():
    """MR-GSM8K (MIT): "300 * 10 = 3000 hours" per playlist is right (the gold multiplies 20 * 300
    first); "3000 hours / 20 playlists = 150" is the labelled error."""
    row, steps = _mr_gsm8k_row("b0ee94ed-8f2b-4adb-8265-d44570a944c2")
    assert int(row["model_output_solution_first_error_step"]) - 1 == 1
    assert judge_steps(row["question"], steps, row["ground_truth_solution"]).index == 1


def test_the_tiny_reasoners_flaws_are_caught_at_their_step():
    """Hand-labelled first wrong steps of the tiny reasoner's own greedy completions (30 of the
    shipped model's, 20 after 60 steps of process GRPO on this judge): a misread operand, a wrong
    result carried on, a wrong result written beside a right calculation, a right answer reached
    through a wrong step. The reference judge names the labelled step of each."""
    rows = [json.loads(line) for line in (DATA / "tiny_reasoner_first_errors.jsonl").read_text().splitlines()]
    (spec,) = parse_rewards({"first_error": {"backend": "reference"}})
    batch = RewardBatch.from_texts(
        [r["completion"] for r in rows], [r["question"] for r in rows], [r["answer"] for r in rows]
    )
    details = RewardMix([spec]).score_all(batch)["first_error"].details
    assert len(rows) == 50 and any(r["first_error_step"] == 2 for r in rows)
    assert [d["index"] for d in details] == [r["first_error_step"] for r in rows]


def test_a_result_restated_in_a_second_role_is_blamed_where_it_is_restated():
    # "the chickens cost him $180 each": the number of chickens, computed in step 0, restated in a
    # step of its own with no calculation as a price; "180 * 300" only shows the wrong role
    computed = "He sells 3/5 * 300 = 180 chickens."
    wrong_role = "The chickens cost him $180 each."
    uses_it = "So he paid 180 * 300 = $54000."
    result = verdict(ISAIAS, [computed, wrong_role, uses_it], ISAIAS_GOLD)
    assert result.index == 1 and "which step 2 uses" in result.note
    assert verdict(ISAIAS, [computed, uses_it], ISAIAS_GOLD).index == 1  # no restatement: the calculation
    # a restatement used rightly is no error
    right = [computed, "He takes the 180 chickens to the market.", "He gets 180 * 50 = $9000."]
    assert verdict(ISAIAS, right + ["He bought them for 9000 - 2000 = $7000."], ISAIAS_GOLD).index == -1
    # a step that works the value out again, or names an operation, is not a bare restatement
    again = "The chickens cost him $180 + $0 = $180 each."
    assert verdict(ISAIAS, [computed, again, uses_it], ISAIAS_GOLD).index == 2
    assert verdict(ISAIAS, [computed, "We multiply by the price, $180.", uses_it], ISAIAS_GOLD).index == 2
    # a question number restated keeps the question's role: the calculation is blamed
    assert verdict(ISAIAS, ["He has 300 chickens.", "So he paid 300 * 300 = $90000."], ISAIAS_GOLD).index == 1
    # a conclusion sums up the steps before it: "So he sells 180 chickens." gives no second role
    assert verdict(ISAIAS, [computed, "So he sells 180 chickens.", uses_it], ISAIAS_GOLD).index == 2


def test_real_restated_result_in_a_second_role_is_the_labelled_step():
    """MR-GSM8K (MIT), GSM8K test question: the sapphires' value computed for all 8 (step 0), then
    "still $6400" after 3 were traded (step 2, the human label); step 4 adds it up."""
    question = (
        "Jenna starts out with 8 sapphires. She trades 3 sapphires for two rubies. If sapphires are worth $800 and "
        "rubies are worth $1200, how much money are all her jewels worth?"
    )
    gold = (
        "First find the total number of sapphires Jenna still has: 8 sapphires - 3 sapphires = <<8-3=5>>5 sapphires\n"
        "Then multiply this number by the cost per sapphire to find the total cost of the sapphires: 5 sapphires * "
        "$800/sapphire = $<<5*800=4000>>4000\nThen find the total value of the rubies: 2 rubies * $1200/ruby = "
        "$<<2*1200=2400>>2400\nThen amount this to the cost of the sapphires to find the total value of her jewelry: "
        "$2400 + $4000 = $<<2400+4000=6400>>6400\n#### 6400"
    )
    steps = [
        "Jenna starts with 8 sapphires, which are worth $800 each, so the total value of the sapphires is 8 * $800 = "
        "$6400.",
        "She trades 3 sapphires for 2 rubies, so she now has 8 - 3 = 5 sapphires left.",
        "The value of the sapphires is still $6400.",
        "The value of the rubies is $1200 each, so the total value of the 2 rubies is 2 * $1200 = $2400.",
        "Therefore, the total value of all her jewels is $6400 + $2400 = $8800.",
    ]
    result = judge_steps(question, tuple(steps), gold, answer=8800.0)
    assert result.index == 2 and "step 4 uses" in result.note


THERAPY = (
    "John injured his back and needs to go to physical therapy.  He went to physical therapy for 6 weeks.  Each week "
    "he went twice for 2 hours at a time.  If the sessions cost $125 per hour how much did the physical therapy cost?"
)
THERAPY_GOLD = (
    "Each week he did 2*2=<<2*2=4>>4 hours of physical therapy\nSo it cost 4*125=$<<4*125=500>>500 per week\n"
    "This means he spent 500*6=$<<500*6=3000>>3000\n#### 3000"
)


def test_a_decomposition_through_a_value_that_is_a_conversion_factor_passes():
    # 12 sessions, then 24 hours (24: the hours of a day, so accepted as known), then the gold's
    # 3000: the chain leaves the path at 12 and comes back through 24, written as Qwen writes
    steps = [
        r"**Total number of sessions:** \[ 2 \text{ sessions/week} \times 6 \text{ weeks} = 12 \text{ sessions} \]",
        r"**Total hours:** \[ 12 \text{ sessions} \times 2 \text{ hours/session} = 24 \text{ hours} \]",
        r"**Total cost:** \[ 24 \text{ hours} \times 125 \text{ dollars/hour} = 3000 \text{ dollars} \]",
    ]
    assert verdict(THERAPY, steps, THERAPY_GOLD).index == -1
    wrong_cost = r"**Total cost:** \[ 24 \text{ hours} \times 100 \text{ dollars/hour} = 2400 \text{ dollars} \]"
    wrong = [*steps[:2], wrong_cost]
    assert verdict(THERAPY, wrong, THERAPY_GOLD).index == 0  # 12 leads nowhere then: flagged where it is stated


def test_a_decomposition_into_a_slip_is_blamed_on_the_slip():
    # 3 + 4 = 7 leaves the gold's path; the next calculation would bring it back (16 - 7 = 9) but
    # is false: the decomposition was right and the error is the slip, not the step before it
    slip = ["She uses 3 + 4 = 7 eggs.", "She sells 16 - 7 = 8 eggs.", "She makes 8 * 2 = $16."]
    result = verdict(JANET, slip, JANET_GOLD)
    assert result.index == 1 and "false calculation" in result.note
    assert verdict(JANET, ["She uses 3 + 4 = 7 eggs.", "She sells 16 - 7 = 9 eggs."], JANET_GOLD).index == -1
    # a true calculation that leads nowhere is still the error where it is stated
    assert verdict(JANET, ["She uses 3 + 4 = 7 eggs.", "She sells 16 + 7 = 22 eggs."], JANET_GOLD).index == 0


def test_real_decomposition_into_a_slip_is_the_labelled_step():
    """MR-GSM8K (MIT): "$3.00 / 10 = $0.30" of bread per sandwich is right (the gold adds the loaf to
    the cheese first); "$0.30 x 10 + $30.00 = $30.00 + $30.00 = $60.00" is the labelled slip."""
    row, steps = _mr_gsm8k_row("15ad9675-ca3e-432d-b734-2334b72d1d9b")
    assert int(row["model_output_solution_first_error_step"]) - 1 == 5
    assert judge_steps(row["question"], steps, row["ground_truth_solution"]).index == 5


def test_a_number_read_wrong_into_a_known_value_is_no_decomposition():
    # the tiny reasoner's own slip: "11 + 10 = 21" misreads the question's 21 and lands on it; 21
    # carries the chain on, but 11 is a number read wrong, not a result: step 1 is the error
    question = (
        "Chloe has 21 stickers. She buys 5 packs with 2 stickers in each pack, then gives 5 stickers to a friend. "
        "How many stickers does Chloe have now?"
    )
    gold = (
        "Chloe buys 5 x 2 = <<5*2=10>>10 stickers.\nThen she has 21 + 10 = <<21+10=31>>31 stickers.\n"
        "After giving some away, she has 31 - 5 = <<31-5=26>>26 stickers.\n#### 26"
    )
    steps = (
        "Chloe buys 5 x 2 = <<5*2=10>>10 stickers.",
        "Then she has 11 + 10 = <<11+10=21>>21 stickers.",
        "After giving some away, she has 21 - 5 = <<21-5=16>>26 stickers.",
    )
    assert judge_steps(question, steps, gold, answer=16.0).index == 1


def test_the_solution_of_an_equation_in_one_unknown():
    from procrl.rewards.judges.reference.equations import solutions

    def solved(text):
        return [round(s.value, 4) for s in solutions(text)]

    assert solved("We can set up the equation:\n\nx + (x + 7) + (x + 7) + (x + 7) = 44") == [5.75]
    assert solved("Combine like terms: 4x + 21 = 44") == [5.75]
    assert solved("3(30 + x) = 30 + x + 75 - x") == [5.0]
    assert solved("\\[\n\\frac{3}{4}M = 60\n\\]") == [80.0]  # LaTeX, an upper-case unknown
    assert solved("So, the cost of climbing all the branches is $.25 * x = $105.") == [420.0]
    assert solved("the number of years since James was born is 19 + x = 32.") == [13.0]
    # not equations to solve: a product sign, an unknown given a number, two unknowns, not linear
    assert solved("3 x 4 = 12") == [] and solved("x = 14.") == [] and solved("x = -24") == []
    assert solved("x = 28/2") == [] and solved("$d = 75$") == []  # an unknown given a value: stated
    # MATH notation: a subscript, a function, a factorial, a power, two display blocks side by side
    assert solved("$a_1 + 3d = 200$") == [] and solved("$g(6) = 6+1$") == [] and solved("6C5 = 6! / 5!") == []
    assert solved("$\\sin (2y) = \\frac{1}{3}$") == [] and solved("$r=2^{1/8}$") == []
    assert solved("\\[ 1200x = 1500000 \\] \\[ x = \\frac{1500000}{1200} \\]") == []  # run together: not read
    assert solved("L + 6(4x + 6y) = 80") == [] and solved("60/x = 12") == [] and solved("x + 1 = x + 2") == []
    assert solved("Number of chairs = 20 + 2") == []  # words, not an unknown
    assert [s.operands for s in solutions("20 * x = 120 + 67")] == [(20.0, 120.0, 67.0)]


TWINS = (
    "The combined age of two twins and three triplets is 44. One of the twins is 7 years older than one of the "
    "triplets. How old is one of the twins?"
)
TWINS_GOLD = "Let T be a triplet's age: 2 * (T + 7) + 3T = 44\n5T + 14 = 44\n5T = 30\nT = <<30/5=6>>6\n" + (
    "Twin = 6 + 7 = <<6+7=13>>13\n#### 13"
)


def test_an_equation_set_up_wrong_is_the_error_where_it_is_set_up():
    # one triplet and three twins instead of three triplets and two twins: the set-up commits to
    # x = 5.75 though it writes no number for it; the step that spells 5.75 out only shows it
    wrong = [
        "Let x be the age of one triplet, so a twin is x + 7.",
        "We can set up an equation: x + (x + 7) + (x + 7) + (x + 7) = 44",
        "Combine like terms: 4x + 21 = 44",
        "So x = 5.75 and a twin is 5.75 + 7 = 12.75.",
    ]
    assert verdict(TWINS, wrong, TWINS_GOLD).index == 1
    sound = [
        "Let x be the age of one triplet, so a twin is x + 7.",
        "We can set up an equation: 2(x + 7) + 3x = 44",
        "Combine like terms: 5x + 14 = 44",
        "So x = 6 and a twin is 6 + 7 = 13.",
    ]
    assert verdict(TWINS, sound, TWINS_GOLD).index == -1


@pytest.mark.parametrize(
    "uuid, answer, step",
    [
        ("33acf272-121e-499c-8e35-1364216be2fd", 121.0, 3),  # "x - $71 = $50": the subtraction reversed
        ("4020b2b9-8a19-4ffa-a78b-212da590e204", 9.0, 2),  # "20 * x = 120 + 67": 67 counted twice
        ("656ef435-c5a1-4a14-8b34-cfa04059a82a", 15.0, 4),  # "63 - (x + 40) + 15 = 63"
        ("8e087e67-08d9-42a2-ad9b-1c2cddffe98b", 14.0, 2),  # "28 = 2x": twice the fish of both, not of each
    ],
)
def test_real_equations_set_up_wrong_are_the_labelled_step(uuid, answer, step):
    """MR-GSM8K (MIT): solutions that set up a wrong equation and solve it right; the human label is
    the set-up, which states no number of its own (the judge used to flag where the solution is
    spelled out, or after)."""
    row, steps = _mr_gsm8k_row(uuid)
    assert int(row["model_output_solution_first_error_step"]) - 1 == step
    assert judge_steps(row["question"], steps, row["ground_truth_solution"], answer=answer).index == step


def test_a_result_written_as_a_fraction_states_the_fraction():
    from procrl.rewards.judges.reference.steps import step_quantities

    def results(text):
        return [round(q.value, 4) for q in step_quantities(0, text) if q.operands is not None and not q.fraction]

    assert results("Team A scores 1/4 * 2 = 1/2 goal.") == [0.5]  # not 1, the first number after "="
    assert results("He drinks 2/30 = 1/15 bottles a minute.") == [0.0667]
    assert results("So 3 * 2 = 6 * 4 = 24.") == [6.0, 24.0]  # a chain: each result its own


def test_a_result_one_operation_from_a_constant_is_no_decomposition():
    # 50 km/h x 3 days = 150 km (the days never turned into hours) is off the gold's path; "150 - 50 =
    # 100" would reach the percent's 100 (a gold value here), which every solution may write: that is
    # no way back to the path, and the error is where 150 is stated, not where the percentage is
    question = (
        "Michael drives 50 km per hour without stopping for 3 days. The trip is 6000 km long. "
        "What percentage of the trip has he driven?"
    )
    gold = (
        "3 days are 3 * 24 = <<3*24=72>>72 hours.\nHe drives 50 * 72 = <<50*72=3600>>3600 km.\n"
        "That is (3600 / 6000) * 100% = 60%.\n#### 60"
    )
    steps = (
        "He drives 50 km/hr x 3 days = 150 km.",
        "To find the percentage, we divide by the whole trip and multiply by 100.",
        "So (150 km / 6000 km) x 100 = 0.025 x 100 = 2.5%.",
    )
    assert judge_steps(question, steps, gold, answer=2.5).index == 0
    right = ("3 days are 72 hours.", "He drives 50 x 72 = 3600 km.", "So (3600 / 6000) x 100 = 60%.")
    assert judge_steps(question, right, gold, answer=60.0).index == -1
    # a step calculating with an unknown keeps its coefficients' benefit of the doubt
    from procrl.rewards.judges.reference.steps import step_quantities

    assert all(q.symbolic for q in step_quantities(0, "so \\( \\frac{2x - 6}{6} \\) are left"))
    assert all(q.symbolic for q in step_quantities(0, "x + 7 = 12"))
    assert not any(q.symbolic for q in step_quantities(0, "So 2 x 5 = 10 slices, 3 x 4 = 12 hours."))


LAWNS = (
    "Tasha mows lawns for $6 an hour. Each lawn takes her 3 hours, and she mows 3 lawns. She wants a bike that "
    "costs $80. How much more money does she need?"
)
LAWNS_GOLD = (
    "Each lawn earns her 6 * 3 = $<<6*3=18>>18.\nThe 3 lawns earn her 18 * 3 = $<<18*3=54>>54.\n"
    "She needs 80 - 54 = $<<80-54=26>>26 more.\n#### 26"
)


def test_a_result_in_the_role_of_another_gold_value_is_blamed_where_it_is_stated():
    # "80 - 18" is the gold's "80 - 54" with the 54 all the lawns paid replaced by 18, which step 1
    # computed for all the lawns (the gold's 18 is one lawn's): the calculation is the right one,
    # the step that put 18 in that role is the error
    steps = [
        "Tasha earns $6 an hour for 3 hours on each lawn.",
        "For the lawns she earns 6 + 6 + 6 = $18.",
        "She needs 80 - 18 = $62 more.",
    ]
    result = verdict(LAWNS, steps, LAWNS_GOLD)
    assert result.index == 1 and "in the role of another gold value, which step 2 uses" in result.note
    # 18 computed the gold's own way is one lawn's pay in its right role: using it for all is the error
    assert verdict(LAWNS, ["Each lawn earns her 6 * 3 = $18.", "She needs 80 - 18 = $62 more."], LAWNS_GOLD).index == 1
    # a question number put in the role is no earlier error: the calculation is
    assert verdict(LAWNS, ["She earns $6 an hour.", "She needs 80 - 6 = $74 more."], LAWNS_GOLD).index == 1
    # another operation on the replaced operand is not the gold's calculation
    other = ["For the lawns she earns 6 + 6 + 6 = $18.", "She needs 80 / 18 = 4.44 times as much."]
    assert "in the role of another gold value" not in (verdict(LAWNS, other, LAWNS_GOLD).note or "")
    right = ["Each lawn earns her 6 * 3 = $18.", "The 3 lawns earn her 18 * 3 = $54.", "She needs 80 - 54 = $26 more."]
    assert verdict(LAWNS, right, LAWNS_GOLD).index == -1


@pytest.mark.parametrize(
    "question, gold, steps, labelled",
    [
        (  # MR-GSM8K (MIT) c9ebc60d: "65/2" halves the concert with its encore; "32.5 - 15" is the gold's "65 - 15"
            "Elaina is holding the final concert in her tour. To celebrate her final concert, she makes the concert "
            "twice as long as her usual concerts. At the end of the concert, she also performs a 15-minute encore. If "
            "the runtime of this final concert is 65 minutes then how long, in minutes, do her usual concerts run for?",
            "The concert, minus the encore, lasted for 65-minute concert – 15-minute encore = <<65-15=50>>50 minutes.\n"
            "This is twice as long as her usual concerts so her usual concert must have a runtime of 50 minutes / 2 = "
            "<<50/2=25>>25 minutes.\n#### 25",
            [
                "The final concert is twice as long as her usual concerts, so the usual concerts run for 65/2 = 32.5 "
                "minutes.",
                "She also performs a 15-minute encore at the end of the concert, so the total length of the usual "
                "concerts is 32.5 - 15 = 17.5 minutes.",
                "Therefore, her usual concerts run for 17.5 minutes.",
            ],
            0,
        ),
        (  # MR-GSM8K (MIT) 03c10711: "18 * 2 = 36" doubles the points; "18 + 36" is the gold's "18 + 18"
            "In a 60-item quiz, 40% of the questions are easy, and the rest are equally divided as average and "
            "difficult questions. If Aries is sure to get 75% of the easy questions, and half of the average and "
            "difficult questions correctly, how many points is she sure to get?",
            "The average and difficult questions comprises 100% - 40% = 60% of the quiz.\nThere are 60 questions x "
            "40/100 = <<60*40/100=24>>24 easy questions.\nThere are a total of 60 questions x 60/100 = "
            "<<60*60/100=36>>36 average and difficult questions.\nIf Aries is sure to get 75% of the easy questions, "
            "then this means she is sure of her 24 questions x 75/100 = <<24*75/100=18>>18 points.\nFrom the average "
            "and difficult questions, she is sure to get half of it correctly so that is 36 questions / 2 = "
            "<<36/2=18>>18 points.\nThus, she is sure of getting 18 points + 18 points = <<18+18=36>>36 points in her "
            "quiz.\n#### 36",
            [
                "There are 60 questions in total.",
                "40% of the questions are easy, so 40/100 * 60 = 24 questions are easy.",
                "The remaining questions are divided equally between average and difficult, so there are 60 - 24 = 36 "
                "average and difficult questions.",
                "Aries is sure to get 75% of the easy questions, so she will get 75/100 * 24 = 18 easy questions "
                "correctly.",
                "She is also sure to get half of the average and difficult questions correctly, so she will get 1/2 * "
                "36 = 18 average and difficult questions correctly.",
                "To calculate the total points, we multiply the number of questions she gets correctly by the points "
                "for each question.",
                "For the easy questions, she gets 18 * 1 = 18 points.",
                "For the average and difficult questions, she gets 18 * 2 = 36 points.",
                "Therefore, Aries is sure to get a total of 18 + 36 = 54 points.",
            ],
            7,
        ),
    ],
)
def test_real_result_in_the_role_of_another_gold_value_is_the_labelled_step(question, gold, steps, labelled):
    """Real flawed solutions of MR-GSM8K with a human first-error label: the flagged calculation is
    the gold's with one operand replaced by an earlier result; the step stating it is the label."""
    result = judge_steps(question, tuple(steps), gold)
    assert result.index == labelled and "in the role of another gold value" in result.note


READING = (
    "Each week, Mia reads 30 pages on Saturday and writes 30 pages on Sunday. She reads 1 page per minute. How many "
    "hours does she spend reading in 6 weeks?"
)
READING_GOLD = (
    "She reads 30 * 6 = <<30*6=180>>180 pages in 6 weeks.\nAt 1 page per minute that is 180 minutes, or 180 / 60 = "
    "<<180/60=3>>3 hours.\n#### 3"
)


def test_a_conversion_factor_the_gold_only_calculates_with_is_not_a_value_of_its_path():
    # "30 + 30 = 60 pages" adds the pages she writes: it lands on the gold's 60, which is minutes per
    # hour there, not a value the gold computes
    reference = read_reference(READING, READING_GOLD)
    assert reference.unit_factors.has(60.0) and not reference.path(ReferenceRules()).has(60.0)
    wrong = [
        "She reads and writes 30 + 30 = 60 pages a week.",
        "In 6 weeks that is 60 x 6 = 360 minutes.",
        "That is 360 / 60 = 6 hours.",
    ]
    assert verdict(READING, wrong, READING_GOLD).index == 0
    # the factor is still a constant to convert with
    assert (
        verdict(
            READING, ["She reads 30 x 6 = 180 pages, so 180 minutes.", "That is 180 / 60 = 3 hours."], READING_GOLD
        ).index
        == -1
    )
    # a factor the gold computes, or writes as a result ("3x = 12"), stays on its path; so does a small
    # one, which is also a count the question implies in words (octuplets)
    assert not read_reference("A farm has 5 boxes of 12 eggs.", "5 * 12 = <<5*12=60>>60\n#### 60").unit_factors.has(60)
    solved = read_reference("x sunflowers take 3 pounds each out of 30.", "3 + 15 + 3x = 30\n3x = 12\nx = 4\n#### 4")
    assert solved.path(ReferenceRules()).has(12.0)
    prose = read_reference("Rosa's age divided by 2 leaves 1.", "Try 49: divided by 2 we get 24, remainder 1.\n#### 49")
    assert prose.path(ReferenceRules()).has(24.0)  # written, but no calculation is written with it
    octuplets = read_reference(
        "She has octuplets and buys 3 shirts for each.", "She buys 8 * 3 = <<8*3=24>>24.\n#### 24"
    )
    assert octuplets.path(ReferenceRules()).has(8.0)
