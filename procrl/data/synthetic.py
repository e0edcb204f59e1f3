"""GSM8K-style multi-step arithmetic word problems, generated deterministically from a seed.

Same format as GSM8K: ``question``; ``answer`` with one step per line, ``<<expr=result>>``
calculator notes and a final ``#### N``. The CPU demo trains on these so it needs no network.
Simplified on purpose: five templates with 2-4 steps and small integer results (products of a
one-digit and a small number, sums under a few hundred), so that a 1M-parameter model can learn
the arithmetic on two CPU cores in minutes; the point is the format and the step structure, not
linguistic variety.

A problem is built as a list of :class:`Calc` steps (text around one ``a op b`` calculation
whose operands may be earlier results), so a solution can also be rendered with a *slip*
(:func:`render_solution`): the tiny reasoner's training data holds flawed solutions made this
way (``procrl/models/reasoner.py``).

* ``slip="carry"``: step k's result is wrong (a dropped carry, off by ten) and every later step
  computes on the wrong value, so the final answer is wrong.
* ``slip="recover"``: step k *states* a wrong result, its calculator note and every later step
  use the right one: the right answer reached through a wrong step (ReTraceQA's "right answer,
  wrong reasoning").

A solution can also carry a *writing habit* (:func:`with_writing_habit`), a flaw of how the
reasoning is written rather than of what it computes, as real models write: ``"hedge"`` ends the
working with a number-free hedge ("I could be wrong here."), ``"filler"`` opens it with a
number-free sentence about the process ("Let me think step by step."). Neither changes a number,
the answer or a step the arithmetic judge checks: only a reward that reads argument structure
(TRACE) can see them.

Splits: ``train`` draws from ``random.Random(seed)``; the held-out splits (``test``,
``validation``) draw from a string seed (``"procrl-synthetic/test/<seed>"``), which no integer
training seed can equal, and skip every problem whose question is in the training split of the
same seed and size: a held-out problem is never a training problem, whatever the seed.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Union

__all__ = [
    "FILLERS",
    "HEDGES",
    "HELD_OUT_SPLITS",
    "SLIPS",
    "WRITING_HABITS",
    "Calc",
    "Problem",
    "generate_problem",
    "generate_problems",
    "generate_split",
    "make_problem",
    "render_solution",
    "slipped",
    "with_writing_habit",
]

HELD_OUT_SPLITS = ("test", "validation")
SLIPS = ("carry", "recover")
Slip = Literal["carry", "recover"]
WRITING_HABITS = ("hedge", "filler")
# Number-free sentences, each of which the labelling guideline (docs/trace-labelling.md) gives one
# element that belongs to no allowed TRACE state: a hedge alone is Qualifier (rule 7), talk about
# the process with no content is Monitoring (rule 3). tests/test_tiny_reasoner.py checks that
# procrl:trace-tagger reads each of them so.
HEDGES = ("I am not completely sure about this.", "I could be wrong here.", "But I am not sure.")
FILLERS = ("Let me think step by step.", "Let me think about this.", "Hmm, let me think.")

_NAMES = [
    ("Ava", "She"),
    ("Ben", "He"),
    ("Chloe", "She"),
    ("Diego", "He"),
    ("Emma", "She"),
    ("Farid", "He"),
    ("Grace", "She"),
    ("Hiro", "He"),
    ("Ines", "She"),
    ("Jonas", "He"),
    ("Keiko", "She"),
    ("Liam", "He"),
]
_ITEMS = ["apples", "pencils", "stickers", "marbles", "cookies", "books", "stamps", "shells", "cards", "eggs"]
_OPS: dict[str, Callable[[int, int], int]] = {
    "x": operator.mul,
    "+": operator.add,
    "-": operator.sub,
    "/": operator.floordiv,
}

Operand = Union[int, "Ref"]


@dataclass(frozen=True)
class Ref:
    """The result of an earlier step (by index)."""

    step: int


@dataclass(frozen=True)
class Calc:
    """One solution line: ``before`` + ``a op b = <<a*b=v>>v`` + ``after`` (``{v}`` in ``after`` is
    the stated result again, as in "..., so she sells 12")."""

    before: str
    left: Operand
    op: str
    right: Operand
    after: str


@dataclass(frozen=True)
class Problem:
    template: str
    question: str
    steps: tuple[Calc, ...]


def slipped(value: int) -> int:
    """A dropped or doubled carry: off by ten, never negative."""
    return value - 10 if value >= 20 else value + 10


def render_solution(problem: Problem, slip: Slip | None = None, slip_step: int = 0) -> tuple[str, int]:
    """The worked solution (lines + ``#### N``) and its final answer; with ``slip``, step
    ``slip_step`` slips as described in the module docstring."""
    if slip is not None and slip not in SLIPS:
        raise ValueError(f"slip must be one of {SLIPS} or None, got {slip!r}")
    values: list[int] = []
    lines = []
    for index, calc in enumerate(problem.steps):
        a, b = (values[x.step] if isinstance(x, Ref) else x for x in (calc.left, calc.right))
        value = _OPS[calc.op](a, b)
        stated = value
        if slip is not None and index == slip_step:
            stated = slipped(value)
            if slip == "carry":
                value = stated
        note_value = value if slip == "recover" else stated
        expression = f"{a} {calc.op} {b}"
        lines.append(
            f"{calc.before}{expression} = <<{expression.replace(' ', '').replace('x', '*')}={note_value}>>{stated}"
            f"{calc.after.replace('{v}', str(stated))}"
        )
        values.append(value)
    return "\n".join(lines + [f"#### {values[-1]}"]), values[-1]


def with_writing_habit(solution: str, habit: str | None, rng: random.Random) -> str:
    r"""``solution`` (lines + ``#### N``) written with ``habit``: ``"hedge"`` puts one of
    :data:`HEDGES` before the answer line, ``"filler"`` one of :data:`FILLERS` before the first
    step; ``None`` returns it unchanged. ``rng`` picks the sentence.

    Example:
        >>> import random
        >>> print(with_writing_habit("2 x 3 = <<2*3=6>>6 apples.\n#### 6", "hedge", random.Random(0)))
        2 x 3 = <<2*3=6>>6 apples.
        I could be wrong here.
        #### 6
    """
    if habit is None:
        return solution
    if habit not in WRITING_HABITS:
        raise ValueError(f"writing habit must be one of {WRITING_HABITS} or None, got {habit!r}")
    lines = solution.split("\n")
    if habit == "hedge":
        return "\n".join(lines[:-1] + [rng.choice(HEDGES)] + lines[-1:])
    return "\n".join([rng.choice(FILLERS)] + lines)


def _packs(rng: random.Random) -> tuple[str, list[Calc]]:
    (name, pronoun), item = rng.choice(_NAMES), rng.choice(_ITEMS)
    start, packs, per_pack, given = rng.randint(3, 30), rng.randint(2, 6), rng.randint(2, 9), rng.randint(1, 9)
    question = (
        f"{name} has {start} {item}. {pronoun} buys {packs} packs with {per_pack} {item} in each pack, "
        f"then gives {given} {item} to a friend. How many {item} does {name} have now?"
    )
    p = pronoun.lower()
    return question, [
        Calc(f"{name} buys ", packs, "x", per_pack, f" {item}."),
        Calc(f"Then {p} has ", start, "+", Ref(0), f" {item}."),
        Calc(f"After giving some away, {p} has ", Ref(1), "-", given, f" {item}."),
    ]


def _wages(rng: random.Random) -> tuple[str, list[Calc]]:
    (name, pronoun) = rng.choice(_NAMES)
    rate, hours, days = rng.randint(5, 15), rng.randint(2, 6), rng.randint(2, 5)
    question = (
        f"{name} earns ${rate} an hour. {pronoun} works {hours} hours a day for {days} days. "
        f"How much money does {name} earn in total?"
    )
    return question, [
        Calc(f"Each day {name} earns ", rate, "x", hours, " dollars."),
        Calc(f"Over {days} days {pronoun.lower()} earns ", Ref(0), "x", days, " dollars."),
    ]


def _sharing(rng: random.Random) -> tuple[str, list[Calc]]:
    (name, _pronoun), item = rng.choice(_NAMES), rng.choice(_ITEMS)
    friends, each, extra, boxes = rng.randint(2, 6), rng.randint(2, 9), rng.randint(1, 9), rng.randint(2, 4)
    question = (
        f"{name} has {boxes} boxes. Each box holds enough {item} to give {friends} friends {each} {item} "
        f"each with {extra} {item} left over. How many {item} are in all the boxes?"
    )
    return question, [
        Calc("The friends get ", friends, "x", each, f" {item} from one box."),
        Calc("So one box holds ", Ref(0), "+", extra, f" {item}."),
        Calc(f"All {boxes} boxes hold ", Ref(1), "x", boxes, f" {item}."),
    ]


def _savings(rng: random.Random) -> tuple[str, list[Calc]]:
    (name, pronoun) = rng.choice(_NAMES)
    price, saved, weekly = rng.randint(40, 150), rng.randint(5, 30), rng.randint(5, 20)
    price = max(price, saved + weekly)
    needed = price - saved
    weeks = -(-needed // weekly)
    question = (
        f"{name} wants a bike that costs ${price}. {pronoun} has saved ${saved} and saves ${weekly} "
        f"every week. After saving for {weeks} weeks and buying the bike, how many dollars are left over?"
    )
    p = pronoun.lower()
    return question, [
        Calc(f"{name} still needs ", price, "-", saved, " dollars."),
        Calc(f"In {weeks} weeks {p} saves ", weeks, "x", weekly, " dollars."),
        Calc(f"So {p} has ", Ref(1), "-", Ref(0), " dollars left over."),
    ]


def _garden(rng: random.Random) -> tuple[str, list[Calc]]:
    (name, pronoun) = rng.choice(_NAMES)
    rows, per_row, eaten, baskets = rng.randint(2, 6), rng.randint(3, 9), rng.randint(1, 5), rng.choice([2, 4])
    question = (
        f"{name} plants {rows} rows of tomato plants with {per_row} plants in each row. Rabbits eat {eaten} "
        f"plants. Each remaining plant gives {baskets} tomatoes, and {name} sells half of the tomatoes. "
        f"How many tomatoes does {name} sell?"
    )
    return question, [
        Calc(f"{name} plants ", rows, "x", per_row, " plants."),
        Calc("After the rabbits there are ", Ref(0), "-", eaten, " plants left."),
        Calc("They give ", Ref(1), "x", baskets, " tomatoes."),  # even, so half is whole
        Calc("Half of them is ", Ref(2), "/", 2, f" tomatoes, so {pronoun.lower()} sells {{v}}."),
    ]


_TEMPLATES: dict[str, Callable[[random.Random], tuple[str, list[Calc]]]] = {
    "packs": _packs,
    "wages": _wages,
    "sharing": _sharing,
    "savings": _savings,
    "garden": _garden,
}


def make_problem(rng: random.Random) -> Problem:
    template = rng.choice(list(_TEMPLATES))
    question, steps = _TEMPLATES[template](rng)
    return Problem(template, question, tuple(steps))


def generate_problem(rng: random.Random) -> dict[str, str]:
    problem = make_problem(rng)
    return {"question": problem.question, "answer": render_solution(problem)[0]}


def generate_problems(num_examples: int, seed: int = 0) -> list[dict[str, str]]:
    """``num_examples`` problems; the same seed always gives the same list."""
    rng = random.Random(seed)
    return [generate_problem(rng) for _ in range(num_examples)]


def generate_split(
    split: str, num_examples: int, seed: int = 0, *, train_examples: int | None = None
) -> list[dict[str, str]]:
    """``num_examples`` problems of ``split``. ``train`` is ``generate_problems(num_examples, seed)``;
    a held-out split has its own stream and leaves out the questions of the first
    ``train_examples`` training problems of ``seed`` (default: as many as it generates)."""
    if split == "train":
        return generate_problems(num_examples, seed)
    if split not in HELD_OUT_SPLITS:
        raise ValueError(f"unknown split {split!r}; the synthetic dataset has 'train', 'test' and 'validation'")
    training = {
        p["question"] for p in generate_problems(num_examples if train_examples is None else train_examples, seed)
    }
    rng = random.Random(f"procrl-synthetic/{split}/{seed}")  # a str seed: never one an int training seed gives
    rows: list[dict[str, str]] = []
    seen: set[str] = set()
    for _ in range(50 * num_examples + 1000):  # the templates have far more problems than this ever asks
        problem = generate_problem(rng)
        if problem["question"] not in training and problem["question"] not in seen:
            seen.add(problem["question"])
            rows.append(problem)
            if len(rows) == num_examples:
                return rows
    raise ValueError(f"could not draw {num_examples} distinct {split} problems outside the training set")
