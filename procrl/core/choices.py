"""Answers that are not numbers: multiple choice (``choice``) and yes/no (``yes_no``), and the one
place that reads an answer of any kind (``number`` answers: :mod:`procrl.core.answers`).

An answer kind belongs to each row: the ``answer_kind`` column (``number``, ``choice``,
``yes_no``) and, for a choice, the ``choices`` column (a list of ``{label, text}``, or the Hub's
``{label: [...], text: [...]}``, or a list of option texts labelled A, B, ...). A row without
``answer_kind`` is a choice when it has options, yes/no when its gold is a boolean or yes / no /
true / false, else a number.

Choice answers, first rule that reads one option wins (``predict_choice``):

1. ``boxed``: the LAST ``\\boxed{...}``: ``\\boxed{B}``, ``\\boxed{(B)}``, ``\\boxed{B) reading}``,
   ``\\boxed{reading}``;
2. ``answer_is``: the LAST ``answer is`` / ``Answer:`` statement, to the end of its line: ``The
   answer is (B)``, ``Answer: B``, ``The answer is B) reading.``, ``The answer is reading.``;
3. ``final_line``: the last non-empty line: ``**B**``, ``**(B) reading**``, ``(B) reading``,
   ``B) reading``, ``B. reading``, ``So (B) is correct.``, or the line's text alone when it is one
   option's text (``Reading.``).

In a statement, an option is named by its label in parentheses (``(B)``, ``(b)``), a label and a
closing parenthesis (``B)``), a bold label (``**B**``), ``option B`` / ``choice B``, or a bare
capital label opening the statement (``B``, ``B.``, ``B because``; ``A`` only before punctuation,
the end, ``because`` or its own text: it is also the article), and a bare label joined to a named
one (``B or C``, ``B/C``). An option ruled out (``(C), not (A)``, ``rather than (A)``) is not named
when another one is. Without a label, the statement's
text (its first clause, or the whole of it) must equal exactly one option's text (case, articles,
markdown and end punctuation aside). A statement that names two different options is read as
NO answer (``ambiguous``, wrong): hedging over options never pays, and it stops there rather than
falling through to a later rule.

Yes/no answers (``predict_yes_no``), the same three places: the last box, the last ``answer is``
statement, then the final line when it opens with the word (``Yes.``, ``So, no, ...``,
``**True**``); ``yes`` / ``true`` read as yes, ``no`` / ``false`` as no. A statement that says
both is ``ambiguous``.

The answer block (where the reasoning ends, :func:`answer_block_start`): the number rules of
:func:`procrl.core.text.answer_line_start` (``answer is``, ``Answer:``, a box), plus, for these
kinds, a final line that states an option or yes/no as a whole (``**B**``, ``(B) reading``,
``Yes.``), with an answer line right above it joining the block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from procrl.core.answers import answers_match, extract_boxed, extract_prediction, last_answer_statement, parse_gold
from procrl.core.text import answer_line_start

__all__ = [
    "ANSWER_KINDS",
    "NUMBER",
    "AnswerSpec",
    "Option",
    "answer_block_start",
    "answer_correct",
    "answer_spec",
    "answer_text",
    "answer_specs",
    "format_options",
    "gold_answer",
    "gold_text",
    "normalize_choices",
    "predict",
    "predict_choice",
    "predict_yes_no",
]

ANSWER_KINDS = ("number", "choice", "yes_no")
_DEFAULT_LABELS = tuple("ABCDEFGH")  # the labels of a choice row given without its options


@dataclass(frozen=True)
class Option:
    label: str
    text: str


@dataclass(frozen=True)
class AnswerSpec:
    """How one row's answer is read: its kind and, for a choice, its options."""

    kind: str = "number"
    options: tuple[Option, ...] = ()

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(o.label for o in self.options) or _DEFAULT_LABELS


NUMBER = AnswerSpec()


# --- options and golds -------------------------------------------------------------------------


def normalize_choices(value: Any) -> tuple[Option, ...] | None:
    """Options from the forms datasets use: a list of ``{label, text}``, the Hub's ``{"label":
    [...], "text": [...]}`` (CommonsenseQA, OpenBookQA, QASC), a list of texts (labelled A, B,
    ...), a JSON string of one of these. None when ``value`` is none of them (or empty)."""
    if isinstance(value, str):
        import json

        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, dict) and isinstance(value.get("text"), list):
        texts = value["text"]
        labels = value.get("label") or list(_DEFAULT_LABELS[: len(texts)])
        if not isinstance(labels, list) or len(labels) != len(texts):
            return None
        value = [{"label": label, "text": text} for label, text in zip(labels, texts)]
    if not isinstance(value, list) or not value:
        return None
    options = []
    for index, item in enumerate(value):
        if isinstance(item, str) and index < len(_DEFAULT_LABELS):
            options.append(Option(_DEFAULT_LABELS[index], item.strip()))
        elif isinstance(item, dict) and isinstance(item.get("text"), str) and isinstance(item.get("label"), (str, int)):
            options.append(Option(str(item["label"]).strip().strip("()").upper(), item["text"].strip()))
        else:
            return None
    labels = [o.label for o in options]
    if len(set(labels)) != len(labels) or not all(len(label) == 1 and label.isalpha() for label in labels):
        return None
    return tuple(options)


