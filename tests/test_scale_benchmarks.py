"""The real-size benchmarks (benchmarks/reward_scale_bench.py, gpu_step_bench.py) and the
architectures they build: parameter counts of the configurations written in real_shapes.py
against the published ones and procrl check's table, and each script run end to end on CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import real_shapes  # noqa: E402

from procrl.models.parameters import KNOWN_ARCHITECTURES, count_parameters  # noqa: E402


def _meta_parameters(build) -> int:
    import torch

    with torch.device("meta"):
        model = build()
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    "config, labels, published",
    [
        (
            real_shapes.DEBERTA_V3_LARGE,
            3,
            435_000_000,
        ),  # MoritzLaurer/DeBERTa-v3-large-mnli-fever-anli-ling-wanli: 435M
        (real_shapes.DEBERTA_V3_BASE, 8, 184_000_000),  # DeBERTa-v3-base: 184M (86M backbone + 98M embeddings)
    ],
)
def test_deberta_configs_have_the_published_size(config, labels, published):
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    count = _meta_parameters(lambda: DebertaV2ForSequenceClassification(DebertaV2Config(**config, num_labels=labels)))
    assert count == pytest.approx(published, rel=0.005)


@pytest.mark.parametrize("shape, published", [("0.5b", 0.49e9), ("1.5b", 1.54e9), ("7b", 7.61e9)])
def test_qwen_configs_match_the_model_cards_and_procrl_check(shape, published):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = real_shapes.QWEN25[shape]
    count = _meta_parameters(
        lambda: Qwen2ForCausalLM(Qwen2Config(**{k: v for k, v in config.items() if k != "model_type"}))
    )
    assert count == pytest.approx(published, rel=0.01)
    assert count == count_parameters(config)
    table = KNOWN_ARCHITECTURES[f"qwen2.5-{shape}"]
    assert {k: config[k] for k in table} == table


def test_stand_in_tokenizers_cut_like_the_real_ones():
    """Both stand-ins land within a few percent above the pre-tokenizer lower bound on GSM8K
    solutions they were not trained on; Qwen's splits every digit."""
    from transformers import AutoTokenizer

    try:
        rows = real_shapes.gsm8k_rows(count=64)
    except FileNotFoundError as error:
        pytest.skip(str(error))
    texts = [r["answer"] for r in rows]
    for kind in ("deberta-v3", "qwen2.5"):
        tokenizer = AutoTokenizer.from_pretrained(real_shapes.local_tokenizer(kind, skip=256))
        stats = real_shapes.token_stats(tokenizer, kind, texts)
        assert 0.0 <= stats["above_lower_bound"] < 0.05, (kind, stats)
    qwen = AutoTokenizer.from_pretrained(real_shapes.local_tokenizer("qwen2.5", skip=256))
    assert [t for t in qwen.tokenize("It costs 1234 dollars") if t.strip("Ġ").isdigit()] == ["1", "2", "3", "4"]


def _run(args: list[str], timeout: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "WANDB_MODE": "offline", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-5000:])
    return result


@pytest.mark.slow
def test_reward_scale_bench_runs_every_arm_and_the_arms_agree(tmp_path, gsm8k_train):
    """The script's whole path with hidden-32 models of the real architectures (the real sizes
    take minutes per component on CPU): both arms compute the same numbers, the extrapolation
    factor is the token ratio, the table says what was measured."""
    out = tmp_path / "scale.json"
    result = _run(
        [
            str(BENCHMARKS / "reward_scale_bench.py"),
            "--models",
            "tiny",
            "--measure",
            "8",
            "--repeats",
            "2",
            "--json",
            str(out),
        ],
        timeout=1200,
    )
    data = json.loads(out.read_text())
    assert data["geometry"] == {"batch": 256, "per_rank": 32, "processes": 8, "num_generations": 8}
    components = {c["component"]: c for c in data["components"]}
    assert set(components) == {"receval_correctness", "trace", "receval_informativeness"}
    for c in components.values():
        assert c["extrapolated"] and c["measured_completions"] == 8 and c["runs"] == 2
        assert c["scale_by_tokens"] == pytest.approx(c["work_full_batch"]["tokens"] / c["work_measured"]["tokens"])
        assert c["max_difference"] < 1e-4, c
        assert c["ratio_naive_over_batched"] > 0 and c["batched_seconds_per_batch"] > 0
        assert c["work_full_batch"]["units"] > c["work_measured"]["units"]  # the whole batch was planned
    assert {m["component"] for m in data["model_free"]} == {
        "segmentation (shared)",
        "accuracy",
        "format",
        "first_error",
    }
    assert "extrapolated" in result.stdout and "NOT the real size" in result.stdout


