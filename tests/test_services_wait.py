"""``python -m procrl.launch.services wait`` is bounded for every reply and option: a server that
answers a JSON shape other than OpenAI's model list, one that drips its body, a timeout or interval
that is not a finite number > 0 (also as the SLURM script's WAIT_TIMEOUT): one line, exit status 3
(2 for a bad option), within the bound. The servers are in-process HTTP doubles."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from procrl.launch.services import main
from tests.helpers.launch import REPO

SCRIPT = REPO / "launch" / "slurm" / "train_multinode.sbatch"


def _server(body: bytes, drip_s: float = 0.0):
    """A server answering every GET with 200 and ``body`` (one byte per ``drip_s`` when > 0)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for index in range(len(body)):
                    self.wfile.write(body[index : index + 1])
                    self.wfile.flush()
                    if drip_s:
                        time.sleep(drip_s)
            except OSError:  # the client gave up
                pass

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


@pytest.fixture
def serve():
    servers = []

    def start(body: bytes, drip_s: float = 0.0) -> str:
        server, url = _server(body, drip_s)
        servers.append(server)
        return url

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _wait(capsys, *args: str) -> tuple[int, list[str], float]:
    started = time.monotonic()
    try:
        code = main(["wait", "--name", "judge", *args])
    except SystemExit as exit_:
        code = exit_.code
    elapsed = time.monotonic() - started
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    return code, lines, elapsed


@pytest.mark.parametrize(
    ("body", "shape"),
    [(b"[]", "JSON list"), (b'{"data": 5}', 'JSON "data": int'), (b'{"data": [1, "x"]}', 'JSON "data": list')],
)
def test_a_reply_that_is_not_the_openai_model_list_is_one_line_and_exit_3(serve, capsys, body, shape):
    url = serve(body)
    code, lines, elapsed = _wait(capsys, "--url", url, "--model", "judge", "--timeout", "20", "--interval", "0.1")
    assert code == 3 and len(lines) == 1, lines
    assert lines[0] == (
        f"procrl: error: the judge server at {url} answers GET /models with a {shape}, not the OpenAI model list; "
        "nothing was trained"
    )
    assert elapsed < 20


def test_the_openai_model_list_naming_the_model_is_an_answer(serve, capsys):
    url = serve(b'{"object": "list", "data": [{"id": "judge", "object": "model"}]}')
    code, lines, _ = _wait(capsys, "--url", url, "--model", "judge", "--timeout", "20")
    assert code == 0 and lines == ["procrl: the judge server answers (after 0 s)"], lines


def test_a_body_that_drips_ends_within_the_timeout(serve, capsys):
    url = serve(b'{"data": [{"id": "judge"}]}' + b" " * 200, drip_s=1.0)  # one byte a second
    code, lines, elapsed = _wait(capsys, "--url", url, "--model", "judge", "--timeout", "3", "--interval", "0.5")
    assert code == 3 and len(lines) == 1, lines
    assert lines[0].startswith(f"procrl: error: the judge server at {url} did not answer within 3 s (last: Timeout")
    assert elapsed < 3 + 2  # the bound, and the thread's join granularity


@pytest.mark.parametrize("option", ["--timeout", "--interval"])
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "-inf", "soon"])
def test_a_timeout_or_interval_that_is_not_finite_and_positive_is_one_line_and_exit_2(capsys, option, value):
    code, lines, _ = _wait(capsys, "--url", "http://127.0.0.1:9/v1", f"{option}={value}")
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("procrl: error: ") and option in lines[0], lines


def test_a_server_that_never_answers_ends_at_the_timeout(capsys):
    code, lines, elapsed = _wait(capsys, "--url", "http://127.0.0.1:9/v1", "--timeout", "1.5", "--interval", "5")
    assert code == 3 and len(lines) == 1 and "did not answer within 1.5 s" in lines[0], lines
    assert elapsed < 1.5 + 2  # the interval (5 s) is cut to what is left of the bound


@pytest.mark.parametrize("value", ["nan", "inf", "-5", "0", "1e3", "", "05"])
def test_the_slurm_script_refuses_a_wait_timeout_that_is_not_whole_seconds(value, tmp_path):
    done = subprocess.run(
        ["bash", str(SCRIPT), "recipes/gsm8k_judge.yaml"],
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "WAIT_TIMEOUT": value,
            "DRY_RUN": "1",
            "PROCRL_NODES": "n1 n2",
            "PYTHON": sys.executable,
        },
        cwd=REPO,
        timeout=60,
    )
    if value == "":  # unset-or-empty takes the default, 1800
        assert "WAIT_TIMEOUT" not in done.stderr, done.stderr
        return
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"procrl: error: WAIT_TIMEOUT: must be a whole number of seconds > 0, got '{value}'"
    ]
