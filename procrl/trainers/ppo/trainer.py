"""The PPO loop as a transformers ``Trainer`` (:class:`PPOTrainer`) and the builder of a
recipe's PPO trainer (:func:`build_ppo_trainer`); the algorithm is described in
:mod:`procrl.trainers.ppo`."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import time
from collections import defaultdict
from typing import Any

import torch
from torch import nn
from transformers import Trainer

import procrl.trainers.ppo.ops as ops
from procrl.core.config import ConfigError
from procrl.data.prompts import render_prompt
from procrl.models.generation import generate
from procrl.rewards.mix import RewardMix
from procrl.rewards.protocol import RewardOutput, RuntimeContext
from procrl.trainers.credit import aggregate_step_rewards, gae, masked_whiten, scatter_step_rewards, token_rewards
from procrl.trainers.held_out import HeldOutEvaluation
from procrl.trainers.ppo.model import (
    VALUE_DIR,
    VALUE_HEAD_FILE,
    PolicyAndValue,
    load_pretrained_into,
    value_head_for,
    zero_value_head,
)
from procrl.trainers.ppo.rollout import generate_with_vllm, ppo_outcome, reward_batch, vllm_generation
from procrl.trainers.ppo.settings import PPOSettings
from procrl.trainers.step_credit import SingleStepWarning, local_step_credit

__all__ = ["ROLLOUT_CHUNK_ROWS", "PPOTrainer", "build_ppo_trainer", "rollout_scores"]

logger = logging.getLogger(__name__)


# Rows per forward pass when a rollout is scored (no gradients): the LM head's output and its
# log-softmax exist for this many rows at a time, so the transient memory grows with one row's
# vocabulary x completion length, not the batch's. Every rank has per_device_train_batch_size rows,
# so under ZeRO-3 every rank makes the same number of (collective) passes.
ROLLOUT_CHUNK_ROWS = 1


def rollout_scores(
    forward,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    prompt_length: int,
    temperature: float,
    with_entropy: bool = False,
    chunk_rows: int = ROLLOUT_CHUNK_ROWS,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Log-probs of the completion tokens (B, T), the values at the completion positions (B, T;
    None when ``forward`` gives none) and the entropy (B, T; with ``with_entropy``), from
    ``forward(ids, mask, logits_to_keep)`` -> (logits, values or None), run on ``chunk_rows`` rows
    at a time with the LM head on the completion positions only (``logits_to_keep`` = T + 1).

    Args:
        forward: the model call; ``logits_to_keep`` as transformers' causal LMs take it.
        input_ids: (B, P + T) prompt (left-padded) then completion (right-padded) ids.
        attention_mask: (B, P + T).
        completion_ids: (B, T).
        prompt_length: P.
        temperature: the sampling temperature the log-probs and entropy are taken at.
        with_entropy: also the entropy (no gradient).
        chunk_rows: rows per forward pass.

    Returns:
        (logprobs, values, entropy), float32 where computed.
    """
    keep = completion_ids.size(1) + 1
    logprobs, values, entropies = [], [], []
    for start in range(0, input_ids.size(0), chunk_rows):
        rows = slice(start, start + chunk_rows)
        logits, row_values = forward(input_ids[rows], attention_mask[rows], keep)
        tokens = completion_ids[rows]
        if with_entropy:
            row_logprobs, row_entropy = ops.logprobs_and_entropy(logits[:, :-1], tokens, temperature)
            entropies.append(row_entropy)
        else:
            row_logprobs = ops.logprobs(logits[:, :-1], tokens, temperature)
        logprobs.append(row_logprobs)
        if row_values is not None:
            values.append(row_values[:, prompt_length - 1 : -1].float())
        del logits
    return (
        torch.cat(logprobs),
        torch.cat(values) if values else None,
        torch.cat(entropies) if entropies else None,
    )


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
        """PPO over ``model`` with the recipe's rewards.

        Args:
            model: the policy with its value head (:class:`~procrl.trainers.ppo.model.PolicyAndValue`).
            ref_model: the frozen reference policy of the KL penalty (None: no penalty).
            args: transformers ``TrainingArguments``.
            settings: PPO's own options (:class:`~procrl.trainers.ppo.settings.PPOSettings`).
            reward_mix: the recipe's reward mix (outcome scores and per-step scores).
            processing_class: the tokenizer.
            train_dataset: the prompt rows.
            callbacks: transformers callbacks.
            eval_dataset: held-out rows for the accuracies of :mod:`procrl.trainers.held_out`.
        """
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
        self.vllm_generation = (
            vllm_generation(model.policy, self.accelerator, processing_class, args) if args.use_vllm else None
        )
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
        rows_per_cycle = (
            self.args.per_device_train_batch_size * self.args.world_size * self.args.gradient_accumulation_steps
        )
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
        return [render_prompt(self.processing_class, row["prompt"]) for row in rows]

    def _policy_ref_logprobs(self, input_ids, attention_mask, completion_ids, prompt_length) -> torch.Tensor | None:
        if self.settings.kl_coef == 0.0:
            return None
        if self.ref_model is not None:
            reference, disabled = self.ref_model, contextlib.nullcontext()
        else:  # LoRA: the reference is the policy with its adapters disabled
            reference = self.accelerator.unwrap_model(self.model).policy
            disabled = reference.disable_adapter()

        def forward(ids, mask, keep):
            return reference(input_ids=ids, attention_mask=mask, use_cache=False, logits_to_keep=keep).logits, None

        with disabled:
            logprobs, _, _ = rollout_scores(
                forward, input_ids, attention_mask, completion_ids, prompt_length, self.settings.temperature
            )
        return logprobs

    def _generate_transformers(self, prompt_texts: list[str]):
        """Sampling with the policy's ``generate`` (:func:`procrl.models.generation.generate`): the
        rollout's temperature / top-p / top-k, stopping at the tokenizer's EOS, TRL's
        ``GRPOConfig.generation_kwargs`` on top, as GRPO honours them."""
        from trl.models.utils import unwrap_model_for_generation

        tokenizer, settings = self.processing_class, self.settings
        sampling = dict(
            do_sample=True, temperature=settings.temperature, top_p=settings.top_p, top_k=settings.top_k or 0
        )
        with unwrap_model_for_generation(self.model_wrapped, self.accelerator) as unwrapped:
            generated = generate(
                unwrapped.policy,
                tokenizer,
                prompt_texts,
                max_new_tokens=settings.max_completion_length,
                sampling=sampling,
                eos_token_id=tokenizer.eos_token_id,
                device=self.accelerator.device,
                generation_kwargs=self.args.generation_kwargs,
            )
        return generated.prompt_ids, generated.prompt_mask, generated.completion_ids, generated.completion_mask, None

    def _generate_vllm(self, prompt_texts: list[str]):
        """Through TRL's ``VLLMGeneration``: weights pushed once per optimizer step (every rank
        takes part: ZeRO-3 gathers are collective), then :func:`.rollout.generate_with_vllm`."""
        if self.state.global_step != self._vllm_synced_step:
            self.vllm_generation.sync_weights()
            self._vllm_synced_step = self.state.global_step
        return generate_with_vllm(self.vllm_generation, self.processing_class, prompt_texts, self.accelerator.device)

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
        batch = reward_batch(rows, prompt_texts, texts, id_lists)
        diagnostics: dict[str, float] = {}  # from the mix's batch observers (procrl/observe/callback.py)
        outputs = self.reward_mix.score_all(batch, log_metric=diagnostics.__setitem__)
        outputs, fallback_stats = self._resolve_fallbacks(outputs, prompt_texts)
        totals = self.reward_mix.total(outputs)
        step_rewards, step_tokens, credit_stats = local_step_credit(
            self.reward_mix, tokenizer, id_lists, settings.process_rewards
        )
        outcome = torch.tensor(
            [0.0 if t is None else t for t in ppo_outcome(self.reward_mix, outputs, batch, settings.process_rewards)],
            dtype=torch.float32,
            device=device,
        )
        step_rewards = [
            aggregate_step_rewards(r, settings.process_aggregation, settings.process_temperature) for r in step_rewards
        ]
        width = completion_ids.size(1)
        step_reward_tokens = scatter_step_rewards(step_rewards, step_tokens, width).to(device)

        input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attention_mask = torch.cat([prompt_mask, completion_mask], dim=1)
        old_logprobs, old_values, entropy = rollout_scores(
            lambda ids, mask, keep: self.model(input_ids=ids, attention_mask=mask, logits_to_keep=keep),
            input_ids,
            attention_mask,
            completion_ids,
            prompt_length,
            settings.temperature,
            with_entropy=True,
        )
        ref_logprobs = self._policy_ref_logprobs(input_ids, attention_mask, completion_ids, prompt_length)
        kl = (old_logprobs - ref_logprobs) if ref_logprobs is not None else torch.zeros_like(old_logprobs)
        rewards = token_rewards(
            step_reward_tokens, settings.outcome_weight * outcome, completion_mask, kl, settings.kl_coef
        )
        advantages, returns = gae(rewards, old_values, completion_mask, settings.gamma, settings.lam)
        if settings.whiten_advantages:
            advantages = masked_whiten(advantages, completion_mask)

        mask = completion_mask.float()
        kl_per_sequence = (kl * mask).sum(dim=1)
        sampler_stats, sampler_weights = {}, None
        if sampler_logprobs is not None:  # how far vLLM's sampler is from the policy it stands for
            gap = torch.nan_to_num((old_logprobs - sampler_logprobs).abs(), nan=0.0)
            sampler_stats = {
                "sampling/sampling_logp_difference/mean": ops.masked_mean(gap, mask),
                "sampling/sampling_logp_difference/max": (gap * mask).max(),
            }
            if settings.sampler_correction:
                sampler_weights = ops.sampler_importance_weights(
                    old_logprobs,
                    sampler_logprobs,
                    mask,
                    settings.sampler_correction_mode,
                    settings.sampler_clip_min,
                    settings.sampler_clip_max,
                )
                per_token = sampler_weights.expand_as(mask)
                sampler_stats.update(
                    {
                        "sampling/importance_sampling_ratio/min": per_token[mask.bool()].min()
                        if mask.any()
                        else per_token.new_tensor(1.0),
                        "sampling/importance_sampling_ratio/mean": ops.masked_mean(per_token, mask),
                        "sampling/importance_sampling_ratio/max": (per_token * mask).max(),
                    }
                )
        self._record_rollout_metrics(
            outputs,
            totals,
            {**credit_stats, **fallback_stats, **diagnostics},
            {
                **sampler_stats,
                "objective/kl": kl_per_sequence.mean(),
                "objective/entropy": (entropy * mask).sum(dim=1).mean(),
                "objective/non_score_reward": (-settings.kl_coef * kl_per_sequence).mean(),
                "objective/scores": outcome.mean(),
                "objective/rlhf_reward": (rewards * mask).sum(dim=1).mean(),
                "val/mean": ops.masked_mean(old_values, mask),
                "val/num_eos_tokens": ended_with_eos.float().sum(),
                "completions/mean_length": mask.sum(dim=1).mean(),
            },
        )
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
        self.reward_mix.score_all(
            reward_batch(inputs, prompt_texts, tokenizer.batch_decode(id_lists, skip_special_tokens=True), id_lists)
        )
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
            logits, values = model(
                input_ids=rollout["input_ids"],
                attention_mask=rollout["attention_mask"],
                logits_to_keep=rollout["completion_ids"].size(1) + 1,
            )
        logprobs = ops.logprobs(logits[:, :-1], rollout["completion_ids"], settings.temperature)
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
        policy_loss = ops.masked_mean(policy_losses, mask)
        old_values = rollout["old_values"]
        clipped_values = old_values + torch.clamp(
            values - old_values, -settings.cliprange_value, settings.cliprange_value
        )
        value_losses = torch.max((values - returns) ** 2, (clipped_values - returns) ** 2)
        value_loss = 0.5 * ops.masked_mean(value_losses, mask)
        loss = policy_loss + settings.vf_coef * value_loss

        with torch.no_grad():
            self._metrics["loss/policy"].append(policy_loss.item())
            self._metrics["loss/value"].append(value_loss.item())
            self._metrics["policy/approxkl"].append(ops.masked_mean(0.5 * log_ratio**2, mask).item())
            self._metrics["policy/clipfrac"].append(
                ops.masked_mean((torch.abs(ratio - 1.0) > settings.cliprange).float(), mask).item()
            )
            self._metrics["val/clipfrac"].append(
                ops.masked_mean(((values - returns) ** 2 < (clipped_values - returns) ** 2).float(), mask).item()
            )
            self._metrics["val/ratio"].append(ops.masked_mean(ratio, mask).item())
            self._metrics["val/error"].append(ops.masked_mean((values - returns) ** 2, mask).item())

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
        policy_state = {k[len("policy.") :]: v for k, v in state_dict.items() if k.startswith("policy.")}
        value_state = {k[len("value.") :]: v for k, v in state_dict.items() if k.startswith("value.")}
        unwrapped.policy.save_pretrained(output_dir, state_dict=policy_state)
        if unwrapped.value_head_on_policy:
            from safetensors.torch import save_file

            os.makedirs(os.path.join(output_dir, VALUE_DIR), exist_ok=True)
            save_file(
                {k: v.contiguous() for k, v in value_state.items()},
                os.path.join(output_dir, VALUE_DIR, VALUE_HEAD_FILE),
            )
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


def build_ppo_trainer(
    recipe, mix: RewardMix, args, tokenizer, train_dataset, callbacks: list | None = None, eval_dataset=None
) -> PPOTrainer:
    """The PPO trainer of a recipe: policy, value model (+ LoRA), reference, settings."""
    from transformers import AutoModelForTokenClassification

    from procrl.models.loading import load_policy, load_pretrained, lora_config, model_source, pretrained_kwargs

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
            value = load_pretrained(
                AutoModelForTokenClassification, value_source, num_labels=1, **pretrained_kwargs(recipe.model)
            )
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
    from procrl.trainers.checkpoints import atomic_checkpoints

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
