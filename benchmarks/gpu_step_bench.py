"""One GRPO step and one process-GRPO step of a 7B recipe's geometry, timed phase by phase, with a
random-weight Qwen2.5-shaped policy and the recipe's full reward mix on real-architecture random
reward models: step time, each phase's and each reward component's share, peak GPU memory,
generated tokens/s, and the measured memory against ``procrl check``'s estimate. Writes JSON.

What runs is procrl's real code: the recipe (``--recipe``, default
recipes/gsm8k_grpo_process.yaml) loaded with ``--set``-style overrides, ``procrl.launch.run.build_trainer``
(procrl's GRPO / process-GRPO trainer on TRL, its reward mix, data loading and prompt
formatting), ``trainer.train()``. The benchmark only wraps a few trainer methods with timers
(TRL's ``_generate_single_turn``, ``_calculate_rewards``, ``_generate_and_score_completions``)
and reads memory. Overrides, all printed:

* the policy: ``--shape tiny|0.5b|1.5b|7b``, a Qwen2.5-shaped model built from its config
  (benchmarks/real_shapes.py) with random weights (bf16 on a GPU; fp32 for the tiny shape on CPU),
  saved and loaded through ``from_pretrained``; LoRA r=16 on all linear layers with learning rate
  1e-5, as the recipes' LoRA variant (``--full`` trains all weights instead);
* one process, no DeepSpeed (``launch: single_gpu.yaml``): one GPU does one rank's share of the
  8-GPU recipe, i.e. ``per_device_train_batch_size x gradient_accumulation_steps`` = 32
  completions (4 prompts x 8 generations) of up to 512 tokens per optimizer step; ZeRO-3's
  communication across 8 GPUs is not part of it;
* generation through transformers, or vLLM colocated (the recipe's setting) when vLLM is
  installed on a CUDA machine (``--generation``);
* rewards: the recipe's mix, with ``trace.tagger`` a DeBERTa-v3-base random tagger in the published
  format (``--receval`` adds receval_correctness with a DeBERTa-v3-large NLI model and
  receval_informativeness under the reference model); ``--shape tiny`` uses tiny reward models
  unless ``--reward-models real``;
* data: GSM8K train (../shared/data/gsm8k/train.jsonl), else the embedded synthetic problems.

A random-weight policy never stops early: every completion runs to ``max_completion_length``
(the worst case for generation and training) and is word salad from the tokenizer's vocabulary
(ids the stand-in tokenizer lacks are suppressed; the model keeps Qwen's vocabulary size), so
the rewards' cost on it is not their cost on real reasoning. The benchmark therefore also times
the same reward mix, same models and device, on 32 GSM8K reference solutions after the steps.

Each training arm runs in its own process (clean peak-memory counters). Must fit in one 8-minute
command on one 80 GB GPU at ``--shape 7b``.

    python benchmarks/gpu_step_bench.py --shape 7b [--generation auto|transformers|vllm] \\
        [--steps 2] [--receval] [--json OUT]
    python benchmarks/gpu_step_bench.py --shape tiny            # CPU, a test in CI
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import real_shapes  # noqa: E402

REPO = real_shapes.REPO
# tiny: procrl's CPU model (512-token vocabulary, the shipped tokenizer); micro: hidden 32 with Qwen2.5's
# 151,936-token vocabulary and the stand-in Qwen tokenizer (the real shapes' path, on CPU).
SHAPES = {"tiny": real_shapes.TINY_QWEN2, "micro": real_shapes.TINY_QWEN25_LM, **real_shapes.QWEN25}
POLICY_NAMES = {
    "tiny": "tiny Qwen2 (hidden 64, 2 layers, 512-token vocabulary)",
    "micro": "micro Qwen2 (hidden 32, 2 layers, Qwen2.5's 151,936-token vocabulary)",
}
ARMS = {"grpo": "outcome", "process": "process"}
GIB = 1024**3


# --- building the models (a child process: the parent never holds a CUDA context) ----------------


def build_models(shape: str, reward_models: str, nli_needed: bool, device: str, tagger_needed: bool) -> dict[str, str]:
    """The policy (random weights of ``shape``) and the reward models the recipe needs; their directories."""
    from procrl.models.loading import TOKENIZER_ASSET

    tokenizer = TOKENIZER_ASSET if shape == "tiny" else real_shapes.local_tokenizer("qwen2.5")
    dtype = "float32" if (device == "cpu" and shape in ("tiny", "micro")) else "bfloat16"
    out = {"tokenizer": str(tokenizer), "dtype": dtype}
    started = time.perf_counter()
    out["policy"] = str(
        real_shapes.write_causal_lm(SHAPES[shape], tokenizer, dtype=dtype, device=device, name=f"policy-{shape}")
    )
    out["policy_seconds"] = f"{time.perf_counter() - started:.1f}"
    if reward_models == "real":
        deberta = real_shapes.local_tokenizer("deberta-v3")
        if tagger_needed:
            out["tagger"] = str(real_shapes.write_trace_tagger(deberta))
            out["tagger_model"] = "DeBERTa-v3-base TRACE tagger (published format, 184M)"
        if nli_needed:
            out["nli"] = str(real_shapes.write_nli_model(deberta))
            out["nli_model"] = "DeBERTa-v3-large NLI (435M)"
    else:
        from procrl.rewards.scorers.nli import write_tiny_nli_model
        from procrl.trainers.tagger import write_tiny_tagger

        root = real_shapes.cache_dir()
        tagger = root / "tiny-tagger-h32-l2-s0"
        if tagger_needed:
            if not (tagger / "config.json").is_file():
                write_tiny_tagger(tagger)
            out["tagger"], out["tagger_model"] = str(tagger), "tiny DeBERTa-v2 tagger (hidden 32, 2 layers)"
        if nli_needed:
            nli = root / "tiny-nli-h32-l2-s0"
            if not (nli / "config.json").is_file():
                write_tiny_nli_model(nli)
            out["nli"], out["nli_model"] = str(nli), "tiny DeBERTa-v2 NLI (hidden 32, 2 layers)"
    return out


# --- one training arm (a child process) -----------------------------------------------------------


def overrides_for(spec: dict, arm: str) -> list[str]:
    """The ``--set`` overrides that turn the recipe into this benchmark's run (all printed)."""
    cuda = spec["device"] == "cuda"
    values = [
        f"model.name_or_path={spec['models']['policy']}",
        f"model.dtype={spec['models']['dtype']}",
        f"launch.config_file={REPO / 'launch' / 'accelerate' / 'single_gpu.yaml'}",
        "launch.num_processes=1",
        f"trainer.credit={ARMS[arm]}",
        f"trainer.max_steps={spec['steps']}",
        "trainer.save_steps=1000000",
        "trainer.report_to=none",
        "trainer.logging_steps=1",
        f"trainer.bf16={'true' if cuda else 'false'}",
        f"trainer.use_vllm={'true' if spec['generation'] == 'vllm' else 'false'}",
        f"data.dataset={spec['data']}",
    ]
    rewards = spec["rewards"]
    values += [f"rewards.{name}.tagger={spec['models']['tagger']}" for name in rewards["taggers"]]
    values += [f"rewards.{name}.nli_model={spec['models']['nli']}" for name in rewards["nli"]]
    values += [f"rewards.{name}.lm=reference" for name in rewards["named_lm"]]  # the policy's reference: no download
    if ARMS[arm] == "outcome":
        values.append("trainer.process_rewards=null")  # a credit: process key
    if not spec["full"]:
        values += ["model.lora={r: 16}", "trainer.learning_rate=1.0e-5"]
    if spec.get("max_completion_length"):
        values.append(f"trainer.max_completion_length={spec['max_completion_length']}")
    if spec["data"] == "synthetic":
        values.append("data.config=null")
    if "receval_correctness" in rewards["added"]:
        values.append(f"rewards.receval_correctness={{weight: 0.5, nli_model: {spec['models']['nli']}}}")
    if "receval_informativeness" in rewards["added"]:
        values.append("rewards.receval_informativeness={weight: 0.5, lm: reference}")
    return values + list(spec.get("extra_overrides", []))


