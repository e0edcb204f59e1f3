"""The reference judge behind the ``Judge`` interface (``first_error: {backend: reference}``)."""

from __future__ import annotations

from procrl.rewards.judges.protocol import Judge, JudgeItem, Verdict
from procrl.rewards.judges.reference.verdict import DEFAULT_RULES, judge_steps
from procrl.rewards.judges.settings import ReferenceRules, ReferenceSettings


class ReferenceJudge(Judge):
    """First error = the first step stating a quantity unreachable from the question and the gold
    solution (:mod:`procrl.rewards.judges.reference`). Needs the gold *solution* (``JudgeItem.gold``)."""

    Settings = ReferenceSettings

    @classmethod
    def from_settings(cls, settings: ReferenceSettings, device=None) -> ReferenceJudge:
        return cls(settings.rules())

    def __init__(self, rules: ReferenceRules = DEFAULT_RULES):
        self.rules = rules

    def judge_one(self, item: JudgeItem) -> Verdict:
        return judge_steps(item.question, tuple(item.steps), item.gold, self.rules, item.answer, item.concluded)

    def judge_sync(self, items: list[JudgeItem]) -> list[Verdict]:
        return [self.judge_one(item) for item in items]

    async def judge(self, items: list[JudgeItem]) -> list[Verdict]:
        return self.judge_sync(items)  # pure CPU work: no thread hop
