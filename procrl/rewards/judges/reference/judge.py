"""The reference judge behind the ``Judge`` interface (``first_error: {backend: reference}``)."""

from __future__ import annotations

from procrl.rewards.judges.protocol import Judge, JudgeItem, Verdict
from procrl.rewards.judges.reference.verdict import DEFAULT_RULES, concluded_answer, judge_steps, stated_final_answer
from procrl.rewards.judges.reference_rules import ReferenceRules
from procrl.rewards.judges.settings import ReferenceSettings


class ReferenceJudge(Judge):
    """First error = the first step stating a quantity unreachable from the question and the gold
    solution (:mod:`procrl.rewards.judges.reference`). Needs the gold *solution* (``JudgeItem.gold``)."""

    Settings = ReferenceSettings
    model_free = True
    needs_gold_solution = True
    answer_kinds = ("number",)

    @classmethod
    def note_details(cls, verdict: Verdict) -> dict[str, str]:
        """The note of a judged sample: ``unreachable`` (why the flagged step is an error) or ``note``
        (no error: e.g. the gold was read only in part); a failure's as every judge's."""
        if verdict.note is not None and verdict.ok:
            return {"unreachable" if verdict.index is not None and verdict.index >= 0 else "note": verdict.note}
        return super().note_details(verdict)

    @classmethod
    def stated_answers(cls, completion: str | None) -> tuple[float | None, float | None]:
        answer = stated_final_answer(completion)
        return answer, concluded_answer(completion) if answer is None else None

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
