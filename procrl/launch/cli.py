"""The ``procrl`` command: train, check, score.

Every subcommand validates the recipe first; an invalid recipe exits with status 2 and one line
naming the key, before any model or dataset is loaded.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from procrl.core.config import ConfigError

__all__ = ["main"]


def _add_recipe_options(p: argparse.ArgumentParser, positional: bool = True) -> None:
    if positional:
        p.add_argument("recipe", help="Path to a recipe YAML file.")
    else:
        p.add_argument("--recipe", required=True, help="Path to a recipe YAML file.")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="Override a recipe key (dotted path; value parsed as YAML). Repeatable.")


def _cmd_train(args) -> int:
    # Honours the recipe's launch: section (starts accelerate unless already launched); unknown
    # flags are accelerate launch flags and win over the recipe's (procrl/launch/accelerate.py).
    from procrl.launch.accelerate import run_train, split_launch_args

    launch_args = split_launch_args(getattr(args, "launch_args", []))
    return run_train(args.recipe, args.overrides, args.output_dir, args.resume, launch_args, overwrite=args.overwrite)


def _check_examples(recipe, count: int = 2) -> tuple[list[dict], str]:
    """Two dataset rows to score; embedded problems when the dataset needs the network."""
    from procrl.core.paths import is_local_data_file
    from procrl.data import SYNTHETIC, load_examples, synthetic_rows
    from procrl.data.synthetic import generate_problems

    from procrl.data.qa import EXAMPLE_SOLUTIONS, declared_answer_kind

    kind = declared_answer_kind(recipe.data)
    if kind in EXAMPLE_SOLUTIONS:  # the gold is a letter or yes/no, not a worked solution
        return EXAMPLE_SOLUTIONS[kind][:count], f"written {kind} examples"
    if recipe.data.dataset == SYNTHETIC:  # no `datasets` import for two embedded rows
        rows = synthetic_rows(recipe.data, recipe.data.split)
        return rows[: min(count, recipe.data.max_samples or count)], recipe.data.dataset
    if is_local_data_file(recipe.data.dataset) or Path(recipe.data.dataset).is_dir():
        dataset = load_examples(recipe.data)
        return [dataset[i] for i in range(min(count, len(dataset)))], recipe.data.dataset
    return generate_problems(count, seed=0), f"embedded problems (not fetching {recipe.data.dataset!r})"


def _cmd_check(args) -> int:
    from procrl.core import yaml_core
    from procrl.launch.plan import format_plan, plan
    from procrl.recipe import load_recipe
    from procrl.rewards.base import RewardBatch, RewardMix
    from procrl.core.redaction import redact, redact_url

    from procrl.launch.plan import planned_processes
    from procrl.launch.run import check_batch_layout, check_training_data

    recipe = load_recipe(args.recipe, args.overrides)
    # what `procrl train` refuses before loading, check refuses too (TRL's own checks need TRL
    # and torch, which check does not import)
    check_training_data(recipe)
    check_batch_layout(recipe, planned_processes(recipe))
    if recipe.launch.config_file is not None:
        from procrl.launch.flags import resolve_config_file

        resolve_config_file(recipe.launch.config_file, recipe.path)
    from procrl.recipe.checks import check_recipe_data

    data_lines = check_recipe_data(recipe, args.load_models)  # rows, gold answers, prompt lengths
    mix = RewardMix(recipe.rewards)
    from procrl.rewards.registry import component_info

    print(f"recipe {args.recipe}: valid")
    print("\nresolved recipe:")
    print(yaml_core.dump(redact(recipe.resolved())).rstrip())
    print("\nplan:")
    print(format_plan(plan(recipe)))
    print("\ndata checks:")
    print("\n".join(f"  {line}" for line in data_lines))
    rows, source = _check_examples(recipe)
    if args.load_models:
        _check_policy(recipe, rows[0]["question"])
    print(f"\nreward mix on {len(rows)} reference solutions from {source}:")
    broken: list[str] = []
    columns = {key: [r[key] for r in rows] for key in ("answer_kind", "choices") if all(key in r for r in rows)}
    batch = RewardBatch.from_texts([r.get("completion", r["answer"]) for r in rows], [r["question"] for r in rows],
                                   [r["answer"] for r in rows], **columns)
    for name, component in mix.components.items():
        model = component.needs_model()
        if model is not None and not args.load_models:
            print(f"  {name:<24} not scored: loads {model} (use --load-models to score it here)")
            continue
        endpoint = component.needs_network()
        if endpoint is not None and not args.probe_judge:
            print(f"  {name:<24} not scored: sends requests to {redact_url(endpoint)} (use --probe-judge to score it here)")
            continue
        output = mix.compute(name, batch)
        values = ", ".join("None" if v is None else f"{v:.4f}" for v in output.scores)
        counted = {kind: count for kind, count in output.failures.items() if count}
        failures = f"  failures: {counted}" if counted else ""
        grades = component_info(mix.specs[name].target).grades or "undeclared"
        print(f"  {name:<24} weight {mix.specs[name].weight:<6g} scores [{values}]  grades {grades}{failures}")
        errors = [d["error"] for d in output.details or [] if isinstance(d, dict) and d.get("error")]
        if model is not None and any(counted.get(kind) for kind in _LOAD_FAILURES):
            # training would go on with the fallback; check says the component cannot run here
            broken.append(f"rewards.{name}: failed to load or run {model}" + (f" ({errors[0]})" if errors else ""))
        elif sum(counted.get(kind, 0) for kind in _RUN_FAILURES) >= len(batch):
            kinds = ", ".join(kind for kind in counted if kind in _RUN_FAILURES)
            broken.append(f"rewards.{name}: failed on every sample of the check ({kinds}"
                          + (f": {errors[0]}" if errors else "") + "); training would give every sample its fallback")
    process = [n for n, s in mix.specs.items() if component_info(s.target).process]  # as the hacking watch sums them
    print(f"  process reward of the hacking watch: {', '.join(process) or 'none (no component grades the reasoning)'}")
    for line in broken:
        print(f"procrl: error: {line}", file=sys.stderr)
    return 2 if broken else 0


def _check_policy(recipe, question: str) -> None:
    """``--load-models``: load the policy and its tokenizer as training will (a GGUF dequantized),
    and show the first prompt exactly as the model sees it (chat template, system message) and
    how a completion ends (EOS, pad). A failure is a ConfigError naming model.name_or_path."""
    import time

    from procrl.data.prompts import format_prompt, render_prompt, uses_chat_template
    from procrl.models.loading import load_policy, load_tokenizer, policy_source

    started = time.perf_counter()
    try:
        source = policy_source(recipe.model)
        tokenizer = load_tokenizer(recipe.model)
        model = load_policy(recipe.model)
    except ConfigError:
        raise
    except Exception as error:  # noqa: BLE001 - whatever from_pretrained raises: one line naming the key
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise ConfigError(f"model.name_or_path: failed to load {recipe.model.name_or_path} "
                          f"({type(error).__name__}: {message})") from None
    parameters = sum(p.numel() for p in model.parameters())
    dtype = next(model.parameters()).dtype
    print(f"\npolicy: {type(model).__name__} from {source.describe()}, {parameters / 1e6:.1f}M parameters, "
          f"{str(dtype).replace('torch.', '')}, loaded in {time.perf_counter() - started:.1f} s")
    eos = model.generation_config.eos_token_id
    print(f"  eos {tokenizer.eos_token!r} (id {tokenizer.eos_token_id}; the model's generation_config: {eos}), "
          f"pad {tokenizer.pad_token!r} (id {tokenizer.pad_token_id})"
          + (": pad = eos, so completions are masked after their first EOS, never by the pad id"
             if tokenizer.pad_token_id == tokenizer.eos_token_id else ""))
    chat = uses_chat_template(recipe.data, tokenizer)
    prompt = render_prompt(tokenizer, format_prompt(recipe.data, question, chat))
    tokens = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    print(f"  first prompt ({'chat template' if chat else 'plain text'}, {tokens} tokens):")
    for line in prompt.splitlines():
        print(f"    | {line}")
    del model


# failure kinds that mean the component itself failed (raised, or its judge model did), not one sample
_LOAD_FAILURES = ("exception", "judge_error")
# failure kinds of a component that did not score a sample at all (a judge's reply without a verdict is not one)
_RUN_FAILURES = ("exception", "wrong_length", "non_finite", "timeout", "http_error", "connection_error", "bad_response",
                 "judge_error")


def _cmd_score(args) -> int:
    from procrl.recipe import load_recipe
    from procrl.rewards.base import RewardMix
    from procrl.core.jsonl import readable_twice
    from procrl.evaluation.score import check_paths, count_rows, score_file

    recipe = load_recipe(args.recipe, args.overrides, scoring=True)  # rewards only: no model/trainer needed
    with readable_twice(args.input) as source:  # stdin or a pipe: copied first (read twice below)

        def named(text: str) -> str:  # messages name the input as given, not its temporary copy
            return text.replace(source, "<stdin>" if args.input == "-" else args.input) if source != args.input else text

        try:
            check_paths(source, args.output)
            try:
                count_rows(source)  # a bad row fails here, before any component loads
                mix = RewardMix(recipe.rewards)
            except KeyboardInterrupt as error:
                from procrl.core.interrupts import interrupted

                raise interrupted(error, f"{args.output} was not touched") from None
            summary = score_file(mix, source, args.output, batch_size=args.batch_size, progress=not args.quiet,
                                 report=lambda line: print(f"procrl: {named(line)}", file=sys.stderr, flush=True))
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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="procrl", description="RL fine-tuning with process rewards.")
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser(
        "train", help="Train with a recipe.",
        epilog="Starts `accelerate launch` when the recipe's launch: section asks for a config file or more than one "
        "process. Any other flag (--num_processes N, --config_file F, --machine_rank R, --main_process_ip H, ...) "
        "goes to accelerate launch and wins over the recipe's launch section.",
    )
    _add_recipe_options(train)
    train.add_argument("--output-dir", default=None, help="Output directory (overrides output_dir).")
    train.add_argument("--resume", action="store_true", help="Continue from the newest complete checkpoint in the output dir.")
    train.add_argument("--overwrite", action="store_true",
                       help="Start afresh in an output dir that holds a run (deletes its checkpoints).")
    train.set_defaults(handler=_cmd_train)

    check = commands.add_parser("check", help="Validate a recipe, print it resolved with the plan, score 2 examples.")
    _add_recipe_options(check)
    check.add_argument("--load-models", action="store_true",
                       help="Also load the policy (show its first prompt as the model sees it) and score components that load a model.")
    check.add_argument("--probe-judge", action="store_true",
                       help="Also score components that send requests (the openai judge): check needs no network otherwise.")
    check.set_defaults(handler=_cmd_check)

    score = commands.add_parser("score", help="Score completions from a JSONL file with the recipe's reward mix.")
    _add_recipe_options(score, positional=False)
    score.add_argument("--input", required=True, help="JSONL rows with question, completion and optional answer "
                       "('-' or /dev/stdin: standard input, e.g. a pipe).")
    score.add_argument("--output", required=True,
                       help="Output JSONL (input rows plus rewards, steps, diagnostics); written to a temporary file and "
                       "renamed when complete, so an interrupted run leaves an existing output as it was.")
    score.add_argument("--batch-size", type=_positive_int, default=64, help="Completions scored together.")
    score.add_argument("--quiet", action="store_true", help="No progress bar.")
    score.set_defaults(handler=_cmd_score)

    from procrl.trainers.tagger import add_train_tagger_command  # light import: torch loads in the handler

    add_train_tagger_command(commands)

    from procrl.models.reasoner import add_build_command  # light import: torch loads in the handler

    add_build_command(commands)

    from procrl.evaluation.evaluate import add_evaluate_command  # light import: models load in the handler

    add_evaluate_command(commands)

    from procrl.launch.commands import validate  # light import: components load in its run()

    validate_parser = commands.add_parser(validate.NAME, help=validate.HELP)
    validate.add_arguments(validate_parser)
    validate_parser.set_defaults(handler=validate.run)

    from procrl.evaluation.judge_eval import add_eval_judge_command  # light import: judges load in the handler

    add_eval_judge_command(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    from procrl.core.redaction import redact_argv, redacted_console

    redact_argv(sys.argv if argv is None else argv)  # registers the secrets given on the command line
    with redacted_console():  # everything printed, whoever prints it, is redacted (procrl/core/redaction.py)
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    from procrl.core.known_warnings import filter_known_warnings

    filter_known_warnings()
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "train":  # only train passes unknown flags on (to accelerate launch)
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.launch_args = extra
    from procrl.core import interrupts
    from procrl.core.redaction import redact_argv

    sys.argv[:] = redact_argv(sys.argv)  # what records the command line (W&B, the lock file) sees no secret

    with interrupts.terminate_as_interrupt():  # SIGTERM cleans up as Ctrl-C does
        try:
            return args.handler(args)
        except ConfigError as error:
            print(f"procrl: error: {error}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as error:  # one line saying what is kept, no traceback
            return interrupts.report(error)


if __name__ == "__main__":
    sys.exit(main())