def reward_plan(recipe_path: str, receval: bool, extra: list[str]) -> dict[str, list[str]]:
    """Which of the recipe's components load models this benchmark replaces with random ones:
    model taggers of ``trace`` components, NLI models of ``receval_correctness``, a named LM of
    ``receval_informativeness`` (replaced by the reference model); ``added``: the ReCEval
    components ``--receval`` adds. Refuses what it cannot run: PPO recipes, judge servers."""
    from procrl.recipe import load_recipe
    from procrl.rewards import RewardMix

    recipe = load_recipe(recipe_path, extra)
    if recipe.trainer.algorithm != "grpo":
        raise SystemExit(
            f"gpu_step_bench: {recipe_path} trains with {recipe.trainer.algorithm}; this benchmark times "
            "GRPO steps (trainer.algorithm: grpo)"
        )
    mix = RewardMix(recipe.rewards)
    remote = {name: c.needs_network() for name, c in mix.components.items() if c.needs_network()}
    if remote:
        raise SystemExit(
            f"gpu_step_bench: {recipe_path}: {', '.join(f'{k} ({v})' for k, v in remote.items())} needs a "
            "server; drop it with --set rewards.<name>=false or use a model-free backend"
        )
    plan: dict[str, list[str]] = {"taggers": [], "nli": [], "named_lm": [], "added": []}
    for spec in recipe.rewards:
        settings = spec.settings
        if spec.type == "trace" and settings.tagger != "cues":
            plan["taggers"].append(spec.name)
        elif spec.type == "receval_correctness":
            plan["nli"].append(spec.name)
        elif spec.type == "receval_informativeness" and settings.lm != "reference":
            plan["named_lm"].append(spec.name)
    types = {spec.type for spec in recipe.rewards}
    if receval:
        plan["added"] = [t for t in ("receval_correctness", "receval_informativeness") if t not in types]
    return plan


