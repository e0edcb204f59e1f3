"""``procrl serve``: a recipe's reward mix over HTTP, for OpenRLHF's ``--remote_rm_url`` and any engine
that posts completions (the work: :mod:`procrl.engines.server`)."""

from __future__ import annotations

import argparse
import sys

from procrl.launch.commands._options import add_recipe, positive_int

NAME = "serve"
HELP = "Serve the recipe's reward mix over HTTP (OpenRLHF's remote reward model, procrl's /score)."


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to 65535, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_recipe(parser, positional=False)
    parser.add_argument("--host", default="127.0.0.1", help="Address to listen on (default: loopback only).")
    parser.add_argument("--port", type=_port, default=8000, help="Port to listen on (0: any free port).")
    parser.add_argument("--batch-size", type=positive_int, default=64, help="Most rows scored together.")
    parser.add_argument(
        "--batch-wait", type=_seconds, default=0.005, help="Seconds to wait for more rows to fill a batch."
    )
    parser.add_argument("--max-queue", type=positive_int, default=4096, help="Most rows waiting; beyond: 503.")
    parser.add_argument("--max-rows", type=positive_int, default=1024, help="Most rows per request; beyond: 413.")
    parser.add_argument(
        "--max-body-bytes", type=positive_int, default=16 << 20, help="Largest request body; beyond: 413."
    )
    parser.add_argument(
        "--deadline", type=_seconds, default=120.0, help="Seconds from a request's arrival to its answer; beyond: 504."
    )
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

    recipe = load_recipe(args.recipe, args.overrides, scoring=True)  # rewards only: no model/trainer needed
    token = token_from_env(args.token_env)
    mix = RewardMix(recipe.rewards)
    device = args.device
    if device is None:
        device = "cpu"
        if "torch" in sys.modules or any(mix.components[n].needs_model() for n in mix.names):
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
    mix.bind(RuntimeContext(device=device))
    settings = ServeSettings(
        host=args.host,
        port=args.port,
        batch_size=args.batch_size,
        batch_wait_s=args.batch_wait,
        max_queue=args.max_queue,
        max_rows=args.max_rows,
        max_body_bytes=args.max_body_bytes,
        deadline_s=args.deadline,
        token=token,
    )
    try:
        server = RewardServer(mix, settings)
    except OSError as error:
        reason = error.strerror or error
        raise ConfigError(f"--host/--port: cannot listen on {args.host}:{args.port} ({reason})") from None
    server.warm_up()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("procrl serve: %(message)s"))
    log = logging.getLogger("procrl.engines.server")
    log.addHandler(handler)
    log.setLevel(logging.WARNING if args.quiet else logging.INFO)
    log.propagate = False
    host, port = server.address
    shown = f"[{host}]" if ":" in host else host
    print(
        f"procrl serve: http://{shown}:{port} (POST /get_reward for OpenRLHF, POST /score, GET /health); "
        f"components {', '.join(f'{n} x{w:g}' for n, w in zip(mix.names, mix.weights))}; "
        f"bearer token {'required' if token else 'off'}",
        file=sys.stderr,
        flush=True,
    )
    if not token and host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"procrl serve: warning: listening on {host} without a token: whoever reaches this port can use it "
            f"(set {args.token_env})",
            file=sys.stderr,
            flush=True,
        )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("procrl serve: stopped", file=sys.stderr)
        return 0
    return 0
