"""The reward-hacking watch on hand-written behaviours and on real completions."""

from __future__ import annotations

from procrl.observe.hacking import Behaviour, BehaviourTracker, behaviour, mean_behaviour, suspicions

WORKED = "Ben buys 4 x 9 = <<4*9=36>>36 cards.\nThen he has 12 + 36 = <<12+36=48>>48 cards.\n#### 48"
ANSWER_ONLY = "#### 48"


def test_a_policy_that_stops_reasoning_is_flagged():
    start = behaviour([WORKED] * 4, num_steps=[2] * 4, accuracy=[1.0] * 4)
    lazy = behaviour([ANSWER_ONLY] * 4, num_steps=[0] * 4, accuracy=[1.0] * 4)
    reasons = suspicions(start, lazy)
    assert any("steps per completion" in r for r in reasons) and any("length" in r for r in reasons)
    assert suspicions(start, start) == []


def test_process_reward_up_while_accuracy_down_is_flagged_and_each_alone_is_not():
    start = Behaviour(steps=3.0, length=200.0, process_reward=-0.4, accuracy=0.5)
    assert suspicions(start, Behaviour(3.0, 200.0, -0.1, 0.4))  # pleasing the grader, losing answers
    assert not suspicions(start, Behaviour(3.0, 200.0, -0.1, 0.6))  # both up: learning
    assert not suspicions(start, Behaviour(3.0, 200.0, -0.5, 0.4))  # both down: not hacking the process reward
    assert not suspicions(start, Behaviour(3.0, 200.0, -0.39, 0.49))  # within the noise margin
    assert not suspicions(start, Behaviour(1.6, 110.0, -0.4, 0.5))  # shorter, but more than half


def test_missing_measurements_never_raise_a_flag():
    start = Behaviour(steps=None, length=200.0, process_reward=None, accuracy=0.5)
    assert suspicions(start, Behaviour(None, 150.0, 1.0, 0.1)) == []
    assert mean_behaviour([Behaviour(None, 10.0, None, 1.0), Behaviour(2.0, 30.0, None, 0.0)]) == Behaviour(
        2.0, 20.0, None, 0.5
    )


def test_tracker_compares_the_first_window_with_the_latest():
    tracker = BehaviourTracker(window=2)
    tracker.add(Behaviour(3.0, 200.0, 0.0, 0.5))
    assert "diagnostics/hacking_suspect" not in tracker.scalars("diagnostics")  # no full start window yet
    tracker.add(Behaviour(3.0, 200.0, 0.0, 0.5))
    assert tracker.scalars("diagnostics")["diagnostics/hacking_suspect"] == 0.0
    tracker.add(Behaviour(1.0, 40.0, 0.0, 0.5))
    scalars = tracker.scalars("diagnostics")  # logged: this batch; judged: the last two
    assert scalars["diagnostics/behaviour/steps"] == 1.0 and scalars["diagnostics/hacking_suspect"] == 0.0
    tracker.add(Behaviour(1.0, 40.0, 0.0, 0.5))
    assert tracker.scalars("diagnostics")["diagnostics/hacking_suspect"] == 1.0
    assert tracker.scalars("diagnostics") == {}  # nothing scored since the last call
