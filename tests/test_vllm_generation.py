"""Generation through vLLM (``trainer.use_vllm: true``, ``vllm_mode: colocate``) for procrl's PPO
and process-supervised GRPO, on CPU.

The vLLM engine is replaced by the test double in tests/fakes/vllm (CI has no GPU); everything
else is the real code: procrl's trainers, TRL's ``VLLMGeneration`` (weight gathering under
ZeRO-3, LoRA merging, the push through ``load_weights``), accelerate and DeepSpeed (ZeRO-3 over
2 CPU ranks). The double
logs a digest of the weights it holds at each sync and generation, so the tests check that the
engine samples with the policy's current weights: at the rollout after optimizer step 2 it
holds exactly the weights saved in ``checkpoint-2``.

Not covered here: server mode (its NCCL weight transfer needs CUDA; see tests/test_vllm_gpu.py
for the real-vLLM runs a GPU machine does)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from procrl.recipe import load_recipe
from tests.helpers.training import launcher, run_train
from tests.helpers.weights_digest import weights_digest

REPO = Path(__file__).resolve().parent.parent
FAKES = REPO / "tests" / "fakes"

COMMON = [
    "--set",
    "trainer.use_vllm=true",
    "--set",
    "trainer.vllm_mode=colocate",
    "--set",
    "trainer.save_steps=2",
    "--set",
    "rewards.first_error={weight: 0.5}",
]
PPO = [
    "--set",
    "trainer.algorithm=ppo",
    "--set",
    "trainer.credit=process",
    "--set",
    "trainer.max_completion_length=12",
    "--set",
    "trainer.beta=0.05",
]


def engine_events(log: Path) -> dict[int, list[dict]]:
    """The double's log, per rank, in order."""
    events: dict[int, list[dict]] = {}
    for line in log.read_text().splitlines():
        record = json.loads(line)
        events.setdefault(record["rank"], []).append(record)
    return events


def digest_of(directory: Path) -> str:
    """The engine double's digest of a saved checkpoint."""
    from transformers import AutoModelForCausalLM

    return weights_digest(AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32))


def run_with_engine(tmp_path, args, launcher_args=None):
    out = tmp_path / "run"
    log = tmp_path / "engine.jsonl"
    env = {"PYTHONPATH": f"{FAKES}:{REPO}", "PROCRL_FAKE_VLLM_LOG": str(log)}
    run_train(
        tmp_path,
        ["recipes/gsm8k_tiny_smoke.yaml", "--output-dir", str(out), *COMMON, *args],
        launcher=launcher_args,
        env_extra=env,
    )
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    return out, engine_events(log), [h for h in history if "loss" in h]


def assert_engine_follows_policy(out: Path, events: list[dict], rollouts: int, checkpoint_rollout: int):
    """One engine start, then per rollout one sync and one generation with the synced weights;
    the first sync pushes the initial weights, the rollout after step 2 samples with checkpoint-2."""
    kinds = [e["event"] for e in events]
    assert kinds == ["init"] + ["sync", "generate"] * rollouts, kinds
    syncs = [e["digest"] for e in events if e["event"] == "sync"]
    generations = [e["digest"] for e in events if e["event"] == "generate"]
    assert generations == syncs
    assert syncs[0] == events[0]["digest"]  # before any update: the checkpoint the engine loaded
    assert len(set(syncs)) == rollouts  # every update changed the weights the engine samples with
    assert syncs[checkpoint_rollout] == digest_of(out / "checkpoint-2")


@pytest.mark.slow
def test_ppo_generates_with_vllm_and_pushes_weights_after_each_update(tmp_path):
    # 2 PPO epochs per rollout: rollouts at steps 0 and 2, each reused for the next step (no sync)
    out, events, logs = run_with_engine(
        tmp_path, [*PPO, "--set", "trainer.max_steps=4", "--set", "trainer.num_iterations=2"]
    )
    assert set(events) == {0}
    assert_engine_follows_policy(out, events[0], rollouts=2, checkpoint_rollout=1)
    assert len(logs) == 4 and all("loss/policy" in h for h in logs)
    rollout_logs = [h for h in logs if "objective/kl" in h]  # steps 1 and 3 made the rollouts
    assert len(rollout_logs) == 2
    # the policy scores the engine's samples; with synced weights the two agree
    gaps = [h["sampling/sampling_logp_difference/mean"] for h in rollout_logs]
    assert all(math.isfinite(g) and g < 1e-3 for g in gaps), gaps
    # TRL's sampler correction (default: sequence level, masked above 3) is on and, here, ~1
    assert all(h["sampling/importance_sampling_ratio/mean"] == pytest.approx(1.0, abs=1e-2) for h in rollout_logs)
    assert (out / "value_model" / "model.safetensors").is_file()


