"""A new built-in component is its class, one registry line and this test (docs/writing-a-component.md).

``AnswerCloseness`` is written here as a built-in would be in ``procrl/rewards/closeness.py`` and
registered the way a built-in is (one line in ``procrl.rewards.registry.REWARDS``, set here with
monkeypatch). What it declares on its class is all that diagnostics, the reward-hacking watch and
``procrl check`` know about it: it grades the answer, so the watch leaves it out of the process
reward; its scores lie in [0, 1], so its histogram is drawn on that axis.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from procrl.core.config import field
from procrl.observe import plots
from procrl.observe import stats as diag
from procrl.observe.hacking import process_totals
from procrl.rewards import RewardBatch, RewardComponent, RewardMix, RewardOutput, parse_rewards
from procrl.rewards.accuracy import extract_prediction, parse_gold
from procrl.rewards.registry import REWARDS, component_info

REPO = Path(__file__).resolve().parent.parent


class AnswerCloseness(RewardComponent):
    """Partial credit for a near answer: 1 - |predicted - gold| / max(|gold|, 1), floored at 0;
    0.0 without an answer, None without a gold answer."""

    grades = "answer"
    score_range = (0.0, 1.0)

    @dataclass
    class Settings:
        floor: float = field(0.0, help="Lowest score (a completion without an answer gets it too).")

    def score(self, batch: RewardBatch) -> RewardOutput:
        scores: list[float | None] = []
        for completion, gold_text in zip(batch.completions, batch.golds):
            predicted, _ = extract_prediction(completion)
            gold = parse_gold(gold_text)
            if gold is None:
                scores.append(None)
            elif predicted is None:
                scores.append(self.settings.floor)
            else:
                scores.append(max(self.settings.floor, 1.0 - abs(predicted - gold) / max(abs(gold), 1.0)))
        return RewardOutput(scores=scores)


@pytest.fixture
def registered(monkeypatch):
    """The one registry line of a built-in."""
    monkeypatch.setitem(REWARDS, "answer_closeness", "tests.test_new_component:AnswerCloseness")


WORKED = "Ann has 3 boxes of 4 apples.\n3 * 4 = 12.\n#### 12"
SLIP = "Ann has 3 boxes of 4 apples.\n3 * 4 = 11.\n#### 11"
ANSWER_ALONE = "#### 12"
NO_ANSWER = "I am not sure how many apples there are."


def mix_and_batch() -> tuple[RewardMix, RewardBatch]:
    mix = RewardMix(
        parse_rewards(
            {
                "accuracy": {},
                "closeness": {"type": "answer_closeness", "weight": 0.5},
                "first_error": {"weight": 0.5},  # the arithmetic judge: 3 * 4 = 11 is the first error
            }
        )
    )
    completions = [WORKED, SLIP, ANSWER_ALONE, NO_ANSWER]
    return mix, RewardBatch.from_texts(completions, questions=["How many apples?"] * 4, golds=["#### 12"] * 4)


def test_scores_by_hand(registered):
    mix, batch = mix_and_batch()
    scores = mix.compute("closeness", batch).scores
    assert scores == [1.0, pytest.approx(1.0 - 1.0 / 12.0), 1.0, 0.0]
    no_gold = RewardBatch.from_texts([WORKED], golds=[None])
    assert mix.components["closeness"].score(no_gold).scores == [None]


def test_metadata_is_read_from_the_class(registered):
    info = component_info("answer_closeness")
    assert (info.grades, info.score_range, info.uses_model, info.uses_network, info.diagnostics) == (
        "answer",
        (0.0, 1.0),
        False,
        False,
        (),
    )
    assert not info.process
    assert component_info("tests.test_new_component:AnswerCloseness") == info  # the same class by its path


def test_diagnostics_draw_it_on_its_declared_range(registered):
    mix, batch = mix_and_batch()
    outputs = mix.score_all(batch)
    types = {name: spec.type for name, spec in mix.specs.items()}
    assert diag.score_range(types["closeness"], [0.5, 0.75]) == (0.0, 1.0)  # not the values' own range
    assert diag.score_range(None, [0.5, 0.75]) == (0.5, 0.75)
    kinds = diag.component_kinds(types, outputs)
    assert kinds == {"accuracy": "accuracy", "first_error": "first_error"}  # closeness is no accuracy/judge
    figure = plots.plot_component_distributions({n: o.scores for n, o in outputs.items()}, types=types)
    axis = next(a for a in figure.axes if a.get_title().startswith("closeness"))
    low, high = axis.get_xlim()
    assert low == pytest.approx(-0.05) and high == pytest.approx(1.05)  # [0, 1] plus half a bin each side
    scalars = diag.batch_scalars(types, outputs)
    assert "diagnostics/correlation/accuracy~closeness" in scalars
    assert scalars["diagnostics/seconds/closeness"] >= 0.0


def test_the_hacking_watch_leaves_an_answer_grading_component_out(registered):
    mix, batch = mix_and_batch()
    outputs = mix.score_all(batch)
    types = {name: spec.type for name, spec in mix.specs.items()}
    weights = {name: spec.weight for name, spec in mix.specs.items()}
    scores = {n: o.scores for n, o in outputs.items()}
    first_error = scores["first_error"]
    assert first_error[0] == 0.0 and first_error[1] < 0.0  # the slip is penalised
    # the process reward is first_error alone (weight 0.5): neither accuracy nor closeness
    assert process_totals(scores, types, weights) == [0.5 * v for v in first_error]
    # a type the watch knows nothing about is summed in (0.5 * 1.0 more on the worked chain), which is
    # why a built-in that does not declare what it grades is refused (the test below)
    unknown = process_totals(scores, {**types, "closeness": "not-a-known-type"}, weights)
    assert unknown[0] == pytest.approx(0.5 * (1.0 + first_error[0]))


def test_procrl_check_shows_what_it_grades(registered, capsys):
    from procrl.launch.cli import main

    code = main(
        [
            "check",
            str(REPO / "recipes" / "gsm8k_accuracy.yaml"),
            "--set",
            "rewards.closeness={type: answer_closeness, weight: 0.5}",
            "--set",
            "rewards.first_error={type: first_error, weight: 0.5}",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    mix = out.split("reward mix on")[1]
    line = next(line for line in mix.splitlines() if line.strip().startswith("closeness"))
    assert "weight 0.5" in line and "grades answer" in line and "scores [1.0000" in line
    assert "process reward of the hacking watch: first_error\n" in mix


def test_a_built_in_that_does_not_say_what_it_grades_is_refused(monkeypatch):
    class Forgetful(RewardComponent):
        score_range = (0.0, 1.0)

        def score(self, batch):
            return RewardOutput(scores=[1.0] * len(batch))

    monkeypatch.setattr(sys.modules[__name__], "Forgetful", Forgetful, raising=False)
    monkeypatch.setitem(REWARDS, "forgetful", f"{__name__}:Forgetful")
    with pytest.raises(TypeError, match="must say what it grades: set the class attribute grades"):
        parse_rewards({"forgetful": {}})
    with pytest.raises(TypeError, match="grades"):
        component_info("forgetful")  # the watch and the diagnostics refuse it too, never count it silently


def test_a_misspelt_declaration_fails_where_the_class_is_defined():
    with pytest.raises(TypeError, match="grades = 'reasonning'; expected one of 'answer', 'form', 'reasoning'"):

        class Misspelt(RewardComponent):
            grades = "reasonning"

    with pytest.raises(TypeError, match="score_range"):

        class Backwards(RewardComponent):
            score_range = (1.0, 0.0)

    with pytest.raises(TypeError, match="diagnostics"):

        class Unknown(RewardComponent):
            diagnostics = ("heatmap",)


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_every_built_in_describes_itself(name):
    info = component_info(name)
    assert info.grades in ("answer", "form", "reasoning")
    low, high = info.score_range
    assert math.isfinite(low) and math.isfinite(high) and low < high
