"""A recipe's reward mix over HTTP (``procrl serve``): OpenRLHF's remote reward model protocol,
procrl's own scoring endpoint and a health check, standard library only.

Endpoints:

* ``POST /get_reward``: OpenRLHF's ``--remote_rm_url`` protocol as its client sends it
  (``openrlhf/utils/agent.py``: ``{"query": [...], "prompts": [...], "labels": [...]}``, one sample
  per request from its single-turn executor; older clients send ``query`` alone). ``query`` is the
  prompt and the response decoded together; the completion is what follows the prompt in it (the
  whole query when the prompt is not found in it), its trailing special tokens (``<|im_end|>``, ...)
  left out. The answer is what its client reads: ``{"rewards": [...], "scores": [...],
  "extra_logs": {component: [...]}}``, ``rewards`` and ``scores`` the weighted totals.
* ``POST /score``: ``{"rows": [{"question", "completion", "answer", ...}]}`` (or one row); the answer
  ``{"rows": [...]}`` holds each row as ``procrl score`` writes it: each component's score, the
  weighted total, the per-step scores with each step's character span (``start``, ``end``) in the
  completion, diagnostics.
* ``GET /health``: ``{"status": "ok", "components": ..., "weights": ..., "queued_rows": ...}``.

Concurrency: every request's rows go to one queue; one scoring thread takes up to ``batch_size``
rows from as many requests as are waiting (after waiting ``batch_wait_s`` for more) and scores them
as one batch of the mix, through :func:`procrl.evaluation.score.score_batch` (the code of
``procrl score``), so that concurrent clients share the mix's batches and the mix, which caches one
batch at a time, is only ever called from one thread.

Bounds, each answered with one JSON line ``{"error": ...}`` and the server serving on: a body over
``max_body_bytes`` (413, not read), more rows than ``max_rows`` (413), more rows waiting than
``max_queue`` (503), a request not scored within ``deadline_s`` of its arrival (504; its rows are
dropped from the queue if still there), malformed JSON or rows (400), a wrong bearer token (401).
A client that goes away before its answer costs one log line.

Every row of a batch is the same problem to every component: the rows of ``/score`` and of
``/get_reward`` are each their own generation group (no group mean across requests), as in
``procrl score``.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from procrl.core.config import ConfigError
from procrl.evaluation.score import _check_row, score_batch
from procrl.rewards.mix import RewardMix

__all__ = ["RequestError", "RewardServer", "ServeSettings", "openrlhf_rows", "openrlhf_answer"]

logger = logging.getLogger(__name__)

# special tokens a decoded query ends with (OpenRLHF decodes with skip_special_tokens=False):
# <|im_end|>, <|endoftext|>, <|eot_id|>, </s>, <eos>
_TRAILING_SPECIAL = re.compile(r"(?:\s*(?:<\|[A-Za-z0-9_]{1,40}\|>|</s>|<eos>|<end_of_turn>))+\s*$")


@dataclass
class ServeSettings:
    """How ``procrl serve`` listens, batches and bounds its work."""

    host: str = field(default="127.0.0.1", metadata={"help": "Address to listen on (loopback: this machine only)."})
    port: int = field(default=8000, metadata={"help": "Port to listen on (0: any free port)."})
    batch_size: int = field(default=64, metadata={"help": "Most rows scored together in one batch of the mix."})
    batch_wait_s: float = field(
        default=0.005,
        metadata={"help": "How long the scorer waits for more rows after the first, to fill a batch."},
    )
    max_queue: int = field(default=4096, metadata={"help": "Most rows waiting to be scored; beyond: 503."})
    max_rows: int = field(default=1024, metadata={"help": "Most rows in one request; beyond: 413."})
    max_body_bytes: int = field(default=16 << 20, metadata={"help": "Largest request body; beyond: 413."})
    deadline_s: float = field(
        default=120.0, metadata={"help": "Seconds from a request's arrival to its answer; beyond: 504."}
    )
    read_timeout_s: float = field(
        default=30.0, metadata={"help": "Seconds a client may take to send its request before it is dropped."}
    )
    token: str | None = field(
        default=None, repr=False, metadata={"help": "Bearer token every request but /health must carry (None: none)."}
    )


class RequestError(Exception):
    """A request answered with ``status`` and one line saying why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class _Job:
    """The rows of one request, waiting in the queue or being scored."""

    rows: list[dict]
    deadline: float
    done: threading.Event = field(default_factory=threading.Event)
    result: list[dict] | None = None
    error: RequestError | None = None
    abandoned: bool = False


def _closing_special_tokens(text: str) -> str:
    return _TRAILING_SPECIAL.sub("", text)


