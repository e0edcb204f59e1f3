"""Dense process credit: pure functions from per-step scores to per-token training signals.

docs/spec.md section 5. Everything here takes numbers (and, for the token mapping, a tokenizer
used only to decode) and returns numbers; no model, no trainer.

* :func:`token_char_ends` / :func:`step_last_tokens`: where each step of a completion ends, as a
  token index of the completion's token ids (offsets of the decoded completion, the text every
  reward scored);
* :func:`combine_step_scores`: the weighted per-step reward of a completion from several
  components (weights as in the mix);
* :func:`aggregate_step_rewards`: how a completion's step rewards become the rewards whose
  suffix sums are the returns: ``sum`` (DeepSeekMath, unchanged) or ``min`` (PURE's min-form,
  Cheng et al. arXiv 2504.15275: each step reward weighted by softmax(-r/T) over the
  completion's steps, so that the sum over all steps approximates their minimum);
* :func:`process_advantages`: process supervision for one group of completions (step rewards
  normalised by the mean/std of every step of the group, then aggregated; a token's advantage
  is the sum of the aggregated rewards of the steps ending at or after it);
* :func:`token_rewards` and :func:`gae`: PPO's token-level rewards (step rewards on each step's
  last token, the outcome reward on the last token, minus the per-token KL penalty) and
  generalised advantage estimation.

Why ``min`` is the default: under ``sum`` every extra step with an above-average reward adds to
the return of the tokens before it, so a policy earns more for writing more steps (with
first-error scores, every error-free step is worth +c after normalisation). The min-form return
of a completion's first token is close to its worst step whatever the number of steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from procrl.recipe.sections import ProcessCredit

__all__ = [
    "AGGREGATIONS",
    "aggregate_step_rewards",
    "balanced_step_rewards",
    "combine_step_scores",
    "gae",
    "gives_step_credit",
    "masked_whiten",
    "min_form_weights",
    "outcome_rewards",
    "process_advantages",
    "scatter_step_rewards",
    "step_last_tokens",
    "token_char_ends",
    "token_rewards",
]


def token_char_ends(tokenizer: Any, token_ids: Sequence[int], text: str | None = None) -> list[int]:
    """For every token of ``token_ids``, the character offset in the decoded completion where
    that token's text ends (exclusive). Special tokens (skipped by decoding, e.g. EOS) end where
    the previous token ended.

    Fast path: decode token by token and check that the pieces concatenate to the decoded text;
    when they do not (byte-level tokens splitting a multi-byte character, SentencePiece leading
    spaces) fall back to decoding every prefix, which is exact by construction.
    """
    ids = [int(i) for i in token_ids]
    if text is None:
        text = tokenizer.decode(ids, skip_special_tokens=True)
    if not ids:
        return []
    pieces = [tokenizer.decode([i], skip_special_tokens=True) for i in ids]
    if "".join(pieces) == text:
        ends, position = [], 0
        for piece in pieces:
            position += len(piece)
            ends.append(position)
        return ends
    ends = []
    previous = 0
    for k in range(1, len(ids) + 1):
        prefix = tokenizer.decode(ids[:k], skip_special_tokens=True)
        # A prefix cut inside a multi-byte character decodes to a replacement character that
        # the full text does not have: never let an end run past the text or go backwards.
        end = min(max(len(prefix) if text.startswith(prefix) else _common_prefix(prefix, text), previous), len(text))
        ends.append(end)
        previous = end
    return ends


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def step_last_tokens(step_ends: Sequence[int], char_ends: Sequence[int]) -> list[int | None]:
    """Token index holding the last character of each step (``step_ends`` exclusive char ends).

    A step ends at the first token whose text reaches its last character. A step whose end lies
    past the decoded text (a completion cut by ``max_completion_length`` and re-scored on another
    text) ends at the last token. A step maps to no token (None) only when the completion has no
    token with text at all, or when the step is empty.
    """
    if not char_ends or char_ends[-1] <= 0:
        return [None] * len(step_ends)
    positions: list[int | None] = []
    # the token reaching the end of the text (later ones are special tokens without text)
    last_text_token = next(k for k, e in enumerate(char_ends) if e == char_ends[-1])
    for end in step_ends:
        if end <= 0:
            positions.append(None)
            continue
        # binary search: first k with char_ends[k] >= end
        lo, hi = 0, len(char_ends)
        while lo < hi:
            mid = (lo + hi) // 2
            if char_ends[mid] >= end:
                hi = mid
            else:
                lo = mid + 1
        positions.append(lo if lo < len(char_ends) else last_text_token)
    return positions


def gives_step_credit(scores: Sequence[float] | None, num_steps: int) -> bool:
    """Whether a component's step scores for one completion reach the policy as step rewards
    (they exist, the completion has steps, and they align with them)."""
    return scores is not None and num_steps > 0 and len(scores) == num_steps


def outcome_rewards(
    scores: dict[str, Sequence[float | None]],
    weights: dict[str, float],
    step_credited: dict[str, Sequence[bool]],
) -> list[float | None]:
    """PPO's last-token reward per completion: the weighted sum of the component scores that
    did not reach the policy as step rewards, so that no component counts twice.

    ``scores[name][i]``: component scalar (None: no opinion, skipped); ``step_credited[name][i]``:
    True when that component's step scores of completion i are already in the token rewards (a
    component absent from ``step_credited`` is outcome-only). A process component that gave a
    completion no step scores (no steps, a failure) keeps its scalar here: a chain without steps
    still pays its ``no_steps_score``. None when no score at all remains.
    """
    n = len(next(iter(scores.values()))) if scores else 0
    totals: list[float | None] = []
    for i in range(n):
        parts = [
            weights[name] * float(values[i])
            for name, values in scores.items()
            if values[i] is not None and not (name in step_credited and step_credited[name][i])
        ]
        totals.append(sum(parts) if parts else None)
    return totals


def combine_step_scores(
    per_component: Sequence[Sequence[float] | None], weights: Sequence[float], num_steps: int
) -> list[float] | None:
    """Weighted sum over components of one completion's step scores; None when no component
    gave step scores for it. A component whose list has the wrong length is skipped (its
    steps cannot be aligned with the shared segmentation)."""
    total = [0.0] * num_steps
    seen = False
    for scores, weight in zip(per_component, weights):
        if not gives_step_credit(scores, num_steps):
            continue
        seen = True
        for j, value in enumerate(scores):
            if value is not None and math.isfinite(value):
                total[j] += weight * float(value)
    return total if seen else None


AGGREGATIONS = ("min", "sum")


def min_form_weights(rewards: Sequence[float], temperature: float = ProcessCredit.process_temperature) -> list[float]:
    """PURE's min-form weights of one completion's step rewards: softmax(-r / T) over its steps.

    As T -> 0 the weight concentrates on the smallest reward (ties share it equally), so
    ``sum(w * r)`` tends to ``min(r)``; equal rewards get equal weights 1/n.
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    values = [float(r) for r in rewards]
    if not values:
        return []
    logits = [-v / temperature for v in values]
    top = max(logits)
    exps = [math.exp(x - top) for x in logits]
    total = sum(exps)
    return [e / total for e in exps]


