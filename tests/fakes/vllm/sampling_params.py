"""``vllm.sampling_params`` of the test double (tests/fakes/README.md)."""

from __future__ import annotations


class StructuredOutputsParams:
    def __init__(self, **kwargs):
        raise NotImplementedError("the vLLM test double has no structured outputs")


class SamplingParams:
    """The sampling parameters TRL passes (unknown ones are kept, as vLLM would reject them
    only if they were invalid)."""

    def __init__(
        self,
        n: int = 1,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        min_p: float = 0.0,
        max_tokens: int | None = 16,
        logprobs: int | None = None,
        repetition_penalty: float = 1.0,
        seed: int | None = None,
        structured_outputs=None,
        **extra,
    ):
        self.n = n
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.min_p = min_p
        self.max_tokens = max_tokens
        self.logprobs = logprobs
        self.repetition_penalty = repetition_penalty
        self.seed = seed
        self.structured_outputs = structured_outputs
        self.extra = extra
