"""GSM8K-style multi-step arithmetic word problems, generated deterministically from a seed.

Same format as GSM8K: ``question``; ``answer`` with one step per line, ``<<expr=result>>``
calculator notes and a final ``#### N``. The CPU demo trains on these so it needs no network.
Simplified on purpose: a handful of templates with 2-4 steps and integer results; the point is
the format and the step structure, not linguistic variety.

Splits: ``train`` draws from ``random.Random(seed)``; the held-out splits (``test``,
``validation``) draw from a string seed (``"procrl-synthetic/test/<seed>"``), which no integer
training seed can equal, and skip every problem whose question is in the training split of the
same seed and size: a held-out problem is never a training problem, whatever the seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable

__all__ = ["HELD_OUT_SPLITS", "generate_problem", "generate_problems", "generate_split"]

HELD_OUT_SPLITS = ("test", "validation")

_NAMES = [("Ava", "She"), ("Ben", "He"), ("Chloe", "She"), ("Diego", "He"), ("Emma", "She"), ("Farid", "He"),
          ("Grace", "She"), ("Hiro", "He"), ("Ines", "She"), ("Jonas", "He"), ("Keiko", "She"), ("Liam", "He")]
_ITEMS = ["apples", "pencils", "stickers", "marbles", "cookies", "books", "stamps", "shells", "cards", "eggs"]


def _note(expression: str, value: int) -> str:
    return f"{expression} = <<{expression.replace(' ', '').replace('x', '*')}={value}>>{value}"


def _packs(rng: random.Random) -> tuple[str, list[str], int]:
    (name, pronoun), item = rng.choice(_NAMES), rng.choice(_ITEMS)
    start, packs, per_pack, given = rng.randint(3, 40), rng.randint(2, 9), rng.randint(2, 12), rng.randint(1, 10)
    bought = packs * per_pack
    total = start + bought
    left = total - given
    question = (f"{name} has {start} {item}. {pronoun} buys {packs} packs with {per_pack} {item} in each pack, "
                f"then gives {given} {item} to a friend. How many {item} does {name} have now?")
    steps = [f"{name} buys {_note(f'{packs} x {per_pack}', bought)} {item}.",
             f"Then {pronoun.lower()} has {_note(f'{start} + {bought}', total)} {item}.",
             f"After giving some away, {pronoun.lower()} has {_note(f'{total} - {given}', left)} {item}."]
    return question, steps, left


def _wages(rng: random.Random) -> tuple[str, list[str], int]:
    (name, pronoun) = rng.choice(_NAMES)
    rate, hours, days = rng.randint(8, 30), rng.randint(2, 8), rng.randint(2, 6)
    daily = rate * hours
    weekly = daily * days
    question = (f"{name} earns ${rate} an hour. {pronoun} works {hours} hours a day for {days} days. "
                f"How much money does {name} earn in total?")
    steps = [f"Each day {name} earns {_note(f'{rate} x {hours}', daily)} dollars.",
             f"Over {days} days {pronoun.lower()} earns {_note(f'{daily} x {days}', weekly)} dollars."]
    return question, steps, weekly


def _sharing(rng: random.Random) -> tuple[str, list[str], int]:
    (name, pronoun), item = rng.choice(_NAMES), rng.choice(_ITEMS)
    friends, each, extra, boxes = rng.randint(2, 8), rng.randint(2, 9), rng.randint(1, 9), rng.randint(2, 5)
    per_box = friends * each + extra
    total = per_box * boxes
    shared = friends * each
    question = (f"{name} has {boxes} boxes. Each box holds enough {item} to give {friends} friends {each} {item} "
                f"each with {extra} {item} left over. How many {item} are in all the boxes?")
    steps = [f"The friends get {_note(f'{friends} x {each}', shared)} {item} from one box.",
             f"So one box holds {_note(f'{shared} + {extra}', per_box)} {item}.",
             f"All {boxes} boxes hold {_note(f'{per_box} x {boxes}', total)} {item}."]
    return question, steps, total


def _savings(rng: random.Random) -> tuple[str, list[str], int]:
    (name, pronoun) = rng.choice(_NAMES)
    price, saved, weekly = rng.randint(60, 300), rng.randint(5, 50), rng.randint(5, 25)
    price = max(price, saved + weekly)
    needed = price - saved
    weeks = -(-needed // weekly)
    spare = weeks * weekly - needed
    question = (f"{name} wants a bike that costs ${price}. {pronoun} has saved ${saved} and saves ${weekly} "
                f"every week. After saving for {weeks} weeks and buying the bike, how many dollars are left over?")
    steps = [f"{name} still needs {_note(f'{price} - {saved}', needed)} dollars.",
             f"In {weeks} weeks {pronoun.lower()} saves {_note(f'{weeks} x {weekly}', weeks * weekly)} dollars.",
             f"So {pronoun.lower()} has {_note(f'{weeks * weekly} - {needed}', spare)} dollars left over."]
    return question, steps, spare


def _garden(rng: random.Random) -> tuple[str, list[str], int]:
    (name, pronoun) = rng.choice(_NAMES)
    rows, per_row, eaten, baskets = rng.randint(3, 9), rng.randint(4, 12), rng.randint(1, 9), rng.choice([2, 4])
    plants = rows * per_row
    healthy = plants - eaten
    tomatoes = healthy * baskets  # even, so half is whole
    sold = tomatoes // 2
    question = (f"{name} plants {rows} rows of tomato plants with {per_row} plants in each row. Rabbits eat {eaten} "
                f"plants. Each remaining plant gives {baskets} tomatoes, and {name} sells half of the tomatoes. "
                f"How many tomatoes does {name} sell?")
    steps = [f"{name} plants {_note(f'{rows} x {per_row}', plants)} plants.",
             f"After the rabbits, {_note(f'{plants} - {eaten}', healthy)} plants are left.",
             f"They give {_note(f'{healthy} x {baskets}', tomatoes)} tomatoes.",
             f"Half of them is {_note(f'{tomatoes} / 2', sold)} tomatoes, so {pronoun.lower()} sells {sold}."]
    return question, steps, sold


_TEMPLATES: list[Callable[[random.Random], tuple[str, list[str], int]]] = [_packs, _wages, _sharing, _savings, _garden]


def generate_problem(rng: random.Random) -> dict[str, str]:
    question, steps, answer = rng.choice(_TEMPLATES)(rng)
    return {"question": question, "answer": "\n".join(steps + [f"#### {answer}"])}


def generate_problems(num_examples: int, seed: int = 0) -> list[dict[str, str]]:
    """``num_examples`` problems; the same seed always gives the same list."""
    rng = random.Random(seed)
    return [generate_problem(rng) for _ in range(num_examples)]


def generate_split(split: str, num_examples: int, seed: int = 0, *, train_examples: int | None = None) -> list[dict[str, str]]:
    """``num_examples`` problems of ``split``. ``train`` is ``generate_problems(num_examples, seed)``;
    a held-out split has its own stream and leaves out the questions of the first
    ``train_examples`` training problems of ``seed`` (default: as many as it generates)."""
    if split == "train":
        return generate_problems(num_examples, seed)
    if split not in HELD_OUT_SPLITS:
        raise ValueError(f"unknown split {split!r}; the synthetic dataset has 'train', 'test' and 'validation'")
    training = {p["question"] for p in generate_problems(num_examples if train_examples is None else train_examples, seed)}
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
