"""procrl's PPO trainer (``trainer.algorithm: ppo``) with token-level process rewards.

TRL 1.16 has no PPO trainer any more; this one runs on the same stack as procrl's GRPO
(transformers ``Trainer`` + accelerate, so DDP / DeepSpeed ZeRO-2/3, PEFT, checkpoints,
resume, callbacks, W&B and ``trainer_state.json`` work as for any Trainer) and the same reward
mix. docs/spec.md section 5:

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

Package layout: :mod:`.settings` (``PPOSettings``), :mod:`.model` (``PolicyAndValue``, value
heads, checkpoint loading), :mod:`.ops` (tensor operations: log-probs, masked means, vLLM's
importance weights), :mod:`.rollout` (the vLLM backend, the reward batch, the last-token outcome),
:mod:`.trainer` (``PPOTrainer``: rollout, PPO update, logging, checkpoints; ``build_ppo_trainer``).
Prompts are rendered by :mod:`procrl.data.prompts` and sampled with transformers by
:mod:`procrl.models.generation`, as ``procrl evaluate`` does.
"""

from procrl.trainers.ppo.model import (
    VALUE_DIR,
    VALUE_HEAD_FILE,
    PolicyAndValue,
    load_pretrained_into,
    value_head_for,
    zero_value_head,
)
from procrl.trainers.ppo.ops import pad_completions, sampler_importance_weights
from procrl.trainers.ppo.rollout import ppo_outcome, vllm_generation
from procrl.trainers.ppo.settings import PPOSettings
from procrl.trainers.ppo.trainer import PPOTrainer, build_ppo_trainer

__all__ = [
    "PPOSettings",
    "PPOTrainer",
    "PolicyAndValue",
    "build_ppo_trainer",
    "VALUE_DIR",
    "VALUE_HEAD_FILE",
    "load_pretrained_into",
    "pad_completions",
    "ppo_outcome",
    "sampler_importance_weights",
    "value_head_for",
    "vllm_generation",
    "zero_value_head",
]