def openrlhf_rows(body: Any) -> list[dict]:
    """The rows to score of an OpenRLHF ``/get_reward`` request body.

    Args:
        body: the parsed JSON: ``query`` (prompt + response, decoded), and optionally ``prompts`` and
            ``labels`` (the gold answers), lists of the same length.

    Returns:
        One row per query: ``question`` (the prompt), ``completion`` (the query after the prompt, its
        trailing special tokens left out; the whole query when the prompt is not in it, and
        ``prompt_found`` False) and ``answer`` (the label).

    Raises:
        RequestError: 400 naming the key at fault.
    """
    if not isinstance(body, dict):
        raise RequestError(400, f"expected a JSON object with 'query', got {type(body).__name__}")
    queries = body.get("query")
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise RequestError(400, "'query' must be a list of strings (prompt + response)")
    rows = []
    for key in ("prompts", "labels"):
        value = body.get(key)
        if value is not None and (not isinstance(value, list) or len(value) != len(queries)):
            raise RequestError(400, f"'{key}' must be a list as long as 'query' ({len(queries)})")
    prompts = body.get("prompts") or [None] * len(queries)
    labels = body.get("labels") or [None] * len(queries)
    for i, (query, prompt, label) in enumerate(zip(queries, prompts, labels)):
        if prompt is not None and not isinstance(prompt, str):
            raise RequestError(400, f"'prompts[{i}]' must be a string")
        if label is not None and not isinstance(label, (str, int, float)):
            raise RequestError(400, f"'labels[{i}]' must be a string or a number")
        completion, found = query, prompt is None
        if prompt:
            at = query.find(prompt)
            if at >= 0:
                completion, found = query[at + len(prompt) :], True
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
    """OpenRLHF's answer for scored rows: the weighted totals as ``rewards`` and ``scores``, and each
    component's score under ``extra_logs`` (what its trainer logs).

    OpenRLHF turns every value into a tensor, so a score is always a number: a component without an
    opinion on a row gives its fallback's value when it has one, else 0.0, and a row whose total
    nobody gave is 0.0, counted in ``extra_logs["procrl/no_opinion"]``.
    """
    totals, logs = [], {name: [] for name in names}
    no_opinion = []
    for row in scored:
        totals.append(float(row["reward"]) if row.get("reward") is not None else 0.0)
        no_opinion.append(1.0 if row.get("reward") is None else 0.0)
        fallbacks = row.get("fallbacks") or {}
        for name in names:
            value = row["rewards"].get(name)
            if value is None:
                value = (fallbacks.get(name) or {}).get("score")
            logs[name].append(float(value) if value is not None else 0.0)
    logs["procrl/no_opinion"] = no_opinion
    # the prompt was not found in the query (its tokens decode to other text): the whole query was scored
    logs["procrl/prompt_not_found"] = [0.0 if row.get("prompt_found", True) else 1.0 for row in scored]
    return {"rewards": totals, "scores": totals, "extra_logs": logs}


def procrl_rows(body: Any, max_rows: int) -> list[dict]:
    """The rows of a ``/score`` request body (``{"rows": [...]}`` or one row), each checked as
    ``procrl score`` checks a line of its input (400 naming the row)."""
    rows = body.get("rows") if isinstance(body, dict) and "rows" in body else [body]
    if not isinstance(rows, list) or not rows:
        raise RequestError(400, "'rows' must be a non-empty list of rows")
    if len(rows) > max_rows:
        raise RequestError(413, f"{len(rows)} rows is over the limit of {max_rows} rows per request (--max-rows)")
    try:
        return [_check_row(row, "rows", i) for i, row in enumerate(rows)]
    except ConfigError as error:
        raise RequestError(400, str(error)) from None


