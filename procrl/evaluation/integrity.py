"""Five completions per GSM8K problem for checking that a reward mix pays for reasoning
(docs/spec.md section 0, the integrity rule; ``tests/test_reward_integrity.py``):

* ``W``: the reference solution (steps with their calculator notes, ``#### N``);
* ``S``: W with ONE intermediate calculation result changed (in a step before the last one; the
  annotation and the number written after it) and the final answer kept: a slip;
* ``P``: S after three number-free restatement steps (padding in front of the slip);
* ``A``: the answer line alone;
* ``H``: three hedging sentences, then the answer line.

A mix that pays for reasoning orders W > S, W > A, W > H and P <= S. Written as rows for
``procrl score``::

    python -m procrl.evaluation.integrity --input ../shared/data/gsm8k/train.jsonl --output cases.jsonl \\
        --num-problems 200
    procrl score --recipe recipes/gsm8k_judge.yaml --set rewards.first_error.backend=arithmetic \\
        --input cases.jsonl --output scored.jsonl
    python -m procrl.evaluation.integrity --check scored.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from pathlib import Path

from procrl.data.perturb import _CALCULATION, changed_value, read_train_rows, reference_steps, write_jsonl

__all__ = [
    "KINDS",
    "RESTATEMENTS",
    "HEDGES",
    "build_cases",
    "five_completions",
    "orderings",
    "slip_solution",
    "verified",
]

KINDS = ("W", "S", "P", "A", "H")
# Number-free steps that restate without computing (padding).
RESTATEMENTS = (
    "Let me restate the problem in my own words.",
    "We need to find the quantity the question asks for.",
    "First, I will read the problem carefully.",
    "The question gives us everything we need.",
    "Let us think about what is being asked.",
    "We should work through this step by step.",
)
# Hedging: confident-sounding talk about the answer without any checkable reasoning.
HEDGES = (
    "I think the answer is probably this.",
    "It seems about right, but I am not completely sure.",
    "I would guess that this is correct.",
    "This is likely the answer, more or less.",
    "It could be this, judging roughly.",
    "My best estimate is the following.",
)


def slip_solution(answer: str, rng: random.Random) -> tuple[list[str], str, int] | None:
    """(steps of S, gold final answer, index of the changed step): one calculation result
    changed in a step before the last one, the final answer kept; None when the solution has
    no such calculation."""
    steps, gold = reference_steps(answer)
    if gold is None or len(steps) < 2:
        return None
    candidates = [
        (index, match)
        for index, step in enumerate(steps[:-1])
        for match in _CALCULATION.finditer(step)
        if match.group("result") == match.group("written")
    ]
    if not candidates:
        return None
    index, match = rng.choice(candidates)
    new = changed_value(match.group("result"), rng)
    step = steps[index]
    steps = list(steps)
    steps[index] = step[: match.start()] + f"<<{match.group('expression')}={new}>>{new}" + step[match.end() :]
    return steps, gold, index


def five_completions(answer: str, rng: random.Random) -> dict[str, str] | None:
    """W, S, P, A, H for one GSM8K reference answer (None when no intermediate calculation can
    be changed)."""
    slipped = slip_solution(answer, rng)
    if slipped is None:
        return None
    steps, gold, _ = slipped
    worked, _ = reference_steps(answer)
    answer_line = f"#### {gold}"
    padding = rng.sample(RESTATEMENTS, 3)
    hedges = rng.sample(HEDGES, 3)
    return {
        "W": "\n".join(worked + [answer_line]),
        "S": "\n".join(steps + [answer_line]),
        "P": "\n".join(padding + steps + [answer_line]),
        "A": answer_line,
        "H": "\n".join(hedges + [answer_line]),
    }


def verified(completion: str) -> bool:
    """Whether the arithmetic verifier checks at least one calculation of the completion's
    steps (the shared segmentation) and finds none wrong."""
    from procrl.core.text import segment
    from procrl.rewards.judges import JudgeItem
    from procrl.rewards.judges.arithmetic import ArithmeticJudge

    steps = tuple(step.text for step in segment(completion).steps)
    verdict = ArithmeticJudge().judge_one(JudgeItem(None, steps))
    return bool(steps) and verdict.index == -1 and bool(verdict.checked_steps)


def build_cases(rows: list[dict], num_problems: int, seed: int = 0) -> list[dict]:
    """Rows for ``procrl score``: ``{id, problem, kind, w_verified, question, answer,
    completion}``, five per problem, for the first ``num_problems`` rows (in file order) that
    have an intermediate calculation; ``w_verified``: the arithmetic verifier accepts W."""
    rng = random.Random(seed)
    out: list[dict] = []
    problems = 0
    for position, row in enumerate(rows):
        if problems >= num_problems:
            break
        cases = five_completions(row["answer"], rng)
        if cases is None:
            continue
        problems += 1
        w_verified = verified(cases["W"])
        for kind in KINDS:
            out.append(
                {
                    "id": f"gsm8k-train-{position}-{kind}",
                    "problem": position,
                    "kind": kind,
                    "w_verified": w_verified,
                    "question": row["question"],
                    "answer": row["answer"],
                    "completion": cases[kind],
                }
            )
    return out


def orderings(scored: list[dict], key: str = "reward") -> dict[str, float | int]:
    """Share of the problems whose W is verified with W > S, W > A, W > H and P <= S (and all
    four), from scored rows (``procrl score`` output: ``problem``, ``kind``, ``w_verified`` and
    ``key``); a None total fails its orderings."""
    by_problem: dict = defaultdict(dict)
    for row in scored:
        if row.get("w_verified", True):
            by_problem[row["problem"]][row["kind"]] = row[key]
    checks = {
        "W>S": lambda t: t["W"] > t["S"],
        "W>A": lambda t: t["W"] > t["A"],
        "W>H": lambda t: t["W"] > t["H"],
        "P<=S": lambda t: t["P"] <= t["S"],
    }
    counts = dict.fromkeys(list(checks) + ["all"], 0)
    complete = [t for t in by_problem.values() if set(KINDS) <= set(t)]
    for totals in complete:
        if any(totals[k] is None for k in KINDS):
            continue  # no total: every ordering of this problem fails
        passed = {name: check(totals) for name, check in checks.items()}
        for name, ok in passed.items():
            counts[name] += ok
        counts["all"] += all(passed.values())
    n = len(complete)
    return {"problems": n, **{name: count / n if n else float("nan") for name, count in counts.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", help="GSM8K JSONL (question, answer); use the train split.")
    parser.add_argument("--output", help="Output JSONL of W/S/P/A/H rows for procrl score.")
    parser.add_argument("--num-problems", type=int, default=200, help="Problems (five rows each).")
    parser.add_argument(
        "--seed", type=int, default=0, help="Random seed (which calculation, which value, which sentences)."
    )
    parser.add_argument("--check", metavar="SCORED", help="Print the orderings of a procrl score output instead.")
    args = parser.parse_args(argv)
    if args.check:
        scored = [
            json.loads(line) for line in Path(args.check).read_text(encoding="utf-8").splitlines() if line.strip()
        ]
        result = orderings(scored)
        print(
            f"problems {result['problems']}: "
            + ", ".join(f"{k} {100 * v:.1f}%" for k, v in result.items() if k != "problems")
        )
        return 0
    if not args.input or not args.output:
        parser.error("--input and --output are required (or --check SCORED)")
    rows = read_train_rows(args.input, parser)
    cases = build_cases(rows, args.num_problems, args.seed)
    output = write_jsonl(args.output, cases)
    print(f"wrote {len(cases)} rows ({len(cases) // len(KINDS)} problems x W/S/P/A/H) to {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
