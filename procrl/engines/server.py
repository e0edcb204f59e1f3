"""A recipe's reward mix over HTTP (``procrl serve``) on Starlette and uvicorn, imported by that
command only: ``POST /get_reward`` (OpenRLHF's remote reward model), ``POST /score`` (rows as
``procrl score`` writes them), ``GET /health`` (503 until the mix is warm). One scoring thread, off
the request loop, scores the rows of concurrent requests as one batch of the mix (which caches one
batch at a time); each row is its own generation group. Every request is bounded before its rows
are read, every answer is JSON and redacted, every logged path escaped (docs/engines.md).
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import os
import re
import socket
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from procrl.core.config import ConfigError
from procrl.core.redaction import redact_text
from procrl.engines.protocol import engine_values, score_rows

if TYPE_CHECKING:
    from procrl.rewards.mix import RewardMix

__all__ = ["RequestError", "RewardServer", "ServeSettings", "openrlhf_answer", "openrlhf_rows", "token_from_env"]

logger = logging.getLogger(__name__)

# the special tokens a decoded query ends with (OpenRLHF decodes with skip_special_tokens=False),
# matched reversed at the start of the reversed text: one anchored pass, linear in the tail
_SPECIAL_REVERSED = re.compile(r"(?:\s|>\|[A-Za-z0-9_]{1,40}\|<|>s/<|>soe<|>nrut_fo_dne<)*")
_LIMIT_S = 86400.0  # a day: longer waits overflow the event loop's timers


@dataclass
class ServeSettings:
    """How ``procrl serve`` listens, batches and bounds its work (every number finite and > 0)."""

    host: str = field(default="127.0.0.1", metadata={"help": "Address to listen on (loopback: this machine only)."})
    port: int = field(default=8000, metadata={"help": "Port to listen on (0: any free port)."})
    batch_size: int = field(default=64, metadata={"help": "Most rows scored together in one batch of the mix."})
    batch_wait_s: float = field(default=0.05, metadata={"help": "Seconds to wait for more rows to fill a batch."})
    max_queue: int = field(default=4096, metadata={"help": "Most rows waiting to be scored; beyond: 503."})
    max_rows: int = field(default=1024, metadata={"help": "Most rows in one request; beyond: 413."})
    max_body_bytes: int = field(default=16 << 20, metadata={"help": "Largest request body; beyond: 413."})
    max_row_chars: int = field(default=1_000_000, metadata={"help": "Most characters of one text; beyond: 413."})
    max_digits: int = field(default=64, metadata={"help": "Most digits of a JSON integer; beyond: 400."})
    max_depth: int = field(default=16, metadata={"help": "Deepest JSON nesting; beyond: 400."})
    deadline_s: float = field(default=120.0, metadata={"help": "Seconds from arrival to answer; beyond: 504."})
    read_timeout_s: float = field(default=30.0, metadata={"help": "Seconds to send a body; beyond: 408."})
    token: str | None = field(default=None, repr=False, metadata={"help": "Bearer token (None: none)."})

    def check(self) -> None:
        """ConfigError naming the first option that is not a finite number > 0 (seconds: at most a day)."""
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port: must be from 0 to 65535, got {self.port}")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("host", "port", "token"):
                continue
            top = _LIMIT_S if f.name.endswith("_s") else math.inf
            if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0 < value <= top):
                limit = " (at most a day)" if top < math.inf else ""
                raise ConfigError(f"{option(f.name)}: must be a finite number > 0{limit}, got {value}")


def option(name: str) -> str:
    """The ``procrl serve`` option of a :class:`ServeSettings` field (``deadline_s``: ``--deadline``)."""
    return "--" + name.removesuffix("_s").replace("_", "-")


class RequestError(Exception):
    """A request answered with ``status`` and one line saying why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _closing_special_tokens(text: str) -> str:
    tail = _SPECIAL_REVERSED.match(text[::-1]).group(0)
    return text[: len(text) - len(tail)] if ">" in tail else text  # whitespace alone stays


