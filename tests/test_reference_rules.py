"""Every rule of the reference judge (procrl.rewards.judges.reference.RULES) with its own cases: a
solution whose verdict the rule decides, judged with the rule on and with it off (for a rule off by
default: on, and off as it ships). The cases (tests/data/reference_rules_cases.json) are the
hand-written and MR-GSM8K ones of tests/test_reference_judge.py, each the shortest one there on
which switching the rule changes the step named (or the steps checked).

Each case: (first wrong step, checked steps) with the rule on, and with it off."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.rewards import parse_rewards
from procrl.rewards.judges.reference import RULE_NAMES, RULES, ReferenceRules, judge_steps
from procrl.rewards.judges.reference import __doc__ as INDEX
from procrl.rewards.judges.reference.rule import STAGES


@dataclasses.dataclass(frozen=True)
class Case:
    rule: str
    question: str
    gold: str
    steps: tuple[str, ...]
    on: tuple[int, int]
    off: tuple[int, int]
    answer: float | None = None
    concluded: float | None = None


CASES = [
    Case(
        row["rule"],
        row["question"],
        row["gold"],
        tuple(row["steps"]),
        tuple(row["on"]),
        tuple(row["off"]),
        row["answer"],
        row["concluded"],
    )
    for row in json.loads((Path(__file__).parent / "data" / "reference_rules_cases.json").read_text())
]

# how each rule that ships off is switched on (its recipe option)
SWITCHED_ON = {
    "regroup": ReferenceRules(transformations=("regroup", "units", "percent", "rounding")),
    "derivable": ReferenceRules(off_path="derivable"),
}


def _judged(case: Case, rules: ReferenceRules) -> tuple[int, int]:
    verdict = judge_steps(case.question, case.steps, case.gold, rules, case.answer, case.concluded)
    return verdict.index, verdict.checked_steps


def test_the_table_lists_every_rule_once_in_the_order_of_its_stages():
    assert len(set(RULE_NAMES)) == len(RULES) == 28
    stages = [rule.stage for rule in RULES]
    assert stages == sorted(stages, key=list(STAGES).index)
    assert {rule.name for rule in RULES if not rule.default_on} == {"regroup", "derivable"}


def test_every_rule_states_itself_with_an_example():
    for rule in RULES:
        assert rule.statement.startswith(f"Rule ``{rule.name}``"), rule.name
        assert "Example" in rule.statement, rule.name
        assert inspect.getmodule(rule.unit).__name__.startswith("procrl.rewards.judges.reference.")


def test_the_module_docstring_is_the_tables_index():
    listed = [name for name in RULE_NAMES if f"``{name}``" in INDEX]
    assert listed == list(RULE_NAMES)
    positions = [INDEX.index(f"``{name}``") for name in RULE_NAMES]
    assert positions == sorted(positions)


def test_every_rule_has_its_cases():
    assert {case.rule for case in CASES} == set(RULE_NAMES)


@pytest.mark.parametrize("case", CASES, ids=[case.rule for case in CASES])
def test_the_rule_decides_its_case(case):
    rule = next(rule for rule in RULES if rule.name == case.rule)
    on = SWITCHED_ON.get(rule.name, ReferenceRules())
    off = ReferenceRules(off=(rule.name,)) if rule.default_on else ReferenceRules()
    assert on.on(rule.name) and not off.on(rule.name)
    assert _judged(case, on) == case.on
    assert _judged(case, off) == case.off
    assert case.on[0] != case.off[0] or case.on[1] != case.off[1]


def test_the_options_switch_the_rules_they_name():
    assert not ReferenceRules(check_arithmetic=False).on("false_calculation")
    assert not ReferenceRules(leap="flag").on("leap")
    assert not ReferenceRules(off_path="flag").on("lookahead") and not ReferenceRules().on("derivable")
    assert not ReferenceRules(transformations=("units",)).on("rounding")
    with pytest.raises(ValueError, match="unknown reference rule 'lookahed'"):
        judge_steps("q", ("1 + 1 = 2",), "1 + 1 = <<1+1=2>>2\n#### 2", ReferenceRules(off=("lookahed",)))


def test_a_recipe_switches_rules_off_by_name():
    specs = parse_rewards(
        {"judge": {"type": "first_error", "backend": "reference", "rules_off": ["closing_conclusion"]}}
    )
    rules = specs[0].settings.rules()
    assert not rules.on("closing_conclusion") and rules.on("lookahead")
    with pytest.raises(ConfigError) as refused:
        parse_rewards({"judge": {"type": "first_error", "backend": "reference", "rules_off": ["lookahed"]}})
    assert str(refused.value).startswith("rewards.judge.rules_off: unknown rule 'lookahed'; the rules: constants, ")
