"""The one Hugging Face generation routine, and the one vLLM check.

:func:`generate` is how procrl samples (PPO's rollouts and held-out evaluation) and decodes
(``procrl evaluate``) with a transformers model: prompts as rendered text
(:mod:`procrl.data.prompts`), tokenized without special tokens (the chat template or the plain
prompt holds what the model should see) and padded on the left (decoder-only batched generation
continues after the prompt), ``model.generate`` without gradients and in eval mode (the training
flag restored after), and the completions cut after their first stop token: tokens up to and
including it are the completion (its mask is 1), later ones are padding. The stop tokens are the
``eos_token_id`` the caller passes (PPO: the tokenizer's EOS) or else the model's generation
config's (one id or several), exactly those ``generate`` stops on.
:func:`generate_texts` runs it over batches and decodes the completions, special tokens skipped.

:func:`vllm_available` is the one answer to "can vLLM be used here": installed (TRL's own
check, the one its trainers make for ``use_vllm``), and with ``on_gpu=True`` a CUDA device too
(vLLM generates on GPUs; ``procrl evaluate``'s ``--backend auto``).

Simplified on purpose: no stopping strings, no streaming; what ``generate`` takes beyond the
decoding options passes through ``generation_kwargs`` (TRL's ``GRPOConfig.generation_kwargs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Generated", "generate", "generate_texts", "vllm_available"]


def vllm_available(*, on_gpu: bool = False) -> bool:
    """vLLM is installed (TRL's ``is_vllm_available``: the check TRL's trainers make), and with
    ``on_gpu`` a CUDA device is visible for it."""
    from trl.import_utils import is_vllm_available  # read at call time: tests replace it

    if not is_vllm_available():
        return False
    if on_gpu:
        import torch

        return torch.cuda.is_available()
    return True


@dataclass
class Generated:
    """One generated batch: left-padded prompts (P columns) and right-padded completions
    (``num_return_sequences`` rows per prompt, in prompt order), each row up to and including
    its first stop token (mask 1), pad ids after."""

    prompt_ids: Any
    prompt_mask: Any
    completion_ids: Any
    completion_mask: Any

    def completion_lists(self) -> list[list[int]]:
        """The completions as token lists (their masked tokens only)."""
        return [row[: int(n)].tolist() for row, n in zip(self.completion_ids, self.completion_mask.sum(dim=1))]


def _stop_ids(options: dict[str, Any], model: Any) -> list[int]:
    eos = options.get("eos_token_id")
    if eos is None:
        eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if eos is None:
        return []
    return [int(e) for e in eos] if isinstance(eos, (list, tuple)) else [int(eos)]


def generate(
    model: Any,
    tokenizer: Any,
    prompts: list[str],
    *,
    max_new_tokens: int,
    sampling: dict[str, Any] | None = None,
    eos_token_id: int | None = None,
    device: Any = None,
    generation_kwargs: dict[str, Any] | None = None,
) -> Generated:
    """``model.generate`` on one batch of rendered ``prompts``. ``sampling``: the decoding options
    (e.g. ``{"do_sample": False}``, or ``do_sample``/``temperature``/``top_p``/``top_k``/
    ``num_return_sequences``); ``eos_token_id``: the stop token (default: the model's generation
    config's); ``device``: where the inputs go (default ``model.device``); ``generation_kwargs``
    update the options last, as TRL applies ``GRPOConfig.generation_kwargs``."""
    import torch

    encoded = tokenizer(prompts, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False)
    encoded = encoded.to(model.device if device is None else device)
    prompt_ids, prompt_mask = encoded["input_ids"], encoded["attention_mask"]
    options: dict[str, Any] = dict(sampling or {})
    options.update(max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id)
    if eos_token_id is not None:
        options["eos_token_id"] = eos_token_id
    options.update(generation_kwargs or {})
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            sequences = model.generate(input_ids=prompt_ids, attention_mask=prompt_mask, **options)
    finally:
        model.train(was_training)
    completion_ids = sequences[:, prompt_ids.size(1) :]
    stops = _stop_ids(options, model)
    if stops:  # keep tokens up to and including the first stop token
        is_stop = torch.isin(completion_ids, torch.tensor(stops, device=completion_ids.device))
        first = torch.where(is_stop.any(dim=1), is_stop.int().argmax(dim=1), completion_ids.size(1))
        positions = torch.arange(completion_ids.size(1), device=completion_ids.device).unsqueeze(0)
        completion_mask = (positions <= first.unsqueeze(1)).long()
    else:
        completion_mask = torch.ones_like(completion_ids)
    completion_ids = completion_ids.masked_fill(completion_mask == 0, tokenizer.pad_token_id)
    return Generated(prompt_ids, prompt_mask, completion_ids, completion_mask)


def generate_texts(
    model: Any,
    tokenizer: Any,
    prompts: list[str],
    *,
    max_new_tokens: int,
    batch_size: int = 8,
    sampling: dict[str, Any] | None = None,
    device: Any = None,
) -> list[str]:
    """:func:`generate` over batches of ``batch_size`` prompts, the completions decoded (special
    tokens skipped), ``num_return_sequences`` per prompt, in prompt order."""
    texts: list[str] = []
    for start in range(0, len(prompts), batch_size):
        generated = generate(
            model,
            tokenizer,
            prompts[start : start + batch_size],
            max_new_tokens=max_new_tokens,
            sampling=sampling,
            device=device,
        )
        texts.extend(tokenizer.batch_decode(generated.completion_lists(), skip_special_tokens=True))
    return texts
