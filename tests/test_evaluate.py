"""``procrl evaluate``: reasoning-aware accuracy against a scripted judge (a local
OpenAI-compatible server on 127.0.0.1 standing in for the judge endpoint), the report files,
and the command on CPU with the embedded tiny model."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.data import load_examples
from procrl.evaluation.evaluate import run as ev
from procrl.evaluation.evaluate.scoring import aggregate_outputs
from procrl.launch.cli import main as cli_main
from procrl.recipe import load_recipe
from procrl.rewards import RewardOutput

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "recipes" / "gsm8k_tiny_smoke.yaml"


class ScriptedJudge:
    """Chat-completions endpoint whose reply depends on a marker in the judged solution."""

    REPLIES = {
        "MARK_STEP0": "Step 0 multiplies the wrong numbers.\n\\boxed{0}",
        "MARK_STEP1": "Step 1 subtracts instead of adding.\n\\boxed{1}",
        "MARK_GARBLED": "I am not sure what to say about this one.",
    }

    def __init__(self):
        self.prompts: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                prompt = payload["messages"][-1]["content"]
                outer.prompts.append(prompt)
                content = next((r for m, r in outer.REPLIES.items() if m in prompt), "Every step holds.\n\\boxed{-1}")
                body = json.dumps(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "model": payload.get("model"),
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                        ],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def judge():
    server = ScriptedJudge()
    yield server
    server.close()


def _gold_number(answer: str) -> str:
    return answer.split("####")[-1].strip()


def test_reasoning_aware_accuracy_against_scripted_judge(judge, tmp_path):
    recipe = load_recipe(
        TINY,
        [
            f"rewards.judge={{type: first_error, backend: openai, base_url: '{judge.base_url}', "
            "model: judge, max_retries: 0}",
            "rewards.trace=false",
        ],
    )
    golds = [_gold_number(a) for a in load_examples(recipe.data, "test").select(range(5))["answer"]]
    wrong = str(int(golds[2]) + 1)
    completions = [
        f"We read the problem.\n\nWe combine the numbers.\n\nThe answer is {golds[0]}.",  # right, sound
        f"We read the problem. MARK_STEP0\n\nWe combine the numbers.\n\nThe answer is {golds[1]}.",  # right, error at 0
        f"We read the problem.\n\nWe combine the numbers.\n\nThe answer is {wrong}.",  # wrong answer, judge: sound
        "We read the problem. MARK_GARBLED\n\n"
        f"We combine the numbers.\n\nThe answer is {golds[3]}.",  # right, no verdict
        f"We read the problem.\n\nWe combine the numbers. MARK_STEP1\n\nThe answer is {golds[4]}.",  # right, error at 1
    ]
    report = ev.evaluate(recipe, limit=5, output_dir=tmp_path, completions=completions)

    assert len(judge.prompts) == 5
    assert report["n"] == 5
    assert report["answer_accuracy"] == pytest.approx(4 / 5)
    assert report["answer_accuracy_stderr"] == pytest.approx(math.sqrt(0.8 * 0.2 / 5))  # binomial
    assert report["reasoning_aware_accuracy"] == pytest.approx(1 / 5)  # only the first: right and judged sound
    assert report["reasoning_aware_accuracy_stderr"] == pytest.approx(math.sqrt(0.2 * 0.8 / 5))
    assert report["inflation"] == pytest.approx(3 / 5)
    assert report["process_error_rate"] == pytest.approx(2 / 3)  # right and judged: 0, 1, 4; flawed: 1, 4
    assert report["first_error_unjudged"] == 1
    assert report["first_error_component"] == "judge"
    assert report["first_error"]["index_histogram"] == [1, 1]
    assert report["components"]["accuracy"]["mean"] == pytest.approx(4 / 5)
    assert report["components"]["judge"]["none"] == 1  # the garbled verdict has no score

    on_disk = json.loads((tmp_path / "report.json").read_text())
    assert on_disk["reasoning_aware_accuracy"] == pytest.approx(1 / 5)
    assert {"component_distributions.png", "first_error_histogram.png"} <= set(on_disk["plots"])
    for name in on_disk["plots"]:
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG")
    markdown = (tmp_path / "report.md").read_text()
    assert (
        "| reasoning_aware_accuracy | 0.2000 ± 0.1789 |" in markdown and "| inflation | 0.6000 ± 0.2191 |" in markdown
    )
    rows = [json.loads(line) for line in (tmp_path / "completions.jsonl").read_text().splitlines()]
    assert [r["first_error"] for r in rows] == [-1, 0, -1, None, 1]


def test_without_a_judge_reasoning_aware_accuracy_is_null(tmp_path):
    recipe = load_recipe(TINY, ["rewards.trace=false"])
    golds = [_gold_number(a) for a in load_examples(recipe.data, "test").select(range(2))["answer"]]
    report = ev.evaluate(recipe, limit=2, output_dir=tmp_path, completions=[f"So {golds[0]}.", "No idea."])
    assert report["answer_accuracy"] == pytest.approx(0.5)
    assert report["reasoning_aware_accuracy"] is None and report["inflation"] is None
    assert any("no first_error component" in note for note in report["notes"])
    assert report["plots"] == ["component_distributions.png"]


def test_pass_and_majority_at_k_from_sampled_completions(judge, tmp_path):
    """3 problems x 4 samples with hand-computed pass@k, maj@4 and their reasoning-aware variants."""
    recipe = load_recipe(
        TINY,
        [
            f"rewards.judge={{type: first_error, backend: openai, base_url: '{judge.base_url}', "
            "model: judge, max_retries: 0}",
            "rewards.trace=false",
        ],
    )
    golds = [int(_gold_number(a)) for a in load_examples(recipe.data, "test").select(range(3))["answer"]]

    def solution(answer, mark=""):
        return f"We read the problem.{mark}\n\nWe combine the numbers.\n\nThe answer is {answer}."

    g0, g1, g2 = golds
    completions = [
        solution(g0),
        solution(g0, " MARK_STEP0"),
        solution(g0 + 1),
        solution(g0 + 2),  # 2 right (1 sound); vote g0
        solution(g1 + 1),
        solution(g1 + 1),
        solution(g1 + 1),
        solution(g1 + 1),  # none right; vote wrong
        solution(g2),
        solution(g2 + 1),
        solution(g2 + 2),
        "I give up.",  # 1 right, sound; a 3-way tie: first seen wins
    ]
    report = ev.evaluate(
        recipe,
        limit=3,
        output_dir=tmp_path,
        completions=completions,
        sampling=ev.Sampling(temperature=1.0, num_samples=4),
    )
    sampled = report["sampled"]
    assert report["n"] == 3 and report["num_samples"] == 4 and report["completions"] == 12
    # per problem (n=4): c = 2, 0, 1; sound s = 1, 0, 1
    assert report["answer_accuracy"] == pytest.approx(0.25) == sampled["pass@1"]
    assert report["answer_accuracy_stderr"] == pytest.approx(math.sqrt(((0.25) ** 2 + 0.25**2 + 0) / 3 / 3))
    assert sampled["pass@2"] == pytest.approx((1 - 1 / 6 + 0 + 1 - 3 / 6) / 3)  # 1 - C(n-c,2)/C(4,2)
    assert sampled["pass@4"] == pytest.approx(2 / 3)
    assert sampled["reasoning_aware_pass@1"] == pytest.approx(1 / 6) == report["reasoning_aware_accuracy"]
    assert sampled["reasoning_aware_pass@2"] == pytest.approx((0.5 + 0 + 0.5) / 3)
    assert sampled["reasoning_aware_pass@4"] == pytest.approx(2 / 3)
    assert sampled["maj@4"] == pytest.approx(2 / 3)
    assert sampled["maj@4_stderr"] == pytest.approx(math.sqrt(2 / 3 * 1 / 3 / 3))  # binomial over problems
    assert sampled["reasoning_aware_maj@4"] == pytest.approx((1 / 2 + 0 + 1) / 3)  # share of sound voters
    assert report["inflation"] == pytest.approx(0.25 - 1 / 6)
    assert report["process_error_rate"] == pytest.approx(1 / 3)
    rows = [json.loads(line) for line in (tmp_path / "completions.jsonl").read_text().splitlines()]
    assert [(r["problem"], r["sample"]) for r in rows[3:6]] == [(0, 3), (1, 0), (1, 1)]
    markdown = (tmp_path / "report.md").read_text()
    assert "| pass@2 | 0.4444 ± " in markdown and "| reasoning_aware_maj@4 | 0.5000 ± " in markdown
    with pytest.raises(ConfigError, match="12 completions for 3 problems x 3 samples"):
        ev.evaluate(
            recipe,
            limit=3,
            output_dir=tmp_path,
            completions=completions,
            sampling=ev.Sampling(temperature=1.0, num_samples=3),
        )


def test_sampling_settings_are_checked():
    with pytest.raises(ConfigError, match="identical completions"):
        ev.Sampling(num_samples=4).validate()
    with pytest.raises(ConfigError, match="--top-p"):
        ev.Sampling(temperature=0.7, top_p=0.0).validate()
    with pytest.raises(ConfigError, match="--temperature"):
        ev.Sampling(temperature=-1.0).validate()


def test_aggregate_outputs_merges_batches():
    first = {
        "t": RewardOutput(
            scores=[0.5, None],
            details=[{"a": 1}, {"a": 2}],
            metrics={"m": 1.0},
            extras={"transition_counts": [[1, 0], [0, 2]], "labels": ["x", "y"]},
            failures={"no_verdict": 1},
        )
    }
    second = {
        "t": RewardOutput(
            scores=[1.0], metrics={"m": 4.0}, extras={"transition_counts": [[0, 3], [1, 0]]}, failures={"no_verdict": 2}
        )
    }
    merged = aggregate_outputs([first, second])["t"]
    assert merged.scores == [0.5, None, 1.0]
    assert merged.details == [{"a": 1}, {"a": 2}, None]
    assert merged.metrics["m"] == pytest.approx((1.0 * 2 + 4.0 * 1) / 3)  # weighted by batch size
    assert merged.extras["transition_counts"] == [[1, 3], [1, 2]]
    assert merged.failures == {"no_verdict": 3}


def test_evaluate_command_with_tiny_model(tmp_path, capsys):
    out = tmp_path / "eval"
    code = cli_main(
        [
            "evaluate",
            "--recipe",
            str(TINY),
            "--model",
            "procrl:tiny-qwen2",
            "--split",
            "test",
            "--limit",
            "8",
            "--output-dir",
            str(out),
            "--max-new-tokens",
            "16",
            "--set",
            "rewards.judge={type: first_error, backend: arithmetic}",  # the recipe has accuracy, format, trace
        ]
    )
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    for key in ("answer_accuracy", "reasoning_aware_accuracy", "inflation", "n"):
        assert key in report
    assert report["n"] == 8 and report["generation"]["backend"] == "transformers"
    # by hand from the completions written: right answers, and right answers the judge found no error in
    rows = [json.loads(line) for line in (out / "completions.jsonl").read_text().splitlines()]
    right = [row["correct"] is not None and row["correct"] >= 1.0 for row in rows]
    assert report["answer_accuracy"] == pytest.approx(sum(right) / 8)
    assert report["reasoning_aware_accuracy"] == pytest.approx(
        sum(r and row["first_error"] == -1 for r, row in zip(right, rows)) / 8
    )
    assert report["inflation"] == pytest.approx(report["answer_accuracy"] - report["reasoning_aware_accuracy"])
    assert set(report["components"]) == {"accuracy", "format", "judge", "trace"}
    assert len(report["trace"]["trace"]["transition_counts"]) == 8
    # TRACE's distribution, by hand from the scores written per completion
    trace = sorted(row["rewards"]["trace"] for row in rows if row["rewards"]["trace"] is not None)
    table = report["trace"]["trace"]
    assert table["score_bin_edges"][0] == 0.0 and table["score_bin_edges"][-1] == 1.0
    assert table["score_histogram"] == [
        sum(a <= v < b or (b == 1.0 and v == 1.0) for v in trace)
        for a, b in zip(table["score_bin_edges"], table["score_bin_edges"][1:])
    ]
    assert table["score_quartiles"][0] == trace[0] and table["score_quartiles"][-1] == trace[-1]
    assert "TRACE per completion: min / 25% / median / 75% / max" in (out / "report.md").read_text()
    for name in ("component_distributions.png", "first_error_histogram.png", "trace_transitions.png"):
        assert (out / name).read_bytes().startswith(b"\x89PNG"), name
    assert len((out / "completions.jsonl").read_text().splitlines()) == 8
    assert "reasoning_aware_accuracy" in capsys.readouterr().out


def test_sampled_evaluation_with_tiny_model_is_seeded(tmp_path, capsys):
    def run(seed: int, name: str) -> tuple[dict, list[str]]:
        out = tmp_path / name
        code = cli_main(
            [
                "evaluate",
                "--recipe",
                str(TINY),
                "--model",
                "procrl:tiny-qwen2",
                "--split",
                "test",
                "--limit",
                "3",
                "--output-dir",
                str(out),
                "--max-new-tokens",
                "8",
                "--temperature",
                "1.0",
                "--num-samples",
                "3",
                "--seed",
                str(seed),
                "--set",
                "rewards.trace=false",
            ]
        )
        assert code == 0
        rows = (out / "completions.jsonl").read_text().splitlines()
        return json.loads((out / "report.json").read_text()), [json.loads(r)["completion"] for r in rows]

    report, first = run(7, "a")
    _, again = run(7, "b")
    _, other = run(8, "c")
    assert len(first) == 9 and first == again and first != other
    assert report["generation"]["seed"] == 7 and report["generation"]["temperature"] == 1.0
    assert not report["generation"]["greedy"] and report["num_samples"] == 3
    assert {"pass@1", "pass@2", "pass@3", "maj@3", "pass@1_stderr", "maj@3_stderr"} <= set(report["sampled"])
    out = capsys.readouterr().out
    assert "3 samples per problem, temperature 1.0" in out and "pass@3" in out and "±" in out
    code = cli_main(["evaluate", "--recipe", str(TINY), "--model", "procrl:tiny-qwen2", "--num-samples", "2"])
    assert code == 2 and "--temperature > 0" in capsys.readouterr().err


def test_local_training_file_is_not_evaluated_as_test(tmp_path):
    train_file = tmp_path / "train.jsonl"
    train_file.write_text(json.dumps({"question": "1 + 1?", "answer": "#### 2"}) + "\n")
    recipe = load_recipe(TINY, [f"data.dataset={train_file}", "rewards.trace=false"])
    with pytest.raises(ConfigError, match="looks like training data"):
        ev.evaluate(recipe, output_dir=tmp_path / "out", completions=["2"])
    test_file = tmp_path / "test.jsonl"
    test_file.write_text(json.dumps({"question": "1 + 1?", "answer": "#### 2"}) + "\n")
    report = ev.evaluate(
        load_recipe(TINY, [f"data.dataset={test_file}", "rewards.trace=false"]),
        output_dir=tmp_path / "out",
        completions=["The answer is 2."],
    )
    assert report["answer_accuracy"] == 1.0 and "local file" in report["notes"][0]


def test_wandb_logging_of_the_report(judge, tmp_path, monkeypatch):
    from tests.helpers.wandb_records import read_records, run_file

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_DIR", raising=False)
    monkeypatch.chdir(tmp_path)  # W&B's files go under the report's directory, not the working one
    recipe = load_recipe(
        TINY,
        [
            f"rewards.judge={{type: first_error, backend: openai, base_url: '{judge.base_url}', "
            "model: judge, max_retries: 0}"
        ],
    )
    golds = [_gold_number(a) for a in load_examples(recipe.data, "test").select(range(2))["answer"]]
    completions = [
        f"We add.\n\nWe multiply.\n\nThe answer is {golds[0]}.",
        f"We add. MARK_STEP1\n\nWe multiply.\n\nThe answer is {golds[1]}.",
    ]
    report = ev.evaluate(recipe, limit=2, output_dir=tmp_path / "out", completions=completions, log_wandb=True)
    import wandb

    wandb.teardown()  # the in-process service may still be writing the run file after finish()
    assert report["reasoning_aware_accuracy"] == pytest.approx(0.5)
    items = {}
    assert not (tmp_path / "wandb").exists()
    for record in read_records(run_file(tmp_path / "out" / "wandb")):
        if record.WhichOneof("record_type") == "history":
            items.update(
                {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            )
    assert items["eval/reasoning_aware_accuracy"] == pytest.approx(0.5)
    assert items["eval/inflation"] == pytest.approx(0.5)
    assert items["eval/answer_accuracy_stderr"] == pytest.approx(0.0)
    assert items["eval/reasoning_aware_accuracy_stderr"] == pytest.approx(math.sqrt(0.5 * 0.5 / 2))
    assert items["eval/pass@1"] == pytest.approx(1.0)
    assert items["eval/trace_transitions/_type"] == "image-file"
    assert items["eval/first_error_histogram/_type"] == "image-file"
    assert items["eval/completions/_type"] == "table-file"


@pytest.mark.slow
def test_evaluate_through_vllm_matches_transformers_greedy(tmp_path):
    """``--backend vllm`` with the vLLM engine double of tests/fakes (CI has no GPU): the same
    greedy completions as the transformers backend, and the backend named in the report."""
    import os
    import subprocess
    import sys

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from procrl.models.loading import ensure_tiny_model

    # the tiny random model's greedy output is one repeated token; noise on its matrices makes it
    # depend on the prompt, so that equal completions mean something
    model_dir = tmp_path / "model"
    model = AutoModelForCausalLM.from_pretrained(ensure_tiny_model())
    noise = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() == 2:
                param.add_(torch.randn(param.shape, generator=noise) * 0.3)
    model.save_pretrained(model_dir)
    AutoTokenizer.from_pretrained(ensure_tiny_model()).save_pretrained(model_dir)
    fakes = REPO / "tests" / "fakes"
    completions = {}
    for backend in ("vllm", "transformers"):
        out = tmp_path / backend
        env = {**os.environ, "PYTHONPATH": f"{fakes}:{REPO}", "PROCRL_FAKE_VLLM_LOG": str(tmp_path / "engine.jsonl")}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "procrl",
                "evaluate",
                "--recipe",
                str(TINY),
                "--model",
                str(model_dir),
                "--split",
                "test",
                "--limit",
                "6",
                "--output-dir",
                str(out),
                "--max-new-tokens",
                "12",
                "--backend",
                backend,
                "--set",
                "rewards.trace=false",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads((out / "report.json").read_text())
        assert report["generation"]["backend"] == backend and report["n"] == 6
        completions[backend] = [
            json.loads(line)["completion"] for line in (out / "completions.jsonl").read_text().splitlines()
        ]
    assert completions["vllm"] == completions["transformers"]
    assert len(set(completions["vllm"])) == 6 and all(c.strip() for c in completions["vllm"])
    events = [json.loads(line)["event"] for line in (tmp_path / "engine.jsonl").read_text().splitlines()]
    assert events == ["init", "generate"]  # one engine, one batched call, only for the vllm backend


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 2 / 5),  # 1 - C(3,1)/C(5,1)
        (5, 2, 2, 7 / 10),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (5, 2, 3, 9 / 10),  # 1 - C(3,3)/C(5,3) = 1 - 1/10
        (5, 2, 4, 1.0),  # fewer than k wrong samples: a right one is always drawn
        (4, 1, 2, 1 / 2),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
        (10, 3, 5, 11 / 12),  # 1 - C(7,5)/C(10,5) = 1 - 21/252
        (10, 0, 5, 0.0),
        (1, 1, 1, 1.0),
    ],
)
def test_pass_at_k_hand_computed(n, c, k, expected):
    from procrl.observe.eval_metrics import pass_at_k

    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_matches_the_binomial_formula_and_rejects_bad_input():
    from procrl.observe.eval_metrics import pass_at_k

    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)
    assert pass_at_k(200, 3, 100) == pytest.approx(1 - math.comb(197, 100) / math.comb(200, 100))  # no overflow
    for bad in ((4, 5, 1), (4, 2, 0), (4, 2, 5)):
        with pytest.raises(ValueError):
            pass_at_k(*bad)


def test_majority_vote_and_standard_error():
    from procrl.observe.eval_metrics import default_ks, majority_answer, standard_error

    assert majority_answer([3.0, 4.0, 4.0, None, 3.0]) == 3.0  # tie: the answer seen first
    assert majority_answer([None, 2.0000000001, 2.0, 5.0]) == pytest.approx(2.0)  # equal within 1e-6
    assert majority_answer([None, None]) is None
    assert standard_error([1, 0, 1, 1]) == pytest.approx(math.sqrt(0.75 * 0.25 / 4))  # binomial
    assert standard_error([]) is None
    assert default_ks(1) == [1] and default_ks(4) == [1, 2, 4] and default_ks(10) == [1, 2, 4, 8, 10]


def test_evaluation_judge_outside_the_trained_mix(tmp_path):
    """Reasoning-aware accuracy judged by a judge the trained mix does not pay for (data.eval_judge,
    --judge): a true but off-path calculation with the right answer passes the arithmetic judge the
    policy was trained on, not the reference judge."""
    trained = ["rewards.trace=false", "rewards.first_error={type: first_error, backend: arithmetic, weight: 0.5}"]
    answers = list(load_examples(load_recipe(TINY, trained).data, "test").select(range(2))["answer"])
    completions = [answers[0], f"First, 1000 + 1 = 1001.\n#### {_gold_number(answers[1])}"]

    default = ev.evaluate(load_recipe(TINY, trained), limit=2, output_dir=tmp_path / "a", completions=completions)
    assert default["first_error_component"] == "first_error" and default["evaluation_judge"]["trained_on"] is True
    assert default["reasoning_aware_accuracy"] == pytest.approx(1.0)  # both right, both calculations true
    assert any("is in the trained mix" in note for note in default["notes"])

    recipe = load_recipe(TINY, ev.judge_overrides("reference", trained))
    assert recipe.data.eval_judge == "eval_judge"
    assert {s.name: s.weight for s in recipe.rewards}["eval_judge"] == 0.0
    report = ev.evaluate(recipe, limit=2, output_dir=tmp_path / "b", completions=completions)
    assert report["first_error_component"] == "eval_judge"
    assert report["evaluation_judge"] == {
        "component": "eval_judge",
        "type": "first_error",
        "weight": 0.0,
        "trained_on": False,
    }
    assert report["reasoning_aware_accuracy"] == pytest.approx(0.5)  # 1001 is off the gold's path
    assert report["answer_accuracy"] == pytest.approx(1.0)
    assert not any("is in the trained mix" in note for note in report["notes"])
    # the weight-0 judge adds nothing to the reward
    assert report["reward"]["mean"] == pytest.approx(default["reward"]["mean"])
    rows = [json.loads(line) for line in (tmp_path / "b" / "completions.jsonl").read_text().splitlines()]
    assert [r["first_error"] for r in rows] == [-1, 0]

    # a component of the recipe by name, its settings through --set
    named = load_recipe(
        TINY,
        ev.judge_overrides(
            "eval_judge",
            [*trained, "rewards.eval_judge={type: first_error, backend: reference, weight: 0.0, max_depth: 2}"],
        ),
    )
    assert named.data.eval_judge == "eval_judge"
    with pytest.raises(
        ConfigError,
        match=r"data\.eval_judge: no first_error component named 'first_eror' "
        r"\(did you mean 'first_error'\?\)",
    ):
        load_recipe(TINY, ev.judge_overrides("first_eror", trained))


def test_default_output_dir_is_named_after_the_model(tmp_path):
    recipe = load_recipe(TINY, ["rewards.trace=false"], str(tmp_path / "out"))
    run = tmp_path / "run"
    (run / "checkpoint-4").mkdir(parents=True)
    (run / "run_info.json").write_text("{}")
    foreign = tmp_path / "models" / "my-model"
    foreign.mkdir(parents=True)
    assert ev.default_output_dir(recipe, str(run)) == run / "eval-test"  # a procrl run keeps its evaluations
    assert ev.default_output_dir(recipe, str(run / "checkpoint-4"), "train") == run / "eval-train-checkpoint-4"
    out = tmp_path / "out"
    assert ev.default_output_dir(recipe, "procrl:tiny-reasoner") == out / "eval-test-procrl-tiny-reasoner"
    assert ev.default_output_dir(recipe, "Qwen/Qwen2.5-7B-Instruct") == out / "eval-test-Qwen--Qwen2.5-7B-Instruct"
    assert (
        ev.default_output_dir(recipe, "org/repo", "test", "model-Q4_K_M.gguf")
        == out / "eval-test-org--repo-model-Q4_K_M"
    )
    assert ev.default_output_dir(recipe, str(foreign)) == out / "eval-test-my-model"
    assert ev.default_output_dir(recipe) == out / "eval-test-procrl-tiny-qwen2"  # the recipe's policy


def test_start_and_trained_model_leave_two_reports(tmp_path, capsys, monkeypatch):
    """The Quick start's two evaluates (the start model, then the trained run) without --output-dir."""
    import shutil

    from procrl.models.tiny import ensure_tiny_model

    monkeypatch.setattr(
        ev, "generate_completions", lambda source, prompts, *a, **k: (["#### 1"] * len(prompts), "transformers")
    )
    run = tmp_path / "out"  # the recipe's output_dir, as after procrl train
    shutil.copytree(ensure_tiny_model(), run)
    (run / "run_info.json").write_text("{}")
    argv = [
        "evaluate",
        "--recipe",
        str(TINY),
        "--set",
        "rewards.trace=false",
        "--set",
        f"output_dir={run}",
        "--limit",
        "2",
    ]
    assert cli_main([*argv, "--model", "procrl:tiny-qwen2"]) == 0
    assert f"wrote {run / 'eval-test-procrl-tiny-qwen2' / 'report.json'}" in capsys.readouterr().out
    assert cli_main([*argv, "--model", str(run)]) == 0
    assert f"wrote {run / 'eval-test' / 'report.json'}" in capsys.readouterr().out
    first = json.loads((run / "eval-test-procrl-tiny-qwen2" / "report.json").read_text())
    second = json.loads((run / "eval-test" / "report.json").read_text())
    assert (first["model"], second["model"]) == ("procrl:tiny-qwen2", str(run))
    assert cli_main([*argv, "--model", str(run)]) == 0  # the same model again: its own earlier report is replaced
    # a folder procrl did not write is never written into, the default dir or a given one
    for directory, extra in (
        (run / "eval-train", ["--split", "train"]),
        (tmp_path / "mine", ["--output-dir", str(tmp_path / "mine")]),
    ):
        directory.mkdir()
        (directory / "report.md").write_text("my notes")
        capsys.readouterr()
        assert cli_main([*argv, "--model", str(run), *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"procrl: error: --output-dir: {directory} holds report.md, which procrl did not write")
        assert (directory / "report.md").read_text() == "my notes" and not (directory / "report.json").exists()
