"""The arithmetic first-error judge: no model, checks every step's calculations
(:mod:`procrl.arithmetic`); k = the first step with a wrong result.

It also counts the steps that carry a checkable calculation (``checked_steps``): a chain in
which no step does (hedging, prose without numbers, an answer alone) gets k = -1 from a judge
that checked nothing, which the first-error component scores as ``unverified``, not as correct.
"""

from __future__ import annotations

from procrl.arithmetic import find_claims
from procrl.rewards.judges import Judge, JudgeItem, Verdict

__all__ = ["ArithmeticJudge"]


class ArithmeticJudge(Judge):
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
