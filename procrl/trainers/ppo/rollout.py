"""What a PPO rollout needs besides the policy's forward: vLLM as the sampler (TRL's
``VLLMGeneration``, configured as TRL's GRPO configures it), the reward batch of a set of
completions, and each completion's last-token (outcome) reward."""

from __future__ import annotations

from typing import Any

from torch import nn

from procrl.rewards.mix import RewardMix
from procrl.rewards.protocol import RewardBatch
from procrl.trainers.credit import outcome_rewards
from procrl.trainers.ppo.ops import pad_completions
from procrl.trainers.step_credit import step_credited

__all__ = ["generate_with_vllm", "ppo_outcome", "reward_batch", "vllm_generation"]


def vllm_generation(policy: nn.Module, accelerator, tokenizer, args):
    """TRL's vLLM backend for the policy, configured from the GRPOConfig fields exactly as TRL's
    GRPOTrainer configures it (one micro-batch of rows per generate call)."""
    from trl.generation.vllm_generation import VLLMGeneration

    return VLLMGeneration(
        model=policy,
        accelerator=accelerator,
        processing_class=tokenizer,
        mode=args.vllm_mode,
        structured_outputs_regex=args.vllm_structured_outputs_regex,
        server_base_url=args.vllm_server_base_url,
        server_host=args.vllm_server_host,
        server_port=args.vllm_server_port,
        group_port=args.vllm_group_port,
        server_timeout=args.vllm_server_timeout,
        tensor_parallel_size=args.vllm_tensor_parallel_size,
        gpu_memory_utilization=args.vllm_gpu_memory_utilization,
        max_model_length=args.vllm_max_model_length,
        max_num_seqs=args.per_device_train_batch_size * args.vllm_tensor_parallel_size,
        enable_sleep_mode=args.vllm_enable_sleep_mode,
        model_impl=args.vllm_model_impl,
        trust_remote_code=args.trust_remote_code,
        repetition_penalty=args.repetition_penalty,
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=args.top_k or 0,
        min_p=args.min_p,
        max_completion_length=args.max_completion_length,
        logprobs=0,  # the sampled token's log-prob only: logged against the policy's
        generation_kwargs=args.generation_kwargs,
    )


def generate_with_vllm(vllm: Any, tokenizer: Any, prompt_texts: list[str], device: Any):
    """One sample per prompt through TRL's ``VLLMGeneration`` (vLLM's prefix cache shares repeated
    prompts): (prompt ids, prompt mask) left-padded, vLLM's stop-at-EOS completions right-padded
    with their mask, and the sampled tokens' log-probs."""
    prompt_lists = tokenizer(prompt_texts, add_special_tokens=False)["input_ids"]
    _, completion_lists, sampler_logprobs, _ = vllm.generate(prompts=prompt_lists, images=None, num_generations=1)
    padded = tokenizer.pad({"input_ids": prompt_lists}, padding=True, padding_side="left", return_tensors="pt")
    completion_ids, completion_mask, logprobs = pad_completions(
        completion_lists, sampler_logprobs, tokenizer.pad_token_id
    )
    return (
        padded["input_ids"].to(device),
        padded["attention_mask"].to(device),
        completion_ids.to(device),
        completion_mask.to(device),
        None if logprobs is None else logprobs.to(device),
    )


def reward_batch(
    rows: list[dict], prompt_texts: list[str], completions: list[str], completion_ids: list[list[int]]
) -> RewardBatch:
    """The batch the reward mix scores: the decoded completions, the rows' question and gold
    answer, the rendered prompts, the token ids, and every other dataset column."""
    columns = {k: [row.get(k) for row in rows] for k in rows[0] if k != "prompt"}
    return RewardBatch(
        completions=completions,
        questions=list(columns.get("question", [None] * len(rows))),
        golds=list(columns.get("answer", [None] * len(rows))),
        prompts=prompt_texts,
        completion_ids=completion_ids,
        columns=columns,
    )


def ppo_outcome(
    mix: RewardMix, outputs: dict, batch: RewardBatch, process_rewards: list[str] | None
) -> list[float | None]:
    """The last-token (outcome) reward of each completion: the weighted scores of the components
    whose step scores did not reach it as step rewards (:func:`~procrl.trainers.step_credit.step_credited`,
    :func:`~procrl.trainers.credit.outcome_rewards`).
    ``process_rewards``: the process components as the recipe names them (None: every component
    with step scores; ``[]``: none, outcome credit)."""
    credited = step_credited(mix, outputs, batch, process_rewards)
    scores = {name: output.scores for name, output in outputs.items()}
    return outcome_rewards(scores, {name: mix.specs[name].weight for name in outputs}, credited)
