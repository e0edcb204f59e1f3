"""Completions for ``procrl evaluate``: how they are drawn (:class:`Sampling`), the evaluated model's tokenizer
and prompts, and generation with vLLM or batched transformers (the model at the edge, loaded once)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError
from procrl.core.paths import has_tokenizer_files
from procrl.data.prompts import prompt_text
from procrl.models.generation import generate_texts, vllm_available
from procrl.models.loading import (
    ModelSource,
    load_causal_lm,
    load_policy,
    load_tokenizer,
    load_tokenizer_from,
    pretrained_kwargs,
)

# Imported where used: torch and transformers (seconds to load: a run its checks refuse fails before that),
# peft and vllm (optional extras).
__all__ = ["MAX_SAMPLES", "Sampling", "generate_completions", "load_evaluated_tokenizer", "prompt_texts"]


# Samples per problem: generated in one call per batch of prompts, so memory grows with it (a
# million asked for a 30 GB allocation); pass@k estimates rarely go past k = 1000.
MAX_SAMPLES = 1024


@dataclass(frozen=True)
class Sampling:
    """How completions are drawn: ``temperature`` 0 is greedy (one completion per problem);
    above 0, ``num_samples`` completions per problem with nucleus ``top_p`` (no top-k), the
    random generator seeded with ``seed`` (same seed, model, batch size and backend: same samples)."""

    temperature: float = 0.0
    top_p: float = 1.0
    num_samples: int = 1
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def validate(self) -> None:
        if not (math.isfinite(self.temperature) and self.temperature >= 0.0):
            raise ConfigError(f"--temperature: must be >= 0 (0 = greedy), got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ConfigError(f"--top-p: must be in (0, 1], got {self.top_p}")
        if not 1 <= self.num_samples <= MAX_SAMPLES:
            raise ConfigError(
                f"--num-samples: must be in [1, {MAX_SAMPLES}], got {self.num_samples} (a problem's samples "
                f"are generated together: --batch-size x --num-samples sequences at once)"
            )
        if self.greedy and self.top_p != 1.0:
            raise ConfigError(
                f"--top-p {self.top_p:g} has no effect with --temperature 0 (greedy decoding); sample with "
                f"--temperature > 0 (e.g. 0.7), or drop --top-p"
            )
        if self.greedy and self.num_samples > 1:
            raise ConfigError(
                f"--num-samples {self.num_samples} with --temperature 0 (greedy) gives {self.num_samples} "
                f"identical completions; sample with --temperature > 0 (e.g. 0.7)"
            )


def load_evaluated_tokenizer(source, recipe, notes: list[str] | None = None) -> Any:
    """The evaluated model's own tokenizer (a GGUF's from its file); the recipe's when a
    checkpoint directory has no tokenizer files."""

    source = source if isinstance(source, ModelSource) else ModelSource(str(source))
    model_path = source.path
    fallback = not source.gguf_file and Path(model_path).is_dir() and not has_tokenizer_files(model_path)
    if not fallback:
        try:
            tokenizer = load_tokenizer_from(source, trust_remote_code=recipe.model.trust_remote_code)
        except (OSError, ValueError) as error:
            if source.gguf_file:
                raise ConfigError(
                    f"--model: cannot read the tokenizer of {source.describe()} ({' '.join(str(error).split())[:200]})"
                ) from None
            fallback = True
    if fallback:  # a checkpoint saved without its tokenizer (transformers would build an empty one): the recipe's
        tokenizer_name = recipe.model.tokenizer or recipe.model.name_or_path
        try:
            tokenizer = load_tokenizer(recipe.model)
        except (OSError, ValueError) as error:
            raise ConfigError(
                f"--model: {model_path} has no tokenizer files, and the recipe's tokenizer {tokenizer_name!r} "
                f"did not load ({' '.join(str(error).split())[:200]}); set model.tokenizer"
            ) from None
        vocabulary = _vocab_size(model_path)
        if vocabulary is not None and len(tokenizer) > vocabulary:
            raise ConfigError(
                f"--model: {model_path} has no tokenizer files, and the recipe's tokenizer {tokenizer_name!r} "
                f"has {len(tokenizer):,} tokens for a model of {vocabulary:,}: not its tokenizer; set "
                f"model.tokenizer to the one the model was trained with"
            )
        if notes is not None:
            notes.append(f"{model_path} has no tokenizer files; used the recipe's tokenizer ({tokenizer_name})")
    if len(tokenizer) < 2:
        raise ConfigError(f"--model: the tokenizer of {model_path} is empty ({len(tokenizer)} tokens)")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _load_model(source, recipe) -> Any:
    """The model to generate with: a checkpoint or Hub model (GGUF dequantized), or a LoRA
    adapter directory applied to the recipe's policy (so an adapter trained on a GGUF policy
    finds its base, which its adapter_config.json cannot name)."""

    if not source.gguf_file and (Path(source.path) / "adapter_config.json").is_file():
        from peft import PeftModel

        return PeftModel.from_pretrained(load_policy(recipe.model), source.path)
    return load_causal_lm(source, **pretrained_kwargs(recipe.model))


def _vocab_size(model_path: str) -> int | None:
    try:
        config = json.loads((Path(model_path) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    size = (config.get("text_config") or config).get("vocab_size")
    return size if isinstance(size, int) else None


def prompt_texts(recipe, questions: list[str], tokenizer, kinds: list[str | None] | None = None) -> list[str]:

    kinds = kinds or [None] * len(questions)
    return [prompt_text(recipe.data, tokenizer, question, kind) for question, kind in zip(questions, kinds)]


def generate_completions(
    model,
    prompts: list[str],
    tokenizer,
    recipe,
    max_new_tokens: int,
    batch_size: int = 8,
    backend: str = "auto",
    sampling: Sampling = Sampling(),
) -> tuple[list[str], str]:
    """``sampling.num_samples`` completions per prompt, grouped by prompt (prompt i's are at
    ``i * k .. i * k + k - 1``); returns them and the backend used. ``model``: a path or a
    :class:`~procrl.models.loading.ModelSource` (a GGUF generates with transformers: the vLLM path takes
    a checkpoint directory)."""

    source = model if isinstance(model, ModelSource) else ModelSource(str(model))
    model_path = source.path
    k = sampling.num_samples
    if source.gguf_file and backend == "vllm":
        raise ConfigError(
            f"--backend vllm: {source.describe()} is a GGUF checkpoint; evaluate it with --backend "
            "transformers, or a trained checkpoint (plain safetensors) with vLLM"
        )
    if backend == "vllm" or (backend == "auto" and vllm_available(on_gpu=True) and not source.gguf_file):
        from vllm import LLM, SamplingParams

        llm = LLM(
            model=model_path,
            tokenizer=model_path,
            dtype=recipe.model.dtype,
            trust_remote_code=recipe.model.trust_remote_code,
            seed=sampling.seed,
        )
        params = SamplingParams(
            n=k, temperature=sampling.temperature, top_p=sampling.top_p, seed=sampling.seed, max_tokens=max_new_tokens
        )
        results = llm.generate(prompts, params)
        return [output.text for r in results for output in r.outputs], "vllm"

    import torch
    from transformers import set_seed

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = _load_model(source, recipe).to(device).eval()
    tokenizer.padding_side = "left"  # decoder-only batched generation continues after the prompt
    if sampling.greedy:
        options: dict[str, Any] = {"do_sample": False}
    else:
        options = {
            "do_sample": True,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": 0,
            "num_return_sequences": k,
        }
        set_seed(sampling.seed)
    completions = generate_texts(
        model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size, sampling=options, device=device
    )  # k per prompt, in prompt order
    return completions, "transformers"
