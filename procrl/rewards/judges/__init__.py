"""First-error judges: given a question and its steps, the earliest wrong step (or -1).

One module per backend, imported only when used:

* ``openai``: an OpenAI-compatible chat endpoint (vLLM ``serve``, TGI, OpenAI), async;
* ``hf``: an in-process Hugging Face causal LM, batched generation;
* ``prm``: a process reward model scoring every step in one forward pass;
* ``arithmetic``: no model; checks the calculations of every step;
* ``reference``: no model; checks the quantities every step states against the question's
  numbers and the gold solution's intermediate values.

Every judge maps a list of :class:`JudgeItem` to one :class:`Verdict` each and never raises for
a single sample: failures come back as a verdict with a failure ``status``.
"""

from __future__ import annotations

from typing import Any

from procrl.rewards.judges.protocol import FAILURE_KINDS, Judge, JudgeItem, Verdict

__all__ = ["FAILURE_KINDS", "Judge", "JudgeItem", "Verdict", "build_judge"]

def build_judge(settings: Any, device: Any = "cpu") -> Judge:
    """The judge a :class:`~procrl.rewards.first_error.FirstErrorReward` settings object names."""
    backend = settings.backend
    if backend == "arithmetic":
        from procrl.rewards.judges.arithmetic import ArithmeticJudge

        return ArithmeticJudge()
    if backend == "reference":
        from procrl.rewards.judges.reference import ReferenceJudge, ReferenceRules

        return ReferenceJudge(ReferenceRules(
            max_depth=settings.max_depth,
            transformations=tuple(settings.transformations),
            off_path=settings.off_path,
            leap=settings.leap,
            check_arithmetic=settings.check_arithmetic,
        ))
    if backend == "openai":
        from procrl.rewards.judges.openai import OpenAIJudge

        return OpenAIJudge(
            model=settings.model,
            base_url=settings.base_url,
            api_key_env=settings.api_key_env,
            concurrency=settings.concurrency,
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
            backoff_s=settings.backoff_s,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            reference=settings.reference,
            categories=settings.categories,
            cache_size=settings.cache_size,
        )
    if backend == "hf":
        from procrl.rewards.judges.hf import HFJudge

        return HFJudge(
            model=settings.model,
            device=device,
            batch_size=settings.batch_size,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            reference=settings.reference,
            categories=settings.categories,
            dtype=settings.dtype,
            trust_remote_code=settings.trust_remote_code,
            gguf_file=settings.gguf_file,
        )
    if backend == "prm":
        from procrl.rewards.judges.prm import PRMJudge

        return PRMJudge(
            model=settings.model,
            device=device,
            threshold=settings.threshold,
            batch_size=settings.batch_size,
            step_separator=settings.step_separator,
            dtype=settings.dtype,
            trust_remote_code=settings.trust_remote_code,
        )
    raise ValueError(f"unknown first-error backend {backend!r}")
