"""The openai first-error backend against a local OpenAI-compatible server started by the test
(the stand-in for vLLM serve / OpenAI): scripted verdicts, delays, 500s, 429s, malformed JSON,
replies without \\boxed{}, a 404, a closed port."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from procrl.rewards import RewardBatch, RewardMix, parse_rewards
from procrl.rewards.judges import FAILURE_KINDS
from procrl.testing.openai_server import Reply, ScriptedOpenAIServer
from tests.helpers.launch import free_port

COMPLETION = "First 3 + 4 = 7.\nThen 7 * 2 = 14.\nFinally 14 - 1 = 13.\n#### 13"  # three steps


def responder(prompt: str, attempt: int) -> Reply:
    case = re.search(r"CASE (\S+)", prompt).group(1)
    if case.startswith("box-"):
        return Reply(f"Checked every step. \\boxed{{{case[4:]}}}\nCategory: Reasoning")
    if case == "500-then-ok":
        return Reply(status=500) if attempt == 0 else Reply("Step 1 is wrong. \\boxed{1}")
    if case == "429-then-ok":
        return Reply(status=429, headers={"Retry-After": "0"}) if attempt < 2 else Reply("\\boxed{0}")
    if case == "always-503":
        return Reply(status=503)
    if case == "404":
        return Reply(status=404)
    if case == "malformed":
        return Reply(body=b'{"choices": [{"message": ')
    if case == "wrong-shape":
        return Reply(body=b'{"result": "no choices here"}')
    if case == "reasoning-content":  # a reasoning server: the reply is in reasoning_content
        return Reply(
            body=json.dumps({"choices": [{"message": {"content": None, "reasoning_content": "\\boxed{1}"}}]}).encode()
        )
    if case == "no-box":
        return Reply("The earliest mistake is in step 1.")
    if case == "slow":
        return Reply("\\boxed{2}", delay_s=1.0)
    if case == "slow-once":
        return Reply("\\boxed{2}", delay_s=1.0) if attempt == 0 else Reply("\\boxed{2}")
    if case == "delay":
        return Reply("\\boxed{-1}", delay_s=0.1)
    raise AssertionError(case)


@pytest.fixture
def server():
    with ScriptedOpenAIServer(responder) as running:
        yield running


def _mix(base_url: str, **settings):
    spec = {
        "backend": "openai",
        "model": "judge",
        "base_url": base_url,
        "backoff_s": 0.01,
        "timeout_s": 0.5,
        "max_retries": 2,
        **settings,
    }
    return RewardMix(parse_rewards({"first_error": spec}))


def _batch(cases: list[str], golds=None) -> RewardBatch:
    return RewardBatch.from_texts([COMPLETION] * len(cases), [f"Question CASE {c}" for c in cases], golds)


def test_scripted_verdicts_failures_retries_and_fallback(server):
    cases = [
        "box-1",
        "box--1",
        "500-then-ok",
        "429-then-ok",
        "always-503",
        "404",
        "malformed",
        "wrong-shape",
        "no-box",
        "slow",
        "slow-once",
        "box-7",
    ]
    mix = RewardMix(
        parse_rewards(
            {
                "first_error": {
                    "backend": "openai",
                    "model": "judge",
                    "base_url": server.base_url,
                    "backoff_s": 0.01,
                    "timeout_s": 0.5,
                    "max_retries": 2,
                    "fallback": -0.25,
                    "categories": True,
                    "penalty": "position",
                }
            }
        )
    )
    output = mix.compute("first_error", _batch(cases))  # must not raise
    details = {case: d for case, d in zip(cases, output.details)}
    scores = dict(zip(cases, output.scores))

    # right indices parsed; penalty -(n-k)/n over the 3 steps
    assert details["box-1"]["index"] == 1 and scores["box-1"] == pytest.approx(-2 / 3)
    assert details["box-1"]["category"] == "Reasoning"
    assert details["box--1"]["index"] == -1 and scores["box--1"] == 0.0
    assert details["500-then-ok"]["index"] == 1 and details["429-then-ok"]["index"] == 0
    assert details["slow-once"]["index"] == 2  # timed out once, then answered
    assert output.step_scores[cases.index("box-1")] == [0.0, -1.0, 0.0]

    # retries happen: 429/5xx/timeouts retried up to max_retries, other 4xx not retried
    assert server.attempts("CASE 500-then-ok") == 2
    assert server.attempts("CASE 429-then-ok") == 3
    assert server.attempts("CASE always-503") == 3
    assert server.attempts("CASE slow\n") + server.attempts("CASE slow-once") >= 3 + 2
    assert server.attempts("CASE 404") == 1
    assert server.attempts("CASE malformed") == 3  # a 200 that is not a chat completion is retried
    assert output.metrics["judge_retries"] >= 2 + 1 + 2 + 2 + 1

    # failures counted by kind, failed samples get the fallback
    expected = {"http_error": 2, "bad_response": 2, "no_verdict": 1, "timeout": 1, "out_of_range": 1}
    assert {k: v for k, v in output.failures.items() if v} == expected
    assert set(FAILURE_KINDS) <= set(output.failures)
    for case, kind in [
        ("always-503", "http_error"),
        ("404", "http_error"),
        ("malformed", "bad_response"),
        ("wrong-shape", "bad_response"),
        ("no-box", "no_verdict"),
        ("slow", "timeout"),
        ("box-7", "out_of_range"),
    ]:
        assert details[case]["verdict"] == kind and details[case]["index"] is None
        assert scores[case] == -0.25
    assert output.metrics["no_verdict_fraction"] == pytest.approx(1 / 12)
    assert output.metrics["failed_fraction"] == pytest.approx(7 / 12)


def test_concurrency_is_bounded_and_used(server):
    mix = _mix(server.base_url, concurrency=4)
    output = mix.compute("first_error", _batch(["delay"] * 16))
    assert output.scores == [0.0] * 16
    assert 2 <= server.max_in_flight <= 4  # not sequential, and never more than the bound


def test_cache_keyed_by_model_and_prompt(server):
    mix = _mix(server.base_url)
    mix.compute("first_error", _batch(["box-2", "box-0"]))
    assert len(server.requests) == 2
    second = mix.compute("first_error", _batch(["box-2", "box-0"]))  # a new batch, same prompts
    assert len(server.requests) == 2 and second.metrics["judge_cache_hits"] == 2
    assert [d["index"] for d in second.details] == [2, 0]
    other_model = _mix(server.base_url, model="judge-2")
    other_model.compute("first_error", _batch(["box-2"]))
    assert len(server.requests) == 3 and server.requests[-1]["model"] == "judge-2"


def test_api_key_read_from_the_named_environment_variable(server, monkeypatch):
    monkeypatch.setenv("TEST_JUDGE_KEY", "sk-test-123")
    mix = _mix(server.base_url, api_key_env="TEST_JUDGE_KEY")
    mix.compute("first_error", _batch(["box-1"]))
    assert server.requests[-1]["authorization"] == "Bearer sk-test-123"
    assert "sk-test-123" not in repr(mix.specs["first_error"].settings)
    monkeypatch.delenv("TEST_JUDGE_KEY")
    mix.compute("first_error", _batch(["box-0"]))
    assert server.requests[-1]["authorization"] is None


def test_reference_mode_shows_the_gold_answer(server):
    _mix(server.base_url).compute("first_error", _batch(["box-1"], golds=["#### 4242"]))
    assert "4242" not in server.requests[-1]["prompt"]
    _mix(server.base_url, reference=True).compute("first_error", _batch(["box-0"], golds=["#### 4242"]))
    assert "4242" in server.requests[-1]["prompt"]
    assert "<step_0>\nFirst 3 + 4 = 7.\n</step_0>" in server.requests[-1]["prompt"]


def test_unreachable_server_counts_connection_errors():
    port = free_port()  # nothing listens there
    output = _mix(f"http://127.0.0.1:{port}/v1", max_retries=1).compute("first_error", _batch(["box-1", "box-2"]))
    assert output.scores == [None, None]
    assert output.failures["connection_error"] == 2


def test_trl_reward_function_is_async_and_logs_failure_counts(server):
    mix = _mix(server.base_url)
    reward = mix.reward_function("first_error")
    assert asyncio.iscoroutinefunction(reward)
    logged = {}
    prompts = ["Question CASE box-1", "Question CASE no-box"]
    values = asyncio.run(
        reward(
            prompts=prompts,
            completions=[COMPLETION] * 2,
            completion_ids=None,
            question=prompts,
            answer=["13", "13"],
            log_metric=logged.__setitem__,
        )
    )
    assert values == [-1.0, None]  # flat penalty (the default); None: TRL's no opinion, resolved after the gather
    assert logged["rewards/first_error/failures/no_verdict"] == 1.0
    assert logged["rewards/first_error/failures/timeout"] == 0.0  # zeros are logged too
    assert logged["rewards/first_error/error_found_fraction"] == 1.0


def test_eval_judge_against_the_server(server, tmp_path, capsys):
    from procrl.launch.cli import main

    data = tmp_path / "pb.jsonl"
    records = [
        {"problem": "CASE box-1", "steps": ["a", "b", "c"], "label": 1},
        {"problem": "CASE box-0", "steps": ["a", "b"], "label": 1},
        {"problem": "CASE box--1", "steps": ["a", "b"], "label": -1},
        {"problem": "CASE no-box", "steps": ["a"], "label": -1},
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        "recipe: procrl/v1\nmodel: {name_or_path: procrl:tiny-qwen2}\ndata: {dataset: synthetic}\n"
        f"rewards:\n  first_error: {{backend: openai, model: judge, base_url: '{server.base_url}', max_retries: 0}}\n"
    )
    assert main(["eval-judge", "--recipe", str(recipe), "--data", str(data), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["acc_err"] == 0.5 and report["acc_cor"] == 0.5 and report["f1"] == pytest.approx(0.5)
    assert report["no_verdict"] == 1 and report["failures"]["no_verdict"] == 1
    assert report["confusion"]["error_by_label"]["1"] == {
        "n": 2,
        "exact": 1,
        "early": 1,
        "late": 0,
        "missed": 0,
        "no_verdict": 0,
    }


def test_reply_in_reasoning_content_is_read(server):
    output = _mix(server.base_url).compute("first_error", _batch(["reasoning-content"]))
    assert output.details[0]["index"] == 1


def test_tls_context_built_once_for_https_and_skipped_for_http():
    import ssl

    from procrl.rewards.judges.openai import OpenAIJudge
    from procrl.rewards.judges.settings import OpenAISettings

    secure = OpenAIJudge(OpenAISettings(model="judge", base_url="https://judge.example/v1"))
    assert isinstance(secure._tls(), ssl.SSLContext) and secure._tls() is secure._tls()
    assert OpenAIJudge(OpenAISettings(model="judge", base_url="http://127.0.0.1:8000/v1"))._tls() is False
