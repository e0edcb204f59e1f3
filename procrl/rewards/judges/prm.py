"""A process reward model as first-error judge, read the way each published PRM is read.

The convention follows the checkpoint's architecture (``config.architectures``):

* **Qwen2.5-Math-PRM** (``Qwen2ForProcessRewardModel``, its own code: ``trust_remote_code: true``,
  loaded with ``AutoModel``; or any ``*ForTokenClassification`` with two labels): the solution is a
  chat (system prompt, the question, then the steps joined and terminated by the step separator
  token ``<extra_0>``), scored in one forward pass; the head gives two logits per token, and at
  each separator the softmax probability of class 1 ("this step is correct") is that step's score.
* **Math-Shepherd** (``peiyi9979/math-shepherd-mistral-7b-prm``, a ``*ForCausalLM``): the text is
  ``"{question} {step 1} ки\\n{step 2} ки"`` with the tokenizer's own special tokens; at each step
  tag ``ки`` the step's score is the softmax over the logits of the tokens ``+`` and ``-``, the
  probability of ``+``.
* **Skywork-o1-Open-PRM** (``Qwen2ForPrmModel``, its own code: ``trust_remote_code: true``): the
  ids are the tokenizer's BOS, the question and a newline, then each step's ids followed by the
  step token (a newline); a value head gives one number per token, and the sigmoid of the value at
  each step token is the step's score (read from ``logits`` of shape (batch, tokens[, 1]), or the
  last (batch, tokens) tensor of a tuple).

``step_separator`` names the step token; left at its default (``<extra_0>``) it is the
convention's own (``ки`` for Math-Shepherd, a newline for Skywork). The step token is removed from
the question and the steps' text (a separator inside a step would split it in two). The first
step whose score is below ``threshold`` is the first error; -1 when none is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from procrl.rewards.judges.local import LocalModelJudge
from procrl.rewards.judges.protocol import JudgeItem, Verdict
from procrl.rewards.judges.settings import PRMSettings

__all__ = ["CONVENTIONS", "PRMJudge", "convention_of", "first_below"]

SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."
POSITIVE_CLASS = 1
DEFAULT_SEPARATOR = "<extra_0>"  # PRMSettings.step_separator's default: Qwen2.5-Math-PRM's token


@dataclass(frozen=True)
class Convention:
    """How one published PRM family is fed and read."""

    name: str
    separator: str  # its step token
    head: str  # "two_class" (softmax, class 1), "plus_minus" (softmax over + / -), "value" (sigmoid)


CONVENTIONS = {
    "qwen2.5-math-prm": Convention("qwen2.5-math-prm", "<extra_0>", "two_class"),
    "math-shepherd": Convention("math-shepherd", "ки", "plus_minus"),
    "skywork-prm": Convention("skywork-prm", "\n", "value"),
}


def convention_of(config: Any) -> Convention:
    """The convention of a checkpoint, from its ``config.architectures`` (see the module docstring).

    Args:
        config: the checkpoint's transformers config.

    Returns:
        Its :class:`Convention`; Qwen2.5-Math-PRM's for a token classifier or an unknown architecture.
    """
    architectures = list(getattr(config, "architectures", None) or [])
    if "Qwen2ForPrmModel" in architectures:
        return CONVENTIONS["skywork-prm"]
    if any(a.endswith("ForCausalLM") for a in architectures):
        return CONVENTIONS["math-shepherd"]
    return CONVENTIONS["qwen2.5-math-prm"]


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
        self.requested_separator = settings.step_separator
        self.step_separator = settings.step_separator
        self.convention: Convention | None = None
        self._separator_id: int | None = None
        self._plus_minus: list[int] | None = None

    def _auto_class(self, path: str) -> Any:
        from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForTokenClassification

        config = AutoConfig.from_pretrained(path, trust_remote_code=self.trust_remote_code)
        self.convention = convention_of(config)
        architectures = getattr(config, "architectures", None) or []
        if self.convention.head == "plus_minus":
            return AutoModelForCausalLM
        if any(a.endswith("ForTokenClassification") for a in architectures):
            return AutoModelForTokenClassification
        return AutoModel  # the PRM's own code (auto_map)

    def _prepare_tokenizer(self, tokenizer: Any) -> None:
        tokenizer.padding_side = "right"

    def _load(self) -> None:
        super()._load()
        if self._separator_id is None:
            self._configure(self._tokenizer)

    def _configure(self, tokenizer: Any) -> None:
        """The step token (and Math-Shepherd's + / - tokens) as ids of the loaded tokenizer."""
        convention = self.convention or CONVENTIONS["qwen2.5-math-prm"]
        if self.requested_separator == DEFAULT_SEPARATOR:
            self.step_separator = convention.separator
        ids = tokenizer.encode(self.step_separator, add_special_tokens=False)
        if convention.head == "plus_minus":
            # as Math-Shepherd reads its tag: the last piece of the tag's ids (SentencePiece's "▁ки")
            ids = ids[-1:]
            self._plus_minus = [tokenizer.encode(t, add_special_tokens=False)[-1] for t in ("+", "-")]
        if len(ids) != 1:
            raise ValueError(f"step separator {self.step_separator!r} is not one token of {self.model_name} ({ids})")
        self._separator_id = ids[0]
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token

    def _clean(self, text: str | None) -> str:
        return (text or "").replace(self.step_separator, " ").strip()

    def _text(self, item: JudgeItem) -> str:
        """Qwen2.5-Math-PRM's input: the chat with the steps joined and ended by the separator."""
        steps = [self._clean(step) for step in item.steps]
        response = self.step_separator.join(steps) + self.step_separator
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": item.question or ""},
            {"role": "assistant", "content": response},
        ]
        if getattr(self._tokenizer, "chat_template", None):
            return self._tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
        return f"{SYSTEM_PROMPT}\n{item.question or ''}\n{response}"

    def _encode(self, item: JudgeItem) -> tuple[list[int], list[int]]:
        """(input ids, the positions whose output scores a step) of one item, by convention."""
        tokenizer, separator = self._tokenizer, self._separator_id
        head = (self.convention or CONVENTIONS["qwen2.5-math-prm"]).head
        if head == "value":  # Skywork: BOS + question + "\n", then each step's ids and the step token
            prefix = (tokenizer.bos_token or "") + self._clean(item.question) + "\n"
            ids = tokenizer.encode(prefix, add_special_tokens=False)
            positions = []
            for step in item.steps:
                ids += tokenizer.encode(self._clean(step), add_special_tokens=False) + [separator]
                positions.append(len(ids) - 1)
            return ids, positions
        if head == "plus_minus":  # Math-Shepherd: "{question} {step} ки\n{step} ки", special tokens on
            tag = self.step_separator
            output = f" {tag}\n".join(self._clean(step) for step in item.steps) + f" {tag}"
            ids = tokenizer.encode(f"{self._clean(item.question)} {output}")
        else:
            ids = tokenizer.encode(self._text(item), add_special_tokens=False)
        return ids, [k for k, token in enumerate(ids) if token == separator]

    def _scores(self, outputs: Any) -> Any:
        """(batch, tokens) step-score candidates from the model's outputs, by convention."""
        import torch

        head = (self.convention or CONVENTIONS["qwen2.5-math-prm"]).head
        logits = outputs.logits if hasattr(outputs, "logits") else outputs[-1] if head == "value" else outputs[0]
        if head == "value":
            values = logits.float()
            return torch.sigmoid(values.squeeze(-1) if values.dim() == 3 else values)
        if head == "plus_minus":
            return torch.softmax(logits[..., self._plus_minus].float(), dim=-1)[..., 0]
        return torch.softmax(logits.float(), dim=-1)[..., POSITIVE_CLASS]

    def step_probabilities(self, items: list[JudgeItem]) -> list[list[float] | None]:
        """Probability that each step is correct (None when the count does not match the steps)."""
        import torch

        self._load()
        pad = self._tokenizer.pad_token_id
        out: list[list[float] | None] = []
        for start in range(0, len(items), self.batch_size):
            chunk = items[start : start + self.batch_size]
            encoded = [self._encode(item) for item in chunk]
            width = max(len(ids) for ids, _ in encoded)
            input_ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            attention_mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, (ids, _) in enumerate(encoded):  # right padding: the positions stay where they are
                input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
                attention_mask[row, : len(ids)] = 1
            with torch.inference_mode():
                outputs = self._model(
                    input_ids=input_ids.to(self._model.device), attention_mask=attention_mask.to(self._model.device)
                )
            scores = self._scores(outputs)
            for row, (item, (_, positions)) in enumerate(zip(chunk, encoded)):
                values = scores[row, positions].tolist() if positions else []
                out.append(values if len(values) == len(item.steps) else None)
        return out

    def _model_outputs(self, items: list[JudgeItem]) -> list[list[float] | None]:
        return self.step_probabilities(items)

    def _verdict(self, item: JudgeItem, probabilities: list[float] | None) -> Verdict:
        if probabilities is None:
            return Verdict(None, status="bad_response", note="separator count differs from step count")
        return Verdict(first_below(probabilities, self.threshold), step_probabilities=probabilities)
