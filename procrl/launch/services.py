"""Waiting for the servers a run needs (a judge, a vLLM generation server) before it starts.

``python -m procrl.launch.services wait --name judge --url http://node:8000/v1 --model judge
--timeout 1800 [--pid PID]`` returns once the server answers, as the OpenAI API does
(``GET <url>/models`` lists ``--model``) or with ``--health`` (``GET <url>/health``, vLLM's and TRL's
server check). It fails in one line naming the service, exit status 3, when the server never
answers within the bound, when its process (``--pid``, the background job that started it) has
ended, or when it answers but does not serve the model the recipe asks for. The SLURM script
(launch/slurm/train_multinode.sbatch) calls it before any training process starts, so that no
step's judge calls fail into fallbacks while a server is still loading.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import urllib.error
import urllib.request

__all__ = ["ServiceError", "main", "positive_seconds", "served_models", "wait_for_service"]


class ServiceError(RuntimeError):
    """A service that did not come up; the message is one line naming it."""


def _alive(pid: int | None) -> bool:
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a child that exited and was not reaped yet is a zombie: ended too
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _get(url: str, timeout: float, token: str | None) -> tuple[int, bytes]:
    """One GET, bounded as a whole by ``timeout``: urllib's own timeout bounds each socket read
    only (a server that sends one byte a second, or a name lookup that hangs, would never end), so
    the request runs on a daemon thread and is abandoned at the bound (TimeoutError)."""
    import threading

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    answer: list = []

    def fetch() -> None:
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - an http(s) URL we were given
                answer.append((response.status, response.read(1 << 20)))
        except urllib.error.HTTPError as error:
            answer.append((error.code, b""))
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            answer.append(error)

    thread = threading.Thread(target=fetch, name="procrl-service-wait", daemon=True)
    thread.start()
    thread.join(timeout)
    if not answer:
        raise TimeoutError(f"no complete answer within {timeout:.3g} s")
    if isinstance(answer[0], BaseException):
        raise answer[0]
    return answer[0]


def served_models(body: bytes) -> list[str]:
    """The model ids of an OpenAI ``GET /models`` answer (``{"data": [{"id": ...}, ...]}``);
    ServiceError for any other JSON shape, ValueError for a body that is not JSON."""
    listing = json.loads(body or b"{}")
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list) or not all(isinstance(entry, dict) for entry in data):
        shape = type(listing).__name__ if not isinstance(listing, dict) else f'"data": {type(data).__name__}'
        raise ServiceError(f"answers GET /models with a JSON {shape}, not the OpenAI model list")
    return [str(entry.get("id")) for entry in data]


def positive_seconds(name: str, value: float) -> float:
    """``value`` when it is a finite number of seconds > 0, else ValueError naming ``name``
    (nan compares false with everything: a nan bound would poll forever)."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name}: must be a finite number of seconds > 0, got {value!r}")
    return float(value)


def wait_for_service(
    name: str,
    url: str,
    *,
    timeout_s: float,
    model: str | None = None,
    health: bool = False,
    pid: int | None = None,
    interval_s: float = 2.0,
    token: str | None = None,
) -> float:
    """Poll ``url`` until the service answers; returns the seconds waited.

    Args:
        name: what to call the service in messages ("judge", "vLLM server").
        url: the OpenAI base URL (``http://host:port/v1``), or with ``health`` the server's root.
        timeout_s: the bound (finite, > 0); past it, :class:`ServiceError`. Every request and
            every pause ends by it.
        model: a model name ``GET <url>/models`` must list (a served name the recipe asks for).
        health: poll ``GET <url>/health`` instead of the model list.
        pid: the process that runs (or started) the server: its end is a failure at once.
        interval_s: the pause between tries (finite, > 0).
        token: a bearer token, when the server was started with an API key.

    Returns:
        Seconds from the first try to the answer.
    """
    from procrl.core.redaction import redact_url

    timeout_s = positive_seconds("--timeout", timeout_s)
    interval_s = positive_seconds("--interval", interval_s)
    shown = redact_url(url)
    started = time.monotonic()
    deadline = started + timeout_s
    last = "no answer yet"
    while True:
        if not _alive(pid):
            raise ServiceError(f"the {name} server at {shown} ended before it answered (its process {pid} is gone)")
        try:
            remaining = max(deadline - time.monotonic(), 0.001)
            status, body = _get(url.rstrip("/") + ("/health" if health else "/models"), min(10.0, remaining), token)
            if status == 200 and (health or model is None):
                return time.monotonic() - started
            if status == 200:
                try:
                    served = served_models(body)
                except ServiceError as error:
                    raise ServiceError(f"the {name} server at {shown} {error}") from None
                if model in served:
                    return time.monotonic() - started
                raise ServiceError(
                    f"the {name} server at {shown} serves {served or 'no model'}, not {model!r}, the name the recipe "
                    f"asks for (start it with --served-model-name {model})"
                )
            last = f"HTTP {status}"
        except (OSError, ValueError) as error:  # refused, reset, DNS, timeout, a body that is not JSON
            last = f"{type(error).__name__}: {error}".splitlines()[0][:200]
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ServiceError(f"the {name} server at {shown} did not answer within {timeout_s:g} s (last: {last})")
        time.sleep(min(interval_s, remaining))


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, as every procrl error (argparse adds its usage)
        print(f"procrl: error: {message}", file=sys.stderr, flush=True)
        sys.exit(2)


def main(argv: list[str] | None = None) -> int:
    """Exit status 0 once the server answers, 3 when it does not within the bound, 2 for a bad option."""
    parser = _Parser(prog="python -m procrl.launch.services", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    wait = sub.add_parser("wait", help="Wait until a server answers.")
    wait.add_argument("--name", required=True)
    wait.add_argument("--url", required=True)
    wait.add_argument("--timeout", type=float, default=1800.0)
    wait.add_argument("--model", default=None)
    wait.add_argument("--health", action="store_true")
    wait.add_argument("--pid", type=int, default=None)
    wait.add_argument("--interval", type=float, default=2.0)
    wait.add_argument("--token-env", default=None, help="Environment variable holding a bearer token.")
    args = parser.parse_args(argv)
    try:
        positive_seconds("--timeout", args.timeout)
        positive_seconds("--interval", args.interval)
    except ValueError as error:
        parser.error(str(error))
    token = os.environ.get(args.token_env) if args.token_env else None
    try:
        waited = wait_for_service(
            args.name,
            args.url,
            timeout_s=args.timeout,
            model=args.model,
            health=args.health,
            pid=args.pid,
            interval_s=args.interval,
            token=token,
        )
    except ServiceError as error:
        print(f"procrl: error: {error}; nothing was trained", file=sys.stderr, flush=True)
        return 3
    print(f"procrl: the {args.name} server answers (after {waited:.0f} s)", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