def _generation_kwargs(tokenizer, vocab_size: int, generation: str) -> dict | None:
    """Keep a random policy's samples inside the tokenizer's vocabulary (the model keeps Qwen's
    vocabulary size; ids the stand-in tokenizer lacks would decode to nothing)."""
    known = len(tokenizer)
    if known >= vocab_size:
        return None
    if generation == "vllm":
        return {"allowed_token_ids": list(range(known))}
    return {"suppress_tokens": list(range(known, vocab_size))}


class Timers:
    def __init__(self, cuda: bool):
        self.cuda = cuda
        self.totals: dict[str, float] = {}
        self.generated_tokens = 0
        self.reward_seconds: dict[str, float] = {}

    def sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()

    def wrap(self, owner: Any, attribute: str, name: str, after=None) -> None:
        original = getattr(owner, attribute)

        def timed(*args, **kwargs):
            self.sync()
            started = time.perf_counter()
            value = original(*args, **kwargs)
            self.sync()
            self.totals[name] = self.totals.get(name, 0.0) + time.perf_counter() - started
            if after is not None:
                after(value)
            return value

        setattr(owner, attribute, timed)

    def snapshot(self) -> dict[str, Any]:
        return {
            "totals": dict(self.totals),
            "generated_tokens": self.generated_tokens,
            "reward_seconds": dict(self.reward_seconds),
        }


def _tensor_bytes(tensors) -> int:
    seen, total = set(), 0
    for tensor in tensors:
        if tensor is None or tensor.device.type == "meta":
            continue
        key = (tensor.untyped_storage().data_ptr(), tensor.device.type)
        if key in seen:
            continue
        seen.add(key)
        total += tensor.untyped_storage().nbytes()
    return total


def static_memory(trainer, gradient_bytes: int) -> dict[str, int]:
    """Bytes of what procrl check estimates, as held by this process: the policy's weights
    (frozen and trainable), gradients (read before the optimizer step), optimizer states, and
    TRL's reference model when it keeps one."""
    import torch

    model = trainer.model
    params = list(model.parameters())
    trainable = [p for p in params if p.requires_grad]
    frozen = [p for p in params if not p.requires_grad]
    states = [v for state in trainer.optimizer.state.values() for v in state.values() if isinstance(v, torch.Tensor)]
    ref = getattr(trainer, "ref_model", None)
    return {
        "weights_frozen": _tensor_bytes(frozen),
        "weights_trainable": _tensor_bytes(trainable),
        "gradients": gradient_bytes,
        "optimizer_states": _tensor_bytes(states),
        "reference_model": _tensor_bytes(ref.parameters()) if ref is not None else 0,
        "trainable_parameters": sum(p.numel() for p in trainable),
        "parameters": sum(p.numel() for p in {id(p): p for p in params}.values()),
        # the model's own parameters: with LoRA the frozen ones (adapters come on top), else all
        "base_parameters": sum(p.numel() for p in ({id(p): p for p in frozen}.values() if frozen else params)),
    }