def aggregate_step_rewards(
    rewards: Sequence[float],
    aggregation: str = ProcessCredit.process_aggregation,
    temperature: float = ProcessCredit.process_temperature,
) -> list[float]:
    """The per-step rewards whose suffix sums are a completion's returns.

    ``sum``: the rewards unchanged (DeepSeekMath: a token's return is the sum of the rewards of
    its step and the later ones). ``min``: each reward times its min-form weight
    (:func:`min_form_weights`), so the return of the first token approximates the minimum step
    reward and does not grow with the number of steps.
    """
    if aggregation == "sum":
        return [float(r) for r in rewards]
    if aggregation == "min":
        return [w * float(r) for w, r in zip(min_form_weights(rewards, temperature), rewards)]
    raise ValueError(f"process aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")


def balanced_step_rewards(
    step_rewards: Sequence[Sequence[float]],
    totals: Sequence[float | None],
    aggregation: str = ProcessCredit.process_aggregation,
    temperature: float = ProcessCredit.process_temperature,
) -> tuple[list[list[float]], list[float]]:
    """Token rewards for an engine that sums them per completion (verl): each completion's step
    rewards aggregated as procrl's PPO aggregates them (:func:`aggregate_step_rewards`, min-form by
    default) and, for its last token, what its total has left after them, so that its rewards add
    up to its total (each component counted once at its own score).

    Why the remainder: a sum of step rewards grows with the number of steps (each positive step
    pays), and an engine's estimators (GRPO's sum, GAE's return at the first token) would pay for
    writing more steps; with the remainder the return from the first token is the completion's
    total, whatever its length, and the steps still say where the credit was earned or lost.

    Args:
        step_rewards: per completion, its weighted step rewards (``[]``: none).
        totals: per completion, the mix's weighted total (None: no opinion, 0).
        aggregation, temperature: see :func:`aggregate_step_rewards`.

    Returns:
        (aggregated step rewards per completion, last-token reward per completion).
    """
    steps = [aggregate_step_rewards(rewards, aggregation, temperature) for rewards in step_rewards]
    last = [(0.0 if total is None else float(total)) - sum(row) for row, total in zip(steps, totals)]
    return steps, last


