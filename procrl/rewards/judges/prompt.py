"""The judge prompt and the verdict parser of the LLM first-error judges (docs/spec.md section 4).

The prompt shows the steps tagged and numbered from 0 and asks for the earliest wrong step, or
-1, in ``\\boxed{}``; optionally the error category. A math problem (answer kind ``number``) is
checked for calculations, facts and logic; a multiple-choice or yes/no question (``choice``,
``yes_no``) as ReTraceQA checks commonsense reasoning: facts and knowledge, what the question
asks, and the inferences, with the gold answer (``(B) reading``, ``yes``) shown in reference mode. The verdict is the
last ``\\boxed{int}`` of the reply; anything else is no verdict.

What real LLM replies put in the box, read as the index (from SmolLM2-135M-Instruct as the
``hf`` judge and the forms larger chat models write): ``\\boxed{2}``, ``\\boxed{step_2}``,
``\\boxed{Step 2}``, the prompt's own tag ``\\boxed{<step_2>}``, LaTeX formatting around the
number or word (``\\boxed{\\text{step } 2}``, ``\\boxed{\\textbf{2}}``, ``\\boxed{{2}}``,
``\\boxed{\\#2}``). Not read (no verdict): two indices (``\\boxed{1, 2}``), a fraction or a word.
A reply that repeats the prompt's instructions ("... for example \\boxed{2}. If every step is
correct, give \\boxed{-1}.") has those two boxes removed first: small models echo the prompt,
and the echo's last box, -1, would read as "every step is correct" (the best score) when the
judge gave no verdict at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from procrl.core.answers import extract_boxed

__all__ = ["CATEGORIES", "ParsedVerdict", "build_prompt", "parse_category", "parse_verdict"]

# ReTraceQA error categories; when several apply the earliest in this order wins.
CATEGORIES = ("Misinterpretation", "Hallucination", "Reasoning")

_INSTRUCTIONS = """\
Read the solution one step at a time. Decide for each step whether it is correct given the \
problem and the steps before it: the calculations, the facts and numbers it takes from the \
problem, and the logic all have to hold. Find the EARLIEST step that contains a mistake; a \
step that only carries forward an earlier mistake is not the earliest one.

Explain your checking briefly, then give the index of the earliest wrong step in \\boxed{}, \
for example \\boxed{2}. If every step is correct, give \\boxed{-1}."""

_QA_INSTRUCTIONS = """\
Read the reasoning one step at a time. Decide for each step whether it is correct given the \
question, its answer choices and the steps before it: what it says the question asks, the facts \
and knowledge it states, and each inference all have to hold. Find the EARLIEST step that \
contains a mistake; a step that only carries forward an earlier mistake is not the earliest one.

Explain your checking briefly, then give the index of the earliest wrong step in \\boxed{}, \
for example \\boxed{2}. If every step is correct, give \\boxed{-1}."""

_CATEGORY_INSTRUCTIONS = """

If you found a mistake, end with one more line naming its kind:
Category: Misinterpretation (the step misreads the problem or what it asks), \
Category: Hallucination (it states a fact or number that is false or that the problem and \
earlier steps do not give), or Category: Reasoning (an invalid inference or calculation from correct premises). \
If more than one applies, name the first of these three."""


def build_prompt(
    question: str | None, steps: list[str], gold: str | None = None, categories: bool = False, kind: str = "number"
) -> str:
    """The judge's user message for one solution; ``kind``: the row's answer kind."""
    if kind == "number":
        parts = ["You are checking a step-by-step solution to a math problem for mistakes.", "", "Problem:"]
        instructions, steps_title = _INSTRUCTIONS, "Solution steps:"
    else:
        what = "a multiple-choice question" if kind == "choice" else "a yes/no question"
        parts = [f"You are checking step-by-step reasoning that answers {what} for mistakes.", "", "Question:"]
        instructions, steps_title = _QA_INSTRUCTIONS, "Reasoning steps:"
    parts.append((question or "").strip())
    if gold is not None:
        parts += ["", f"Correct final answer (for your reference): {str(gold).strip()}"]
    parts += ["", steps_title]
    for index, step in enumerate(steps):
        parts.append(f"<step_{index}>\n{step.strip()}\n</step_{index}>")
    parts += ["", instructions + (_CATEGORY_INSTRUCTIONS if categories else "")]
    return "\n".join(parts)


@dataclass(frozen=True)
class ParsedVerdict:
    """``index`` is the earliest wrong step (-1: none) or None; ``status`` is ``ok``,
    ``no_verdict`` (no ``\\boxed{int}``) or ``out_of_range`` (an index outside -1..n-1)."""

    index: int | None
    category: str | None
    status: str


_BOXED_INT = re.compile(r"^(?:step\s*_?\s*\{?\s*|#\s*)?([-−]?\s*\d+)\s*\}?\s*\.?$", re.IGNORECASE)
_FORMATTING = re.compile(r"\\(?:text|textbf|textrm|textit|mathrm|mathbf|mathit|emph|bf)\s*\{([^{}]*)\}")
_STEP_TAG = re.compile(r"^<\s*(step\s*_?\s*[-−]?\s*\d+)\s*>$", re.IGNORECASE)
# the prompt's own example boxes, when a reply repeats the instructions (see the module docstring)
_ECHOED_EXAMPLES = re.compile(
    r"for\s+example,?\s*\\boxed\s*\{\s*2\s*\}|if\s+every\s+step\s+is\s+correct,?\s*give\s*\\boxed\s*\{\s*-1\s*\}",
    re.IGNORECASE,
)


def _boxed_index(content: str) -> int | None:
    """The step index a box holds (see the module docstring), else None."""
    text = content
    for _ in range(3):  # \\textbf{\\text{2}}: nested formatting
        text = _FORMATTING.sub(r"\1", text)
    text = text.replace("\\#", "#").replace("$", "").strip()
    while text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    tag = _STEP_TAG.match(text)
    if tag:
        text = tag.group(1)
    match = _BOXED_INT.match(text)
    return int(match.group(1).replace("−", "-").replace(" ", "")) if match else None


_CATEGORY = re.compile(
    r"category\s*[:\-]?\s*[*_`\"'(\\{]*\s*(?:\\text\s*\{\s*)?(" + "|".join(CATEGORIES) + r")", re.IGNORECASE
)


def parse_category(text: str) -> str | None:
    """The last ``Category: X`` of the reply (X one of :data:`CATEGORIES`), else None."""
    matches = _CATEGORY.findall(text or "")
    return matches[-1].capitalize() if matches else None


def parse_verdict(text: str | None, num_steps: int) -> ParsedVerdict:
    """The last ``\\boxed{int}`` of a judge reply, checked against the number of steps."""
    reply = _ECHOED_EXAMPLES.sub(" ", text) if isinstance(text, str) else None
    boxed = extract_boxed(reply) if reply is not None else None
    if boxed is None:
        return ParsedVerdict(None, None, "no_verdict")
    index = _boxed_index(boxed)
    if index is None:
        return ParsedVerdict(None, None, "no_verdict")
    if index < -1 or index >= num_steps:
        return ParsedVerdict(None, None, "out_of_range")
    category = parse_category(reply) if index >= 0 else None
    return ParsedVerdict(index, category, "ok")
