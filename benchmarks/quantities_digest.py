"""A digest of everything the three readers of quantities in prose decide, per corpus: the
arithmetic judge, the reference judge and ReCEval's premise/conclusion split (the part of
ReCEval that reads calculations; its NLI model only sees the texts this split gives). Run it
before and after a change to :mod:`procrl.rewards.quantities` or to its users: equal digests
mean no verdict, score or intermediate output changed.

Per row and per step (the data's own steps where the corpus has them, and procrl's segmentation):

* ``arithmetic``: every claim ``find_claims`` reads (sides, values, kind, offsets, tolerance,
  right or wrong), the judge's verdict (step, note, checked steps), and the first_error
  component's score and per-step scores (flat and position penalties);
* ``reference``: every number ``stated_numbers`` reads, the reference judge's verdict under five
  rule sets (the default, ``regroup``, ``off_path: derivable`` and ``flag``, ``leap: flag``
  without ``check_arithmetic``), and the component's score and per-step scores;
* ``receval``: every step's premises and conclusion (``split_rcus``) and letter-word counts.

Corpora: the shipped fixtures (``tests/data/validate/``), the synthetic problems' solutions (clean
and with every slip), GSM8K's train and test gold solutions, and the development corpora from
fetched bare git repositories (MR-GSM8K, BIG-Bench-Mistake, ReasonEval; never ProcessBench).

    python benchmarks/quantities_digest.py --mr-gsm8k /work/.mirror/dvlab-research+MR-GSM8K/repo \\
        --big-bench-mistake /work/.mirror/WHGTyen+BIG-Bench-Mistake/repo \\
        --reasoneval /work/.mirror/GAIR-NLP+ReasonEval/repo --gsm8k /work/shared/data/gsm8k

Prints one line per user and corpus: rows, steps, a count of what it found, and a sha256.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

FIXTURES = [
    "procrl_format.jsonl",
    "big_bench_mistake_format.jsonl",
    "mr_gsm8k_sample.json",
    "reasoneval_perturbation_format.json",
    "processbench_format.jsonl",
]
MR_GSM8K = [
    f"eval_results/gpt4-grading/{name}_eval_results.json"
    for name in ("Claude", "GPT3_5", "GPT4", "llama2_70b", "mammoth_70B", "metamath_70B", "wizardmath_70B")
]
BIG_BENCH_MISTAKE = [
    f"{task}.jsonl"
    for task in (
        "multistep_arithmetic",
        "word_sorting",
        "logical_deduction",
        "tracking_shuffled_objects",
        "dyck_languages",
    )
]
REASONEVAL = ["dataset/perturbation.json", "dataset/mr-gsm8k.json"]  # the MR-MATH files: no format procrl reads
REFERENCE_RULES = {
    "default": {},
    "regroup": {"transformations": ("regroup", "units", "percent", "rounding")},
    "derivable": {"off_path": "derivable"},
    "flag": {"off_path": "flag"},
    "leap_flag_no_arithmetic": {"leap": "flag", "check_arithmetic": False},
}
USERS = ("arithmetic", "reference", "receval")


@dataclasses.dataclass
class Row:
    question: str | None
    completion: str
    gold: str | None  # the gold solution (or answer) the reference judge checks against
    data_steps: list[str] | None = None


def _plain(value):
    """A JSON-able, deterministic form of dataclasses, tuples and floats (repr keeps every bit)."""
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, float):
        return repr(value)
    return value


# --- corpora -----------------------------------------------------------------------------------


def _solutions(paths: list[str]) -> list[Row]:
    from procrl.evaluation.corpora import read_solutions

    _, solutions = read_solutions(paths)
    rows = []
    for s in solutions:
        steps = [s.completion[a:b] for a, b in s.data_spans] if s.data_spans is not None else None
        rows.append(Row(s.question, s.completion, s.reference, steps))
    return rows


def _from_git(repo: str, paths: list[str], folder: Path) -> list[str]:
    """The files of a fetched bare repository; one its snapshot lacks (a large file listed but absent) is named
    on stderr and left out."""
    written = []
    for path in paths:
        target = folder / path.replace("/", "__")
        if subprocess.run(["git", "-C", repo, "cat-file", "-e", f"HEAD:{path}"], capture_output=True).returncode:
            print(f"{repo}: {path} is absent from the snapshot; left out", file=sys.stderr)
            continue
        shown = subprocess.run(["git", "-C", repo, "show", f"HEAD:{path}"], capture_output=True, check=True)
        target.write_bytes(shown.stdout)
        written.append(str(target))
    return written


def _synthetic() -> list[Row]:
    import random

    from procrl.data.synthetic import SLIPS, make_problem, render_solution

    rng = random.Random(0)
    rows = []
    for _ in range(300):
        problem = make_problem(rng)
        clean, _ = render_solution(problem)
        rows.append(Row(problem.question, clean, clean))
        for slip in SLIPS:
            for step in range(len(problem.steps)):
                rows.append(Row(problem.question, render_solution(problem, slip, step)[0], clean))
    return rows


def _gsm8k(path: Path) -> list[Row]:
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            rows.append(Row(record["question"], record["answer"], record["answer"]))
    return rows


def corpora(args, folder: Path) -> dict[str, list[Row]]:
    found = {f"fixture/{name}": _solutions([str(REPO / "tests" / "data" / "validate" / name)]) for name in FIXTURES}
    found["synthetic"] = _synthetic()
    if args.gsm8k:
        for split in ("train", "test"):
            found[f"gsm8k/{split}"] = _gsm8k(Path(args.gsm8k) / f"{split}.jsonl")
    if args.mr_gsm8k:
        found["mr-gsm8k/gpt4-grading"] = _solutions(_from_git(args.mr_gsm8k, MR_GSM8K, folder))
    if args.big_bench_mistake:
        for path in _from_git(args.big_bench_mistake, BIG_BENCH_MISTAKE, folder):
            found[f"big-bench-mistake/{Path(path).stem}"] = _solutions([path])
    if args.reasoneval:
        for path in _from_git(args.reasoneval, REASONEVAL, folder):
            found[f"reasoneval/{Path(path).name.split('__')[-1]}"] = _solutions([path])
    return found


# --- what each user decides ----------------------------------------------------------------------


def _step_sets(row: Row, segmented) -> list[tuple[str, list[str]]]:
    sets = [("procrl", [step.text for step in segmented.steps])]
    if row.data_steps is not None:
        sets.append(("data", row.data_steps))
    return sets


def _arithmetic(row: Row, step_sets) -> tuple[dict, int]:
    from procrl.rewards.judges.arithmetic import ArithmeticJudge
    from procrl.rewards.judges.protocol import JudgeItem
    from procrl.rewards.quantities import find_claims

    out, claims = {}, 0
    for name, steps in step_sets:
        found = [[_plain(c) | {"correct": c.correct} for c in find_claims(step)] for step in steps]
        claims += sum(map(len, found))
        verdict = ArithmeticJudge().judge_one(JudgeItem(row.question, tuple(steps), row.gold))
        out[name] = {"claims": found, "verdict": _plain(verdict)}
    return out, claims


def _reference(row: Row, step_sets) -> tuple[dict, int]:
    from procrl.rewards.judges.protocol import JudgeItem
    from procrl.rewards.judges.reference import ReferenceJudge, ReferenceRules, stated_final_answer
    from procrl.rewards.quantities import stated_numbers

    out, flags = {}, 0
    answer = stated_final_answer(row.completion)
    for name, steps in step_sets:
        numbers = [_plain(stated_numbers(step)) for step in steps]
        verdicts = {}
        for rule, options in REFERENCE_RULES.items():
            verdict = ReferenceJudge(ReferenceRules(**options)).judge_one(
                JudgeItem(row.question, tuple(steps), row.gold, answer)
            )
            verdicts[rule] = _plain(verdict)
            flags += bool(verdict.index is not None and verdict.index >= 0)
        out[name] = {"numbers": numbers, "verdicts": verdicts}
    return out, flags


def _receval(step_sets) -> tuple[dict, int]:
    from procrl.rewards.receval import letter_words, split_rcus

    out, premises = {}, 0
    for name, steps in step_sets:
        rcus = [split_rcus(step) for step in steps]
        premises += sum(len(rcu.premises) for rcu in rcus)
        out[name] = {"rcus": _plain(rcus), "letter_words": [letter_words(step) for step in steps]}
    return out, premises


SCORED = {
    "arithmetic_flat": {"type": "first_error", "backend": "arithmetic"},
    "arithmetic_position": {"type": "first_error", "backend": "arithmetic", "penalty": "position"},
    "reference": {"type": "first_error", "backend": "reference"},
}


def _scores(rows: list[Row]) -> list[dict]:
    """The first_error component's scores of every row, through the scoring path validate and
    training use (segmentation, the component, its fallbacks)."""
    from procrl.evaluation.score import score_batch
    from procrl.rewards.mix import RewardMix
    from procrl.rewards.spec import parse_rewards

    mix = RewardMix(parse_rewards(SCORED))
    out = []
    for start in range(0, len(rows), 64):
        chunk = rows[start : start + 64]
        batch = [{"question": r.question, "completion": r.completion, "answer": r.gold} for r in chunk]
        scored, _, failures = score_batch(mix, list(range(start, start + len(chunk))), batch)
        for row in scored:
            out.append(
                {
                    "rewards": _plain(row["rewards"]),
                    "steps": _plain([s.get("scores") for s in row["steps"]]),
                    "diagnostics": _plain(row.get("diagnostics") or {}),
                }
            )
    return out


def digest(rows: list[Row]) -> dict[str, tuple[int, int, str]]:
    from procrl.core.text import segment

    hashes = {user: hashlib.sha256() for user in USERS}
    counts = dict.fromkeys(USERS, 0)
    steps = 0
    scores = _scores(rows)
    for row, score in zip(rows, scores):
        step_sets = _step_sets(row, segment(row.completion))
        steps += sum(len(s) for _, s in step_sets)
        arithmetic, claims = _arithmetic(row, step_sets)
        reference, flags = _reference(row, step_sets)
        receval, premises = _receval(step_sets)
        arithmetic["scores"] = {k: v for k, v in score["rewards"].items() if k.startswith("arithmetic")}
        reference["scores"] = {k: v for k, v in score["rewards"].items() if k == "reference"}
        arithmetic["step_scores"] = reference["step_scores"] = score["steps"]
        arithmetic["diagnostics"] = reference["diagnostics"] = score["diagnostics"]
        for user, value, count in (
            ("arithmetic", arithmetic, claims),
            ("reference", reference, flags),
            ("receval", receval, premises),
        ):
            hashes[user].update((json.dumps(value, sort_keys=True, ensure_ascii=False) + "\n").encode())
            counts[user] += count
    return {user: (steps, counts[user], hashes[user].hexdigest()) for user in USERS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mr-gsm8k")
    parser.add_argument("--big-bench-mistake")
    parser.add_argument("--reasoneval")
    parser.add_argument("--gsm8k", help="folder of GSM8K's train.jsonl and test.jsonl")
    parser.add_argument("--only", nargs="*", help="corpora whose name starts with one of these")
    args = parser.parse_args(argv)
    print("| corpus | rows | steps | user | found | sha256 (first 16) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name, rows in corpora(args, Path(folder)).items():
            if args.only and not any(name.startswith(prefix) for prefix in args.only):
                continue
            for user, (steps, found, sha) in digest(rows).items():
                what = {"arithmetic": "claims", "reference": "flags", "receval": "premises"}[user]
                print(f"| {name} | {len(rows)} | {steps} | {user} | {found} {what} | {sha[:16]} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
