"""``procrl validate``: score labelled solutions with a recipe's reward mix and report how well
each component tells sound from flawed (the work: :mod:`procrl.evaluation.validate.run`)."""

from __future__ import annotations

import argparse
import json

NAME = "validate"
HELP = (
    "Score labelled solutions (sound and flawed) with a recipe's reward mix and report how well each "
    "component tells them apart (AUROC, localisation, per class)."
)
EPILOG = (
    "Formats (auto-detected): ProcessBench JSON/JSONL (problem, steps, label, final_answer_correct), MR-GSM8K "
    "rows (its eval_results/gpt4-grading/*.json as they are), BIG-Bench-Mistake rows (*.jsonl), ReasonEval "
    "dataset/perturbation.json, procrl JSONL (question, completion, answer, first_error)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.add_argument("--recipe", required=True, help="Path to a recipe YAML file (its rewards: section is used).")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Override a recipe key (dotted path; value parsed as YAML). Repeatable.",
    )
    p.add_argument(
        "--data",
        required=True,
        action="append",
        metavar="FILE",
        help="Labelled solutions (see the formats below); repeatable for files of one format (a solution "
        "two files share, by id, counts once).",
    )
    p.add_argument(
        "--component",
        action="append",
        default=[],
        metavar="NAME",
        help="Score only this component (repeatable; also scored: the components their gates read; the "
        "total is then over these). Default: every one.",
    )
    p.add_argument("--limit", type=int, default=None, help="Only the first N solutions.")
    p.add_argument(
        "--output-dir",
        default=None,
        help="Where report.json, report.md, rows.jsonl and validate.png go (default: "
        "validate/<recipe>--<data>; an earlier validate's report there is replaced).",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="Write into an --output-dir that procrl did not write (its other files are kept).",
    )
    p.add_argument(
        "--peer",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="Published per-sample scores ({id, scores} per line) to report on the same rows. Repeatable; "
        "the same NAME again adds a file to that peer.",
    )
    p.add_argument(
        "--peer-threshold",
        type=float,
        default=0.5,
        help="A peer's first error: the first step whose score is below this (default 0.5).",
    )
    p.add_argument("--device", default=None, help="Device of components with models (default: cuda when available).")
    p.add_argument("--seed", type=int, default=0, help="Seed of the bootstrap intervals.")
    p.add_argument("--json", action="store_true", help="Print report.json instead of the table.")
    p.add_argument("--quiet", action="store_true", help="No progress bar.")


def run(args) -> int:
    from procrl.evaluation.score import _jsonable  # light imports: components load in run_validation
    from procrl.evaluation.validate.peers import parse_peer_options
    from procrl.evaluation.validate.plot import plot_validation
    from procrl.evaluation.validate.run import choose_output_dir, quiet_stdout, run_validation, write_outputs
    from procrl.evaluation.validate.text import format_table

    peers = parse_peer_options(args.peer)
    directory = choose_output_dir(args.output_dir, args.recipe, args.data, args.overwrite)  # refused before any work
    with quiet_stdout(args.json):
        result = run_validation(
            args.recipe,
            args.overrides,
            args.data,
            components=args.component or None,
            limit=args.limit,
            peers=peers,
            peer_threshold=args.peer_threshold,
            device=args.device,
            seed=args.seed,
            progress=not (args.json or args.quiet),
        )
    figure = plot_validation(result.items, result.report, result.peer_scores)
    result.report["output_dir"] = str(directory)
    files = write_outputs(directory, result.report, result.items, figure)
    if args.json:
        print(json.dumps(_jsonable(result.report)))
    else:
        print(format_table(result.report))
        print(f"\nwrote {', '.join(str(directory / f) for f in files)}")
    return 0
