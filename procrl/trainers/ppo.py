"""procrl's PPO trainer (``trainer.algorithm: ppo``) with token-level process rewards.

TRL 1.16 has no PPO trainer any more; this one runs on the same stack as procrl's GRPO
(transformers ``Trainer`` + accelerate, so DDP / DeepSpeed ZeRO-2/3, PEFT, checkpoints,
resume, callbacks, W&B and ``trainer_state.json`` work as for any Trainer) and the same reward
mix. REWARDS.md section 5:

* rollout: sampling at ``temperature``/``top_p``/``top_k`` on the prompts of the batch (each
  prompt ``num_generations`` times, as TRL's GRPO sampler repeats it), with ``policy.generate``
  or, with ``use_vllm: true``, through TRL's ``VLLMGeneration`` (``vllm_mode: colocate``, an
  engine in each training process, or ``server``, a ``vllm serve`` process), the same backend
  TRL's GRPO uses: the policy's weights are pushed to vLLM before the first rollout after each
  optimizer step (DeepSpeed ZeRO-3 parameters gathered, LoRA adapters merged for the push).
  vLLM's samples are re-scored by the policy (the rollout's old log-probs), and the policy loss is
  re-weighted by TRL's importance-sampling correction for the sampler mismatch
  (``vllm_importance_sampling_correction``/``_mode``/``_clip_min``/``_clip_max``, TRL's
  defaults: sequence-level, masked above 3); logged as ``sampling/*`` under TRL's names;
* token rewards: with ``credit: process``, each step's reward (weighted per-step scores of the
  ``process_rewards`` components, min-form weighted over the completion's steps under
  ``process_aggregation: min``) on the step's last token (``credit: outcome``: no step rewards);
  ``outcome_weight`` x the weighted sum of the scores of the components that gave this
  completion no step rewards on the last token (so no component counts twice; a completion
  without steps gets its process components' scores as one step reward on its last token, e.g.
  first_error's ``no_steps_score``); minus ``beta`` x the per-token KL estimate ``log pi_old - log pi_ref``;
* "no opinion": every component's None scores are resolved by its ``fallback`` (default
  ``group_mean``: the mean over the completions of the same prompt, gathered over processes;
  :mod:`procrl.rewards.fallback`) before any reward is formed, so a failed judge call is never
  the free 0 of a penalty;
* a value model (``value_model``; default: the policy's weights under a fresh 1-output
  token-classification head initialised to V = 0, LoRA adapters too when the policy uses
  LoRA), or with ``value_head_on_policy`` a linear head (V = 0 at start) on the policy's last
  hidden state, sharing its trunk (and its LoRA adapters); GAE (``gamma``, ``lam``),
  advantages whitened over the batch's tokens;
* clipped policy loss (clip range ``epsilon``) and clipped value loss (``cliprange_value``,
  coefficient ``vf_coef``), ``num_iterations`` PPO epochs per rollout batch.

Design: policy and value model live in one ``PolicyAndValue`` module, the Trainer's model, so
that a single optimizer, DDP/DeepSpeed wrapping and checkpointing cover both. One optimizer
step = one PPO epoch over the rollout batch (``gradient_accumulation_steps`` micro-batches):
a rollout is made at the first epoch of each cycle and reused for the next ``num_iterations - 1``
optimizer steps (the sampler repeats the cycle's prompts, like TRL's GRPO ``RepeatSampler``).
Checkpoints hold the policy (``save_pretrained`` layout, loadable as the policy) and the value
model under ``value_model/`` (``value_head.safetensors`` for a head on the policy); resume
restores both.

Simplified on purpose (say so rather than pretend): one mini-batch per micro-batch (no extra
PPO mini-batch shuffling), advantages whitened per process (not across ranks), no
reward-model-based "missing EOS penalty", the
reference model is a frozen copy of the initial policy (or the policy with adapters disabled
under LoRA) and is only loaded when ``beta > 0``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers import Trainer

from procrl.config import ConfigError
from procrl.rewards.base import RewardBatch, RewardMix, RewardOutput, RuntimeContext
from procrl.trainers.credit import (
    aggregate_step_rewards,
    gae,
    gives_step_credit,
    masked_whiten,
    outcome_rewards,
    scatter_step_rewards,
    token_rewards,
)
from procrl.trainers.held_out import HeldOutEvaluation
from procrl.trainers.process_grpo import SingleStepWarning, local_step_credit, process_component_names

__all__ = ["PPOSettings", "PPOTrainer", "PolicyAndValue", "build_ppo_trainer", "VALUE_DIR"]

logger = logging.getLogger(__name__)

VALUE_DIR = "value_model"
VALUE_HEAD_FILE = "value_head.safetensors"  # value_head_on_policy: the head alone


@dataclass
class PPOSettings:
    """The PPO hyper-parameters, from the recipe (procrl keys) and GRPOConfig (shared ones)."""

    num_ppo_epochs: int = 1  # GRPOConfig.num_iterations
    cliprange: float = 0.2  # GRPOConfig.epsilon
    cliprange_value: float = 0.2
    vf_coef: float = 0.1
    gamma: float = 1.0
    lam: float = 0.95
    kl_coef: float = 0.0  # GRPOConfig.beta
    whiten_advantages: bool = True
    value_learning_rate: float | None = None
    outcome_weight: float = 1.0
    process_rewards: list[str] | None = None
    process_aggregation: str = "min"
    process_temperature: float = 0.1
    num_generations: int = 1
    max_completion_length: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int | None = None
    # vLLM sampler correction (GRPOConfig.vllm_importance_sampling_*, TRL's defaults)
    sampler_correction: bool = True
    sampler_correction_mode: str = "sequence_mask"
    sampler_clip_min: float | None = None
    sampler_clip_max: float | None = 3.0

    @classmethod
    def from_recipe(cls, recipe, args) -> "PPOSettings":
        trainer = recipe.trainer
        return cls(
            num_ppo_epochs=int(args.num_iterations),
            cliprange=float(args.epsilon),
            cliprange_value=trainer.cliprange_value,
            vf_coef=trainer.vf_coef,
            gamma=trainer.gamma,
            lam=trainer.lam,
            kl_coef=float(args.beta),
            whiten_advantages=trainer.whiten_advantages,
            value_learning_rate=trainer.value_learning_rate,
            outcome_weight=trainer.outcome_weight,
            # credit: outcome -> no step rewards, only the sequence reward on the last token
            process_rewards=trainer.process_rewards if trainer.credit == "process" else [],
            process_aggregation=trainer.process_aggregation,
            process_temperature=trainer.process_temperature,
            num_generations=int(args.num_generations or 1),
            max_completion_length=int(args.max_completion_length),
            temperature=float(args.temperature),
            top_p=float(args.top_p),
            top_k=args.top_k if args.top_k else None,
            sampler_correction=bool(args.vllm_importance_sampling_correction),
            sampler_correction_mode=args.vllm_importance_sampling_mode,
            sampler_clip_min=args.vllm_importance_sampling_clip_min,
            sampler_clip_max=args.vllm_importance_sampling_clip_max,
        )


class PolicyAndValue(nn.Module):
    """The policy (causal LM) and the value model as one module: one forward gives the logits
    and the per-token values, so DDP/DeepSpeed see one model. ``value`` is either a separate
    1-output token classifier or an ``nn.Linear`` head on the policy's last hidden state (one
    forward through the shared trunk)."""

    def __init__(self, policy: nn.Module, value: nn.Module):
        super().__init__()
        self.policy = policy
        self.value = value
        self.config = policy.config

    @property
    def value_head_on_policy(self) -> bool:
        return isinstance(self.value, nn.Linear)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.value_head_on_policy:
            out = self.policy(input_ids=input_ids, attention_mask=attention_mask, use_cache=False,
                              output_hidden_states=True)
            return out.logits, self.value(out.hidden_states[-1].to(self.value.weight.dtype)).squeeze(-1)
        logits = self.policy(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
        values = self.value(input_ids=input_ids, attention_mask=attention_mask).logits.squeeze(-1)
        return logits, values

    @property
    def is_gradient_checkpointing(self) -> bool:
        return bool(getattr(self.policy, "is_gradient_checkpointing", False))

    def activation_checkpointing_enable(self, **kwargs: Any) -> None:
        for model in (self.policy, self.value):
            if hasattr(model, "gradient_checkpointing_enable"):
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs.get("activation_checkpointing_kwargs"))

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs: dict | None = None, **_: Any) -> None:
        self.activation_checkpointing_enable(activation_checkpointing_kwargs=gradient_checkpointing_kwargs)

    def gradient_checkpointing_disable(self) -> None:
        for model in (self.policy, self.value):
            if hasattr(model, "gradient_checkpointing_disable"):
                model.gradient_checkpointing_disable()


def sampler_importance_weights(old_logprobs: torch.Tensor, sampler_logprobs: torch.Tensor, mask: torch.Tensor,
                               mode: str, clip_min: float | None, clip_max: float | None) -> torch.Tensor:
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


def pad_completions(completion_lists: list[list[int]], sampler_logprobs: list[list[list[float | None]]] | None,
                    pad_token_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
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


def _logprobs(logits: torch.Tensor, tokens: torch.Tensor, temperature: float) -> torch.Tensor:
    from trl.trainer.utils import selective_log_softmax

    return selective_log_softmax(logits / temperature, tokens)


def _entropy(logits: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(-1)


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


class PPOTrainer(HeldOutEvaluation, Trainer):
    """PPO with token-level (process) rewards as a transformers ``Trainer``; see the module
    docstring for the algorithm and what is simplified. ``training_step`` makes (or reuses) a
    rollout and runs one PPO epoch on it; ``log`` adds the PPO metrics; ``_save`` /
    ``_load_from_checkpoint`` handle the policy + value model layout."""

    def __init__(
        self,
        model: PolicyAndValue,
        ref_model: nn.Module | None,
        args,
        settings: PPOSettings,
        reward_mix: RewardMix,
        processing_class,
        train_dataset,
        callbacks: list | None = None,
        eval_dataset=None,
    ):
        super().__init__(
            model=model,
            args=args,
            data_collator=lambda rows: rows,  # prompts stay rows: the rollout tokenizes them
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            processing_class=processing_class,
            callbacks=callbacks,
        )
        self.settings = settings
        self.reward_mix = reward_mix
        self.ref_model = ref_model
        if ref_model is not None:
            if self.is_deepspeed_enabled:
                from trl.models.utils import prepare_deepspeed

                self.ref_model = prepare_deepspeed(ref_model, self.accelerator)
            else:
                self.ref_model = self.accelerator.prepare_model(ref_model, evaluation_mode=True)
        self.vllm_generation = vllm_generation(model.policy, self.accelerator, processing_class, args) if args.use_vllm else None
        self._vllm_synced_step = -1  # global_step of the weights vLLM holds (-1: the initial checkpoint's)
        self._rollouts: list[dict | None] = [None] * args.gradient_accumulation_steps
        self._micro_step = 0
        self._metrics: dict[str, list[float]] = defaultdict(list)
        self._step_seconds = 0.0  # training_step time of the current optimizer step (step_time)
        self._timed_micro_steps = 0
        self._single_step_warning = SingleStepWarning()
        self.model_accepts_loss_kwargs = False

    def create_optimizer(self, model=None):
        """Trainer's optimizer; with ``value_learning_rate`` the value model's parameters move to
        groups of their own with that learning rate (Adam normalises per parameter, so
        ``vf_coef`` alone barely changes how fast a separate value model moves)."""
        optimizer = super().create_optimizer(model)
        rate = self.settings.value_learning_rate
        if rate is None or optimizer.state:
            return optimizer
        value_params = {id(p) for p in self.accelerator.unwrap_model(self.model).value.parameters()}
        value_groups = []
        for group in optimizer.param_groups:
            own = [p for p in group["params"] if id(p) in value_params]
            if own:
                group["params"] = [p for p in group["params"] if id(p) not in value_params]
                value_groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": own, "lr": rate})
        optimizer.param_groups = [g for g in optimizer.param_groups if g["params"]]
        for group in value_groups:
            optimizer.add_param_group(group)
        return optimizer

    # -- data --

    def _get_train_sampler(self, train_dataset=None):
        from trl.trainer.utils import RepeatSampler

        dataset = train_dataset if train_dataset is not None else self.train_dataset
        generations = self.settings.num_generations
        rows_per_cycle = self.args.per_device_train_batch_size * self.args.world_size * self.args.gradient_accumulation_steps
        return RepeatSampler(
            data_source=dataset,
            mini_repeat_count=generations,
            batch_size=rows_per_cycle // generations,
            repeat_count=self.settings.num_ppo_epochs,
            shuffle=True,
            seed=self.args.seed,
        )

    # -- rollout --

    def _prompt_texts(self, rows: list[dict]) -> list[str]:
        texts = []
        for row in rows:
            prompt = row["prompt"]
            if isinstance(prompt, list):
                prompt = self.processing_class.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
            texts.append(prompt)
        return texts

    def _policy_ref_logprobs(self, input_ids, attention_mask, completion_ids, prompt_length) -> torch.Tensor | None:
        if self.settings.kl_coef == 0.0:
            return None
        if self.ref_model is not None:
            logits = self.ref_model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
        else:  # LoRA: the reference is the policy with its adapters disabled
            policy = self.accelerator.unwrap_model(self.model).policy
            with policy.disable_adapter():
                logits = policy(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
        return _logprobs(logits[:, prompt_length - 1 : -1], completion_ids, self.settings.temperature)

    def _generate_transformers(self, prompt_texts: list[str]):
        from trl.models.utils import unwrap_model_for_generation

        tokenizer, settings = self.processing_class, self.settings
        encoded = tokenizer(
            prompt_texts, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False
        ).to(self.accelerator.device)
        prompt_ids, prompt_mask = encoded["input_ids"], encoded["attention_mask"]
        eos_id = tokenizer.eos_token_id
        generation = dict(
            do_sample=True, temperature=settings.temperature, top_p=settings.top_p, top_k=settings.top_k or 0,
            max_new_tokens=settings.max_completion_length, pad_token_id=tokenizer.pad_token_id, eos_token_id=eos_id,
        )
        generation.update(self.args.generation_kwargs or {})  # TRL's GRPOConfig.generation_kwargs, as GRPO honours them
        with unwrap_model_for_generation(self.model_wrapped, self.accelerator) as unwrapped:
            policy = unwrapped.policy
            was_training = policy.training
            policy.eval()
            sequences = policy.generate(input_ids=prompt_ids, attention_mask=prompt_mask, **generation)
            policy.train(was_training)
        completion_ids = sequences[:, prompt_ids.size(1):]
        # Keep tokens up to and including the first EOS.
        is_eos = completion_ids == eos_id
        first_eos = torch.where(is_eos.any(dim=1), is_eos.int().argmax(dim=1), completion_ids.size(1))
        positions = torch.arange(completion_ids.size(1), device=completion_ids.device).unsqueeze(0)
        completion_mask = (positions <= first_eos.unsqueeze(1)).long()
        completion_ids = completion_ids.masked_fill(completion_mask == 0, tokenizer.pad_token_id)
        return prompt_ids, prompt_mask, completion_ids, completion_mask, None

    def _generate_vllm(self, prompt_texts: list[str]):
        """Through TRL's ``VLLMGeneration``: weights pushed once per optimizer step (every rank
        takes part: ZeRO-3 gathers are collective), one sample per row (vLLM's prefix cache
        shares the repeated prompts), vLLM's stop-at-EOS completions right-padded."""
        tokenizer, device = self.processing_class, self.accelerator.device
        prompt_lists = tokenizer(prompt_texts, add_special_tokens=False)["input_ids"]
        if self.state.global_step != self._vllm_synced_step:
            self.vllm_generation.sync_weights()
            self._vllm_synced_step = self.state.global_step
        _, completion_lists, sampler_logprobs, _ = self.vllm_generation.generate(
            prompts=prompt_lists, images=None, num_generations=1
        )
        padded = tokenizer.pad({"input_ids": prompt_lists}, padding=True, padding_side="left", return_tensors="pt")
        completion_ids, completion_mask, logprobs = pad_completions(completion_lists, sampler_logprobs, tokenizer.pad_token_id)
        return (padded["input_ids"].to(device), padded["attention_mask"].to(device), completion_ids.to(device),
                completion_mask.to(device), None if logprobs is None else logprobs.to(device))

    @torch.no_grad()
    def _rollout(self, rows: list[dict]) -> dict[str, Any]:
        device = self.accelerator.device
        tokenizer = self.processing_class
        settings = self.settings
        prompt_texts = self._prompt_texts(rows)
        generate = self._generate_vllm if self.vllm_generation is not None else self._generate_transformers
        prompt_ids, prompt_mask, completion_ids, completion_mask, sampler_logprobs = generate(prompt_texts)
        prompt_length = prompt_ids.size(1)
        ended_with_eos = ((completion_ids == tokenizer.eos_token_id) & completion_mask.bool()).any(dim=1)
        id_lists = [row[: int(n)].tolist() for row, n in zip(completion_ids, completion_mask.sum(dim=1))]
        texts = tokenizer.batch_decode(id_lists, skip_special_tokens=True)

        # Rewards: every component once (the mix caches the outputs for the step credit).
        columns = {k: [row.get(k) for row in rows] for k in rows[0] if k != "prompt"}
        batch = RewardBatch(
            completions=texts,
            questions=list(columns.get("question", [None] * len(rows))),
            golds=list(columns.get("answer", [None] * len(rows))),
            prompts=prompt_texts,
            completion_ids=id_lists,
            columns=columns,
        )
        diagnostics: dict[str, float] = {}  # from the mix's batch observers (procrl/diagnostics.py)
        outputs = self.reward_mix.score_all(batch, log_metric=diagnostics.__setitem__)
        outputs, fallback_stats = self._resolve_fallbacks(outputs, prompt_texts)
        totals = self.reward_mix.total(outputs)
        step_rewards, step_tokens, credit_stats = local_step_credit(
            self.reward_mix, tokenizer, id_lists, settings.process_rewards
        )
        outcome = torch.tensor(
            [0.0 if t is None else t for t in ppo_outcome(self.reward_mix, outputs, batch, settings.process_rewards)],
            dtype=torch.float32, device=device,
        )
        step_rewards = [
            aggregate_step_rewards(r, settings.process_aggregation, settings.process_temperature) for r in step_rewards
        ]
        width = completion_ids.size(1)
        step_reward_tokens = scatter_step_rewards(step_rewards, step_tokens, width).to(device)

        input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)
        logits, values = self.model(input_ids=input_ids, attention_mask=attention_mask)
        old_logprobs = _logprobs(logits[:, prompt_length - 1 : -1], completion_ids, settings.temperature)
        old_values = values[:, prompt_length - 1 : -1].float()
        entropy = _entropy(logits[:, prompt_length - 1 : -1] / settings.temperature)
        del logits
        ref_logprobs = self._policy_ref_logprobs(input_ids, attention_mask, completion_ids, prompt_length)
        kl = (old_logprobs - ref_logprobs) if ref_logprobs is not None else torch.zeros_like(old_logprobs)
        rewards = token_rewards(step_reward_tokens, settings.outcome_weight * outcome, completion_mask, kl, settings.kl_coef)
        advantages, returns = gae(rewards, old_values, completion_mask, settings.gamma, settings.lam)
        if settings.whiten_advantages:
            advantages = masked_whiten(advantages, completion_mask)

        mask = completion_mask.float()
        kl_per_sequence = (kl * mask).sum(dim=1)
        sampler_stats, sampler_weights = {}, None
        if sampler_logprobs is not None:  # how far vLLM's sampler is from the policy it stands for
            gap = torch.nan_to_num((old_logprobs - sampler_logprobs).abs(), nan=0.0)
            sampler_stats = {
                "sampling/sampling_logp_difference/mean": _masked_mean(gap, mask),
                "sampling/sampling_logp_difference/max": (gap * mask).max(),
            }
            if settings.sampler_correction:
                sampler_weights = sampler_importance_weights(
                    old_logprobs, sampler_logprobs, mask, settings.sampler_correction_mode,
                    settings.sampler_clip_min, settings.sampler_clip_max,
                )
                per_token = sampler_weights.expand_as(mask)
                sampler_stats.update({
                    "sampling/importance_sampling_ratio/min": per_token[mask.bool()].min() if mask.any() else per_token.new_tensor(1.0),
                    "sampling/importance_sampling_ratio/mean": _masked_mean(per_token, mask),
                    "sampling/importance_sampling_ratio/max": (per_token * mask).max(),
                })
        self._record_rollout_metrics(outputs, totals, {**credit_stats, **fallback_stats, **diagnostics}, {
            **sampler_stats,
            "objective/kl": kl_per_sequence.mean(),
            "objective/entropy": (entropy * mask).sum(dim=1).mean(),
            "objective/non_score_reward": (-settings.kl_coef * kl_per_sequence).mean(),
            "objective/scores": outcome.mean(),
            "objective/rlhf_reward": (rewards * mask).sum(dim=1).mean(),
            "val/mean": _masked_mean(old_values, mask),
            "val/num_eos_tokens": ended_with_eos.float().sum(),
            "completions/mean_length": mask.sum(dim=1).mean(),
        })
        return {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "completion_ids": completion_ids,
            "completion_mask": completion_mask,
            "prompt_length": prompt_length,
            "old_logprobs": old_logprobs,
            "old_values": old_values,
            "advantages": advantages,
            "returns": returns,
            "sampler_weights": sampler_weights,
        }

    def _resolve_fallbacks(self, outputs: dict, prompt_texts: list[str]) -> tuple[dict, dict[str, float]]:
        """Each component's None scores resolved by its ``fallback`` (default ``group_mean``:
        the mean over the completions of the same prompt, gathered over processes since a
        group may span them; :mod:`procrl.rewards.fallback`), and the fill counts to log."""
        names = list(outputs)
        local = [[prompt_texts, *[outputs[name].scores for name in names]]]
        if self.accelerator.num_processes > 1:
            from accelerate.utils import gather_object

            parts = gather_object(local)
        else:
            parts = local
        start = sum(len(part[0]) for part in parts[: self.accelerator.process_index])
        count = len(prompt_texts)
        groups = [prompt for part in parts for prompt in part[0]]
        gathered = {name: [score for part in parts for score in part[1 + j]] for j, name in enumerate(names)}
        resolved_all, results = self.reward_mix.resolve(
            {name: RewardOutput(scores=scores) for name, scores in gathered.items()}, groups
        )
        resolved = {
            name: dataclasses.replace(outputs[name], scores=resolved_all[name].scores[start : start + count])
            for name in names
        }
        stats: dict[str, float] = {}
        for name, result in results.items():
            stats.update(result.metrics(name))
        return resolved, stats

    @torch.no_grad()
    def prediction_step(self, model: nn.Module, inputs: list[dict], prediction_loss_only: bool, ignore_keys=None):
        """Evaluation (``trainer.eval_steps``): one completion per held-out prompt, sampled with the
        rollout's settings, scored by the mix (held_out.py collects the outcomes); no loss."""
        tokenizer = self.processing_class
        prompt_texts = self._prompt_texts(inputs)
        generate = self._generate_vllm if self.vllm_generation is not None else self._generate_transformers
        _, _, completion_ids, completion_mask, _ = generate(prompt_texts)
        id_lists = [row[: int(n)].tolist() for row, n in zip(completion_ids, completion_mask.sum(dim=1))]
        columns = {k: [row.get(k) for row in inputs] for k in inputs[0] if k != "prompt"}
        self.reward_mix.score_all(RewardBatch(
            completions=tokenizer.batch_decode(id_lists, skip_special_tokens=True),
            questions=list(columns.get("question", [None] * len(inputs))),
            golds=list(columns.get("answer", [None] * len(inputs))),
            prompts=prompt_texts,
            completion_ids=id_lists,
            columns=columns,
        ))
        return None, None, None

    def _record_rollout_metrics(self, outputs, totals, credit_stats, tensors: dict[str, torch.Tensor]) -> None:
        """Average over processes (every rank calls this with the same keys, in the same order)."""
        names: list[str] = []
        values: list[float] = []
        for name, output in outputs.items():
            scores = [s for s in output.scores if s is not None]
            names += [f"rewards/{name}/mean", f"rewards/{name}/std"]
            mean = sum(scores) / len(scores) if scores else float("nan")
            std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores)) if scores else float("nan")
            values += [mean, std]
            for key, value in sorted(output.metrics.items()):
                if value is not None and math.isfinite(value):
                    names.append(f"rewards/{name}/{key}")
                    values.append(float(value))
            for kind, count in sorted(output.failures.items()):
                names.append(f"rewards/{name}/failures/{kind}")
                values.append(float(count))
        present = [t for t in totals if t is not None]
        names.append("reward")
        values.append(sum(present) / len(present) if present else float("nan"))
        for key, value in credit_stats.items():
            names.append(key)
            values.append(float(value))
        for key, value in tensors.items():
            names.append(key)
            values.append(float(value))
        from accelerate.utils import gather_object

        if self.accelerator.num_processes > 1:
            # ranks may differ in optional metric keys: average per key over the ranks that have it
            gathered = gather_object([dict(zip(names, values))])
            merged: dict[str, list[float]] = defaultdict(list)
            for part in gathered:
                for key, value in part.items():
                    if math.isfinite(value):
                        merged[key].append(value)
            averaged = {key: sum(v) / len(v) for key, v in merged.items()}
        else:
            averaged = {key: value for key, value in zip(names, values) if math.isfinite(value)}
        for key, value in averaged.items():
            self._metrics[key].append(value)
        if self.settings.process_rewards != [] and "process/single_step_fraction" in averaged:
            self._single_step_warning.observe(averaged["process/single_step_fraction"])

    # -- PPO update --

    def training_step(self, model: nn.Module, inputs: list[dict], num_items_in_batch=None) -> torch.Tensor:
        """One micro-step, timed as TRL's GRPO times its own: ``step_time`` is the training_step
        time of one optimizer step (its micro-steps, rollouts included), logged like the other
        metrics, so that ``diagnostics/time_share/*`` and ``overhead_share`` exist under PPO too."""
        started = time.perf_counter()
        loss = self._ppo_micro_step(model, inputs)
        self._step_seconds += time.perf_counter() - started
        self._timed_micro_steps += 1
        if self._timed_micro_steps % self.current_gradient_accumulation_steps == 0:
            self._metrics["step_time"].append(self._step_seconds)
            self._step_seconds = 0.0
        return loss

    def _ppo_micro_step(self, model: nn.Module, inputs: list[dict]) -> torch.Tensor:
        model.train()
        accumulation = self.args.gradient_accumulation_steps
        slot = self._micro_step % accumulation
        first_epoch = self._micro_step % (accumulation * self.settings.num_ppo_epochs) < accumulation
        if first_epoch or self._rollouts[slot] is None:  # None: resumed in the middle of a cycle
            self._rollouts[slot] = self._rollout(inputs)
        rollout = self._rollouts[slot]
        self._micro_step += 1

        settings = self.settings
        prompt_length = rollout["prompt_length"]
        mask = rollout["completion_mask"].float()
        with self.compute_loss_context_manager():
            logits, values = model(input_ids=rollout["input_ids"], attention_mask=rollout["attention_mask"])
        logprobs = _logprobs(logits[:, prompt_length - 1 : -1], rollout["completion_ids"], settings.temperature)
        values = values[:, prompt_length - 1 : -1].float()
        del logits

        advantages, returns = rollout["advantages"], rollout["returns"]
        log_ratio = logprobs - rollout["old_logprobs"]
        ratio = torch.exp(log_ratio)
        policy_losses = torch.max(
            -advantages * ratio, -advantages * torch.clamp(ratio, 1.0 - settings.cliprange, 1.0 + settings.cliprange)
        )
        if rollout["sampler_weights"] is not None:  # vLLM's samples re-weighted towards the rollout policy
            policy_losses = policy_losses * rollout["sampler_weights"]
        policy_loss = _masked_mean(policy_losses, mask)
        old_values = rollout["old_values"]
        clipped_values = old_values + torch.clamp(values - old_values, -settings.cliprange_value, settings.cliprange_value)
        value_losses = torch.max((values - returns) ** 2, (clipped_values - returns) ** 2)
        value_loss = 0.5 * _masked_mean(value_losses, mask)
        loss = policy_loss + settings.vf_coef * value_loss

        with torch.no_grad():
            self._metrics["loss/policy"].append(policy_loss.item())
            self._metrics["loss/value"].append(value_loss.item())
            self._metrics["policy/approxkl"].append(_masked_mean(0.5 * log_ratio**2, mask).item())
            self._metrics["policy/clipfrac"].append(
                _masked_mean((torch.abs(ratio - 1.0) > settings.cliprange).float(), mask).item()
            )
            self._metrics["val/clipfrac"].append(
                _masked_mean(((values - returns) ** 2 < (clipped_values - returns) ** 2).float(), mask).item()
            )
            self._metrics["val/ratio"].append(_masked_mean(ratio, mask).item())
            self._metrics["val/error"].append(_masked_mean((values - returns) ** 2, mask).item())

        kwargs = {}
        from accelerate.utils import DistributedType

        if self.accelerator.distributed_type == DistributedType.DEEPSPEED:
            kwargs["scale_wrt_gas"] = False
        loss = loss / self.current_gradient_accumulation_steps
        self.accelerator.backward(loss, **kwargs)
        return loss.detach()

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if self._metrics and "loss" in logs:  # training logs only
            for key, values in self._metrics.items():
                if values:
                    logs[key] = sum(values) / len(values)
            self._metrics.clear()
        super().log(logs, start_time)

    # -- checkpoints --

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        output_dir = output_dir if output_dir is not None else self.args.output_dir
        if not self.args.should_save:
            return
        os.makedirs(output_dir, exist_ok=True)
        unwrapped = self.accelerator.unwrap_model(self.model)
        if state_dict is None:
            state_dict = unwrapped.state_dict()
        policy_state = {k[len("policy."):]: v for k, v in state_dict.items() if k.startswith("policy.")}
        value_state = {k[len("value."):]: v for k, v in state_dict.items() if k.startswith("value.")}
        unwrapped.policy.save_pretrained(output_dir, state_dict=policy_state)
        if unwrapped.value_head_on_policy:
            from safetensors.torch import save_file

            os.makedirs(os.path.join(output_dir, VALUE_DIR), exist_ok=True)
            save_file({k: v.contiguous() for k, v in value_state.items()}, os.path.join(output_dir, VALUE_DIR, VALUE_HEAD_FILE))
        else:
            unwrapped.value.save_pretrained(os.path.join(output_dir, VALUE_DIR), state_dict=value_state)
        if self.processing_class is not None:
            self.processing_class.save_pretrained(output_dir)
        torch.save(self.args, os.path.join(output_dir, "training_args.bin"))

    def _load_from_checkpoint(self, resume_from_checkpoint: str, model: nn.Module | None = None) -> None:
        unwrapped = self.accelerator.unwrap_model(model if model is not None else self.model)
        load_pretrained_into(unwrapped.policy, resume_from_checkpoint)
        load_pretrained_into(unwrapped.value, os.path.join(resume_from_checkpoint, VALUE_DIR))
        logger.info("restored policy and value model from %s", resume_from_checkpoint)


