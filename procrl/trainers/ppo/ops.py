"""PPO's tensor operations (pure functions of tensors): per-token log-probs and entropy from the
completion positions' logits, a chunk of rows at a time (never a float32 copy of the batch's
full-vocabulary logits), masked means, vLLM's completions padded, and TRL's importance-sampling
correction."""

from __future__ import annotations

import math

import torch

__all__ = ["logprobs", "logprobs_and_entropy", "masked_mean", "pad_completions", "sampler_importance_weights"]


def sampler_importance_weights(
    old_logprobs: torch.Tensor,
    sampler_logprobs: torch.Tensor,
    mask: torch.Tensor,
    mode: str,
    clip_min: float | None,
    clip_max: float | None,
) -> torch.Tensor:
    """TRL's vLLM importance-sampling correction, for PPO: ratio pi_old / pi_sampler per token
    (``token_*``) or per sequence (``sequence_*``, the product over its tokens), truncated to
    [clip_min, clip_max] (``*_truncate``) or zeroed outside it (``*_mask``). Shape (B, T) or (B, 1);
    tokens without a sampler log-prob (NaN) count as ratio 1."""
    log_ratio = torch.nan_to_num((old_logprobs - sampler_logprobs) * mask, nan=0.0)
    if mode.startswith("sequence_"):
        log_ratio = log_ratio.sum(dim=-1, keepdim=True)
    elif not mode.startswith("token_"):
        raise ValueError(f"vllm_importance_sampling_mode: unknown {mode!r}")
    ratio = torch.exp(log_ratio)
    if mode.endswith("_truncate"):
        return torch.clamp(ratio, min=clip_min, max=clip_max)
    if mode.endswith("_mask"):
        low = -math.inf if clip_min is None else clip_min
        high = math.inf if clip_max is None else clip_max
        return ratio.masked_fill((ratio < low) | (ratio > high), 0.0)
    raise ValueError(f"vllm_importance_sampling_mode: unknown {mode!r}")


def pad_completions(
    completion_lists: list[list[int]], sampler_logprobs: list[list[list[float | None]]] | None, pad_token_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """vLLM's completions (token lists, EOS included when they stopped on it) as right-padded
    (B, T) ids and mask (T >= 1), with the sampled tokens' log-probs (TRL's (B, T, k) lists, the
    sampled token first); a log-prob vLLM could not give (None) becomes NaN (ratio 1, no gap)."""
    width = max(1, max((len(ids) for ids in completion_lists), default=0))
    completion_ids = torch.full((len(completion_lists), width), pad_token_id, dtype=torch.long)
    completion_mask = torch.zeros_like(completion_ids)
    logprobs = torch.zeros(completion_ids.shape, dtype=torch.float32) if sampler_logprobs is not None else None
    for row, ids in enumerate(completion_lists):
        completion_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        completion_mask[row, : len(ids)] = 1
        if logprobs is not None and ids:
            logprobs[row, : len(ids)] = torch.tensor(
                [math.nan if lp[0] is None else lp[0] for lp in sampler_logprobs[row]], dtype=torch.float32
            )
    return completion_ids, completion_mask, logprobs


def logprobs(logits: torch.Tensor, tokens: torch.Tensor, temperature: float, chunk_rows: int = 1) -> torch.Tensor:
    """Log-probability of ``tokens`` (B, T) under ``logits`` (B, T, V) at ``temperature``, (B, T).

    TRL's ``selective_log_softmax`` on ``chunk_rows`` rows at a time: the temperature-scaled copy
    and the log-softmax exist for one chunk of rows, never for the batch (gradients flow)."""
    from trl.trainer.utils import selective_log_softmax

    return torch.cat(
        [
            selective_log_softmax(logits[start : start + chunk_rows], tokens[start : start + chunk_rows], temperature)
            for start in range(0, logits.size(0), chunk_rows)
        ]
    )


def logprobs_and_entropy(
    logits: torch.Tensor, tokens: torch.Tensor, temperature: float, chunk_rows: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`logprobs` and the entropy (nats, no gradient) of the temperature-scaled distribution,
    (B, T) each, from TRL's ``selective_log_softmax_and_entropy`` one chunk of rows at a time
    (on a GPU with Triton, TRL's fused kernel; elsewhere its log-softmax and 128-position entropy
    chunks): the transient memory is one chunk's vocabulary x length, in the logits' dtype."""
    from trl.trainer.utils import selective_log_softmax_and_entropy

    parts = [
        selective_log_softmax_and_entropy(
            logits[start : start + chunk_rows],
            tokens[start : start + chunk_rows],
            entropy_requires_grad=False,
            temperature=temperature,
        )
        for start in range(0, logits.size(0), chunk_rows)
    ]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts]).float()


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp(min=1.0)