def process_advantages(
    step_rewards: Sequence[Sequence[float]],
    step_tokens: Sequence[Sequence[int | None]],
    lengths: Sequence[int],
    epsilon: float = 1e-4,
    aggregation: str = ProcessCredit.process_aggregation,
    temperature: float = ProcessCredit.process_temperature,
) -> list[list[float]]:
    """Process-supervised advantages for ONE group of completions.

    ``step_rewards[i][j]``: reward of step j of completion i; ``step_tokens[i][j]``: its last
    token (None: maps to no token, the reward still counts in the group statistics but credits
    nothing); ``lengths[i]``: number of tokens of completion i. Every step reward is normalised
    by the mean and (population) std of all step rewards of the group, ``(r - mean) / (std +
    epsilon)`` (DeepSeekMath 4.1.3); the normalised rewards of each completion are aggregated
    (:func:`aggregate_step_rewards`: ``sum`` keeps them, ``min`` applies PURE's min-form weights
    over the completion's steps); token t of completion i gets the sum of the aggregated rewards
    of its steps whose last token is at or after t. A group with fewer than two steps in total
    gives zeros.
    """
    flat = [float(r) for rewards in step_rewards for r in rewards]
    out = [[0.0] * int(n) for n in lengths]
    if len(flat) < 2:
        return out
    mean = sum(flat) / len(flat)
    std = math.sqrt(sum((r - mean) ** 2 for r in flat) / len(flat))
    for i, (rewards, tokens) in enumerate(zip(step_rewards, step_tokens)):
        row = out[i]
        normalised = [(float(reward) - mean) / (std + epsilon) for reward in rewards]
        for reward, token in zip(aggregate_step_rewards(normalised, aggregation, temperature), tokens):
            if token is None or not row:
                continue
            for t in range(min(int(token), len(row) - 1) + 1):
                row[t] += reward
    return out


def scatter_step_rewards(
    step_rewards: Sequence[Sequence[float] | None], step_tokens: Sequence[Sequence[int | None]], length: int
) -> torch.Tensor:
    """(batch, length) tensor with each step's reward added on its last token."""
    out = torch.zeros(len(step_rewards), length, dtype=torch.float32)
    for i, (rewards, tokens) in enumerate(zip(step_rewards, step_tokens)):
        if rewards is None:
            continue
        for reward, token in zip(rewards, tokens):
            if token is not None and 0 <= token < length:
                out[i, token] += float(reward)
    return out


def token_rewards(
    step_reward_tokens: torch.Tensor,
    outcome: torch.Tensor,
    mask: torch.Tensor,
    kl: torch.Tensor | None = None,
    kl_coef: float = 0.0,
) -> torch.Tensor:
    """PPO token-level rewards: step rewards already on their last tokens (``step_reward_tokens``,
    (B, T)), plus the outcome reward (``outcome``, (B,)) on each sequence's last unmasked token,
    minus ``kl_coef * kl`` on every unmasked token. Masked positions are 0."""
    mask = mask.to(step_reward_tokens.dtype)
    rewards = step_reward_tokens * mask
    lengths = mask.sum(dim=1).long()
    has_tokens = lengths > 0
    last = (lengths - 1).clamp(min=0)
    rows = torch.arange(rewards.size(0), device=rewards.device)
    rewards[rows[has_tokens], last[has_tokens]] += outcome.to(rewards.dtype)[has_tokens]
    if kl is not None and kl_coef:
        rewards = rewards - kl_coef * kl.to(rewards.dtype) * mask
    return rewards


def gae(
    rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float = 1.0, lam: float = 0.95
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over (B, T) token rewards and values.

    delta_t = r_t + gamma * V_{t+1} - V_t with V = 0 after the last unmasked token; A_t = delta_t
    + gamma * lam * A_{t+1}. Returns (advantages, returns = advantages + values), zero on masked
    positions. Assumes right padding (the mask is a prefix of ones).
    """
    mask = mask.to(rewards.dtype)
    values = values * mask
    rewards = rewards * mask
    advantages = torch.zeros_like(rewards)
    running = torch.zeros(rewards.size(0), dtype=rewards.dtype, device=rewards.device)
    next_value = torch.zeros_like(running)
    for t in reversed(range(rewards.size(1))):
        m = mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        running = (delta + gamma * lam * running) * m
        advantages[:, t] = running
        next_value = values[:, t] * m
    return advantages, (advantages + values) * mask


def masked_whiten(
    values: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True, epsilon: float = 1e-8
) -> torch.Tensor:
    """Normalise ``values`` to unit variance (and zero mean) over the unmasked entries."""
    mask = mask.to(values.dtype)
    count = mask.sum().clamp(min=1.0)
    mean = (values * mask).sum() / count
    variance = (((values - mean) * mask) ** 2).sum() / count
    whitened = (values - mean) * torch.rsqrt(variance + epsilon)
    if not shift_mean:
        whitened = whitened + mean
    return whitened * mask
