"""``procrl score``: score completions from a JSONL file with a recipe's reward mix (the work:
:mod:`procrl.evaluation.score`)."""

from __future__ import annotations

import argparse
import sys

from procrl.launch.commands._options import add_recipe, positive_int

NAME = "score"
HELP = "Score completions from a JSONL file with the recipe's reward mix."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recipe(parser, positional=False)
    parser.add_argument(
        "--input",
        required=True,
        help="JSONL rows with question, completion and optional answer "
        "('-' or /dev/stdin: standard input, e.g. a pipe).",
    )
    parser.add_argument(
        "--output",
        required=True,
        help="Output JSONL (input rows plus rewards, steps, diagnostics); written to a temporary file "
        "and renamed when complete, so an interrupted run leaves an existing output as it was.",
    )
    parser.add_argument("--batch-size", type=positive_int, default=64, help="Completions scored together.")
    parser.add_argument("--quiet", action="store_true", help="No progress bar.")


def run(args: argparse.Namespace) -> int:
    from procrl.core.config import ConfigError
    from procrl.core.jsonl import readable_twice
    from procrl.evaluation.score import check_paths, count_rows, score_file
    from procrl.recipe import load_recipe
    from procrl.rewards.mix import RewardMix

    recipe = load_recipe(args.recipe, args.overrides, scoring=True)  # rewards only: no model/trainer needed
    with readable_twice(args.input) as source:  # stdin or a pipe: copied first (read twice below)

        def named(text: str) -> str:  # messages name the input as given, not its temporary copy
            if source == args.input:
                return text
            return text.replace(source, "<stdin>" if args.input == "-" else args.input)

        try:
            check_paths(source, args.output)
            try:
                count_rows(source)  # a bad row fails here, before any component loads
                mix = RewardMix(recipe.rewards)
            except KeyboardInterrupt as error:
                from procrl.core.interrupts import interrupted

                raise interrupted(error, f"{args.output} was not touched") from None
            summary = score_file(
                mix,
                source,
                args.output,
                batch_size=args.batch_size,
                progress=not args.quiet,
                report=lambda line: print(f"procrl: {named(line)}", file=sys.stderr, flush=True),
            )
        except ConfigError as error:
            raise ConfigError(named(str(error))) from None
    # the rows went to stdout (--output /dev/stdout): the summary goes to stderr, out of their way
    summary_stream = sys.stderr if _is_stdout(args.output) else sys.stdout
    print(summary.format(), file=summary_stream)
    print(f"wrote {summary.rows} rows to {args.output}", file=summary_stream)
    return 0


def _is_stdout(path: str) -> bool:
    import os

    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):
        return False
