"""Per-step credit from the reward mix: each completion's step rewards and the token each step
ends on (docs/spec.md section 5), shared by process-supervised GRPO
(:mod:`procrl.trainers.process_grpo`) and PPO (:mod:`procrl.trainers.ppo`).

:func:`local_step_credit` reads the mix's cached outputs of the batch just scored and maps the
step spans of the scored text to tokens (the pure rules are :mod:`procrl.trainers.credit`);
:class:`SingleStepWarning` says once when process credit has become outcome credit.
"""

from __future__ import annotations

import logging
from typing import Any

from procrl.rewards.mix import RewardMix
from procrl.rewards.protocol import RewardBatch
from procrl.trainers.credit import combine_step_scores, gives_step_credit, step_last_tokens, token_char_ends

__all__ = [
    "SINGLE_STEP_WARNING_FRACTION",
    "SingleStepWarning",
    "local_step_credit",
    "process_component_names",
    "step_credited",
]

logger = logging.getLogger(__name__)

# Above this share of single-step completions process credit is (nearly) outcome credit.
SINGLE_STEP_WARNING_FRACTION = 0.5


class SingleStepWarning:
    """Warns once per trainer when most completions of a batch have a single step: one step
    reward on the last step is outcome credit under another name (a policy answering in one
    line, or a segmentation that finds no steps in its format)."""

    def __init__(self) -> None:
        self.warned = False

    def observe(self, fraction: float) -> None:
        if not self.warned and fraction > SINGLE_STEP_WARNING_FRACTION:
            logger.warning(
                "process credit: %.0f%% of the completions of this batch have a single step, so their process "
                "credit is outcome credit (logged as process/single_step_fraction). Ask the policy for one step "
                "per line, or check how procrl.core.text segments its completions.",
                100 * fraction,
            )
            self.warned = True


def process_component_names(mix: RewardMix, outputs: dict, requested: list[str] | None) -> list[str]:
    """Components whose step scores give credit: the requested ones, else every component of
    the mix that emitted step scores on this batch."""
    if requested is not None:
        return list(requested)
    return [name for name in mix.names if name in outputs and outputs[name].step_scores is not None]


def step_credited(
    mix: RewardMix, outputs: dict, batch: RewardBatch, requested: list[str] | None
) -> dict[str, list[bool]]:
    """Per process component, per completion: whether its score reaches the policy through the
    step rewards of :func:`local_step_credit`, so that the outcome must leave it out (no
    component counts twice, docs/spec.md section 5). The one rule of GRPO and PPO.

    True when the completion has steps and the component's step scores align with them, or when
    the completion has no steps and the component gave it a score (that score is its one step
    reward). False otherwise (a failure, misaligned step scores): the scalar then stays in the
    outcome, so no score is lost either.

    Args:
        mix: the reward mix that scored ``batch``.
        outputs: the components' outputs of ``batch`` (the mix's cache, or the same resolved).
        batch: the scored batch (its segmentations say which completions have steps).
        requested: ``trainer.process_rewards`` (None: every component with step scores).

    Returns:
        ``{component: [credited of completion i]}`` for the process components only.
    """
    raw = mix.last_outputs  # before the fallbacks: what local_step_credit turned into step rewards
    credited: dict[str, list[bool]] = {}
    for name in process_component_names(mix, outputs, requested):
        step_scores = outputs[name].step_scores if name in outputs else None
        scored = raw[name].scores if name in raw else [None] * len(batch)
        credited[name] = [
            (step_scores is not None and gives_step_credit(step_scores[i], len(segmentation.steps)))
            or (not segmentation.steps and scored[i] is not None)
            for i, segmentation in enumerate(batch.segmentations)
        ]
    return credited


def local_step_credit(
    mix: RewardMix, tokenizer: Any, completion_ids: list[list[int]], requested: list[str] | None
) -> tuple[list[list[float]], list[list[int | None]], dict[str, float]]:
    """Per local completion: the weighted step rewards and each step's last token index.

    A completion without steps gets one reward on its last token: the weighted sum of the
    process components' scores for it (e.g. first_error's ``no_steps_score``), so that an answer
    alone is not exempt from the process credit that penalises reasoning with a slip.

    Reads the mix's cached outputs of the batch just scored (``mix.last_batch`` and
    ``mix.last_outputs``); step spans are offsets into the text the rewards scored, mapped to
    tokens with the decoded completion's per-token offsets. When the scored text is not the
    decoded token text (a conversational completion whose content was post-processed) the
    spans are shifted to where the scored text sits in it; when it is not found at all, every
    step ends on the last token and the completion is counted as ``unaligned``.
    """
    batch = mix.last_batch
    if batch is None or len(batch) != len(completion_ids):
        raise RuntimeError(
            "process credit: the reward mix did not score this batch "
            f"({0 if batch is None else len(batch)} scored, {len(completion_ids)} generated)"
        )
    outputs = mix.last_outputs
    names = process_component_names(mix, outputs, requested)
    weights = [mix.specs[n].weight for n in names]
    rewards: list[list[float]] = []
    last_tokens: list[list[int | None]] = []
    unaligned = 0
    without_steps = 0
    single_step = 0
    step_count = 0
    for i, ids in enumerate(completion_ids):
        steps = batch.segmentations[i].steps
        single_step += len(steps) == 1
        step_count += len(steps)
        if not steps:
            # No steps: the process components' own scores of the completion (first_error's
            # no_steps_score, TRACE's 0 for empty reasoning, ...) as ONE reward on its last token,
            # so that skipping the reasoning does not escape the process channel that penalises
            # the completions that reason and slip.
            scalars = [
                weight * float(outputs[name].scores[i])
                for name, weight in zip(names, weights)
                if name in outputs and outputs[name].scores[i] is not None
            ]
            if not scalars:
                without_steps += 1
                rewards.append([])
                last_tokens.append([])
                continue
            decoded = tokenizer.decode(list(ids), skip_special_tokens=True)
            rewards.append([sum(scalars)])
            last_tokens.append(step_last_tokens([len(decoded) + 1], token_char_ends(tokenizer, ids, decoded)))
            continue
        per_component = []
        for name in names:
            step_scores = outputs[name].step_scores if name in outputs else None
            per_component.append(step_scores[i] if step_scores is not None else None)
        combined = combine_step_scores(per_component, weights, len(steps))
        if combined is None:
            without_steps += 1
            rewards.append([])
            last_tokens.append([])
            continue
        decoded = tokenizer.decode(list(ids), skip_special_tokens=True)
        text = batch.completions[i]
        shift = 0 if decoded == text else decoded.find(text)
        char_ends = token_char_ends(tokenizer, ids, decoded)
        if shift < 0:
            unaligned += 1
            ends = [len(decoded) + 1] * len(steps)  # past the text: the last token
        else:
            ends = [span.end + shift for span in steps]
        rewards.append(combined)
        last_tokens.append(step_last_tokens(ends, char_ends))
    n = max(len(completion_ids), 1)
    stats = {
        "process/unaligned_fraction": unaligned / n,
        "process/no_step_scores_fraction": without_steps / n,
        "process/steps_per_completion": step_count / n,
        "process/single_step_fraction": single_step / n,
    }
    return rewards, last_tokens, stats