def format_options(options: tuple[Option, ...]) -> str:
    """The options as the chain-of-thought papers list them: ``Answer Choices: (A) ... (B) ...``."""
    return "Answer Choices: " + " ".join(f"({o.label}) {o.text}" for o in options)


_YES, _NO = ("yes", "true"), ("no", "false")


def _yes_no_word(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().strip(".!*()").strip().lower()
        if word in _YES:
            return True
        if word in _NO:
            return False
    return None


def answer_spec(kind: Any = None, choices: Any = None, gold: Any = None) -> AnswerSpec:
    """One row's spec from its ``answer_kind`` and ``choices`` columns (inferred when the kind is
    missing: options -> choice, a yes/no or boolean gold -> yes_no, else number)."""
    options = normalize_choices(choices) if choices is not None else None
    if kind not in ANSWER_KINDS:
        if options:
            kind = "choice"
        elif _yes_no_word(gold) is not None:
            kind = "yes_no"
        else:
            kind = "number"
    return AnswerSpec(kind, options or ()) if kind == "choice" else AnswerSpec(kind)


def answer_specs(columns: dict[str, list], golds: list, n: int) -> list[AnswerSpec]:
    """Every row's spec from a batch's columns (``answer_kind``, ``choices``)."""
    kinds = columns.get("answer_kind") or [None] * n
    choices = columns.get("choices") or [None] * n
    if len(kinds) != n or len(choices) != n:
        kinds, choices = [None] * n, [None] * n
    return [answer_spec(k, c, g) for k, c, g in zip(kinds, choices, golds)]


def gold_answer(gold: Any, spec: AnswerSpec) -> Any:
    """The gold as :func:`predict` reads answers: a number, an option label, or True/False (yes/no);
    None when the gold cannot be read as the row's kind."""
    if spec.kind == "yes_no":
        return _yes_no_word(gold)
    if spec.kind == "choice":
        if not isinstance(gold, str) or not gold.strip():
            return None
        label, _ = _read_statement(gold.strip(), spec, bare=True)
        return label if label in spec.labels else None
    return parse_gold(gold)


def gold_text(gold: Any, spec: AnswerSpec) -> str | None:
    """The gold as a reference judge is shown it: ``(B) reading`` (the letter and its text),
    ``yes`` / ``no``; None when it cannot be read (number golds: :mod:`procrl.rewards.first_error`)."""
    value = gold_answer(gold, spec)
    return None if value is None else answer_text(value, spec)


def answer_text(value: Any, spec: AnswerSpec) -> str:
    """A read choice or yes/no answer as words: ``(B) reading``, ``yes`` / ``no``."""
    if spec.kind == "yes_no":
        return "yes" if value else "no"
    text = next((o.text for o in spec.options if o.label == value), None)
    return f"({value}) {text}" if text else f"({value})"


# --- reading a statement -----------------------------------------------------------------------

_PAREN_LABEL = re.compile(r"\(\s*([A-Za-z])\s*\)")
_CLOSE_LABEL = re.compile(r"(?<![\w(])([A-Z])\)")
_BOLD_LABEL = re.compile(r"\*\*\s*\(?([A-Z])\)?[.:]?\s*\*\*")
_NAMED_LABEL = re.compile(r"\b(?:option|choice)\s*\(?([A-Za-z])\b", re.IGNORECASE)
_LEADING_LABEL = re.compile(r"^[\s*_`\"'\[]*([A-Z])(?![\w'])\s*([.:,;!)\]*-]|$)?\s*")
# "B or C", "B, C or E", "B/C": a bare label joined to a named one, ending where a label ends (not "A nightstand")
_JOINED_LABEL = re.compile(r"(?:\bor|\band|,|/)\s*([A-Z])(?=\s*(?:[.,;:!?)*]|or\b|and\b|$))")
_RULED_OUT = re.compile(r"\b(?:not|rather than|instead of)\s*[(*]*\s*$", re.IGNORECASE)
_ARTICLE_FOLLOWERS = re.compile(r"^(?:because|since|as|is|-|—)\b", re.IGNORECASE)
_MARKDOWN = re.compile(r"[*_`#>]+")
_CLAUSE_END = re.compile(r"[.;!?](?:\s|$)|,|\s(?:because|since|as|which)\s", re.IGNORECASE)


def _plain(text: str) -> str:
    """Text for comparing with an option: no markdown, quotes, articles, end punctuation or case."""
    text = _MARKDOWN.sub(" ", text.replace("\\text{", "").replace("}", " ")).lower()
    text = re.sub(r"[\"'“”‘’]", "", text)
    text = re.sub(r"^\W*(?:the|an|a)\s+", "", text.strip())
    return " ".join(re.sub(r"[\s.,;:!?]+$", "", text).split())


def _option_by_text(text: str, spec: AnswerSpec) -> str | None:
    """The label of the one option whose text ``text`` is (its first clause, or the whole)."""
    candidates = {_plain(text)}
    clause = _CLAUSE_END.search(text)
    if clause:
        candidates.add(_plain(text[: clause.start()]))
    matches = {o.label for o in spec.options if _plain(o.text) in candidates and _plain(o.text)}
    return matches.pop() if len(matches) == 1 else None


def _labels_named(text: str, spec: AnswerSpec) -> list[str]:
    """Every option label the statement names, in order (see the module docstring)."""
    labels = set(spec.labels)
    found: list[tuple[int, str]] = []
    for pattern in (_PAREN_LABEL, _CLOSE_LABEL, _BOLD_LABEL, _NAMED_LABEL):
        for match in pattern.finditer(text):
            label = match.group(1).upper()
            if label in labels:
                found.append((match.start(), label))
    leading = _LEADING_LABEL.match(text)
    if leading and leading.group(1) in labels and not any(position <= leading.start(1) + 1 for position, _ in found):
        label, rest = leading.group(1), text[leading.end() :]
        option = next((o for o in spec.options if o.label == label), None)
        own_text = option is not None and _plain(rest).startswith(_plain(option.text)) and _plain(option.text)
        if (
            leading.group(2) is not None
            or not rest.strip()
            or own_text
            or (label != "A" and rest[:1].islower())
            or _ARTICLE_FOLLOWERS.match(rest)
        ):
            found.append((leading.start(1), label))
    if found:
        found += [(m.start(1), m.group(1)) for m in _JOINED_LABEL.finditer(text) if m.group(1) in labels]
    # "(C), not (A)": an option ruled out is not named as the answer (when another one is)
    kept = [
        (position, label) for position, label in found if not _RULED_OUT.search(text[max(0, position - 20) : position])
    ]
    return [label for _, label in sorted(kept if kept else found)]


def _read_statement(text: str, spec: AnswerSpec, bare: bool = False) -> tuple[str | None, str]:
    """``(label, status)``: status ``ok``, ``ambiguous`` (two different options named) or
    ``none`` (no option named). ``bare``: a gold, where a lone label is the whole text."""
    named = list(dict.fromkeys(_labels_named(text, spec)))
    if len(named) > 1:
        return None, "ambiguous"
    if named:
        return named[0], "ok"
    if bare and text.strip().strip("()").upper() in spec.labels and len(text.strip().strip("()")) == 1:
        return text.strip().strip("()").upper(), "ok"
    label = _option_by_text(text, spec) if spec.options else None
    return (label, "ok") if label else (None, "none")


_LEAD_IN = re.compile(r"^(?:(?:so|thus|hence|therefore|finally|overall|in conclusion|in summary)\b[\s,:]*)+", re.I)


def _final_line(completion: str) -> str:
    lines = [line for line in completion.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _statements(completion: str) -> list[tuple[str, str | None]]:
    """The places an answer is read from, in precedence order: ``(rule, text)``."""
    return [
        ("boxed", extract_boxed(completion)),
        ("answer_is", last_answer_statement(completion)),
        ("final_line", _final_line(completion) or None),
    ]


def predict_choice(completion: str, spec: AnswerSpec) -> tuple[str | None, str]:
    """The option label a completion answers and the rule that read it; ``(None, "ambiguous")``
    when the deciding statement names two options, ``(None, "none")`` when nothing was read."""
    if not isinstance(completion, str) or not completion.strip():
        return None, "none"
    for rule, text in _statements(completion):
        if text is None:
            continue
        if rule == "final_line":
            text = _LEAD_IN.sub("", text.strip())
        label, status = _read_statement(text, spec, bare=rule == "boxed")
        if status == "ambiguous":
            return None, "ambiguous"
        if label is not None:
            return label, rule
    return None, "none"


_POLAR = re.compile(r"\b(yes|no|true|false)\b", re.IGNORECASE)
_POLAR_PAIR = re.compile(r"\b(yes|no|true|false)\s*(?:or|/|and)\s*(yes|no|true|false)\b", re.IGNORECASE)
# a final line opening with the word as an answer: "Yes.", "No, ...", "Yes it is." (not "No goldfish can ...")
_OPENING_POLAR = re.compile(
    r"^[\s*_`\"'(]*(yes|no|true|false)\b"
    r"(?=\s*(?:[.,;:!)*]|$)|\s+(?:it|they|he|she|this|that|there|we|you|i)\b)",
    re.IGNORECASE,
)
_BOLD_POLAR = re.compile(r"\*\*\s*(yes|no|true|false)\s*[.!]?\s*\*\*", re.IGNORECASE)


def _opening_polar(line: str) -> bool | None:
    """The yes/no a line opens with (after a lead-in such as "So,"), else None."""
    match = _OPENING_POLAR.match(_LEAD_IN.sub("", line.strip().lstrip("*_#>- ").strip()))
    return None if match is None else match.group(1).lower() in _YES


def _polar_statement(text: str) -> tuple[bool | None, str]:
    """The yes/no of an answer statement: its first polar word; ``yes or no`` is ambiguous."""
    pair = _POLAR_PAIR.search(text)
    if pair and (pair.group(1).lower() in _YES) != (pair.group(2).lower() in _YES):
        return None, "ambiguous"
    first = _POLAR.search(text)
    return (first.group(1).lower() in _YES, "ok") if first else (None, "none")


def predict_yes_no(completion: str) -> tuple[bool | None, str]:
    """True (yes), False (no) or None, and the rule that read it (see the module docstring)."""
    if not isinstance(completion, str) or not completion.strip():
        return None, "none"
    for rule, text in _statements(completion):
        if text is None:
            continue
        if rule == "final_line":  # the final line: its opening word, or a bold yes/no in it
            value = _opening_polar(text)
            bold = _BOLD_POLAR.search(text)
            if value is None and bold:
                value = bold.group(1).lower() in _YES
            return (value, rule) if value is not None else (None, "none")
        value, status = _polar_statement(text)
        if status == "ambiguous":
            return None, "ambiguous"
        if value is not None:
            return value, rule
    return None, "none"


def predict(completion: str, spec: AnswerSpec) -> tuple[Any, str]:
    """The answer a completion states under its row's kind, and the rule that read it."""
    if spec.kind == "choice":
        return predict_choice(completion, spec)
    if spec.kind == "yes_no":
        return predict_yes_no(completion)
    return extract_prediction(completion)


def answer_correct(completion: str, gold: Any, spec: AnswerSpec, tolerance: float = 1e-6) -> bool | None:
    """Whether the completion's answer is the gold one; None when the gold cannot be read."""
    expected = gold_answer(gold, spec)
    if expected is None:
        return None
    predicted, _ = predict(completion, spec)
    if spec.kind == "number":
        return answers_match(predicted, expected, tolerance)
    return predicted is not None and predicted == expected


# --- the answer block --------------------------------------------------------------------------


def _states_answer_alone(line: str, spec: AnswerSpec) -> bool:
    """A line that is an answer as a whole: an option (``**B**``, ``(B) reading``, ``B) reading``,
    an option's text) or a yes/no opening (``Yes.``, ``So, no.``)."""
    text = _LEAD_IN.sub("", line.strip().strip("*_#>- ").strip()).strip("*_ ")
    if spec.kind == "yes_no":
        return _opening_polar(line) is not None
    if _option_by_text(text, spec):
        return True
    match = re.match(r"^\(?([A-Z])\)?[.:)]?(?:\s+(.*))?$", text)
    if match is None or match.group(1) not in spec.labels:
        return False
    if not re.match(r"^\(?[A-Z]\)", text) and not re.match(r"^[A-Z](?:[.:]|$)", text):
        return False
    rest = match.group(2) or ""
    option = next((o for o in spec.options if o.label == match.group(1)), None)
    return not rest.strip() or option is None or _plain(rest).startswith(_plain(option.text))


def answer_block_start(completion: str, spec: AnswerSpec) -> int | None:
    """Offset where the trailing answer block begins (None: no answer block), for any kind."""
    start = answer_line_start(completion)
    if spec.kind == "number":
        return start
    end = len(completion.rstrip())
    line_start = completion.rfind("\n", 0, end) + 1
    if start is not None and start >= line_start:
        return start
    if not _states_answer_alone(completion[line_start:end], spec):
        return start
    start = line_start + len(completion[line_start:end]) - len(completion[line_start:end].lstrip())
    above = answer_line_start(completion[:line_start])
    if above is not None and not completion[completion.rfind("\n", 0, above) + 1 : above].strip():
        start = above  # "The answer is (B)." then "**B**": one block
    return start
