"""``procrl build-tiny-reasoner``: reproduce the shipped ``procrl:tiny-reasoner`` from its spec
(the work: :mod:`procrl.models.reasoner`)."""

from __future__ import annotations

import argparse

from procrl.models.reasoner import REASONER  # a light import: torch loads in the build

NAME = "build-tiny-reasoner"
HELP = f"Rebuild {REASONER} from its spec (SFT of a tiny Qwen2, ~7 CPU minutes)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        f"Reproduce the shipped {REASONER} from its spec into --output-dir ({REASONER} itself ships "
        "in the package and needs no build). Evaluate the result beside the shipped model to compare "
        "them."
    )
    parser.add_argument(
        "--output-dir",
        required=True,
        help="Write the model here: a new or empty directory, or an earlier build, which is replaced; "
        "any other directory is refused.",
    )
    parser.add_argument(
        "--train-examples",
        type=int,
        default=None,
        metavar="N",
        help="A reduced build on the first N training solutions of the spec (a quick check of the "
        "pipeline; another model than the shipped one).",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="No progress bar (there is none when stderr is not a terminal)."
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from procrl.core.config import ConfigError
    from procrl.models.reasoner import ReasonerSpec, build_tiny_reasoner, check_build_dir, shipped_card

    spec = ReasonerSpec()
    if args.train_examples is not None:
        if args.train_examples < spec.batch_size:
            raise ConfigError(
                f"--train-examples: expected at least {spec.batch_size} (one batch), got {args.train_examples}"
            )
        spec = ReasonerSpec(train_examples=args.train_examples)
    check_build_dir(args.output_dir)  # before torch loads: refused paths are one line, nothing written
    directory = Path(args.output_dir)
    card = build_tiny_reasoner(directory, spec, progress=not args.quiet)
    same = "the shipped spec" if spec == ReasonerSpec() else f"a reduced spec ({spec.train_examples} examples)"
    print(
        f"{REASONER}: {card['parameters'] / 1e6:.2f}M parameters, {card['training_rows']} training solutions "
        f"({card['flawed_rows']} flawed), {same} {card['spec_key']}, final loss {card['final_train_loss']:.4f}, "
        f"built in {card['build_seconds']:.0f} s -> {directory}"
    )
    shipped = shipped_card()
    if spec == ReasonerSpec():
        print(
            f"shipped {REASONER}: final loss {shipped['final_train_loss']:.4f}, built on "
            f"{shipped['machine']['cpu']}; compare the two with procrl evaluate --model {directory} and "
            f"--model {REASONER}"
        )
    return 0
