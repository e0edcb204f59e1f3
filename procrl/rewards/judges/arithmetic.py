"""The arithmetic first-error judge: no model, checks every step's calculations
(:mod:`procrl.rewards.quantities`); k = the first step with a wrong result.

It reads calculations as real models write them (LaTeX, unicode operators, markdown, units,
currency, prose lead-ins; :mod:`procrl.rewards.quantities` lists what it reads and what it never
flags). It also counts the steps that carry a checkable calculation (``checked_steps``): a chain
in which no step does (hedging, prose without numbers, pure algebra, an answer alone) gets
k = -1 from a judge that checked nothing, which the first-error component scores as
``unverified``, not as correct.

What ``unverified`` should score (``unverified_score``, default -1, the score of a found error):
a policy choosing how to write a chain compares "write the calculation" (0 if right, -1 if
wrong) with "leave it out" (``unverified_score``). Any value above -1 pays leaving a wrong
calculation out; any value from 0 up pays leaving every calculation out. At -1 neither pays.
What -1 costs is sound chains with nothing checkable (mostly pure algebra: ``4x + 2 = 30``);
how many that is on real solutions of instruct models is measured in docs/validation.md.
"""

from __future__ import annotations

from procrl.rewards.judges.protocol import Judge, JudgeItem, Verdict
from procrl.rewards.judges.settings import ArithmeticSettings
from procrl.rewards.quantities import find_claims

__all__ = ["ArithmeticJudge"]


class ArithmeticJudge(Judge):
    Settings = ArithmeticSettings
    model_free = True
    answer_kinds = ("number",)
    note_detail = "wrong_calculation"  # the first false calculation, as "a = b (is c)"

    @classmethod
    def from_settings(cls, settings: ArithmeticSettings, device=None) -> ArithmeticJudge:
        return cls()  # the component reads every option: the judge has none

    def judge_one(self, item: JudgeItem) -> Verdict:
        index, note, checked = -1, None, 0
        for position, step in enumerate(item.steps):
            claims = find_claims(step)
            checked += bool(claims)
            wrong = [claim for claim in claims if not claim.correct]
            if wrong and index == -1:
                claim = wrong[0]
                index, note = position, f"{claim.left} = {claim.right} (is {claim.left_value:g})"
        return Verdict(index, note=note, checked_steps=checked)

    def judge_sync(self, items: list[JudgeItem]) -> list[Verdict]:
        return [self.judge_one(item) for item in items]

    async def judge(self, items: list[JudgeItem]) -> list[Verdict]:
        return self.judge_sync(items)  # pure CPU work in microseconds: no thread hop
