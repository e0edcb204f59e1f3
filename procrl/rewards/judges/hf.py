"""The LLM judge as an in-process Hugging Face causal LM: batched generation with left
padding, the model loaded once, lazily, on the trainer's device."""

from __future__ import annotations

from typing import Any

from procrl.rewards.judges.local import LocalModelJudge
from procrl.rewards.judges.prompt import build_prompt, parse_verdict
from procrl.rewards.judges.protocol import JudgeItem, Verdict

__all__ = ["HFJudge"]


class HFJudge(LocalModelJudge):
    backend = "hf"

    def __init__(
        self,
        model: str,
        device: Any = "cpu",
        batch_size: int = 8,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        reference: bool = False,
        categories: bool = False,
        dtype: str = "auto",
        trust_remote_code: bool = False,
        gguf_file: str | None = None,
    ):
        super().__init__(model, device, batch_size, dtype, trust_remote_code, gguf_file)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.reference = reference
        self.categories = categories

    def _auto_class(self, path: str) -> Any:
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM

    def _prepare_tokenizer(self, tokenizer: Any) -> None:
        tokenizer.padding_side = "left"  # generation continues at the right edge

    def _text(self, item: JudgeItem) -> str:
        prompt = build_prompt(item.question, list(item.steps), item.gold if self.reference else None, self.categories,
                              item.kind)
        if getattr(self._tokenizer, "chat_template", None):
            return self._tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
            )
        return prompt

    def generate(self, items: list[JudgeItem]) -> list[str]:
        """The judge's reply to each item (one batched ``generate`` per ``batch_size``)."""
        import torch

        self._load()
        replies: list[str] = []
        for start in range(0, len(items), self.batch_size):
            chunk = items[start : start + self.batch_size]
            encoded = self._tokenizer(
                [self._text(item) for item in chunk], return_tensors="pt", padding=True, add_special_tokens=False
            ).to(self._model.device)
            sampling = {"do_sample": True, "temperature": self.temperature} if self.temperature > 0 else {"do_sample": False}
            with torch.inference_mode():
                output = self._model.generate(
                    **encoded,
                    max_new_tokens=self.max_tokens,
                    pad_token_id=self._tokenizer.pad_token_id,
                    **sampling,
                )
            new_tokens = output[:, encoded["input_ids"].shape[1] :]
            replies.extend(self._tokenizer.batch_decode(new_tokens, skip_special_tokens=True))
        return replies

    def _model_outputs(self, items: list[JudgeItem]) -> list[str]:
        return self.generate(items)

    def _verdict(self, item: JudgeItem, reply: str) -> Verdict:
        parsed = parse_verdict(reply, len(item.steps))
        return Verdict(parsed.index, status=parsed.status, category=parsed.category, note=reply)