def estimated_memory(recipe) -> dict[str, Any]:
    """procrl check's estimate for this recipe (procrl/recipe/memory.py), in bytes."""
    from procrl.recipe.memory import policy_memory_estimate

    estimate = policy_memory_estimate(recipe, processes=1)
    if estimate is None:
        return {}
    memory = estimate.memory
    return {
        "weights": memory.weights,
        "gradients": memory.gradients,
        "optimizer_states": memory.optimizer_states,
        "reference_model": memory.reference_model,
        "total": memory.total,
        "parameters": estimate.parameters,
        "trainable_parameters": estimate.trainable,
        "weight_bytes": estimate.weight_bytes,
    }


def run_arm(spec: dict, arm: str) -> dict[str, Any]:
    import torch
    from transformers import TrainerCallback
    from transformers.utils import logging as hf_logging

    from procrl.launch.run import build_trainer
    from procrl.recipe import load_recipe
    from procrl.rewards import RewardBatch

    hf_logging.disable_progress_bar()
    cuda = spec["device"] == "cuda"
    overrides = overrides_for(spec, arm)
    from transformers import AutoConfig, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(spec["models"]["tokenizer"])
    vocab = AutoConfig.from_pretrained(spec["models"]["policy"]).vocab_size
    generation_kwargs = _generation_kwargs(tokenizer, vocab, spec["generation"])
    shown = list(overrides)
    if generation_kwargs:  # set on the loaded recipe: a --set value of 100k+ ids is refused as an alias bomb
        ((key, ids),) = generation_kwargs.items()
        shown.append(f"trainer.generation_kwargs={{{key}: [ids {ids[0]}..{ids[-1]}]}}")
    with tempfile.TemporaryDirectory() as output_dir:
        recipe = load_recipe(spec["recipe"], overrides, output_dir)
        if generation_kwargs:
            recipe = dataclasses.replace(
                recipe, trainer_args={**recipe.trainer_args, "generation_kwargs": generation_kwargs}
            )
        started = time.perf_counter()
        trainer, mix = build_trainer(recipe)
        build_seconds = time.perf_counter() - started
        timers = Timers(cuda)
        timers.wrap(
            trainer,
            "_generate_single_turn",
            "generation",
            after=lambda value: setattr(
                timers, "generated_tokens", timers.generated_tokens + sum(len(ids) for ids in value[0])
            ),
        )

        policy_text: dict[str, float] = {}

        def after_rewards(_):
            for name, output in mix.last_outputs.items():
                timers.reward_seconds[name] = timers.reward_seconds.get(name, 0.0) + output.seconds
            scored = mix.last_batch  # what the rewards read: the policy's completions as text
            if scored is not None and len(scored):
                n = len(scored)
                policy_text.update(
                    chars=sum(len(c) for c in scored.completions) / n,
                    steps=sum(len(s.steps) for s in scored.segmentations) / n,
                    sentences=sum(len(s.sentences) for s in scored.segmentations) / n,
                )

        timers.wrap(trainer, "_calculate_rewards", "rewards", after=after_rewards)
        timers.wrap(trainer, "_generate_and_score_completions", "generate_and_score")
        steps: list[dict[str, Any]] = []
        gradients = {"bytes": 0}

        class StepClock(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                timers.sync()
                if cuda:
                    torch.cuda.reset_peak_memory_stats()
                self.before = timers.snapshot()
                self.started = time.perf_counter()

            def on_pre_optimizer_step(self, args, state, control, **kwargs):
                gradients["bytes"] = _tensor_bytes(p.grad for p in trainer.model.parameters() if p.grad is not None)

            def on_step_end(self, args, state, control, **kwargs):
                timers.sync()
                seconds = time.perf_counter() - self.started
                after = timers.snapshot()
                phase = {k: v - self.before["totals"].get(k, 0.0) for k, v in after["totals"].items()}
                rewards = {k: v - self.before["reward_seconds"].get(k, 0.0) for k, v in after["reward_seconds"].items()}
                record = {
                    "step": state.global_step,
                    "seconds": seconds,
                    "generation": phase.get("generation", 0.0),
                    "rewards": phase.get("rewards", 0.0),
                    "reward_components": rewards,
                    "logprobs_advantages": phase.get("generate_and_score", 0.0)
                    - phase.get("generation", 0.0)
                    - phase.get("rewards", 0.0),
                    "training": seconds - phase.get("generate_and_score", 0.0),
                    "generated_tokens": after["generated_tokens"] - self.before["generated_tokens"],
                }
                if cuda:
                    free, total = torch.cuda.mem_get_info()
                    record.update(
                        peak_allocated=torch.cuda.max_memory_allocated(),
                        peak_reserved=torch.cuda.max_memory_reserved(),
                        device_used=total - free,
                        device_total=total,
                    )
                steps.append(record)

        trainer.add_callback(StepClock())
        trainer.train()
        memory = static_memory(trainer, gradients["bytes"])
        estimate = estimated_memory(recipe)
        logged = [h for h in trainer.state.log_history if "loss" in h]
        # the same mix, models and device, on realistic text: 32 GSM8K reference solutions
        rows = _reference_rows(spec, recipe)
        batch = RewardBatch.from_texts(
            [r["answer"] for r in rows], [r["question"] for r in rows], [r["answer"] for r in rows]
        )
        timers.sync()
        started = time.perf_counter()
        segmentations = batch.segmentations
        segmentation_seconds = time.perf_counter() - started
        outputs = mix.score_all(batch)
        timers.sync()
        reference = {
            "completions": len(rows),
            "segmentation": segmentation_seconds,
            "components": {name: output.seconds for name, output in outputs.items()},
            "sentences_per_completion": sum(len(s.sentences) for s in segmentations) / max(len(rows), 1),
            "steps_per_completion": sum(len(s.steps) for s in segmentations) / max(len(rows), 1),
        }
        return {
            "arm": arm,
            "credit": ARMS[arm],
            "overrides": shown,
            "build_seconds": build_seconds,
            "steps": steps,
            "memory_measured": memory,
            "memory_estimated": estimate,
            "logged": logged,
            "reference_rewards": reference,
            "policy_text": policy_text,
            "device_name": torch.cuda.get_device_name(0) if cuda else "cpu",
            "completions_per_step": trainer.args.per_device_train_batch_size * trainer.args.gradient_accumulation_steps,
            "max_completion_length": trainer.args.max_completion_length,
            "generation": "vLLM colocate" if trainer.args.use_vllm else "transformers generate",
        }


def _reference_rows(spec: dict, recipe) -> list[dict]:
    per_step = int(recipe.trainer_args.get("per_device_train_batch_size", 8)) * int(
        recipe.trainer_args.get("gradient_accumulation_steps", 1)
    )
    try:
        return real_shapes.gsm8k_rows(count=per_step)
    except FileNotFoundError:
        from procrl.data.synthetic import generate_problems

        return generate_problems(per_step, seed=0)


# --- the parent: build, run both arms, report ------------------------------------------------------


def _child(command: list[str], timeout: float, cpu: bool, log: Path, keep: bool) -> None:
    """Run this script as a child (its output goes to ``log``; the tail is shown if it fails)."""
    env = {
        **os.environ,
        "TOKENIZERS_PARALLELISM": "false",
        "WANDB_MODE": "offline",
        "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    }
    if cpu:  # tiny CPU ops: a second thread costs more in synchronisation than it computes
        env.setdefault("OMP_NUM_THREADS", "1")
    started = time.perf_counter()
    with log.open("w") as handle:
        result = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), *command],
            env=env,
            timeout=timeout,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    if result.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-60:]
        print("\n".join(line[:2000] for line in tail), file=sys.stderr)
        raise SystemExit(f"gpu_step_bench: child {command[:2]} failed with status {result.returncode}")
    kept = f" (log: {log})" if keep else ""
    print(f"  done in {time.perf_counter() - started:.0f} s{kept}", flush=True)


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:5.1f}%" if whole > 0 else "    -"