def _text(value: Any, where: str, limit: int, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise RequestError(400, f"'{where}' must be a string")
    if len(value) > limit:
        raise RequestError(413, f"'{where}' has {len(value)} characters, over the limit of {limit} (--max-row-chars)")
    return value


def openrlhf_rows(body: Any, limit: int = 1_000_000) -> list[dict]:
    """The rows of an OpenRLHF ``/get_reward`` body: ``question`` (the prompt), ``completion`` (the
    query after the prompt, trailing special tokens left out; the whole query and ``prompt_found``
    False when the prompt is not in it) and ``answer`` (the label). RequestError naming the key."""
    if not isinstance(body, dict) or not isinstance(body.get("query"), list):
        raise RequestError(400, "'query' must be a list of strings (prompt + response)")
    queries = body["query"]
    for key in ("prompts", "labels"):
        value = body.get(key)
        if value is not None and (not isinstance(value, list) or len(value) != len(queries)):
            raise RequestError(400, f"'{key}' must be a list as long as 'query' ({len(queries)})")
    rows = []
    for i, (query, prompt, label) in enumerate(
        zip(queries, body.get("prompts") or [None] * len(queries), body.get("labels") or [None] * len(queries))
    ):
        query, prompt = _text(query, f"query[{i}]", limit), _text(prompt, f"prompts[{i}]", limit, False)
        if isinstance(label, str):
            _text(label, f"labels[{i}]", limit)
        elif label is not None and not isinstance(label, (int, float)):
            raise RequestError(400, f"'labels[{i}]' must be a string or a number")
        at = query.find(prompt) if prompt else -1
        completion = query[at + len(prompt) :] if at >= 0 else query
        found = prompt is None or at >= 0
        rows.append(
            {
                "question": prompt,
                "completion": _closing_special_tokens(completion),
                "answer": label,
                "prompt_found": found,
            }
        )
    return rows


def openrlhf_answer(scored: list[dict], names: list[str]) -> dict:
    """OpenRLHF's answer: the totals as ``rewards`` and ``scores``, each component's score under
    ``extra_logs`` (numbers only: see :func:`~procrl.engines.protocol.engine_values`), with the rows
    nobody scored (``procrl/no_opinion``) and those whose prompt was not found in the query."""
    values = [engine_values(row, names) for row in scored]
    logs = {name: [v[1][name] for v in values] for name in names}
    logs["procrl/no_opinion"] = [1.0 if row.get("reward") is None else 0.0 for row in scored]
    logs["procrl/prompt_not_found"] = [0.0 if row.get("prompt_found", True) else 1.0 for row in scored]
    totals = [v[0] for v in values]
    return {"rewards": totals, "scores": totals, "extra_logs": logs}


def procrl_rows(body: Any, limit: int) -> list[dict]:
    """The rows of a ``/score`` body (``{"rows": [...]}`` or one row), each checked as ``procrl score``
    checks a line (400 naming the row)."""
    from procrl.evaluation.score import _check_row

    rows = body.get("rows") if isinstance(body, dict) and "rows" in body else [body]
    if not isinstance(rows, list) or not rows:
        raise RequestError(400, "'rows' must be a non-empty list of rows")
    try:
        checked = [_check_row(row, "rows", i) for i, row in enumerate(rows)]
    except ConfigError as error:
        raise RequestError(400, str(error)) from None
    for i, row in enumerate(checked):
        for key, value in row.items():
            if isinstance(value, str):
                _text(value, f"rows[{i}].{key}", limit)
    return checked


def _parse(data: bytes, settings: ServeSettings) -> Any:
    """``data`` as JSON in one linear pass: integers over ``max_digits`` digits, NaN and Infinity
    refused as the parser meets them; nesting beyond Python's recursion limit stops the parser,
    beyond ``max_depth`` is refused after it."""

    def integer(text: str) -> int:
        if len(text.lstrip("-")) > settings.max_digits:
            raise RequestError(400, f"an integer of {len(text)} digits, over the limit of {settings.max_digits}")
        return int(text)

    def constant(name: str) -> None:
        raise RequestError(400, f"{name} is not a JSON number")

    try:
        value = json.loads(data, parse_int=integer, parse_constant=constant)
    except RecursionError:
        raise RequestError(400, f"JSON nested deeper than {settings.max_depth} levels") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise RequestError(400, f"the body is not JSON: {str(error)[:200]}") from None
    level, depth = [value], 0
    while level:  # breadth-first: no recursion whatever the nesting
        depth += 1
        if depth > settings.max_depth:
            raise RequestError(400, f"JSON nested deeper than {settings.max_depth} levels")
        level = [c for v in level if isinstance(v, (dict, list)) for c in (v.values() if isinstance(v, dict) else v)]
    return value


@dataclass
class _Job:  # one request's rows, waiting or being scored
    rows: list[dict]
    future: Future = field(default_factory=Future)


class RewardServer:
    """The HTTP server of a reward mix: :meth:`start` serves in background threads, :meth:`serve_forever`
    in this one; the mix warms up in the scorer thread while the port already answers (503)."""

    def __init__(self, mix: RewardMix, settings: ServeSettings | None = None):
        import uvicorn  # the web stack: only here

        self.mix, self.settings = mix, settings or ServeSettings()
        self.settings.check()
        self.state, self.batches_scored, self.rows_scored = "starting", 0, 0
        self._queue: deque[_Job] = deque()
        self._queued_rows = self._arriving = self._expected = 0
        self._cond = threading.Condition()
        self._stopping = False
        family = socket.AF_INET6 if ":" in self.settings.host else socket.AF_INET
        # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
        # without it an answer's body waits for the client's delayed ACK of its headers (40 ms)
        self.socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.socket.bind((self.settings.host, self.settings.port))
            self.socket.listen(1024)  # 64 clients connecting at once are not refused
        except OSError:
            self.socket.close()
            raise
        config = uvicorn.Config(self._app(), log_level="warning", access_log=False, lifespan="off", http="h11")
        self.uvicorn = uvicorn.Server(config)
        self._threads = [threading.Thread(target=self._score_loop, name="procrl-serve-scorer", daemon=True)]

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` listened on (the port chosen when ``port`` is 0)."""
        host, port = self.socket.getsockname()[:2]
        return str(host), int(port)

    def start(self, wait_s: float = 600.0) -> RewardServer:
        """Serve in background threads; returns once the mix is warm (or ``wait_s`` passed)."""
        self._threads.append(threading.Thread(target=self.uvicorn.run, args=([self.socket],), daemon=True))
        for thread in self._threads:
            thread.start()
        deadline = time.monotonic() + wait_s
        while self.state == "starting" and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until Ctrl-C or SIGTERM."""
        self._threads[0].start()
        try:
            self.uvicorn.run([self.socket])
        finally:
            self._stop()

    def shutdown(self) -> None:
        self.uvicorn.should_exit = True
        for thread in self._threads[1:]:
            thread.join(timeout=30)
        self._stop()

    def _stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self.socket.close()

    # -- the queue and the scorer --

    def _submit(self, rows: list[dict]) -> Future:
        with self._cond:
            self._arriving -= 1
            if self._queued_rows + len(rows) > self.settings.max_queue:
                raise RequestError(
                    503,
                    f"queue full: {self._queued_rows} rows waiting, {len(rows)} more would pass the limit of "
                    f"{self.settings.max_queue} (--max-queue); retry later",
                )
            job = _Job(rows)
            self._queue.append(job)
            self._queued_rows += len(rows)
            self._cond.notify_all()
        return job.future

    def _next_batch(self) -> list[_Job] | None:
        with self._cond:
            while not self._queue and not self._stopping:
                self._cond.wait()
            ready_at = time.monotonic() + self.settings.batch_wait_s
            # wait (up to batch_wait_s) for the rows on their way: the requests being read, and the
            # clients in flight at the last batch (answered ones post their next row at once, as
            # OpenRLHF's agents do); a lone client is scored at once, concurrent ones fill a batch
            target = min(self.settings.batch_size, max(self._queued_rows + self._arriving, self._expected))
            while self._queued_rows < target and not self._stopping:
                if not self._cond.wait(max(0.0, ready_at - time.monotonic())) and time.monotonic() >= ready_at:
                    break
            jobs, rows = [], 0
            while self._queue and (not jobs or rows + len(self._queue[0].rows) <= self.settings.batch_size):
                job = self._queue.popleft()
                self._queued_rows -= len(job.rows)
                if job.future.set_running_or_notify_cancel():  # False: its client's deadline passed
                    jobs.append(job)
                    rows += len(job.rows)
            return None if self._stopping else jobs

    def _score_loop(self) -> None:
        try:
            self._score([{"question": "What is 1 + 1?", "completion": "1 + 1 = 2\n#### 2", "answer": "2"}])
            self.batches_scored = self.rows_scored = 0  # the clients' rows only
            self.state = "ok"
        except Exception as error:  # noqa: BLE001 - /health says so; the process serves its 503s
            self.state = f"failed: {type(error).__name__}: {redact_text(str(error))[:300]}"
            logger.error("warming up the mix %s", self.state)
            return
        while (jobs := self._next_batch()) is not None:
            if not jobs:
                continue
            try:
                scored = self._score([row for job in jobs for row in job.rows])
            except Exception:  # noqa: BLE001 - one request's rows (a choice row for a number judge): each alone
                for job in jobs:
                    self._finish_alone(job)
                continue
            with self._cond:  # the clients in flight: those answered now and those already waiting
                self._expected = sum(len(job.rows) for job in jobs) + self._queued_rows
            start = 0
            for job in jobs:
                job.future.set_result(scored[start : start + len(job.rows)])
                start += len(job.rows)

    def _score(self, rows: list[dict]) -> list[dict]:
        scored = score_rows(self.mix, rows, self.settings.batch_size)
        self.batches_scored += -(-len(rows) // self.settings.batch_size)
        self.rows_scored += len(rows)
        return scored

    def _finish_alone(self, job: _Job) -> None:
        try:
            job.future.set_result(self._score(job.rows))
        except ConfigError as error:
            job.future.set_exception(RequestError(400, str(error)))
        except Exception as error:  # noqa: BLE001 - the request gets the error, the server serves on
            logger.warning("scoring failed: %s: %s", type(error).__name__, _escaped(str(error)))
            job.future.set_exception(RequestError(500, f"scoring failed: {type(error).__name__}: {error}"))

    # -- HTTP --

    def _app(self) -> Any:
        import asyncio

        from starlette.applications import Starlette
        from starlette.exceptions import HTTPException
        from starlette.responses import Response
        from starlette.routing import Route

        def answer(status: int, payload: dict) -> Response:
            # redacted as the logs are: a reward's error message may hold a recipe's secret
            body = redact_text(json.dumps(payload, separators=(",", ":")))
            # a refused request's body may be unread: the connection cannot carry another request
            headers = {"connection": "close"} if status in (400, 401, 404, 405, 408, 411, 413) else None
            return Response(body, status, headers, media_type="application/json")

        async def health(request: Any) -> Response:
            status = 200 if self.state == "ok" else 503
            scored = {"batches_scored": self.batches_scored, "rows_scored": self.rows_scored}
            info = {"components": self.mix.names, "weights": self.mix.weights, "queued_rows": self._queued_rows}
            return answer(status, {"status": self.state, **info, **scored})

        async def score(request: Any) -> Response:
            started, path, rows = time.perf_counter(), request.url.path, []
            with self._cond:
                self._arriving += 1
            queued = False
            try:
                if self.state != "ok":
                    raise RequestError(503, f"the reward mix is {self.state.split(':')[0]}; retry (GET /health)")
                token = self.settings.token
                given = request.headers.get("authorization", "")
                if token and not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                    raise RequestError(401, "missing or wrong bearer token (Authorization: Bearer <token>)")
                body = _parse(await self._body(request), self.settings)
                limit = self.settings.max_row_chars
                rows = procrl_rows(body, limit) if path == "/score" else openrlhf_rows(body, limit)
                if len(rows) > self.settings.max_rows:
                    raise RequestError(
                        413, f"{len(rows)} rows is over the limit of {self.settings.max_rows} (--max-rows)"
                    )
                queued = True
                future = self._submit(rows)
                try:
                    scored = await asyncio.wait_for(asyncio.wrap_future(future), self.settings.deadline_s)
                except asyncio.TimeoutError:
                    raise RequestError(
                        504,
                        f"not scored within the {self.settings.deadline_s:g} s deadline (--deadline); "
                        f"{self._queued_rows} rows are waiting",
                    ) from None
                payload = {"rows": scored} if path == "/score" else openrlhf_answer(scored, self.mix.names)
                status = 200
            except RequestError as error:
                status, payload = error.status, {"error": str(error)}
            finally:
                if not queued:
                    with self._cond:
                        self._arriving -= 1
                        self._cond.notify_all()
            logger.info(
                "POST %s %d %d rows %.1f ms", _escaped(path), status, len(rows), 1e3 * (time.perf_counter() - started)
            )
            return answer(status, payload)

        async def error(request: Any, exc: Exception) -> Response:
            status = getattr(exc, "status_code", 500)
            logger.info("%s %s %d", request.method, _escaped(request.url.path), status)
            return answer(status, {"error": f"{request.method} {request.url.path}: {getattr(exc, 'detail', 'error')}; "
                                   "GET /health, POST /get_reward (OpenRLHF) or /score (procrl)"})  # fmt: skip

        routes = [
            Route("/health", health),
            Route("/get_reward", score, methods=["POST"]),
            Route("/score", score, methods=["POST"]),
        ]
        return Starlette(routes=routes, exception_handlers={HTTPException: error, Exception: error})

    async def _body(self, request: Any) -> bytes:
        """The body, bounded by its declared size before a byte is read and by the bytes and
        seconds it takes after."""
        import asyncio

        limit = self.settings.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is None:
            raise RequestError(411, "a request body needs a Content-Length header")
        if not declared.isdigit() or len(declared) > 20:
            raise RequestError(400, f"Content-Length is not a number: {declared[:40]!r}")
        if int(declared) > limit:
            raise RequestError(
                413, f"request body of {int(declared)} bytes is over the limit of {limit} (--max-body-bytes)"
            )

        async def read() -> bytes:
            from starlette.requests import ClientDisconnect

            chunks, size = [], 0
            try:
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        raise RequestError(413, f"request body over the limit of {limit} bytes (--max-body-bytes)")
                    chunks.append(chunk)
            except ClientDisconnect:  # nobody to answer: uvicorn drops what is sent after
                raise RequestError(400, f"the body ended after {size} of its {declared} bytes") from None
            return b"".join(chunks)

        try:
            return await asyncio.wait_for(read(), self.settings.read_timeout_s)
        except asyncio.TimeoutError:
            raise RequestError(408, f"the request was not received within {self.settings.read_timeout_s:g} s") from None


def _escaped(text: str) -> str:
    """``text`` for a log line: control characters (terminal escapes) as JSON escapes, at most 200."""
    return json.dumps(text[:200])[1:-1]


def token_from_env(name: str | None) -> str | None:
    """The bearer token from the environment variable ``name`` (None when unset or empty),
    registered as a secret so that nothing procrl prints or writes shows it."""
    token = os.environ.get(name, "").strip() if name else ""
    if not token:
        return None
    from procrl.core.redaction import register_secret

    register_secret(token)
    return token


def serve_recipe(
    recipe_path: str, overrides: list[str], settings: ServeSettings, token_env: str, device: str | None, quiet: bool
) -> int:
    """``procrl serve``: check the options, load the recipe's mix, listen, log one line per request
    (unless ``quiet``) and serve until interrupted; returns the exit status."""
    from procrl.recipe import load_recipe
    from procrl.rewards.mix import RewardMix
    from procrl.rewards.protocol import RuntimeContext

    settings.check()  # before the recipe loads: a bad option costs no model load
    recipe = load_recipe(recipe_path, overrides, scoring=True)  # rewards only: no model/trainer needed
    settings.token = token_from_env(token_env)
    mix = RewardMix(recipe.rewards)
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
            f"--host/--port: cannot listen on {settings.host}:{settings.port} ({error.strerror or error})"
        ) from None
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("procrl serve: %(message)s"))
    log = logging.getLogger("procrl.engines.server")
    log.addHandler(handler)
    log.setLevel(logging.WARNING if quiet else logging.INFO)
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
                     f"(set {token_env})")  # fmt: skip
    print("".join(f"procrl serve: {line}\n" for line in lines), end="", file=sys.stderr, flush=True)
    server.serve_forever()
    print("procrl serve: stopped", file=sys.stderr)
    return 0
