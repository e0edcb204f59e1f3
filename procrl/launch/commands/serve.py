"""``procrl serve``: a recipe's reward mix over HTTP, for OpenRLHF's ``--remote_rm_url`` and any engine
that posts completions (the work: :mod:`procrl.engines.server`)."""

from __future__ import annotations

import argparse
import dataclasses
import sys

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
    import logging

    from procrl.core.config import ConfigError
    from procrl.engines.server import RewardServer, ServeSettings, token_from_env
    from procrl.recipe import load_recipe
    from procrl.rewards.mix import RewardMix
    from procrl.rewards.protocol import RuntimeContext

    names = [f.name for f in dataclasses.fields(ServeSettings) if f.name != "token"]
    settings = ServeSettings(**{name: getattr(args, name.removesuffix("_s")) for name in names})
    settings.check()  # before the recipe loads: a bad option costs no model load
    recipe = load_recipe(args.recipe, args.overrides, scoring=True)  # rewards only: no model/trainer needed
    settings.token = token_from_env(args.token_env)
    mix = RewardMix(recipe.rewards)
    device = args.device
    if device is None:
        device = "cpu"
        if "torch" in sys.modules or any(mix.components[n].needs_model() for n in mix.names):
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
    mix.bind(RuntimeContext(device=device))
    try:
        server = RewardServer(mix, settings)
    except OSError as error:
        raise ConfigError(
            f"--host/--port: cannot listen on {args.host}:{args.port} ({error.strerror or error})"
        ) from None
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("procrl serve: %(message)s"))
    log = logging.getLogger("procrl.engines.server")
    log.addHandler(handler)
    log.setLevel(logging.WARNING if args.quiet else logging.INFO)
    log.propagate = False
    host, port = server.address
    shown = f"[{host}]" if ":" in host else host
    components = ", ".join(f"{n} x{w:g}" for n, w in zip(mix.names, mix.weights))
    lines = [
        f"http://{shown}:{port} (POST /get_reward for OpenRLHF, POST /score, GET /health: 503 until the mix is "
        f"warm); components {components}; bearer token {'required' if settings.token else 'off'}"
    ]
    if not settings.token and host not in ("127.0.0.1", "localhost", "::1"):
        lines.append(f"warning: listening on {host} without a token: whoever reaches this port can use it "
                     f"(set {args.token_env})")  # fmt: skip
    print("".join(f"procrl serve: {line}\n" for line in lines), end="", file=sys.stderr, flush=True)
    server.serve_forever()
    print("procrl serve: stopped", file=sys.stderr)
    return 0