@pytest.mark.slow
def test_gpu_step_bench_tiny_runs_both_trainers_on_cpu(tmp_path):
    """``python benchmarks/gpu_step_bench.py --shape tiny`` on CPU: a GRPO and a process-GRPO step
    through procrl's trainers, every phase timed, and the memory procrl check estimates equal
    to what the run holds (weights, gradients, optimizer states of the LoRA policy)."""
    out = tmp_path / "step.json"
    result = _run([str(BENCHMARKS / "gpu_step_bench.py"), "--shape", "tiny", "--json", str(out)], timeout=1800)
    data = json.loads(out.read_text())
    arms = {a["arm"]: a for a in data["arms"]}
    assert set(arms) == {"grpo", "process"}
    for arm in arms.values():
        assert [s["step"] for s in arm["steps"]] == [1, 2]
        for step in arm["steps"]:
            assert step["generated_tokens"] > 0 and step["generation"] > 0 and step["rewards"] > 0
            assert step["generation"] + step["rewards"] + step["logprobs_advantages"] <= step["seconds"]
            assert set(step["reward_components"]) == {"accuracy", "format", "first_error", "trace"}
        measured, estimated = arm["memory_measured"], arm["memory_estimated"]
        assert measured["base_parameters"] == estimated["parameters"]
        assert measured["trainable_parameters"] == estimated["trainable_parameters"] > 0
        assert measured["weights_frozen"] + measured["weights_trainable"] == estimated["weights"]
        assert measured["gradients"] == estimated["gradients"]
        # AdamW keeps a 4-byte step counter per tensor besides the two moments the estimate counts
        assert 0 <= measured["optimizer_states"] - estimated["optimizer_states"] <= 4 * 2 * 7 * 2
        assert set(arm["reference_rewards"]["components"]) == {"accuracy", "format", "first_error", "trace"}
    assert any("process/advantage_abs_mean" in h for h in arms["process"]["logged"])
    assert not any("process/advantage_abs_mean" in h for h in arms["grpo"]["logged"])
    assert "step time, step 2" in result.stdout and "generated tokens/s" in result.stdout
    assert "peak GPU memory not measured (no GPU)" in result.stdout


@pytest.mark.slow
def test_gpu_step_bench_generates_through_vllm_colocate(tmp_path):
    """``--generation vllm``: TRL's colocated vLLM engine (the CPU stand-in of tests/fakes/vllm)
    samples the rollouts with the policy's weights, pushed before each step's generation."""
    out, log = tmp_path / "step.json", tmp_path / "engine.jsonl"
    fakes = REPO / "tests" / "fakes"
    env_extra = {"PYTHONPATH": f"{fakes}{os.pathsep}{REPO}", "PROCRL_FAKE_VLLM_LOG": str(log)}
    env = {
        **os.environ,
        "WANDB_MODE": "offline",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
        **env_extra,
    }
    command = [
        sys.executable,
        str(BENCHMARKS / "gpu_step_bench.py"),
        "--shape",
        "tiny",
        "--generation",
        "vllm",
        "--steps",
        "2",
        "--max-completion-length",
        "16",
        "--arms",
        "grpo",
        "--json",
        str(out),
    ]
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-5000:])
    arm = json.loads(out.read_text())["arms"][0]
    assert arm["generation"] == "vLLM colocate"
    assert all(step["generated_tokens"] > 0 for step in arm["steps"])
    events = [json.loads(line)["event"] for line in log.read_text().splitlines()]
    assert events == ["init", "sync", "generate", "sync", "generate"], events
