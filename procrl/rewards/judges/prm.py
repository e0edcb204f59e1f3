"""A process reward model as first-error judge (Qwen2.5-Math-PRM convention).

The solution is written as a chat (system prompt, the question, then the steps joined and
terminated by the step separator token, ``<extra_0>`` for Qwen2.5-Math-PRM) and scored in one
forward pass. The model's head gives two logits per token; at each separator token the softmax
probability of class 1 (the positive class, "this step is correct") is that step's score. The
first step whose probability is below ``threshold`` is the first error; -1 when none is.

Qwen2.5-Math-PRM ships custom code (``trust_remote_code: true``, loaded with ``AutoModel``; its
output[0] holds the logits); a checkpoint saved with a ``*ForTokenClassification`` architecture
and two labels follows the same convention and loads without custom code.
"""

from __future__ import annotations

from typing import Any

from procrl.rewards.judges.local import LocalModelJudge
from procrl.rewards.judges.protocol import JudgeItem, Verdict
from procrl.rewards.judges.settings import PRMSettings

__all__ = ["PRMJudge", "first_below"]

SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."
POSITIVE_CLASS = 1


def first_below(probabilities: list[float], threshold: float) -> int:
    """Index of the first step whose probability of being correct is below ``threshold``, or -1."""
    for index, probability in enumerate(probabilities):
        if probability < threshold:
            return index
    return -1


class PRMJudge(LocalModelJudge):
    backend = "prm"
    gives_step_scores = True
    Settings = PRMSettings

    def __init__(self, settings: PRMSettings, device: Any = "cpu"):
        super().__init__(settings, device)
        self.threshold = settings.threshold
        self.step_separator = settings.step_separator
        self._separator_id: int | None = None

    def _auto_class(self, path: str) -> Any:
        from transformers import AutoConfig, AutoModel, AutoModelForTokenClassification

        config = AutoConfig.from_pretrained(path, trust_remote_code=self.trust_remote_code)
        architectures = getattr(config, "architectures", None) or []
        return (
            AutoModelForTokenClassification
            if any(a.endswith("ForTokenClassification") for a in architectures)
            else AutoModel
        )

    def _prepare_tokenizer(self, tokenizer: Any) -> None:
        ids = tokenizer.encode(self.step_separator, add_special_tokens=False)
        if len(ids) != 1:
            raise ValueError(f"step separator {self.step_separator!r} is not one token of {self.model_name} ({ids})")
        tokenizer.padding_side = "right"
        self._separator_id = ids[0]

    def _text(self, item: JudgeItem) -> str:
        # a separator inside a step would split it in two: drop it from the text
        steps = [step.replace(self.step_separator, " ").strip() for step in item.steps]
        response = self.step_separator.join(steps) + self.step_separator
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": item.question or ""},
            {"role": "assistant", "content": response},
        ]
        if getattr(self._tokenizer, "chat_template", None):
            return self._tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
        return f"{SYSTEM_PROMPT}\n{item.question or ''}\n{response}"

    def step_probabilities(self, items: list[JudgeItem]) -> list[list[float] | None]:
        """Positive-class probability of every step (None when the count does not match)."""
        import torch

        self._load()
        out: list[list[float] | None] = []
        for start in range(0, len(items), self.batch_size):
            chunk = items[start : start + self.batch_size]
            encoded = self._tokenizer(
                [self._text(item) for item in chunk], return_tensors="pt", padding=True, add_special_tokens=False
            ).to(self._model.device)
            with torch.inference_mode():
                outputs = self._model(**encoded)
            logits = outputs.logits if hasattr(outputs, "logits") else outputs[0]
            probabilities = torch.softmax(logits.float(), dim=-1)[..., POSITIVE_CLASS]
            separators = (encoded["input_ids"] == self._separator_id) & encoded["attention_mask"].bool()
            for row, item in enumerate(chunk):
                values = probabilities[row][separators[row]].tolist()
                out.append(values if len(values) == len(item.steps) else None)
        return out

    def _model_outputs(self, items: list[JudgeItem]) -> list[list[float] | None]:
        return self.step_probabilities(items)

    def _verdict(self, item: JudgeItem, probabilities: list[float] | None) -> Verdict:
        if probabilities is None:
            return Verdict(None, status="bad_response", note="separator count differs from step count")
        return Verdict(first_below(probabilities, self.threshold), step_probabilities=probabilities)