def ppo_outcome(mix: RewardMix, outputs: dict, batch: RewardBatch, process_rewards: list[str] | None) -> list[float | None]:
    """The last-token (outcome) reward of each completion: the weighted scores of the components
    whose step scores did not reach it as step rewards (:func:`~procrl.trainers.credit.outcome_rewards`).
    ``process_rewards``: the process components as the recipe names them (None: every component
    with step scores; ``[]``: none, outcome credit)."""
    process_names = process_component_names(mix, outputs, process_rewards)
    raw = mix.last_outputs  # before the fallbacks: what local_step_credit turned into step rewards
    credited: dict[str, list[bool]] = {}
    for name in process_names:
        step_scores = outputs[name].step_scores if name in outputs else None
        scored = raw[name].scores if name in raw else [None] * len(batch)
        credited[name] = [
            (step_scores is not None and gives_step_credit(step_scores[i], len(segmentation.steps)))
            # a completion without steps got the component's score as its one step reward
            or (not segmentation.steps and scored[i] is not None)
            for i, segmentation in enumerate(batch.segmentations)
        ]
    scores = {name: output.scores for name, output in outputs.items()}
    return outcome_rewards(scores, {name: mix.specs[name].weight for name in outputs}, credited)


def load_pretrained_into(model: nn.Module, directory: str) -> None:
    """Load weights saved by ``save_pretrained`` (full model or PEFT adapter), or a value head
    saved by ``PPOTrainer._save``, into ``model``."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"checkpoint directory not found: {directory}")
    if isinstance(model, nn.Linear):
        from safetensors.torch import load_file

        model.load_state_dict(load_file(os.path.join(directory, VALUE_HEAD_FILE)))
        return
    if hasattr(model, "peft_config"):
        from peft import set_peft_model_state_dict
        from peft.utils import load_peft_weights

        set_peft_model_state_dict(model, load_peft_weights(directory))
        return
    loaded = type(model).from_pretrained(directory, dtype=next(model.parameters()).dtype)
    model.load_state_dict(loaded.state_dict())
    del loaded


def value_head_for(policy: nn.Module) -> nn.Linear:
    """``value_head_on_policy``: a scalar head on the policy's last hidden state, V = 0 at start."""
    config = policy.config.get_text_config()
    head = nn.Linear(config.hidden_size, 1, dtype=next(policy.parameters()).dtype)
    with torch.no_grad():
        head.weight.zero_()
        head.bias.zero_()
    return head


