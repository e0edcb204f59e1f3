"""What every engine adapter follows: rows in (``question``, ``completion``, ``answer``), each row's
per-component scores, weighted total and step rewards out, with one rule for the inputs an engine
hands over and one for the numbers it takes back.

* :class:`EngineAdapter`: the protocol (``mix``, ``score(rows)``); :func:`score_rows` is the one
  implementation the adapters share (``procrl score``'s batches, so every engine scores as
  ``procrl score`` does);
* :func:`checked_rows`: an engine's parallel lists as rows, lengths and gold answers checked (a
  ValueError naming both sides, never a silent None or a shortened list);
* :func:`engine_values`: a scored row as numbers an engine can put in a tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from procrl.rewards.mix import RewardMix

__all__ = ["GOLD_KEYS", "EngineAdapter", "checked_rows", "engine_values", "gold_answer", "score_rows"]

# the keys a dict ground truth may hold its gold answer under, in order (verl's reward_model
# dicts carry ``ground_truth``; datasets that keep more than the answer name it ``answer``)
GOLD_KEYS = ("ground_truth", "answer")


class EngineAdapter(Protocol):
    """An engine's view of a reward mix: rows in, scored rows out."""

    mix: RewardMix

    def score(self, rows: Sequence[dict]) -> list[dict]:
        """``procrl score``'s row for each input row: ``rewards`` per component, ``reward`` (the
        weighted total), ``steps`` (spans and step scores)."""
        ...


def score_rows(mix: RewardMix, rows: Sequence[dict], batch_size: int = 64) -> list[dict]:
    """``rows`` scored ``batch_size`` at a time through ``procrl score``'s code (each row its own
    generation group)."""
    from procrl.evaluation.score import score_batch

    scored: list[dict] = []
    for start in range(0, len(rows), batch_size):
        chunk = list(rows[start : start + batch_size])
        scored += score_batch(mix, list(range(start + 1, start + len(chunk) + 1)), chunk)[0]
    return scored


def gold_answer(value: Any, where: str) -> str | int | float | None:
    """The gold answer an engine gave: a string, number or boolean as is, the first of a list (several
    acceptable answers), a dict's :data:`GOLD_KEYS` entry; anything else a ValueError naming
    ``where`` and what was expected."""
    if isinstance(value, dict):
        for key in GOLD_KEYS:
            if key in value:
                return gold_answer(value[key], f"{where}[{key!r}]")
        raise ValueError(
            f"{where}: a dict gold answer needs one of the keys {', '.join(map(repr, GOLD_KEYS))}, "
            f"got keys {sorted(map(str, value))[:8]}"
        )
    if isinstance(value, (list, tuple)):
        return gold_answer(value[0], f"{where}[0]") if value else None
    if value is None or isinstance(value, (str, int, float)):  # a bool: a yes/no gold
        return value
    raise ValueError(f"{where}: expected a string, a number, a list of them or a dict, got {type(value).__name__}")


def checked_rows(
    completions: Sequence[str],
    answers: Sequence[Any] | None,
    questions: Sequence[Any] | None = None,
    names: tuple[str, str, str] = ("completions", "answers", "questions"),
) -> list[dict]:
    """Rows of an engine's parallel lists.

    Args:
        completions: the completions' texts.
        answers: their gold answers (None: no gold), one per completion.
        questions: their questions (None: none), one per completion.
        names: what the engine calls the three lists, for the errors.

    Raises:
        ValueError: lists of different lengths (naming both and their lengths), a completion that
            is not a string, a gold answer of the wrong type.
    """
    n = len(completions)
    for values, name in ((answers, names[1]), (questions, names[2])):
        if values is not None and len(values) != n:
            raise ValueError(f"{names[0]} and {name} differ in length: {n} {names[0]}, {len(values)} {name}")
    rows = []
    for i, completion in enumerate(completions):
        if not isinstance(completion, str):
            raise ValueError(f"{names[0]}[{i}]: expected a string, got {type(completion).__name__}")
        question = questions[i] if questions is not None else None
        rows.append(
            {
                "question": question if isinstance(question, str) else None,
                "completion": completion,
                "answer": gold_answer(answers[i], f"{names[1]}[{i}]") if answers is not None else None,
            }
        )
    return rows


def engine_values(scored: dict, names: Sequence[str]) -> tuple[float, dict[str, float]]:
    """(weighted total, {component: score}) of a scored row as numbers: an engine turns every value
    into a tensor, so a component without an opinion gives its fallback's value when it has one,
    else 0.0, and a row whose total nobody gave is 0.0."""
    fallbacks = scored.get("fallbacks") or {}
    values = {}
    for name in names:
        value = scored["rewards"].get(name)
        if value is None:
            value = (fallbacks.get(name) or {}).get("score")
        values[name] = float(value) if value is not None else 0.0
    return (float(scored["reward"]) if scored.get("reward") is not None else 0.0), values