class RewardServer:
    """The HTTP server of a reward mix; :meth:`start` runs it in background threads,
    :meth:`serve_forever` in this one."""

    def __init__(self, mix: RewardMix, settings: ServeSettings | None = None):
        self.mix = mix
        self.settings = settings or ServeSettings()
        self._queue: deque[_Job] = deque()
        self._queued_rows = 0
        self._arriving = 0  # requests being read and checked, not yet queued
        self._cond = threading.Condition()
        self._stopping = False
        handler = type("Handler", (_Handler,), {"server_state": self, "timeout": self.settings.read_timeout_s})
        self.httpd = _Server((self.settings.host, self.settings.port), handler)
        self._scorer = threading.Thread(target=self._score_loop, name="procrl-serve-scorer", daemon=True)
        self._http_thread: threading.Thread | None = None
        self.batches_scored = 0  # batches of the mix scored, and the rows in them (GET /health)
        self.rows_scored = 0

    def warm_up(self) -> None:
        """Score one row before serving, so that the components load their models, taggers and
        tables now rather than in the first client's request."""
        self._score_rows([{"question": "What is 1 + 1?", "completion": "1 + 1 = 2\n#### 2", "answer": "2"}])

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` the server listens on (the port chosen when ``port`` is 0)."""
        host, port = self.httpd.server_address[:2]
        return str(host), int(port)

    def start(self) -> RewardServer:
        """Serve in background threads; returns at once."""
        self._scorer.start()
        self._http_thread = threading.Thread(target=self.httpd.serve_forever, name="procrl-serve-http", daemon=True)
        self._http_thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`shutdown` or Ctrl-C."""
        self._scorer.start()
        try:
            self.httpd.serve_forever()
        finally:
            self._stop_scorer()
            self.httpd.server_close()

    def shutdown(self) -> None:
        """Stop serving (from another thread) and close the socket."""
        self.httpd.shutdown()
        self._stop_scorer()
        self.httpd.server_close()

    def _stop_scorer(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()

    def arriving(self, change: int) -> None:
        """A request started (+1) or stopped (-1) arriving: being read, before it is queued."""
        with self._cond:
            self._arriving += change
            self._cond.notify_all()

    @property
    def queued_rows(self) -> int:
        with self._cond:
            return self._queued_rows

    # -- the queue and the scorer --

    def submit(self, rows: list[dict], arrived: float) -> list[dict]:
        """Queue ``rows`` and wait for their scored rows (RequestError past the bounds)."""
        job = _Job(rows=rows, deadline=arrived + self.settings.deadline_s)
        with self._cond:
            self._arriving -= 1
            if self._queued_rows + len(rows) > self.settings.max_queue:
                raise RequestError(
                    503,
                    f"queue full: {self._queued_rows} rows waiting, {len(rows)} more would pass the limit of "
                    f"{self.settings.max_queue} (--max-queue); retry later",
                )
            self._queue.append(job)
            self._queued_rows += len(rows)
            self._cond.notify_all()
        if not job.done.wait(max(0.0, job.deadline - time.monotonic())):
            with self._cond:
                job.abandoned = True
                if job in self._queue:  # never scored: its rows leave the queue
                    self._queue.remove(job)
                    self._queued_rows -= len(rows)
            raise RequestError(
                504,
                f"not scored within the {self.settings.deadline_s:g} s deadline (--deadline); "
                f"{self.queued_rows} rows are waiting",
            )
        if job.error is not None:
            raise job.error
        return job.result or []

    def _next_batch(self) -> list[_Job] | None:
        """The jobs of the next batch: at least one, up to ``batch_size`` rows (a larger request is
        a batch of its own, scored in chunks); None when stopping."""
        with self._cond:
            while not self._queue and not self._stopping:
                self._cond.wait()
            if self._stopping:
                return None
            ready_at = time.monotonic() + self.settings.batch_wait_s
            # wait for more rows only while requests are arriving (read, not yet queued): a lone
            # client's request is scored at once
            while (
                sum(len(j.rows) for j in self._queue) < self.settings.batch_size
                and self._arriving > 0
                and not self._stopping
            ):
                left = ready_at - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            jobs, rows = [], 0
            while self._queue and (not jobs or rows + len(self._queue[0].rows) <= self.settings.batch_size):
                job = self._queue.popleft()
                self._queued_rows -= len(job.rows)
                if job.abandoned:
                    continue
                jobs.append(job)
                rows += len(job.rows)
            return jobs

    def _score_loop(self) -> None:
        while True:
            jobs = self._next_batch()
            if jobs is None:
                return
            if jobs:
                self._score_jobs(jobs)

    def _score_rows(self, rows: list[dict]) -> list[dict]:
        scored: list[dict] = []
        size = self.settings.batch_size
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            scored += score_batch(self.mix, list(range(start + 1, start + len(chunk) + 1)), chunk)[0]
            self.batches_scored += 1
            self.rows_scored += len(chunk)
        return scored

    def _score_jobs(self, jobs: list[_Job]) -> None:
        rows = [row for job in jobs for row in job.rows]
        try:
            scored = self._score_rows(rows)
        except Exception:  # noqa: BLE001 - one request's rows (a choice row for a number judge): score each alone
            if len(jobs) == 1:
                self._finish_alone(jobs[0])
            else:
                for job in jobs:
                    self._finish_alone(job)
            return
        start = 0
        for job in jobs:
            job.result = scored[start : start + len(job.rows)]
            start += len(job.rows)
            job.done.set()

    def _finish_alone(self, job: _Job) -> None:
        try:
            job.result = self._score_rows(job.rows)
        except ConfigError as error:
            job.error = RequestError(400, str(error))
        except Exception as error:  # noqa: BLE001 - the request gets the error, the server serves on
            logger.warning("scoring failed: %s: %s", type(error).__name__, error)
            job.error = RequestError(500, f"scoring failed: {type(error).__name__}: {error}")
        job.done.set()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the listen backlog: 64 clients connecting at once are not refused

    def handle_error(self, request, client_address) -> None:  # one line, not socketserver's traceback
        import sys

        error = sys.exc_info()[1]
        logger.info("connection from %s ended: %s: %s", client_address[0], type(error).__name__, error)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a client's next request reuses its connection
    # the headers and the body leave in two writes: with Nagle's algorithm the second waits for the
    # client's delayed ACK (40 ms a request, measured by benchmarks/serve_bench.py)
    disable_nagle_algorithm = True
    server_version = "procrl-serve"
    server_state: RewardServer

    def log_message(self, format: str, *args: Any) -> None:  # http.server's access log: off (see _log)
        return

    def _log(self, status: int, rows: int, started: float) -> None:
        # method, path, status, rows and time only: never a header (the token) nor a body
        logger.info(
            "%s %s %d %d rows %.1f ms", self.command, self.path, status, rows, 1000 * (time.perf_counter() - started)
        )

    def _send(self, status: int, payload: dict, close: bool = False) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, TimeoutError) as error:
            self.close_connection = True
            logger.info("%s %s: the client went away before its answer (%s)", self.command, self.path, error)

    def _authorized(self) -> bool:
        token = self.server_state.settings.token
        if not token:
            return True
        given = self.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        started = time.perf_counter()
        if self.path.split("?")[0] != "/health":
            self._log(404, 0, started)
            self._send(404, {"error": f"no GET {self.path}; GET /health, POST /get_reward or /score"})
            return
        mix = self.server_state.mix
        self._log(200, 0, started)
        self._send(
            200,
            {
                "status": "ok",
                "components": mix.names,
                "weights": mix.weights,
                "queued_rows": self.server_state.queued_rows,
                "batches_scored": self.server_state.batches_scored,
                "rows_scored": self.server_state.rows_scored,
            },
        )

    def _body(self) -> Any:
        settings = self.server_state.settings
        length_text = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked" or length_text is None:
            raise RequestError(411, "a request body needs a Content-Length header")
        try:
            length = int(length_text)
        except ValueError:
            raise RequestError(400, f"Content-Length is not a number: {length_text[:40]!r}") from None
        if length < 0:
            raise RequestError(400, "Content-Length is negative")
        if length > settings.max_body_bytes:
            raise RequestError(
                413, f"request body of {length} bytes is over the limit of {settings.max_body_bytes} (--max-body-bytes)"
            )
        data = self.rfile.read(length)
        if len(data) < length:  # answered in case the client only closed its sending side
            raise RequestError(400, f"the body ended after {len(data)} of its {length} bytes (Content-Length)")
        try:
            return json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise RequestError(400, f"the body is not JSON: {error}") from None

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        started, arrived = time.perf_counter(), time.monotonic()
        server = self.server_state
        path = self.path.split("?")[0]
        rows: list[dict] = []
        server.arriving(+1)
        submitted = False
        try:
            if path not in ("/get_reward", "/score"):
                raise RequestError(404, f"no POST {self.path}; POST /get_reward (OpenRLHF) or /score (procrl)")
            if not self._authorized():
                raise RequestError(401, "missing or wrong bearer token (Authorization: Bearer <token>)")
            body = self._body()
            if path == "/score":
                rows = procrl_rows(body, server.settings.max_rows)
            else:
                rows = openrlhf_rows(body)
                if len(rows) > server.settings.max_rows:
                    raise RequestError(
                        413, f"{len(rows)} queries is over the limit of {server.settings.max_rows} (--max-rows)"
                    )
            submitted = bool(rows)
            scored = server.submit(rows, arrived) if rows else []
            payload = {"rows": scored} if path == "/score" else openrlhf_answer(scored, server.mix.names)
            # the access line is written before the answer: a client that has its answer can rely on
            # the line being in the log (a server stopped right after still shows it)
            self._log(200, len(rows), started)
            self._send(200, payload)
        except RequestError as error:
            # the body of a refused request may be unread: the connection cannot be reused
            self._log(error.status, len(rows), started)
            self._send(error.status, {"error": str(error)}, close=error.status in (400, 401, 404, 411, 413))
        except TimeoutError:  # a client that stopped sending: told so, if it still reads
            seconds = server.settings.read_timeout_s
            self._log(408, 0, started)
            self._send(408, {"error": f"the request was not received within {seconds:g} s"}, close=True)
        except (ConnectionResetError, BrokenPipeError) as error:
            self.close_connection = True
            logger.info("%s %s: the client went away (%s)", self.command, self.path, error)
        finally:
            if not submitted:  # submit() counts a queued request out of the arriving ones
                server.arriving(-1)


def token_from_env(name: str | None) -> str | None:
    """The bearer token from the environment variable ``name`` (None when unset or empty),
    registered as a secret so that nothing procrl prints or writes shows it."""
    if not name:
        return None
    token = os.environ.get(name, "").strip()
    if not token:
        return None
    from procrl.core.redaction import register_secret

    register_secret(token)
    return token
