"""Multiple-choice answers on real model text: BIG-Bench-Mistake's multiple-choice tasks
(``logical_deduction``, ``tracking_shuffled_objects``: PaLM 2's traces with the labelled mistake
step, the answer read by the annotators and the target), read from a fetched bare git repository
(``git -C DIR show HEAD:path``); nothing of it is shipped.

Measures, per task:

* accuracy agreement: procrl's accuracy reward (the choice reader of procrl/core/choices.py, with the
  options parsed from the task's ``Options:``) against the labelled answer correctness
  (``answer == target``), each disagreement printed; and the same for a naive reader (the last
  ``(X)`` anywhere in the trace, the usual regex of chain-of-thought evaluations) in the same run;
* every component's AUROC sound vs flawed, through ``procrl validate`` (accuracy, format, TRACE
  with the cue tagger: no model).

    python benchmarks/choice_answers_bench.py --big-bench-mistake /work/.mirror/WHGTyen+BIG-Bench-Mistake/repo
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

TASKS = ("logical_deduction", "tracking_shuffled_objects")
RECIPE = """recipe: procrl/v1
rewards:
  accuracy: {weight: 1.0}
  format: {weight: 0.2}
  trace: {weight: 0.5, tagger: cues}
"""
_LAST_PAREN = re.compile(r"\(([A-Z])\)")


def naive_reader(completion: str) -> str | None:
    found = _LAST_PAREN.findall(completion)
    return found[-1] if found else None


def measure(path: Path) -> dict:
    from procrl.core.choices import answer_spec, gold_answer, predict_choice
    from procrl.evaluation.corpora import read_solutions

    _, solutions = read_solutions(str(path))
    out = {
        "solutions": len(solutions),
        "labelled": 0,
        "agree": 0,
        "naive_agree": 0,
        "rules": {},
        "disagreements": [],
        "naive_disagreements": [],
    }
    for solution in solutions:
        spec = answer_spec(solution.answer_kind, list(solution.choices or []), solution.gold)
        predicted, rule = predict_choice(solution.completion, spec)
        out["rules"][rule] = out["rules"].get(rule, 0) + 1
        if solution.answer_correct is None:
            continue
        out["labelled"] += 1
        gold = gold_answer(solution.gold, spec)
        right = predicted is not None and predicted == gold
        naive = naive_reader(solution.completion)
        last = solution.completion.strip().splitlines()[-1][-120:]
        if right == solution.answer_correct:
            out["agree"] += 1
        else:
            out["disagreements"].append(
                {
                    "id": solution.id,
                    "labelled": solution.answer_correct,
                    "read": predicted,
                    "rule": rule,
                    "gold": gold,
                    "ending": last,
                }
            )
        if (naive == gold) == solution.answer_correct:
            out["naive_agree"] += 1
        else:
            out["naive_disagreements"].append(
                {"id": solution.id, "labelled": solution.answer_correct, "read": naive, "gold": gold, "ending": last}
            )
    return out


def validate(paths: list[Path], directory: Path) -> dict:
    from procrl.evaluation.validate.run import run_validation

    recipe = directory / "recipe.yaml"
    recipe.write_text(RECIPE)
    report = run_validation(str(recipe), [], [str(p) for p in paths]).report
    return {
        name: {
            "auroc": entry.get("auroc"),
            "auroc_ci": entry.get("auroc_ci"),
            "right_answer_auroc": entry.get("right_answer_auroc"),
        }
        for name, entry in [*report["components"].items(), ("reward", report["reward"])]
    } | {"classes": report["classes"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--big-bench-mistake", required=True, help="bare git dir of WHGTyen/BIG-Bench-Mistake")
    parser.add_argument("--no-validate", action="store_true", help="only the accuracy agreement")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        paths = []
        for task in TASKS:
            text = subprocess.run(
                ["git", "-C", args.big_bench_mistake, "show", f"HEAD:{task}.jsonl"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            path = directory / f"{task}.jsonl"
            path.write_text(text)
            paths.append(path)
            result = measure(path)
            share = result["agree"] / result["labelled"]
            naive = result["naive_agree"] / result["labelled"]
            print(
                f"{task}: {result['solutions']} traces, {result['labelled']} with a labelled answer; "
                "accuracy agreement "
                f"{result['agree']}/{result['labelled']} = {share:.2%} (naive last-(X) reader: {naive:.2%}); "
                f"rules {result['rules']}"
            )
            for item in result["disagreements"]:
                print(f"  disagreement: {json.dumps(item)}")
            for item in result["naive_disagreements"]:
                print(f"  naive reader disagrees: {json.dumps(item)}")
        if not args.no_validate:
            for task, path in zip(TASKS, paths):
                print(f"procrl validate, {task}: {json.dumps(validate([path], directory))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
