"""First-error judges: given a question and its steps, the earliest wrong step (or -1).

One module per backend, imported only when used (:data:`procrl.rewards.judges.registry.BACKENDS`;
each backend's options: :mod:`procrl.rewards.judges.settings`):

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
    """The judge a backend's settings (:mod:`procrl.rewards.judges.settings`) make."""
    from procrl.rewards.judges.registry import judge_class

    return judge_class(settings.backend).from_settings(settings, device)