def zero_value_head(value: nn.Module) -> None:
    """Start a fresh value head at V = 0: the first advantages are then the (whitened)
    rewards-to-go instead of the noise of a random head, which on small rewards drowns the signal."""
    from contextlib import nullcontext

    from transformers.integrations import is_deepspeed_zero3_enabled

    head = getattr(value, "score", None) or getattr(value, "classifier", None)
    if not isinstance(head, nn.Linear):
        raise ValueError(f"{type(value).__name__}: no linear 'score' or 'classifier' head to initialise")
    params = [p for p in (head.weight, head.bias) if p is not None]
    gathered = nullcontext()
    if is_deepspeed_zero3_enabled():  # built partitioned: zeroing the local shard alone would change nothing
        import deepspeed

        gathered = deepspeed.zero.GatheredParameters(params, modifier_rank=0)
    with gathered, torch.no_grad():
        for param in params:
            param.zero_()


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


def build_ppo_trainer(recipe, mix: RewardMix, args, tokenizer, train_dataset, callbacks: list | None = None,
                      eval_dataset=None) -> PPOTrainer:
    """The PPO trainer of a recipe: policy, value model (+ LoRA), reference, settings."""
    from transformers import AutoModelForTokenClassification

    from procrl.models import load_policy, load_pretrained, lora_config, model_source, pretrained_kwargs

    settings = PPOSettings.from_recipe(recipe, args)
    rows = args.per_device_train_batch_size * args.world_size * args.gradient_accumulation_steps
    if rows % settings.num_generations:
        raise ConfigError(
            f"trainer.num_generations: {settings.num_generations} must divide per_device_train_batch_size x processes "
            f"x gradient_accumulation_steps = {rows} (each prompt is rolled out num_generations times)"
        )
    policy = load_policy(recipe.model)
    if recipe.trainer.value_head_on_policy:
        value = value_head_for(policy)
    else:
        if recipe.trainer.value_model:
            value_source = model_source(recipe.trainer.value_model, recipe.trainer.value_model_gguf_file)
            value = load_pretrained(AutoModelForTokenClassification, value_source, num_labels=1,
                                    **pretrained_kwargs(recipe.model))
        else:  # the policy's weights (its GGUF too) under a fresh scalar head
            value = load_policy(recipe.model, AutoModelForTokenClassification, num_labels=1)
        if value.config.pad_token_id is None:
            value.config.pad_token_id = tokenizer.pad_token_id
        if not recipe.trainer.value_model:
            zero_value_head(value)
    peft = lora_config(recipe.model)
    ref_model = None
    if peft is not None:
        import copy

        from peft import get_peft_model

        policy = get_peft_model(policy, peft)
        if not recipe.trainer.value_head_on_policy:  # a head on the policy trains with the policy's adapters
            value_peft = copy.deepcopy(peft)
            value_peft.task_type = "TOKEN_CLS"  # the head is trained whole (PEFT's modules_to_save)
            # "all-linear" (LoRA's default here) would also adapt the 1-output head, which PEFT then
            # refuses to save whole ("modules_to_save cannot be applied to ... lora.layer.Linear")
            heads = [name for name in ("score", "classifier") if isinstance(getattr(value, name, None), nn.Linear)]
            if value_peft.target_modules == "all-linear" or value_peft.target_modules == {"all-linear"}:
                value_peft.exclude_modules = heads
            value = get_peft_model(value, value_peft)
    elif settings.kl_coef != 0.0:
        ref_model = load_policy(recipe.model)
        ref_model.eval()
        ref_model.requires_grad_(False)
    from procrl.checkpoints import atomic_checkpoints

    trainer = atomic_checkpoints(PPOTrainer)(
        model=PolicyAndValue(policy, value),
        ref_model=ref_model,
        args=args,
        settings=settings,
        reward_mix=mix,
        processing_class=tokenizer,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        callbacks=callbacks,
    )
    mix.bind(RuntimeContext.from_trainer(trainer, tokenizer))
    return trainer
