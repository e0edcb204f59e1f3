"""The arithmetic first-error judge: no model, checks every step's calculations
(:mod:`procrl.arithmetic`); k = the first step with a wrong result."""

from __future__ import annotations

from procrl.arithmetic import check_step
from procrl.rewards.judges import Judge, JudgeItem, Verdict

__all__ = ["ArithmeticJudge"]


class ArithmeticJudge(Judge):
    def judge_one(self, item: JudgeItem) -> Verdict:
        for index, step in enumerate(item.steps):
            wrong = check_step(step)
            if wrong:
                claim = wrong[0]
                return Verdict(index, note=f"{claim.left} = {claim.right} (is {claim.left_value:g})")
        return Verdict(-1)

    def judge_sync(self, items: list[JudgeItem]) -> list[Verdict]:
        return [self.judge_one(item) for item in items]

    async def judge(self, items: list[JudgeItem]) -> list[Verdict]:
        return self.judge_sync(items)  # pure CPU work in microseconds: no thread hop
