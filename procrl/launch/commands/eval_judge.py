"""``procrl eval-judge``: ``procrl validate`` restricted to one first-error judge (the work:
:mod:`procrl.evaluation.judge_eval`)."""

from __future__ import annotations

import argparse

from procrl.launch.commands._options import add_recipe

NAME = "eval-judge"
HELP = (
    "Meta-evaluate a first-error judge on labelled solutions (acc_err, acc_cor, F1): procrl validate restricted "
    "to one judge."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recipe(parser, positional=False, help="Path to a recipe YAML file with a first_error component.")
    parser.add_argument(
        "--data",
        required=True,
        help="Labelled solutions in any format procrl validate reads, e.g. {problem, steps, label[, answer]}.",
    )
    parser.add_argument(
        "--component", default=None, help="Name of the first_error component (needed when the recipe has several)."
    )
    parser.add_argument("--limit", type=int, default=None, help="Evaluate only the first N records.")
    parser.add_argument(
        "--device", default=None, help="Device of hf/prm judges (default: cuda when available, else cpu)."
    )
    parser.add_argument("--output-dir", default=None, help="Also write validate's report files there.")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="Write into an --output-dir that procrl did not write (its other files are kept).",
    )
    parser.add_argument("--json", action="store_true", help="Print one JSON object instead of the table.")


def run(args: argparse.Namespace) -> int:
    import json

    from procrl.evaluation.judge_eval import evaluate_judge, format_report
    from procrl.evaluation.score import _jsonable

    report = evaluate_judge(
        args.recipe,
        args.overrides,
        args.data,
        component=args.component,
        limit=args.limit,
        device=args.device,
        output_dir=args.output_dir,
        overwrite=args.overwrite,
        quiet=args.json,
    )
    print(json.dumps(_jsonable(report)) if args.json else format_report(report))
    return 0
