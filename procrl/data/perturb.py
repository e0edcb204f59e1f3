"""ProcessBench-format judge test sets built from GSM8K reference solutions.

A GSM8K reference answer is a list of steps (one per line) with calculator annotations
``<<48/2=24>>24`` and a final ``#### N``. A perturbed copy changes the result of ONE calculation
in step ``j`` (the annotation's result and the number written after it), so the first wrong
step is ``j``; later steps keep their original numbers. Untouched references are the
all-correct samples (label -1).

Records follow ProcessBench: ``{"id", "problem", "steps", "label", "answer"}`` (``answer``: the
gold final answer, for judges run with ``reference: true``).

    python -m procrl.data.perturb --input ../shared/data/gsm8k/train.jsonl \\
        --output outputs/gsm8k_perturbed.jsonl --num-errors 200 --num-correct 200 --seed 0
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

__all__ = ["build_processbench", "changed_value", "perturb_solution", "reference_steps"]

# An annotation whose result is also written right after it: "<<48/2=24>>24".
_CALCULATION = re.compile(r"<<(?P<expression>[^<>=]*)=(?P<result>-?\d*\.?\d+)>>(?P<written>-?\d*\.?\d+)")


def reference_steps(answer: str) -> tuple[list[str], str | None]:
    """Steps (non-empty lines before ``####``) and the gold final answer of a GSM8K answer."""
    steps, gold = [], None
    for line in answer.split("\n"):
        if line.strip().startswith("####"):
            gold = line.strip()[4:].strip()
            break
        if line.strip():
            steps.append(line.strip())
    return steps, gold


def _format_like(value: float, original: str) -> str:
    decimals = len(original.split(".")[1]) if "." in original else 0
    text = f"{value:.{decimals}f}"
    if original.startswith(".") and text.startswith("0."):
        text = text[1:]
    return text


def changed_value(result: str, rng: random.Random) -> str:
    """A different number written like ``result`` (same decimals), off by a visible amount."""
    value = float(result)
    for _ in range(20):
        choice = rng.random()
        if choice < 0.6:
            candidate = value + rng.choice([-1, 1]) * rng.randint(1, 9)
        elif choice < 0.8:
            candidate = value * rng.choice([2, 10])
        else:
            candidate = value + rng.choice([-1, 1]) * max(1.0, round(abs(value) * rng.uniform(0.1, 0.5)))
        if value >= 0 and candidate < 0:
            candidate = -candidate
        text = _format_like(candidate, result)
        if abs(float(text) - value) >= 1e-9 * max(1.0, abs(value)) and float(text) != value:
            return text
    return _format_like(value + 1, result)


def perturb_solution(answer: str, rng: random.Random) -> tuple[list[str], int] | None:
    """Steps with one calculation result changed and the index of that step; None when the
    solution has no calculation whose written result follows its annotation."""
    steps, _ = reference_steps(answer)
    candidates = [
        (index, match)
        for index, step in enumerate(steps)
        for match in _CALCULATION.finditer(step)
        if match.group("result") == match.group("written")
    ]
    if not candidates:
        return None
    step_index = rng.choice(sorted({index for index, _ in candidates}))
    match = rng.choice([m for index, m in candidates if index == step_index])
    new_result = changed_value(match.group("result"), rng)
    step = steps[step_index]
    replacement = f"<<{match.group('expression')}={new_result}>>{new_result}"
    steps = list(steps)
    steps[step_index] = step[: match.start()] + replacement + step[match.end() :]
    return steps, step_index


def build_processbench(rows: list[dict], num_errors: int, num_correct: int, seed: int = 0) -> list[dict]:
    """``num_errors`` perturbed and ``num_correct`` untouched references (disjoint problems),
    shuffled. Rows need GSM8K's ``question`` and ``answer``."""
    rng = random.Random(seed)
    order = list(range(len(rows)))
    rng.shuffle(order)
    records: list[dict] = []
    errors = corrects = 0
    for position in order:
        if errors >= num_errors and corrects >= num_correct:
            break
        row = rows[position]
        steps, gold = reference_steps(row["answer"])
        if not steps:
            continue
        if errors < num_errors:
            perturbed = perturb_solution(row["answer"], rng)
            if perturbed is None:
                continue
            steps, label = perturbed
            errors += 1
        elif corrects < num_correct:
            label = -1
            corrects += 1
        else:
            continue
        records.append(
            {
                "id": f"gsm8k-train-{position}",
                "problem": row["question"],
                "steps": steps,
                "label": label,
                "answer": gold,
            }
        )
    if errors < num_errors or corrects < num_correct:
        raise ValueError(f"only {errors} perturbable and {corrects} correct solutions in {len(rows)} rows")
    rng.shuffle(records)
    return records


def read_train_rows(path: str, parser: argparse.ArgumentParser) -> list[dict]:
    """GSM8K rows of a JSON-lines file; a file named as a test split is refused (test sets for
    judges and reward checks are built from train, never from test)."""
    if "test" in Path(path).name:
        parser.error(f"{path}: build from the train split, never from test")
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: str, rows: list[dict]) -> Path:
    output = Path(path)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, help="GSM8K JSONL (question, answer); use the train split.")
    parser.add_argument("--output", required=True, help="Output JSONL in ProcessBench format.")
    parser.add_argument("--num-errors", type=int, default=200, help="Perturbed solutions (label = changed step).")
    parser.add_argument("--num-correct", type=int, default=200, help="Untouched solutions (label -1).")
    parser.add_argument("--seed", type=int, default=0, help="Random seed (which rows, steps and values).")
    args = parser.parse_args(argv)
    rows = read_train_rows(args.input, parser)
    records = build_processbench(rows, args.num_errors, args.num_correct, args.seed)
    output = write_jsonl(args.output, records)
    print(f"wrote {len(records)} records ({args.num_errors} with an error, {args.num_correct} correct) to {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
