"""``procrl serve`` over real HTTP on loopback: OpenRLHF's remote reward model requests as its client
builds them, procrl's /score endpoint against ``procrl score``'s rows, concurrent clients sharing
batches, and every bad request (malformed, oversized, cut off, over the queue or the deadline, no
token) answered in one line while the server keeps serving."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from procrl.engines.server import RewardServer, ServeSettings
from procrl.evaluation.score import score_rows
from procrl.rewards.mix import RewardMix
from tests.helpers.launch import free_port

REPO = Path(__file__).resolve().parent.parent
REWARDS = {
    "accuracy": {"weight": 1.0},
    "format": {"weight": 0.2},
    "first_error": {"weight": 0.5, "backend": "arithmetic"},
}
PROMPT = "<|im_start|>user\nTom has 3 boxes of 4 apples. How many apples?<|im_end|>\n<|im_start|>assistant\n"
RIGHT = "3 * 4 = 12\nTom has 12 apples.\n#### 12"
WRONG = "3 * 4 = 13\nTom has 13 apples.\n#### 13"


def _openrlhf_payload(queries, prompts, labels):
    # openrlhf/utils/agent.py, SingleTurnAgentExecutor._fetch_rewards_via_http, one server
    return {"query": queries, "prompts": prompts, "labels": labels}


def _post(url, payload=None, data=None, headers=None, timeout=30):
    body = data if data is not None else json.dumps(payload).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, json.loads(response.read())


@pytest.fixture
def serve():
    servers = []

    def start(rewards=REWARDS, wait_s=60, **settings):
        server = RewardServer(RewardMix.from_recipe_rewards(rewards), ServeSettings(port=0, **settings)).start(wait_s)
        servers.append(server)
        host, port = server.address
        return server, f"http://{host}:{port}"

    yield start
    for server in servers:
        server.shutdown()


def test_openrlhf_request_as_its_client_sends_it(serve):
    requests = pytest.importorskip("requests")
    server, url = serve()
    payload = _openrlhf_payload(
        [PROMPT + RIGHT + "<|im_end|>", PROMPT + WRONG + "<|im_end|>"], [PROMPT, PROMPT], ["12", "12"]
    )
    response = requests.post(url + "/get_reward", json=payload, headers={"Content-Type": "application/json"})
    response.raise_for_status()
    info = response.json()
    # what openrlhf/utils/agent.py reads: scores (else rewards), rewards, extra_logs
    assert set(info) == {"rewards", "scores", "extra_logs"}
    assert info["rewards"] == info["scores"] == [pytest.approx(1.2), pytest.approx(-0.3)]
    assert info["extra_logs"]["accuracy"] == [1.0, 0.0]
    assert info["extra_logs"]["first_error"] == [0.0, -1.0]
    assert info["extra_logs"]["procrl/no_opinion"] == [0.0, 0.0]
    assert info["extra_logs"]["procrl/prompt_not_found"] == [0.0, 0.0]
    # the older client (remote_rm_utils.remote_rm_fn) posts the queries alone: no gold, no accuracy opinion
    status, old = _post(url + "/get_reward", {"query": [PROMPT + RIGHT]})
    assert status == 200 and len(old["rewards"]) == 1 and old["extra_logs"]["first_error"] == [0.0]


def test_procrl_endpoint_returns_what_procrl_score_returns(serve):
    server, url = serve()
    rows = [
        {"question": "Tom has 3 boxes of 4 apples. How many apples?", "completion": c, "answer": "12"}
        for c in (RIGHT, WRONG, "#### 12")
    ]
    status, answer = _post(url + "/score", {"rows": rows})
    assert status == 200
    expected = list(score_rows(RewardMix.from_recipe_rewards(REWARDS), rows))
    assert answer["rows"] == json.loads(json.dumps(expected))
    wrong = answer["rows"][1]
    assert wrong["rewards"] == {"accuracy": 0.0, "format": 1.0, "first_error": -1.0}
    assert wrong["reward"] == pytest.approx(-0.3)
    first = wrong["steps"][0]
    assert WRONG[first["start"] : first["end"]] == first["text"] == "3 * 4 = 13"
    assert first["scores"] == {"first_error": -1.0}
    status, one = _post(url + "/score", rows[0])  # one row, not wrapped
    assert status == 200 and one["rows"][0]["reward"] == pytest.approx(1.2)


def test_concurrent_clients_share_the_mix_batches(serve):
    server, url = serve(batch_wait_s=0.05)
    completions = [RIGHT if i % 2 == 0 else WRONG for i in range(48)]

    def one(i):
        return _post(url + "/get_reward", _openrlhf_payload([PROMPT + completions[i]], [PROMPT], ["12"]))

    with ThreadPoolExecutor(48) as pool:
        answers = list(pool.map(one, range(48)))
    assert all(status == 200 for status, _ in answers)
    assert [a["rewards"][0] for _, a in answers] == [pytest.approx(1.2 if i % 2 == 0 else -0.3) for i in range(48)]
    _, health = _get(url + "/health")
    assert health["rows_scored"] == 48
    assert health["batches_scored"] < 48  # concurrent requests were scored together


def _raw(url, data: bytes, read=True, shut=False) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(data)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        if not read:
            return b""
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def _still_serving(url):
    status, answer = _post(url + "/get_reward", _openrlhf_payload([PROMPT + RIGHT], [PROMPT], ["12"]))
    assert status == 200 and answer["rewards"] == [pytest.approx(1.2)]


def test_bad_requests_get_a_clear_answer_and_the_server_serves_on(serve):
    server, url = serve(max_body_bytes=4096, max_rows=8)
    status, answer = _post(url + "/get_reward", data=b'{"query": ["unterminated')
    assert status == 400 and answer["error"].startswith("the body is not JSON")
    _still_serving(url)
    status, answer = _post(url + "/get_reward", {"query": "not a list"})
    assert status == 400 and "'query' must be a list" in answer["error"]
    status, answer = _post(url + "/get_reward", {"query": ["a", "b"], "labels": ["1"]})
    assert status == 400 and "'labels' must be a list as long as 'query' (2)" in answer["error"]
    status, answer = _post(url + "/score", {"rows": [{"question": "q"}]})
    assert status == 400 and "needs a 'completion' field" in answer["error"]
    # oversized: refused from its Content-Length, before a byte of it is read
    reply = _raw(url, b"POST /get_reward HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 413") and b"over the limit of 4096" in reply
    status, answer = _post(url + "/score", {"rows": [{"completion": "x"}] * 9})
    assert status == 413 and "9 rows is over the limit of 8" in answer["error"]
    _still_serving(url)
    # a client that goes away mid-body, and one that stops sending but still reads
    _raw(url, b'POST /get_reward HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{"query": [', read=False)
    # (one that shuts its sending side mid-body has ended the request for uvicorn: nothing is answered)
    _raw(url, b'POST /get_reward HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{"query"', shut=True)
    status, answer = _post(url + "/nowhere", {})
    assert status == 404
    # a row the mix cannot score (a multiple-choice answer for a judge of numbers), batched with
    # others: its request gets the one line, the others their scores
    choice = {"question": "Pick one", "completion": "The answer is B", "answer": "B", "answer_kind": "choice",
              "choices": [{"label": "A", "text": "x"}, {"label": "B", "text": "y"}]}  # fmt: skip
    with ThreadPoolExecutor(6) as pool:
        answers = list(
            pool.map(lambda i: _post(url + "/score", {"rows": [choice if i == 0 else {"completion": RIGHT}]}), range(6))
        )
    assert answers[0][0] == 400 and "first_error" in answers[0][1]["error"], answers[0]
    assert all(status == 200 for status, _ in answers[1:])
    _still_serving(url)


SLOW = {"slow": {"type": "tests.test_serve:slow_reward", "weight": 1.0}}


def slow_reward(completions, **kwargs):
    time.sleep(0.4)
    return [1.0] * len(completions)


def test_queue_bound_deadline_and_a_client_gone_before_its_answer(serve):
    server, url = serve(rewards=SLOW, max_queue=2, deadline_s=0.25, batch_size=1)
    results = {}

    def call(name):
        results[name] = _post(url + "/get_reward", {"query": ["a"]})

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
        time.sleep(0.02)
    for thread in threads:
        thread.join()
    statuses = sorted(status for status, _ in results.values())
    errors = " | ".join(answer.get("error", "") for _, answer in results.values())
    assert 504 in statuses and "not scored within the 0.25 s deadline" in errors, results
    assert 503 in statuses and "queue full" in errors, results
    # a client that sends its request and leaves before the answer
    body = json.dumps({"query": ["a"]}).encode()
    _raw(url, b"POST /get_reward HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body) + body, read=False)
    time.sleep(0.5)
    server.settings.deadline_s = 30
    status, answer = _post(url + "/get_reward", {"query": ["a"]})
    assert status == 200 and answer["rewards"] == [1.0]


def test_procrl_serve_command_with_a_token(tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("recipe: procrl/v1\nrewards:\n  accuracy: {weight: 1.0}\n  format: {weight: 0.2}\n")
    port = free_port()
    token = "s3cret-serve-token-value"
    env = {**os.environ, "PROCRL_SERVE_TOKEN": token}
    process = subprocess.Popen(
        [sys.executable, "-m", "procrl.launch.cli", "serve", "--recipe", str(recipe), "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                assert _get(url + "/health")[1]["status"] == "ok"
                break
            except (urllib.error.URLError, ConnectionError):
                assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
                time.sleep(0.2)
        payload = _openrlhf_payload([PROMPT + RIGHT], [PROMPT], ["12"])
        status, answer = _post(url + "/get_reward", payload)
        assert status == 401 and "bearer token" in answer["error"]
        status, answer = _post(url + "/get_reward", payload, headers={"Authorization": f"Bearer {token}x"})
        assert status == 401
        status, answer = _post(url + "/get_reward", payload, headers={"Authorization": f"Bearer {token}"})
        assert status == 200 and answer["rewards"] == [pytest.approx(1.2)]
    finally:
        process.terminate()
        out, err = process.communicate(timeout=30)
    assert f"http://127.0.0.1:{port}" in err and "bearer token required" in err
    assert "POST /get_reward 401" in err and "POST /get_reward 200 1 rows" in err
    assert token not in out + err


def test_procrl_serve_refuses_a_bad_recipe_in_one_line(tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("recipe: procrl/v1\nrewards:\n  acuracy: {weight: 1.0}\n")
    result = subprocess.run(
        [sys.executable, "-m", "procrl.launch.cli", "serve", "--recipe", str(recipe)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("procrl: error: rewards.acuracy") and len(result.stderr.strip().splitlines()) == 1


def test_procrl_serve_refuses_a_port_in_use_in_one_line(tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("recipe: procrl/v1\nrewards:\n  accuracy: {weight: 1.0}\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "procrl.launch.cli", "serve", "--recipe", str(recipe), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == f"procrl: error: --host/--port: cannot listen on 127.0.0.1:{port} (Address already in use)"
    )


# -- hostile requests: each answered in JSON with its status while the server keeps serving --

SECRET = "sk-serve-test-secret-0123456789"


def leaky_reward(completions, **kwargs):
    raise RuntimeError(f"the judge refused api_key={SECRET}")


def test_long_runs_of_special_tokens_and_spaces_are_stripped_in_linear_time(serve):
    server, url = serve()
    # 40,000 closing tokens then one character (the tokens are no suffix); 16,000 spaces; digits
    hostile = [
        PROMPT + RIGHT + "<|im_end|>" * 40_000 + "x",
        PROMPT + RIGHT + " " * 16_000 + "x",
        PROMPT + "7" * 100_000,
    ]
    for query in hostile:
        status, answer = _post(url + "/get_reward", {"query": [query], "prompts": [PROMPT]}, timeout=60)
        assert status == 200 and len(answer["rewards"]) == 1
    status, answer = _post(
        url + "/get_reward", _openrlhf_payload([PROMPT + RIGHT + " <|im_end|>\n</s> "], [PROMPT], ["12"])
    )
    assert answer["rewards"] == [pytest.approx(1.2)]
    from procrl.engines.server import _closing_special_tokens

    assert _closing_special_tokens("#### 12<|im_end|> <|endoftext|>\n") == "#### 12"
    assert _closing_special_tokens("#### 12 \n") == "#### 12 \n"  # whitespace alone stays
    assert _closing_special_tokens("a<|im_end|>b") == "a<|im_end|>b"


def test_bodies_that_would_break_the_parser_get_json_errors(serve):
    server, url = serve(max_row_chars=1000)
    deep = b'{"query": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status, answer = _post(url + "/get_reward", data=deep)
    assert status == 400 and "nested deeper than 16 levels" in answer["error"]
    status, answer = _post(url + "/get_reward", data=b'{"query": ["a"], "labels": [' + b"9" * 5000 + b"]}")
    assert status == 400 and "integer of 5000 digits" in answer["error"]
    status, answer = _post(url + "/get_reward", data=b'{"query": ["a"], "labels": [NaN]}')
    assert status == 400 and "NaN is not a JSON number" in answer["error"]
    status, answer = _post(url + "/get_reward", {"query": ["a" * 1001]})
    assert status == 413 and "'query[0]' has 1001 characters, over the limit of 1000" in answer["error"]
    status, answer = _post(url + "/score", {"rows": [{"completion": "b" * 1001}]})
    assert status == 413 and "'rows[0].completion' has 1001 characters" in answer["error"]
    status, answer = _post(url + "/get_reward", data=b"\xff\xfe binary")
    assert status == 400 and answer["error"].startswith("the body is not JSON")
    # a declared 1 GiB body waiting for "100 Continue": refused at once, never invited
    reply = _raw(url, b"POST /score HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1073741824\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 413") and b"100 Continue" not in reply and b'"error"' in reply
    status, answer = _post(url + "/nowhere", {})
    assert status == 404 and "POST /nowhere" in answer["error"]
    _still_serving(url)


def test_every_response_body_is_redacted(serve):
    from procrl.core.redaction import register_secret

    register_secret(SECRET)  # as loading a recipe registers its api_key
    server, url = serve(rewards={**REWARDS, "judge": {"type": "tests.test_serve:leaky_reward", "weight": 1.0}})
    status, answer = _post(url + "/score", {"rows": [{"completion": RIGHT, "answer": "12"}]})
    text = json.dumps(answer)
    assert status == 200 and "the judge refused api_key=" in text and SECRET not in text


def test_control_characters_in_a_path_are_escaped_in_the_log(serve, caplog):
    server, url = serve()
    with caplog.at_level("INFO", logger="procrl.engines.server"):
        status, answer = _post(url + "/score%1b%5b2J%1b%5d0;pwned%07", {})
    assert status == 404
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "\\u001b[2J" in logged and "\x1b" not in logged and "\x07" not in logged


WARMING = threading.Event()


def hangs_until_released(completions, **kwargs):
    WARMING.wait(30)
    return [1.0] * len(completions)


def test_warming_up_answers_503_until_the_mix_is_warm(serve):
    WARMING.clear()
    server, url = serve(rewards={"slow": {"type": "tests.test_serve:hangs_until_released"}}, wait_s=0.2)
    for path, payload in (("/health", None), ("/get_reward", {"query": ["a"]})):
        status, answer = _post(url + path, payload) if payload else _get_status(url + path)
        assert status == 503, (path, answer)
        assert answer.get("status") == "starting" or "the reward mix is starting" in answer.get("error", "")
    WARMING.set()
    deadline = time.monotonic() + 30
    while _get_status(url + "/health")[0] != 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    status, answer = _post(url + "/get_reward", {"query": ["a"]})
    assert status == 200 and answer["rewards"] == [1.0]


def _get_status(url):
    try:
        return _get(url)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize(
    "flag, value", [("--deadline", "inf"), ("--deadline", "1e300"), ("--batch-wait", "inf"), ("--max-rows", "0")]
)
def test_options_that_are_not_finite_and_positive_are_refused_at_start(tmp_path, flag, value):
    from procrl.core.config import ConfigError
    from procrl.engines.server import ServeSettings

    with pytest.raises(ConfigError, match="--deadline: must be a finite number > 0 .at most a day., got inf"):
        ServeSettings(deadline_s=float("inf")).check()
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("recipe: procrl/v1\nrewards:\n  accuracy: {weight: 1.0}\n")
    result = subprocess.run(
        [sys.executable, "-m", "procrl.launch.cli", "serve", "--recipe", str(recipe), "--port", "0", flag, value],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and result.stderr.startswith(f"procrl: error: {flag}: must be a finite number > 0")
