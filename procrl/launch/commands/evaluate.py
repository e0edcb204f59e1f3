"""``procrl evaluate``: generate on a test split, score with the recipe's mix, report answer vs
reasoning-aware accuracy (the work: :mod:`procrl.evaluation.evaluate.run`)."""

from __future__ import annotations

import argparse

from procrl.launch.commands._options import add_recipe

NAME = "evaluate"
HELP = "Generate on a test split, score with the recipe's mix, report answer vs reasoning-aware accuracy."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recipe(parser, positional=False, help="Path to a recipe YAML file (its rewards, data and prompt are used).")
    parser.add_argument(
        "--model",
        default=None,
        help="Model directory (a checkpoint; a LoRA adapter is applied to the recipe's policy), Hub "
        "id, .gguf file, or an embedded model: procrl:tiny-qwen2, procrl:tiny-reasoner, "
        "procrl:smollm2-135m-instruct (default: the recipe's policy).",
    )
    parser.add_argument(
        "--gguf-file", default=None, help="A GGUF checkpoint inside --model (a Hub repository or directory)."
    )
    parser.add_argument("--split", default="test", help="Dataset split to evaluate on.")
    parser.add_argument("--limit", type=int, default=None, help="Evaluate only the first N problems.")
    parser.add_argument(
        "--output-dir",
        default=None,
        help="Where report.json, report.md and the PNGs go (default: named after --model: a procrl "
        "run's own <dir>/eval-<split>, else <recipe output_dir>/eval-<split>-<model name>).",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="Write into an --output-dir that procrl evaluate did not write (its other files are kept).",
    )
    parser.add_argument("--batch-size", type=int, default=8, help="Prompts generated together (transformers backend).")
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help="Generation length (default: the recipe's trainer.max_completion_length, else 256).",
    )
    parser.add_argument(
        "--backend",
        choices=["auto", "vllm", "transformers"],
        default="auto",
        help="'auto': vLLM when installed and a GPU is present, else transformers.",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="Sampling temperature; 0 (default) is greedy decoding, one completion per problem.",
    )
    parser.add_argument("--top-p", type=float, default=1.0, help="Nucleus sampling threshold (with --temperature > 0).")
    parser.add_argument(
        "--num-samples",
        type=int,
        default=1,
        metavar="K",
        help="Completions sampled per problem (needs --temperature > 0): pass@k and maj@k are reported.",
    )
    parser.add_argument("--seed", type=int, default=0, help="Seed of the sampler (same seed, same samples).")
    parser.add_argument("--wandb", action="store_true", help="Also log the report, plots and completions to W&B.")
    parser.add_argument(
        "--judge",
        default=None,
        metavar="NAME|BACKEND",
        help="The first-error judge of reasoning-aware accuracy: a first_error component of the "
        "recipe, or a backend (reference, arithmetic, openai, hf, prm) added as the weight-0 component "
        "'eval_judge' (settings: --set rewards.eval_judge.KEY=VALUE). Default: data.eval_judge, else "
        "the first first_error component.",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from procrl.evaluation.evaluate.run import Sampling, default_output_dir, evaluate, judge_overrides
    from procrl.evaluation.evaluate.text import format_summary
    from procrl.recipe import load_recipe

    recipe = load_recipe(args.recipe, judge_overrides(args.judge, args.overrides))
    sampling = Sampling(temperature=args.temperature, top_p=args.top_p, num_samples=args.num_samples, seed=args.seed)
    report = evaluate(
        recipe,
        model=args.model,
        split=args.split,
        limit=args.limit,
        output_dir=args.output_dir,
        batch_size=args.batch_size,
        max_new_tokens=args.max_new_tokens,
        backend=args.backend,
        log_wandb=args.wandb,
        sampling=sampling,
        gguf_file=args.gguf_file,
        overwrite=args.overwrite,
    )
    directory = (
        Path(args.output_dir) if args.output_dir else default_output_dir(recipe, args.model, args.split, args.gguf_file)
    )
    print(format_summary(report, sampling, directory))
    return 0
