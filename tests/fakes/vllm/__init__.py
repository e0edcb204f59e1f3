"""Test double of the vLLM engine (``vllm.LLM``) for CPU tests; see tests/fakes/README.md.

What it keeps of vLLM's contract, because the trainers depend on it: the engine holds its own
copy of the weights (loaded from ``model``, changed only by ``load_weights`` pushes), prompts
are token ids (or text, tokenized by the engine), each request gives ``n`` samples, completions end with the EOS token
when they stop on it, and each sampled token carries its log-probability after temperature
("processed_logprobs"). What it simplifies: sampling is transformers' ``generate`` one prompt at
a time, no KV-cache management, no structured outputs, no NCCL (server mode).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from types import SimpleNamespace

import torch

from tests.helpers.weights_digest import weights_digest  # the repository is on PYTHONPATH next to tests/fakes
from vllm.sampling_params import SamplingParams, StructuredOutputsParams

__version__ = "0.30.0"
__all__ = ["LLM", "SamplingParams", "StructuredOutputsParams", "RequestOutput", "CompletionOutput", "Logprob"]

LOG_ENV = "PROCRL_FAKE_VLLM_LOG"


@dataclass
class Logprob:
    logprob: float
    rank: int | None = 1
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    index: int
    token_ids: list[int]
    logprobs: list[dict[int, Logprob]] | None
    text: str = ""
    finish_reason: str | None = None


@dataclass
class RequestOutput:
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput] = field(default_factory=list)


def _log(event: str, **fields) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    record = {"event": event, "rank": int(os.environ.get("RANK", "0")), **fields}
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


class _WeightLoader:
    """``model_runner.model`` of the engine: ``load_weights`` copies pushed tensors by name."""

    def __init__(self, engine: LLM):
        self.engine = engine

    def load_weights(self, weights) -> set[str]:
        params = dict(self.engine.model.named_parameters())
        loaded = set()
        for name, tensor in weights:
            if name not in params:
                raise KeyError(f"vLLM test double: no weight named {name!r} in the engine's model")
            with torch.no_grad():
                params[name].copy_(tensor.to(params[name].dtype))
            loaded.add(name)
        self.engine.pushed_since_reset |= loaded
        return loaded


def _load_unpartitioned(model_class, path):
    """An engine's own full copy: transformers would partition a model built while the trainer's
    DeepSpeed ZeRO-3 config is active, which vLLM's loader never does."""
    from transformers.integrations import deepspeed as hf_deepspeed

    saved = hf_deepspeed._hf_deepspeed_config_weak_ref
    hf_deepspeed._hf_deepspeed_config_weak_ref = None
    try:
        return model_class.from_pretrained(path, dtype=torch.float32)
    finally:
        hf_deepspeed._hf_deepspeed_config_weak_ref = saved


class LLM:
    def __init__(
        self,
        model: str,
        seed: int = 0,
        max_model_len: int | None = None,
        enable_sleep_mode: bool = False,
        **engine_kwargs,
    ):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model = _load_unpartitioned(AutoModelForCausalLM, model)
        self.model.eval()
        self.tokenizer = AutoTokenizer.from_pretrained(engine_kwargs.get("tokenizer") or model)
        self.eos_token_id = self.tokenizer.eos_token_id
        self.pushed_since_reset: set[str] = set()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self._rng_state = torch.get_rng_state()
        max_len = max_model_len or getattr(self.model.config, "max_position_embeddings", 2048)
        self.llm_engine = SimpleNamespace(
            model_executor=SimpleNamespace(
                driver_worker=SimpleNamespace(model_runner=SimpleNamespace(model=_WeightLoader(self)))
            ),
            model_config=SimpleNamespace(max_model_len=max_len),
        )
        _log(
            "init", model=str(model), seed=seed, digest=weights_digest(self.model), engine_kwargs=sorted(engine_kwargs)
        )

    def reset_prefix_cache(self) -> bool:
        # TRL resets the cache at the end of every weight sync: the sync is complete here
        if self.pushed_since_reset:
            _log("sync", digest=weights_digest(self.model), tensors=len(self.pushed_since_reset))
        self.pushed_since_reset = set()
        return True

    def sleep(self, level: int = 1) -> None:
        pass

    def wake_up(self, tags=None) -> None:
        pass

    @torch.no_grad()
    def generate(self, prompts, sampling_params: SamplingParams | None = None, use_tqdm: bool = False):
        params = sampling_params or SamplingParams()
        results = []
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self._rng_state)
            for prompt in [prompts] if isinstance(prompts, str) else prompts:
                if isinstance(prompt, str):  # text prompts are tokenized by the engine, as vLLM does
                    ids = self.tokenizer(prompt)["input_ids"]
                else:
                    ids = prompt["prompt_token_ids"] if isinstance(prompt, dict) else prompt
                results.append(RequestOutput(prompt_token_ids=list(ids), outputs=self._sample(list(ids), params)))
            self._rng_state = torch.get_rng_state()
        _log(
            "generate",
            digest=weights_digest(self.model),
            prompts=len(results),
            completions=sum(len(r.outputs) for r in results),
        )
        return results

    def _sample(self, prompt_ids: list[int], params: SamplingParams) -> list[CompletionOutput]:
        greedy = params.temperature == 0.0
        temperature = 1.0 if greedy else params.temperature
        output = self.model.generate(
            input_ids=torch.tensor([prompt_ids]),
            attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
            do_sample=not greedy,
            temperature=temperature,
            top_p=params.top_p,
            top_k=params.top_k if params.top_k and params.top_k > 0 else 0,
            min_p=params.min_p or None,
            repetition_penalty=params.repetition_penalty,
            max_new_tokens=params.max_tokens,
            num_return_sequences=params.n,
            eos_token_id=self.eos_token_id,
            pad_token_id=self.eos_token_id,
            output_logits=True,
            return_dict_in_generate=True,
        )
        new_tokens = output.sequences[:, len(prompt_ids) :]
        logprobs = torch.log_softmax(torch.stack(output.logits, dim=1).float() / temperature, dim=-1)
        completions = []
        for index in range(new_tokens.size(0)):
            tokens = new_tokens[index].tolist()
            finish = "length"
            if self.eos_token_id in tokens:  # keep the EOS, as vLLM does
                tokens = tokens[: tokens.index(self.eos_token_id) + 1]
                finish = "stop"
            token_logprobs = None
            if params.logprobs is not None:
                token_logprobs = [
                    {t: Logprob(logprob=logprobs[index, i, t].item(), rank=1)} for i, t in enumerate(tokens)
                ]
            text = self.tokenizer.decode(tokens, skip_special_tokens=True)
            completions.append(
                CompletionOutput(
                    index=index, token_ids=tokens, logprobs=token_logprobs, text=text, finish_reason=finish
                )
            )
        return completions
