"""A scripted OpenAI-compatible chat server on 127.0.0.1: the stand-in for a judge endpoint
(vLLM ``serve``, OpenAI) in tests and benchmarks.

``responder(prompt, attempt)`` decides each reply, ``attempt`` counting earlier requests with the
same prompt (0 first). It returns a :class:`Reply`: a chat answer with some text, an HTTP
status, a malformed body, and optionally a delay before answering or a body dripped out one
byte at a time (a server that is slow but never silent for long).

With ``served_models`` it answers as vLLM does for a model it does not serve (404, "The model
`X` does not exist.") and lists them at ``GET /v1/models``; ``GET /health`` answers 200.

As a process (the judge of a SLURM script under test)::

    python -m procrl.testing.openai_server --port 8000 --served-model-name judge [--start-after 5]
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["Reply", "ScriptedOpenAIServer"]


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # many concurrent judge calls connect at once


@dataclass
class Reply:
    content: str | None = None  # chat answer text
    status: int = 200
    delay_s: float = 0.0
    body: bytes | None = None  # raw body instead of a chat completion (malformed JSON etc.)
    headers: dict | None = None
    drip_s: float = 0.0  # send the body one byte every drip_s seconds


class ScriptedOpenAIServer:
    """``with ScriptedOpenAIServer(responder) as server: server.base_url``."""

    def __init__(self, responder: Callable[[str, int], Reply], served_models: list[str] | None = None, port: int = 0):
        self.responder = responder
        self.served_models = served_models
        self.requests: list[dict] = []  # {"prompt", "model", "authorization", "time"}
        self._attempts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._in_flight = 0
        self.max_in_flight = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def setup(self):
                super().setup()
                # headers and body go out in separate writes: without this, Nagle + delayed ACK
                # add ~40 ms to every reply
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self):
                if self.path.rstrip("/") == "/health":
                    self._send(200, b"{}")
                elif self.path.rstrip("/") == "/v1/models":
                    names = outer.served_models or []
                    data = [{"id": name, "object": "model", "owned_by": "procrl-test"} for name in names]
                    self._send(200, json.dumps({"object": "list", "data": data}).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                try:
                    payload = json.loads(raw)
                    prompt = payload["messages"][-1]["content"]
                    model = payload.get("model")
                except (ValueError, KeyError, IndexError, TypeError):
                    self._send(400, b'{"error": "bad request"}')
                    return
                if outer.served_models is not None and model not in outer.served_models:
                    message = {"error": {"message": f"The model `{model}` does not exist.", "code": 404}}
                    self._send(404, json.dumps(message).encode())
                    return
                with outer._lock:
                    attempt = outer._attempts.get(prompt, 0)
                    outer._attempts[prompt] = attempt + 1
                    outer.requests.append(
                        {
                            "prompt": prompt,
                            "model": model,
                            "authorization": self.headers.get("Authorization"),
                            "time": time.monotonic(),
                        }
                    )
                    outer._in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer._in_flight)
                try:
                    reply = outer.responder(prompt, attempt)
                    if reply.delay_s:
                        time.sleep(reply.delay_s)
                    if reply.body is not None:
                        body = reply.body
                    elif reply.status == 200:
                        body = json.dumps(
                            {
                                "id": "chatcmpl-test",
                                "object": "chat.completion",
                                "model": model,
                                "choices": [
                                    {
                                        "index": 0,
                                        "message": {"role": "assistant", "content": reply.content},
                                        "finish_reason": "stop",
                                    }
                                ],
                            }
                        ).encode()
                    else:
                        body = json.dumps({"error": {"message": f"status {reply.status}"}}).encode()
                    self._send(reply.status, body, reply.headers, reply.drip_s)
                finally:
                    with outer._lock:
                        outer._in_flight -= 1

            def _send(self, status, body, headers=None, drip_s=0.0):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    if not drip_s:
                        self.wfile.write(body)
                        return
                    for index in range(len(body)):
                        self.wfile.write(body[index : index + 1])
                        self.wfile.flush()
                        time.sleep(drip_s)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

        self._server = _Server(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def attempts(self, prompt_part: str) -> int:
        """Requests whose prompt contains ``prompt_part``."""
        with self._lock:
            return sum(1 for r in self.requests if prompt_part in r["prompt"])

    def start(self) -> ScriptedOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """Serve one fixed judge reply under ``--served-model-name`` until killed."""
    import argparse

    parser = argparse.ArgumentParser(description="A scripted OpenAI-compatible judge server (tests).")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--served-model-name", action="append", required=True)
    parser.add_argument("--reply", default="Every step checks out. \\boxed{-1}")
    parser.add_argument("--start-after", type=float, default=0.0, help="Seconds before it listens (a slow start).")
    args = parser.parse_args(argv)
    time.sleep(args.start_after)
    server = ScriptedOpenAIServer(lambda prompt, attempt: Reply(args.reply), args.served_model_name, args.port)
    print(f"serving {args.served_model_name} at {server.base_url}", flush=True)
    server._server.serve_forever()


if __name__ == "__main__":
    main()
