"""Rewards for tests. The synthetic per-step task of the dense-credit tests: a step earns 1.0 when
its text starts with one of the given prefixes (default: a digit). A real reward component (it is
the task under test), referenced from recipes as ``type: tests.helpers.rewards:StepStartsWith``.
Also a plain TRL reward function (:func:`count_words`) and the overrides that score a shipped
recipe's mix offline (:func:`offline_overrides`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from procrl.core.config import field
from procrl.recipe import load_recipe
from procrl.rewards import RewardBatch, RewardComponent, RewardOutput

DIGITS = [str(d) for d in range(10)]


class StepStartsWith(RewardComponent):
    """Per step: 1.0 if the step starts with one of ``prefixes`` else 0.0; the completion's
    scalar is the mean over its steps (0.0 without steps)."""

    @dataclass
    class Settings:
        prefixes: list[str] = field(default_factory=lambda: list(DIGITS), help="Step prefixes that earn 1.0.")

    def score(self, batch: RewardBatch) -> RewardOutput:
        prefixes = tuple(self.settings.prefixes)
        step_scores, scores = [], []
        for segmentation in batch.segmentations:
            steps = [1.0 if span.text.startswith(prefixes) else 0.0 for span in segmentation.steps]
            step_scores.append(steps)
            scores.append(sum(steps) / len(steps) if steps else 0.0)
        return RewardOutput(scores=scores, step_scores=step_scores)


class StepDigitShare(RewardComponent):
    """Per step: the share of the step's non-space characters that are digits (a dense per-step
    signal a tiny random model can learn within a few dozen updates); the completion's scalar is
    the mean over its steps (0.0 without steps)."""

    @dataclass
    class Settings:
        pass

    def score(self, batch: RewardBatch) -> RewardOutput:
        step_scores, scores = [], []
        for segmentation in batch.segmentations:
            steps = []
            for span in segmentation.steps:
                characters = [c for c in span.text if not c.isspace()]
                steps.append(sum(c.isdigit() for c in characters) / len(characters) if characters else 0.0)
            step_scores.append(steps)
            scores.append(sum(steps) / len(steps) if steps else 0.0)
        return RewardOutput(scores=scores, step_scores=step_scores)


def count_words(prompts, completions, answer=None, bonus=0.0, **kwargs):
    """A plain TRL-contract reward function; `bonus` arrives from the recipe settings."""
    return [len(c.split()) + bonus for c in completions]


def offline_overrides(path: Path) -> list[str]:
    """Judges with a model on the arithmetic backend (the model-free ones as they are), TRACE on
    an embedded tagger (the recipe's own when it is embedded, else the cue tagger). A recipe
    whose answers are not numbers (csqa, strategyqa) refuses the arithmetic judge: its LLM judge
    is left out, the rest of its mix scored on these cases (its own kind's cases:
    tests/test_prose_steps.py)."""
    from procrl.data.qa import declared_answer_kind
    from procrl.rewards.trace import EMBEDDED_TAGGERS

    recipe = load_recipe(path)
    numbers = declared_answer_kind(recipe.data) in (None, "number")
    overrides = []
    for spec in recipe.rewards:
        if spec.type == "first_error" and spec.settings.backend not in ("arithmetic", "reference"):
            overrides.append(f"rewards.{spec.name}.backend=arithmetic" if numbers else f"rewards.{spec.name}=false")
        elif spec.type == "trace" and spec.settings.tagger not in EMBEDDED_TAGGERS:
            overrides.append(f"rewards.{spec.name}.tagger=cues")
    return overrides
