"""``procrl train-tagger``: fine-tune a TRACE sentence tagger and save it in the published format
(the work: :mod:`procrl.trainers.tagger`)."""

from __future__ import annotations

import argparse

NAME = "train-tagger"
HELP = "Fine-tune a TRACE sentence tagger; save it in the published format."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help='Labelled JSONL rows {"sentence": ..., "labels": [...]}.')
    parser.add_argument(
        "--base", required=True, help="Base encoder: local dir or Hub id (e.g. microsoft/deberta-v3-base)."
    )
    parser.add_argument(
        "--output-dir", required=True, help="Where to save the tagger (config, tokenizer, model.safetensors)."
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="Write into an --output-dir that procrl train-tagger did not write (its other files are kept).",
    )
    parser.add_argument("--epochs", type=int, default=3, help="Passes over the training rows.")
    parser.add_argument("--batch-size", type=int, default=16, help="Sentences per optimisation step.")
    parser.add_argument("--learning-rate", type=float, default=3e-5, help="AdamW peak learning rate (linear decay).")
    parser.add_argument("--eval-fraction", type=float, default=0.2, help="Share of rows held out for per-label F1.")
    parser.add_argument("--max-length", type=int, default=512, help="Tokens per sentence (longer ones are truncated).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the split, the head init and the shuffling.")
    parser.add_argument(
        "--train-layers",
        type=int,
        default=None,
        help="Train only the head and the last N transformer layers (default: every parameter); the rest stays "
        "as in --base, so the tagger is --base plus a small delta.",
    )
    parser.add_argument(
        "--eval-data",
        default=None,
        help="Labelled JSONL to evaluate on instead of a random --eval-fraction of --data (e.g. a split by source).",
    )


def run(args: argparse.Namespace) -> int:
    from procrl.trainers.tagger import train_tagger

    train_tagger(
        args.data,
        args.base,
        args.output_dir,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        eval_fraction=args.eval_fraction,
        seed=args.seed,
        max_length=args.max_length,
        overwrite=args.overwrite,
        train_layers=args.train_layers,
        eval_data=args.eval_data,
    )
    return 0