def _gib(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, scale in (("GiB", GIB), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= 0.1 * scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value:.0f} B"


def _count(value: int) -> str:
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g}{unit}"
    return str(value)


def _diff(measured: float, estimated: float | None) -> str:
    if estimated is None:
        return "no estimate"
    if estimated == 0:
        return "equal" if measured == 0 else "not estimated"
    return f"{100 * (measured - estimated) / estimated:+.2f}%"


def report(spec: dict, arms: list[dict]) -> str:
    first = arms[0]
    lines = [
        f"policy: {POLICY_NAMES.get(spec['shape'], 'Qwen2.5-' + spec['shape'].upper() + '-shaped')} "
        f"({_count(first['memory_measured']['base_parameters'])} parameters, random "
        f"{spec['models']['dtype']}), {'all weights trained' if spec['full'] else 'LoRA r=16 all-linear'}; "
        f"device: {first['device_name']}; generation: {first['generation']}",
        f"geometry: {Path(spec['recipe']).name} on one process: "
        f"{first['completions_per_step']} completions per optimizer step "
        f"(one rank's share of the recipe), up to {first['max_completion_length']} tokens; rewards: "
        + ", ".join(first["reference_rewards"]["components"])
        + (f"; TRACE tagger: {spec['models']['tagger_model']}" if "tagger_model" in spec["models"] else "")
        + (f"; NLI: {spec['models']['nli_model']}" if "nli_model" in spec["models"] else ""),
        "",
    ]
    header = f"{'':<34}" + "".join(f"{a['arm'] + ' (' + a['credit'] + ')':>26}" for a in arms)
    lines.append(header)
    timed = [a["steps"][-1] for a in arms]  # the last step (the first one also warms up kernels and caches)
    lines.append(
        f"{'step time, step ' + str(timed[0]['step']) + ' (s)':<34}" + "".join(f"{t['seconds']:>26.2f}" for t in timed)
    )
    rows = [("generation", "generation"), ("rewards", "rewards")]
    for label, key in rows:
        lines.append(f"{'  ' + label:<34}" + "".join(f"{t[key]:>18.2f} {_pct(t[key], t['seconds'])}" for t in timed))
    names = list(timed[0]["reward_components"])
    for name in names:
        lines.append(
            f"{'    ' + name:<34}"
            + "".join(
                f"{t['reward_components'].get(name, 0.0):>18.3f}"
                f" {_pct(t['reward_components'].get(name, 0.0), t['seconds'])}"
                for t in timed
            )
        )
    for label, key in (
        ("log-probs, advantages (+credit)", "logprobs_advantages"),
        ("training (fwd/bwd/optimizer)", "training"),
    ):
        lines.append(f"{'  ' + label:<34}" + "".join(f"{t[key]:>18.2f} {_pct(t[key], t['seconds'])}" for t in timed))
    lines.append(
        f"{'generated tokens/s':<34}"
        + "".join(f"{t['generated_tokens'] / t['generation'] if t['generation'] else 0:>26,.0f}" for t in timed)
    )
    lines.append(f"{'generated tokens':<34}" + "".join(f"{t['generated_tokens']:>26,}" for t in timed))
    if "peak_allocated" in timed[0]:
        lines.append(
            f"{'peak GPU memory (torch allocated)':<34}" + "".join(f"{_gib(t['peak_allocated']):>26}" for t in timed)
        )
        lines.append(
            f"{'peak GPU memory (torch reserved)':<34}" + "".join(f"{_gib(t['peak_reserved']):>26}" for t in timed)
        )
        lines.append(f"{'GPU memory in use at step end':<34}" + "".join(f"{_gib(t['device_used']):>26}" for t in timed))
    else:
        lines.append(f"{'peak GPU memory':<34}" + "".join(f"{'not measured (no GPU)':>26}" for _ in timed))
    if len(timed) == 2:
        lines.append(
            f"{'step time ' + arms[1]['arm'] + ' / ' + arms[0]['arm']:<34}"
            f"{timed[1]['seconds'] / timed[0]['seconds']:>26.2f}x"
            "  (the process credit's cost: same policy, data and seed)"
        )
    all_steps = [", ".join(f"{s['seconds']:.1f}" for s in a["steps"]) for a in arms]
    lines.append(f"{'all steps (s)':<34}" + "".join(f"{text:>26}" for text in all_steps))
    text = first.get("policy_text") or {}
    if text:
        lines.append(
            f"the policy's completions (random weights: word salad) as the rewards read them: {text['chars']:.0f} "
            f"characters, {text['steps']:.1f} steps, {text['sentences']:.1f} sentences each (last batch)"
        )
    lines.append("")
    lines.append(
        "memory that procrl check estimates (procrl/recipe/memory.py, this recipe on 1 process), measured in the run "
        "(weights and optimizer states after the last step, gradients before its optimizer step):"
    )
    for a in arms:
        m, e = a["memory_measured"], a["memory_estimated"]
        weights = m["weights_frozen"] + m["weights_trainable"]
        items = [
            ("weights", weights, e.get("weights")),
            ("gradients", m["gradients"], e.get("gradients")),
            ("optimizer states", m["optimizer_states"], e.get("optimizer_states")),
            ("reference model", m["reference_model"], e.get("reference_model")),
        ]
        total = sum(x for _, x, _ in items)
        items.append(("total", total, e.get("total")))
        text = "; ".join(f"{label} {_gib(x)} vs {_gib(y)} ({_diff(x, y)})" for label, x, y in items)
        lines.append(f"  {a['arm']}: {text}")
        lines.append(
            f"  {a['arm']}: base parameters {m['base_parameters']:,} vs {e.get('parameters', 0):,}, trained "
            f"{m['trainable_parameters']:,} vs {e.get('trainable_parameters', 0):,}"
        )
        if "peak_allocated" in a["steps"][-1]:
            peak = a["steps"][-1]["peak_allocated"]
            lines.append(
                f"  {a['arm']}: peak allocated {_gib(peak)} = the estimate's {_gib(e.get('total'))} + "
                f"{_gib(peak - e.get('total', 0))} not in it"
                " (activations, logits, KV cache, vLLM's share, reward models)"
            )
        else:
            lines.append(
                f"  {a['arm']}: peak GPU memory not measured (no GPU): activations, logits, KV cache and vLLM's "
                "share, which the estimate leaves out, are unmeasured here"
            )
    reference = arms[0]["reference_rewards"]
    total = reference["segmentation"] + sum(reference["components"].values())
    step = timed[0]["seconds"]
    lines.append("")
    lines.append(
        f"the same reward mix on {reference['completions']} GSM8K reference solutions (realistic text: "
        f"{reference['steps_per_completion']:.1f} steps, {reference['sentences_per_completion']:.1f} sentences each): "
        f"{total:.2f} s = {_pct(total, step).strip()} of the {arms[0]['arm']} step "
        f"(segmentation {reference['segmentation']:.2f} s; "
        + ", ".join(f"{k} {v:.2f} s" for k, v in reference["components"].items())
        + ")"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shape",
        choices=list(SHAPES),
        default="7b",
        help="Policy shape: Qwen2.5 0.5b / 1.5b / 7b; tiny (procrl's CPU model) or micro (hidden 32 with "
        "Qwen's vocabulary and the stand-in tokenizer) for CPU.",
    )
    parser.add_argument("--recipe", default=str(REPO / "recipes" / "gsm8k_grpo_process.yaml"))
    parser.add_argument(
        "--generation",
        choices=("auto", "transformers", "vllm"),
        default="auto",
        help="auto: vLLM (colocated, as the recipe) when installed on a CUDA machine, else transformers.",
    )
    parser.add_argument("--steps", type=int, default=2, help="Optimizer steps per arm (the last one is reported).")
    parser.add_argument("--arms", default="grpo,process", help="grpo (credit: outcome), process (credit: process).")
    parser.add_argument(
        "--reward-models",
        choices=("real", "tiny", "auto"),
        default="auto",
        help="Reward model sizes (auto: tiny for --shape tiny, else real architectures).",
    )
    parser.add_argument("--receval", action="store_true", help="Add both ReCEval components to the mix.")
    parser.add_argument("--full", action="store_true", help="Train all weights instead of LoRA.")
    parser.add_argument(
        "--max-completion-length", type=int, default=None, help="Override the recipe's (default: keep it)."
    )
    parser.add_argument("--set", dest="extra", action="append", default=[], help="More recipe overrides (KEY=VALUE).")
    parser.add_argument("--timeout", type=float, default=3600, help="Seconds per child process.")
    parser.add_argument("--json", type=Path, default=None, help="Write every number here.")
    parser.add_argument(
        "--logs", type=Path, default=None, help="Keep the children's logs (build, each arm) in this folder."
    )
    parser.add_argument("--_build", help=argparse.SUPPRESS)
    parser.add_argument("--_arm", help=argparse.SUPPRESS)
    parser.add_argument("--_spec", help=argparse.SUPPRESS)
    parser.add_argument("--_out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args._build:  # child: build the models
        spec = json.loads(Path(args._spec).read_text())
        rewards = spec["rewards"]
        nli_needed = bool(rewards["nli"] or "receval_correctness" in rewards["added"])
        models = build_models(
            spec["shape"], spec["reward_models"], nli_needed, spec["device"], bool(rewards["taggers"])
        )
        Path(args._out).write_text(json.dumps(models))
        return 0
    if args._arm:  # child: one training arm
        spec = json.loads(Path(args._spec).read_text())
        Path(args._out).write_text(json.dumps(run_arm(spec, args._arm)))
        return 0

    import importlib.util

    import torch

    cuda = torch.cuda.is_available()
    vllm = importlib.util.find_spec("vllm") is not None
    generation = args.generation
    if generation == "auto":
        generation = "vllm" if (cuda and vllm) else "transformers"
    if generation == "vllm" and not vllm:
        parser.error("--generation vllm: vLLM is not installed (pip install 'procrl[vllm]' on a CUDA machine)")
    if not cuda and args.shape not in ("tiny", "micro"):
        print(
            f"gpu_step_bench: no CUDA GPU here; --shape {args.shape} runs on CPU (slowly)"
            " and no GPU memory is measured",
            flush=True,
        )
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if not arms or set(arms) - set(ARMS):
        parser.error(f"--arms: choose from {', '.join(ARMS)}")
    small = args.shape in ("tiny", "micro")
    reward_models = args.reward_models if args.reward_models != "auto" else ("tiny" if small else "real")
    try:
        data = str(real_shapes.GSM8K_TRAIN) if real_shapes.GSM8K_TRAIN.is_file() else "synthetic"
    except OSError:
        data = "synthetic"
    rewards = reward_plan(args.recipe, args.receval, args.extra)
    spec = {
        "shape": args.shape,
        "recipe": args.recipe,
        "rewards": rewards,
        "device": "cuda" if cuda else "cpu",
        "generation": generation,
        "steps": args.steps,
        "receval": args.receval,
        "full": args.full,
        "reward_models": reward_models,
        "max_completion_length": args.max_completion_length,
        "data": data,
        "extra_overrides": args.extra,
    }
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        logs = args.logs or work
        logs.mkdir(parents=True, exist_ok=True)
        (work / "spec.json").write_text(json.dumps(spec))
        print(
            f"building the {args.shape} policy and the {reward_models} reward models"
            f" (cached in {real_shapes.cache_dir()}) ...",
            flush=True,
        )
        _child(
            ["--_build", "1", "--_spec", str(work / "spec.json"), "--_out", str(work / "models.json")],
            args.timeout,
            not cuda,
            logs / "build.log",
            args.logs is not None,
        )
        spec["models"] = json.loads((work / "models.json").read_text())
        (work / "spec.json").write_text(json.dumps(spec))
        results = []
        for arm in arms:
            print(f"arm {arm} (trainer.credit: {ARMS[arm]}): {args.steps} step(s) ...", flush=True)
            _child(
                ["--_arm", arm, "--_spec", str(work / "spec.json"), "--_out", str(work / f"{arm}.json")],
                args.timeout,
                not cuda,
                logs / f"{arm}.log",
                args.logs is not None,
            )
            results.append(json.loads((work / f"{arm}.json").read_text()))
            if args.json:  # after every arm: a command stopped at its time limit keeps what it measured
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps({"spec": spec, "arms": results}, indent=2) + "\n")
            if arm != arms[-1]:
                step = results[-1]["steps"][-1]
                print(
                    f"  step {step['step']}: {step['seconds']:.1f} s, generation {step['generation']:.1f} s, rewards "
                    f"{step['rewards']:.2f} s ({time.perf_counter() - started:.0f} s so far)",
                    flush=True,
                )
    print()
    print(f"overrides of {Path(args.recipe).name} ({results[0]['arm']} arm): " + " ".join(results[0]["overrides"]))
    print(report(spec, results))
    print(f"\nwall time of the whole benchmark: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
