"""Two custom rewards in a file next to the recipe that names them (recipe.yaml here): procrl
puts the recipe's directory on the import path, so ``type: my_rewards:RepeatedSteps`` needs no
PYTHONPATH, under ``procrl train`` and on every rank of ``accelerate launch``."""

from dataclasses import dataclass

from procrl.rewards import RewardBatch, RewardComponent, RewardOutput, field


class RepeatedSteps(RewardComponent):
    """A per-step component. Step score: -1.0 when the step repeats an earlier step of the same
    completion (case and spacing ignored), else 0.0; completion score: the mean, in [-1, 0].
    Without reasoning steps (an answer alone) it has no opinion (None): the recipe's
    ``fallback`` decides, so that skipping the reasoning never looks like a clean solution."""

    @dataclass
    class Settings:
        min_chars: int = field(10, help="Steps shorter than this never count as repeats.")

    def score(self, batch: RewardBatch) -> RewardOutput:
        scores, step_scores = [], []
        for segmentation in batch.segmentations:  # the shared steps: aligned with every component
            seen, steps = set(), []
            for step in segmentation.steps:
                key = " ".join(step.text.lower().split())
                steps.append(-1.0 if key in seen and len(key) >= self.settings.min_chars else 0.0)
                seen.add(key)
            step_scores.append(steps or None)
            scores.append(sum(steps) / len(steps) if steps else None)
        repeated = [s for steps in step_scores if steps for s in steps]
        return RewardOutput(
            scores=scores,
            step_scores=step_scores,
            metrics={"repeated_share": -sum(repeated) / len(repeated) if repeated else 0.0},
        )


def overlong_penalty(completions, max_chars: int = 1200, **kwargs):
    """A plain TRL reward function: 0.0 up to ``max_chars`` characters, then down to -1.0 at
    twice that. Recipe keys other than type/weight/gate/fallback arrive as keyword arguments."""
    return [max(-1.0, min(0.0, (max_chars - len(text)) / max_chars)) for text in completions]