@pytest.mark.slow
def test_ppo_with_vllm_under_lora_pushes_merged_weights(tmp_path):
    out, events, logs = run_with_engine(
        tmp_path,
        [
            *PPO,
            "--set",
            "trainer.max_steps=3",
            "--set",
            "model.lora={r: 4, lora_alpha: 8, target_modules: [q_proj, v_proj]}",
        ],
    )
    kinds = [e["event"] for e in events[0]]
    assert kinds == ["init"] + ["sync", "generate"] * 3
    syncs = [e["digest"] for e in events[0] if e["event"] == "sync"]
    assert syncs[0] == events[0][0]["digest"] and len(set(syncs)) == 3  # adapters start at zero, then move
    # the engine holds base + merged adapter: the policy (base with adapters) agrees with its samples
    assert all(h["sampling/sampling_logp_difference/mean"] < 1e-3 for h in logs)
    assert (out / "adapter_config.json").is_file()


@pytest.mark.slow
def test_ppo_with_vllm_under_zero3_two_processes(tmp_path):
    out, events, logs = run_with_engine(
        tmp_path,
        [
            *PPO,
            "--set",
            "trainer.max_steps=3",
            "--set",
            "trainer.per_device_train_batch_size=2",
            "--set",
            "trainer.num_generations=2",
        ],
        launcher_args=launcher(["--config_file", str(REPO / "launch" / "accelerate" / "zero3.yaml")]),
    )
    assert set(events) == {0, 1}
    info = json.loads((out / "run_info.json").read_text())
    assert info["world_size"] == 2 and info["deepspeed_stage"] == 3
    for rank in (0, 1):  # each rank's engine receives the gathered (full) weights
        assert_engine_follows_policy(out, events[rank], rollouts=3, checkpoint_rollout=2)
    assert all("loss/policy" in h for h in logs)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["one_process", "zero3"])
def test_process_grpo_generates_with_vllm(tmp_path, mode):
    args = [
        "--set",
        "trainer.credit=process",
        "--set",
        "trainer.max_steps=3",
        "--set",
        "trainer.max_completion_length=16",
    ]
    launch = None
    if mode == "zero3":  # groups of 4 split over 2 ranks of 2 rows
        args += ["--set", "trainer.per_device_train_batch_size=2"]
        launch = launcher(["--config_file", str(REPO / "launch" / "accelerate" / "zero3.yaml")])
    out, events, logs = run_with_engine(tmp_path, args, launcher_args=launch)
    assert set(events) == ({0} if mode == "one_process" else {0, 1})
    for rank_events in events.values():
        assert_engine_follows_policy(out, rank_events, rollouts=3, checkpoint_rollout=2)
    assert len(logs) == 3
    for h in logs:  # TRL's vLLM importance-sampling metrics next to procrl's process credit
        assert h["process/steps_per_completion"] >= 1 and math.isfinite(h["process/advantage_abs_mean"])
        assert h["sampling/sampling_logp_difference/mean"] < 1e-3


def test_use_vllm_without_vllm_installed_fails_before_any_model_loads(tmp_path, monkeypatch):
    import transformers

    from procrl.core.config import ConfigError
    from procrl.launch.run import train

    def no_loading(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_loading)
    import importlib

    trl_imports = importlib.import_module("trl.import_utils")  # trl's lazy module hides it as an attribute
    monkeypatch.setattr(trl_imports, "is_vllm_available", lambda *a, **k: False)  # also where vLLM is installed
    for algorithm in ("grpo", "ppo"):
        recipe = load_recipe(
            REPO / "recipes" / "gsm8k_tiny_smoke.yaml",
            [f"trainer.algorithm={algorithm}", "trainer.use_vllm=true"],
            output_dir=str(tmp_path),
        )
        with pytest.raises(ConfigError, match=r"trainer\.use_vllm: true, but vLLM is not installed"):
            train(recipe)
