"""``procrl serve``: a recipe's reward mix over HTTP, for OpenRLHF's ``--remote_rm_url`` and any engine
that posts completions (the work: :mod:`procrl.engines.server`)."""

from __future__ import annotations

import argparse
import dataclasses

from procrl.launch.commands._options import add_recipe

NAME = "serve"
HELP = "Serve the recipe's reward mix over HTTP (OpenRLHF's remote reward model, procrl's /score)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from procrl.engines.server import ServeSettings, option

    add_recipe(parser, positional=False)
    for f in dataclasses.fields(ServeSettings):  # one option per setting, its default and help from there
        if f.name != "token":
            kind = str if f.name == "host" else float if isinstance(f.default, float) else int
            parser.add_argument(option(f.name), type=kind, default=f.default, help=f.metadata["help"])
    parser.add_argument(
        "--token-env",
        default="PROCRL_SERVE_TOKEN",
        metavar="NAME",
        help="Environment variable holding a bearer token every request but /health must carry "
        "(unset or empty: no token). The token is never printed.",
    )
    parser.add_argument(
        "--device", default=None, help="Device for components that load a model (default: cuda when present, else cpu)."
    )
    parser.add_argument("--quiet", action="store_true", help="No line per request.")


def run(args: argparse.Namespace) -> int:
    from procrl.engines.server import ServeSettings, serve_recipe

    names = [f.name for f in dataclasses.fields(ServeSettings) if f.name != "token"]
    settings = ServeSettings(**{name: getattr(args, name.removesuffix("_s")) for name in names})
    return serve_recipe(args.recipe, args.overrides, settings, args.token_env, args.device, args.quiet)
