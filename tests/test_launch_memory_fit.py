"""The whole per-GPU memory plan (activations, logits, generation, vLLM's share, the total against
80 GB and 40 GB cards) with hand-computed figures; the pre-launch checks that move late failures
early (W&B credentials, shared storage for multi-node runs); the watch that stops a run when a
component fails on every sample."""

from __future__ import annotations

import glob
import subprocess

import pytest

from procrl.launch.prelaunch import file_system_of, shared_storage_warning
from procrl.observe.failing import FailingComponentWatch
from procrl.recipe import load_recipe
from procrl.recipe.memory import CARDS, GIB, activation_bytes, gpu_plan, kv_cache_bytes, zero_setup
from procrl.recipe.plan import judge_concurrency, plan, planned_processes
from procrl.rewards.protocol import RewardOutput
from tests.helpers.launch import REPO, TINY_RECIPE, Result, launch_env, procrl, write_recipe

CONFIG = {"hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 128, "num_attention_heads": 4}


def test_activations_by_hand():
    # per layer: 2 sequences x 10 tokens x (17 x 64 + 6 x 128) values x 4 bytes = 148,480
    assert activation_bytes(CONFIG, 2, 10, 4, checkpointing=False) == 2 * 148_480
    # checkpointing: each layer's input (2 x 10 x 64 x 4 = 5,120 per layer) + one layer recomputed
    assert activation_bytes(CONFIG, 2, 10, 4, checkpointing=True) == 2 * 5_120 + 148_480


def test_kv_cache_by_hand():
    config = {**CONFIG, "num_key_value_heads": 2}  # head_dim 64 / 4 = 16
    # keys and values x 2 layers x 2 kv heads x 16 x 10 tokens x 3 sequences x 2 bytes
    assert kv_cache_bytes(config, 3, 10, 2) == 2 * 2 * 2 * 16 * 10 * 3 * 2


def test_the_flagships_vllm_share_does_not_hold_7b_weights_on_a_40_gb_card():
    recipe = load_recipe(str(REPO / "recipes" / "gsm8k_trace.yaml"), [])
    setup, processes = zero_setup(recipe), planned_processes(recipe)
    on_80 = gpu_plan(recipe, setup, processes, CARDS["80 GB"])
    on_40 = gpu_plan(recipe, setup, processes, CARDS["40 GB"])
    # 0.3 x 39.6 GiB = 11.9 GiB < 7.62B x 2 bytes (14.2 GiB) + one 1024-token sequence's KV cache
    assert on_40.vllm_share < on_40.vllm_needs and not on_40.fits(CARDS["40 GB"])
    assert "vllm_gpu_memory_utilization" in on_40.problem
    assert on_80.problem is None and on_80.fits(CARDS["80 GB"])
    assert 14.0 * GIB < on_80.vllm_needs < 14.5 * GIB
    assert on_80.total == pytest.approx(sum(on_80.parts.values()))


def test_ddp_of_the_7b_model_does_not_fit_an_80_gb_card():
    recipe = load_recipe(str(REPO / "recipes" / "gsm8k_trace.yaml"), ["launch.config_file=launch/accelerate/ddp.yaml"])
    ddp = gpu_plan(recipe, zero_setup(recipe), 8, CARDS["80 GB"])
    # full fine-tuning without sharding: weights + gradients + 2 AdamW moments in bf16, 8 bytes a parameter
    assert ddp.parts["optimizer_states"] == pytest.approx(7_615_616_512 * 4)
    assert not ddp.fits(CARDS["80 GB"])


@pytest.mark.parametrize("path", sorted(glob.glob(str(REPO / "recipes" / "*.yaml"))))
def test_every_recipe_plans_a_total_against_80_and_40_gb_cards(path):
    memory = plan(load_recipe(path, []))["memory_per_gpu"]
    for card in ("80_GB", "40_GB"):
        line = memory[f"total_on_{card}"]
        assert " per GPU: fits the " in line or " per GPU: does NOT fit the " in line


def test_judge_concurrency_is_per_process():
    recipe = load_recipe(str(REPO / "recipes" / "gsm8k_judge.yaml"), [])
    assert judge_concurrency(recipe, 8) == {
        "first_error": "16 per process x 8 process(es) = 128 per node, 128 in all "
        "(rewards.first_error.concurrency is per process)"
    }


def test_a_multi_node_output_dir_on_local_storage_is_warned_about(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text(f"/dev/vda / ext4 rw 0 0\nserver:/export {tmp_path / 'shared'} nfs4 rw 0 0\n")
    local = load_recipe(TINY_RECIPE, [f"output_dir={tmp_path / 'local' / 'run'}"])
    shared = load_recipe(TINY_RECIPE, [f"output_dir={tmp_path / 'shared' / 'run'}"])
    assert file_system_of(str(tmp_path / "shared" / "run"), str(mounts)) == "nfs4"
    assert "ext4 file system, which looks local" in shared_storage_warning(local, 2, str(mounts))
    assert shared_storage_warning(shared, 2, str(mounts)) is None
    assert shared_storage_warning(local, 1, str(mounts)) is None


def test_wandb_without_credentials_stops_before_anything_loads(tmp_path):
    recipe = write_recipe(tmp_path / "r.yaml", trainer={**_trainer(), "report_to": "wandb"})
    home = tmp_path / "home"
    home.mkdir()
    # no WANDB_MODE, no key, no netrc: what a batch job of a user who never ran `wandb login` has
    env = {k: v for k, v in launch_env(tmp_path).items() if not k.startswith("WANDB_") or k == "WANDB_DIR"}
    env.update(HOME=str(home), NETRC=str(home / ".netrc"), WANDB_CONFIG_DIR=str(home / ".config" / "wandb"))
    done = subprocess.run(
        [*procrl(), "train", str(recipe), "--output-dir", str(tmp_path / "run")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    result = Result(done.returncode, done.stdout, done.stderr)
    assert result.returncode == 2, result.output
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("procrl: error: trainer.report_to: wandb, but no W&B credentials here")
    )
    assert not (tmp_path / "run").exists()


def _trainer():
    import yaml

    return yaml.safe_load(open(TINY_RECIPE))["trainer"]


def _down(n=2):
    return {"judge": RewardOutput(scores=[None] * n, failures={"connection_error": n}), "ok": RewardOutput([1.0] * n)}


def test_the_watch_counts_consecutive_all_failed_steps():
    watch = FailingComponentWatch(stop_after=3)
    for _ in range(2):
        watch.observe([0, 1], _down(), None, None)
        assert not watch.end_step()
    watch.observe([0, 1], {"judge": RewardOutput([0.0, None], failures={"timeout": 1})}, None, None)
    assert not watch.end_step() and watch.streaks["judge"] == 0  # one sample scored: the streak restarts
    for _ in range(2):
        watch.observe([0, 1], _down(), None, None)
        watch.end_step()
    assert not watch.end_step()  # a step without scoring (TRL scores once per generation) changes nothing
    watch.observe([0, 1], _down(), None, None)
    assert watch.end_step() and watch.streaks == {"judge": 3, "ok": 0}
    assert watch.stopped == "rewards.judge failed on every sample for 3 consecutive steps (connection_error)"


def test_the_watch_never_stops_with_zero():
    watch = FailingComponentWatch(stop_after=0)
    for _ in range(5):
        watch.observe([0, 1], _down(), None, None)
        assert not watch.end_step()
    assert watch.stopped is None
