"""The one prompt renderer: how a question becomes the text a policy continues.

Every consumer renders prompts here, so that what the trainers sample from, what ``procrl
evaluate`` grades, what ``procrl check --load-models`` shows and what the tiny reasoner is
fine-tuned on are the same text:

* :func:`format_prompt`: a question under ``data.prompt_template`` as a plain string (the
  ``system_prompt``, when set, above it, separated by a blank line) or as chat messages (the
  ``system_prompt`` as a system message), the ``prompt`` column TRL trains on;
* :func:`uses_chat_template`: ``data.chat_template`` ``on`` / ``off``, or ``auto``: whether the
  tokenizer has a chat template;
* :func:`render_prompt`: a ``prompt`` (string or messages) as text: a string as it is, messages
  through the tokenizer's chat template with the generation prompt (the assistant turn opened),
  untokenized, as TRL's GRPO renders a conversational prompt;
* :func:`prompt_text`: the three together, for one question.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DEFAULT_PROMPT_TEMPLATE",
    "KIND_PROMPT_TEMPLATES",
    "format_prompt",
    "prompt_template",
    "prompt_text",
    "render_prompt",
    "uses_chat_template",
]

# The default user prompt (recipe key data.prompt_template).
DEFAULT_PROMPT_TEMPLATE = (
    "{question}\n\nSolve the problem step by step, one step per line. "
    "End with a final line of the form '#### <answer>'."
)
# What the default becomes for answers that are not numbers (data.answer_kind); the question of a
# choice row already lists its options ("Answer Choices: (A) ... (B) ...").
KIND_PROMPT_TEMPLATES = {
    "choice": "{question}\n\nThink step by step, one step per line. "
    "End with a final line of the form 'The answer is (X)', X the letter of your choice.",
    "yes_no": "{question}\n\nThink step by step, one step per line. "
    "End with a final line of the form 'The answer is yes' or 'The answer is no'.",
}


def uses_chat_template(data, tokenizer: Any) -> bool:
    if data.chat_template == "on":
        return True
    if data.chat_template == "off":
        return False
    return getattr(tokenizer, "chat_template", None) is not None


def prompt_template(data, kind: str | None = None) -> str:
    """The recipe's ``prompt_template``; its default becomes the answer kind's own
    (:data:`KIND_PROMPT_TEMPLATES`) for a choice or yes/no row (``kind``, else ``data.answer_kind``)."""
    template = DEFAULT_PROMPT_TEMPLATE if data is None else data.prompt_template
    kind = kind or getattr(data, "answer_kind", None)
    return KIND_PROMPT_TEMPLATES.get(kind, template) if template == DEFAULT_PROMPT_TEMPLATE else template


def format_prompt(data, question: str, chat: bool, kind: str | None = None) -> Any:
    """A plain string prompt, or a list of chat messages (TRL's conversational format). ``data``: the
    recipe's ``data:`` section (its ``prompt_template`` and ``system_prompt``); None: their defaults.
    ``kind``: the row's answer kind (the default template's wording)."""
    template = prompt_template(data, kind)
    system_prompt = None if data is None else data.system_prompt
    user = template.replace("{question}", question)
    if not chat:
        return user if system_prompt is None else f"{system_prompt}\n\n{user}"
    messages = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": user})
    return messages


def render_prompt(tokenizer: Any, prompt: str | list[dict[str, str]]) -> str:
    """The text the model continues: a string prompt unchanged, chat messages rendered by the
    tokenizer's chat template with the generation prompt."""
    if isinstance(prompt, list):
        return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    return prompt


def prompt_text(data, tokenizer: Any, question: str, kind: str | None = None) -> str:
    """``question`` as the model sees it under the recipe's ``data`` section."""
    return render_prompt(tokenizer, format_prompt(data, question, uses_chat_template(data, tokenizer), kind))
