"""The GPU acceptance run: one command that says whether procrl's GPU stack installs, fits and
trains on one GPU, with random-weight models in the real shapes and no network.

Phases, each in its own process (clean peak-memory counters, its own time limit), in order:

* ``versions``: Python, the GPU, and the installed torch, transformers, peft, accelerate, TRL,
  DeepSpeed, datasets, vLLM, procrl, pyarrow and the rest of what the carry bundle relies on; the
  bundle's declared requirements that the installed versions do not meet (a warning: the phases
  say whether the code runs); a vLLM outside the installed TRL's range fails here
  (procrl/launch/versions.py);
* ``build``: the random-weight models (benchmarks/real_shapes.py): a Qwen2.5-7B-shaped policy,
  a Qwen2.5-1.5B-shaped one for the full fine-tune, the TRACE tagger's DeBERTa-v3-base shape;
* ``grpo_zero3``: one process-GRPO step (``credit: process``) of recipes/gsm8k_grpo_process.yaml
  with the 7B shape and LoRA r=16, under DeepSpeed ZeRO-3 on one rank (``accelerate launch
  --config_file launch/accelerate/zero3.yaml --num_processes 1``), generating with vLLM colocated
  when vLLM is installed, else with transformers (benchmarks/gpu_step_bench.py's arm: procrl's
  trainer, the recipe's reward mix, timers around TRL's generation and reward calls); on CUDA it
  also checks that the ``accelerate launch`` process itself holds no GPU memory while the rank
  trains (its own CUDA state when the launch returns, and what NVML attributes to its pid);
* ``grpo_full``: the same step training every weight at the largest shape whose AdamW states fit
  one 80 GB card (1.5B: 7B's 16 bytes per parameter would be 112 GB), also under ZeRO-3;
* ``ppo``: one PPO step (one rollout, one update) of recipes/gsm8k_ppo_process.yaml, 7B shape, LoRA;
* ``trace``: the TRACE component with a DeBERTa-v3-base tagger on 32 GSM8K reference solutions.

Each phase reports its time, peak memory (GPU: ``torch.cuda.max_memory_allocated``; CPU: the
child's peak resident set) and, for the training steps, the reward mix's share of the step. A
phase whose dependency is not installed is skipped, saying which (TRL, DeepSpeed, datasets,
math-verify); any phase that runs and fails makes the exit status 1, and so does a skipped one
with ``--require-all``. A phase over its limit is ended with every process it started;
``--deadline`` cuts the last limits to what is left of the whole run. Writes ``--json`` after every
phase and prints a table.

On the GPU machine lent for checks (no network, no index) the run travels with its wheels:
scripts/gpu_bundle.py builds them, scripts/gpu_call.sh is the device command
(docs/cost-at-scale.md, "The device call").

``--tiny``: the same phases at tiny shapes on CPU (procrl's tiny Qwen2 policy, tiny reward
models, ZeRO-3 over gloo), a CI test; its timings say nothing about a GPU.

    python benchmarks/gpu_acceptance.py [--json OUT] [--logs DIR]    # one 80 GB GPU, < 9 minutes
    python benchmarks/gpu_acceptance.py --tiny                       # CPU
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# procrl from this checkout, installed or not (the GPU machine runs it from the carried tree)
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

import real_shapes  # noqa: E402

REPO = real_shapes.REPO
ZERO3 = REPO / "launch" / "accelerate" / "zero3.yaml"
GRPO_RECIPE = REPO / "recipes" / "gsm8k_grpo_process.yaml"
PPO_RECIPE = REPO / "recipes" / "gsm8k_ppo_process.yaml"
GIB = 1024**3
DISTRIBUTIONS = [
    "torch", "transformers", "peft", "accelerate", "trl", "deepspeed", "datasets", "vllm", "procrl",
    # what the image brings and the bundle's wheels rely on (scripts/gpu_bundle.py)
    "pyarrow", "fsspec", "huggingface_hub", "tokenizers", "safetensors", "numpy", "pandas", "pydantic",
    "dill", "multiprocess", "math-verify", "latex2sympy2_extended", "antlr4-python3-runtime", "hjson",
    "nvidia-ml-py",
]  # fmt: skip
# distributions whose declared requirements are checked against what is installed: the bundle's
# wheels are installed with --no-deps, so nothing else compares them with the image's versions
BUNDLED = ["trl", "datasets", "deepspeed", "math-verify", "latex2sympy2_extended", "dill", "multiprocess"]
# what each phase imports beyond torch / transformers / peft / accelerate (the GPU machine's own)
TRAINING_NEEDS = ["trl", "datasets", "math_verify", "yaml"]
NEEDS = {
    "versions": [],
    "build": ["tokenizers"],
    "grpo_zero3": [*TRAINING_NEEDS, "deepspeed"],
    "grpo_full": [*TRAINING_NEEDS, "deepspeed"],
    "ppo": TRAINING_NEEDS,
    "trace": ["yaml"],
}
# seconds per phase: the limit on the GPU and on CPU (--tiny). The GPU limits add up to 530 s
# (versions 60 + 170 + 110 + 70 + 90 + 30) so that one device command of 600 s holds them and the
# set-up; --deadline cuts the last phases short rather than let the command be killed without its JSON.
LIMITS = {
    "gpu": {"versions": 60, "build": 170, "grpo_zero3": 110, "grpo_full": 70, "ppo": 90, "trace": 30},
    "cpu": {"versions": 120, "build": 300, "grpo_zero3": 300, "grpo_full": 300, "ppo": 300, "trace": 300},
}
# a phase is not started with less time than this left of --deadline (model loading alone takes longer)
MIN_PHASE_SECONDS = 20
# the launcher phases: accelerate launch starts the rank(s); the launcher itself must hold no GPU memory
LAUNCHED = ("grpo_zero3", "grpo_full")


def _missing(modules: list[str]) -> list[str]:
    return [name for name in modules if importlib.util.find_spec(name) is None]


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _cuda_peak() -> int | None:
    import torch

    return torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None


# --- phases run in a child ------------------------------------------------------------------------


def phase_versions(spec: dict) -> dict[str, Any]:
    from procrl.launch.versions import installed_version, trl_vllm_range, vllm_version_problem

    out: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform()}
    out["packages"] = {name: installed_version(name) for name in DISTRIBUTIONS}
    if out["packages"]["procrl"] is None and (REPO / "procrl" / "__init__.py").is_file():
        out["packages"]["procrl"] = "working tree (not installed)"
    out["unmet_requirements"] = unmet_requirements(BUNDLED)
    out["trl_vllm_range"] = trl_vllm_range()
    problem = vllm_version_problem()
    try:
        import torch

        out["cuda"] = torch.version.cuda
        out["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
        if torch.cuda.is_available():
            out["device_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / GIB, 1)
    except ImportError:
        out["device"] = "torch is not installed"
    if problem is not None:
        out["error"] = problem
    return out


def unmet_requirements(distributions: list[str]) -> list[str]:
    """Each declared requirement of ``distributions`` that the installed versions do not meet.

    The bundle installs with ``--no-deps`` beside an image whose versions were chosen by others,
    so this is where a pyarrow below datasets' floor, or an fsspec above its ceiling, shows. An
    unmet declaration is a warning, not a failure: the phases say whether the code runs."""
    from importlib import metadata

    from packaging.requirements import InvalidRequirement, Requirement

    unmet = []
    for name in distributions:
        try:
            declared = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for line in declared:
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue  # an extra's or another platform's requirement
            try:
                have = metadata.version(requirement.name)
            except metadata.PackageNotFoundError:
                unmet.append(f"{name} needs {requirement.name}{requirement.specifier}: not installed")
                continue
            if requirement.specifier and not requirement.specifier.contains(have, prereleases=True):
                unmet.append(f"{name} needs {requirement.name}{requirement.specifier}: {have} installed")
    return unmet


def phase_build(spec: dict) -> dict[str, Any]:
    import gpu_step_bench

    models = {}
    for key, shape in (("policy", spec["policy_shape"]), ("full", spec["full_shape"])):
        built = gpu_step_bench.build_models(shape, spec["reward_models"], False, spec["device"], True)
        models[key] = built
    return {"models": models}


def _grpo_spec(spec: dict, models: dict, shape: str, full: bool) -> dict:
    import gpu_step_bench

    rewards = gpu_step_bench.reward_plan(str(GRPO_RECIPE), False, [])
    return {
        "shape": shape,
        "recipe": str(GRPO_RECIPE),
        "rewards": rewards,
        "device": spec["device"],
        "generation": spec["generation"],
        "steps": 1,
        "receval": False,
        "full": full,
        "reward_models": spec["reward_models"],
        "max_completion_length": spec.get("max_completion_length"),
        "data": spec["data"],
        "models": models,
        # the arm's launch file is overridden: this runs under accelerate launch with ZeRO-3
        "extra_overrides": [f"launch.config_file={ZERO3}", *spec.get("grpo_overrides", [])],
    }


def phase_grpo(spec: dict, full: bool) -> dict[str, Any]:
    import gpu_step_bench

    models = spec["models"]["full" if full else "policy"]
    arm_spec = _grpo_spec(spec, models, spec["full_shape" if full else "policy_shape"], full)
    result = gpu_step_bench.run_arm(arm_spec, "process")
    step = result["steps"][-1]
    from accelerate.state import AcceleratorState

    plugin = AcceleratorState().deepspeed_plugin
    config = plugin.deepspeed_config if plugin is not None else {}
    return {
        "seconds": step["seconds"],
        "reward_seconds": step["rewards"],
        "reward_components": step["reward_components"],
        "generation_seconds": step["generation"],
        "generation": result["generation"],
        "zero_stage": (config.get("zero_optimization") or {}).get("stage"),
        "peak_gpu_bytes": step.get("peak_allocated"),
        "completions": result["completions_per_step"],
        "max_completion_length": result["max_completion_length"],
        "trained": "all weights" if full else "LoRA r=16",
        "loss": result["logged"][-1].get("loss") if result["logged"] else None,
        "process_advantage_abs_mean": (result["logged"][-1] if result["logged"] else {}).get(
            "process/advantage_abs_mean"
        ),
    }


def phase_ppo(spec: dict) -> dict[str, Any]:
    from transformers import TrainerCallback

    from procrl.launch.run import build_trainer
    from procrl.recipe import load_recipe

    models = spec["models"]["policy"]
    cuda = spec["device"] == "cuda"
    overrides = [
        f"model.name_or_path={models['policy']}",
        f"model.dtype={models['dtype']}",
        f"launch.config_file={REPO / 'launch' / 'accelerate' / 'single_gpu.yaml'}",
        "launch.num_processes=1",
        "trainer.max_steps=1",
        "trainer.num_iterations=1",
        "trainer.gradient_accumulation_steps=1",
        "trainer.save_steps=1000000",
        "trainer.report_to=none",
        f"trainer.bf16={'true' if cuda else 'false'}",
        f"trainer.use_vllm={'true' if spec['generation'] == 'vllm' else 'false'}",
        f"data.dataset={spec['data']}",
        f"rewards.trace.tagger={models['tagger']}",
        "model.lora={r: 16}",
        *spec.get("ppo_overrides", []),
    ]
    if spec["data"] == "synthetic":
        overrides.append("data.config=null")
    if spec.get("max_completion_length"):
        overrides.append(f"trainer.max_completion_length={spec['max_completion_length']}")
    clock: dict[str, float] = {}

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            clock["started"] = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            clock["seconds"] = time.perf_counter() - clock["started"]

    with tempfile.TemporaryDirectory() as output_dir:
        recipe = load_recipe(str(PPO_RECIPE), overrides, output_dir)
        trainer, mix = build_trainer(recipe)
        trainer.add_callback(Clock())
        trainer.train()
        reward_seconds = {name: output.seconds for name, output in mix.last_outputs.items()}
        logged = [h for h in trainer.state.log_history if "loss" in h]
    return {
        "seconds": clock.get("seconds"),
        "reward_seconds": sum(reward_seconds.values()),
        "reward_components": reward_seconds,
        "generation": "vLLM colocate" if spec["generation"] == "vllm" else "transformers generate",
        "peak_gpu_bytes": _cuda_peak(),
        "completions": int(recipe.trainer_args.get("per_device_train_batch_size", 8)),
        "trained": "LoRA r=16 (policy and value model)",
        "loss": logged[-1].get("loss") if logged else None,
        "overrides": overrides,
    }


def phase_trace(spec: dict) -> dict[str, Any]:
    import gpu_step_bench
    import torch

    from procrl.rewards import RewardBatch, RewardMix, parse_rewards
    from procrl.rewards.protocol import RuntimeContext

    models = spec["models"]["policy"]
    mix = RewardMix(parse_rewards({"trace": {"tagger": models["tagger"], "batch_size": 64}}))
    device = "cuda" if spec["device"] == "cuda" else "cpu"
    mix.bind(RuntimeContext(device=device))
    rows = gpu_step_bench._reference_rows({}, _Recipe())
    batch = RewardBatch.from_texts(
        [r["answer"] for r in rows], [r["question"] for r in rows], [r["answer"] for r in rows]
    )
    started = time.perf_counter()
    output = mix.score_all(batch)["trace"]
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "completions": len(rows),
        "tagger": models.get("tagger_model"),
        "failures": dict(output.failures),
        "peak_gpu_bytes": _cuda_peak(),
    }


class _Recipe:
    """The 32 reference solutions of one 7B-recipe rank's step (4 prompts x 8)."""

    trainer_args = {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 4}


PHASES = {
    "versions": phase_versions,
    "build": phase_build,
    "grpo_zero3": lambda spec: phase_grpo(spec, full=False),
    "grpo_full": lambda spec: phase_grpo(spec, full=True),
    "ppo": phase_ppo,
    "trace": phase_trace,
}


def run_child(phase: str, spec_path: str, out_path: str) -> int:
    """One phase in this process: its result (or its error) as JSON, with the peak RSS."""
    import traceback

    spec = json.loads(Path(spec_path).read_text())
    started = time.perf_counter()
    try:
        result = PHASES[phase](spec)
        status = "failed" if result.get("error") else "ok"
    except BaseException as error:  # the parent reports it and exits non-zero
        result = {"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()[-4000:]}
        status = "failed"
    result.update(
        status=status, wall_seconds=time.perf_counter() - started, peak_rss_bytes=_peak_rss(), pid=os.getpid()
    )
    from accelerate.state import PartialState

    if PartialState().is_main_process:
        Path(out_path).write_text(json.dumps(result, default=str))
    return 0 if status == "ok" else 1


# --- the parent -----------------------------------------------------------------------------------


def run_launcher(report_path: str, launch_args: list[str]) -> int:
    """``accelerate launch LAUNCH_ARGS`` in this process, then what CUDA state it kept for itself.

    The launcher only starts and waits for the ranks; a device query of its own that initialises
    CUDA (a context: hundreds of MiB on the GPU) would sit beside the ranks for the whole run. Once
    CUDA is initialised in a process it stays so, so reading ``torch.cuda.is_initialized()`` when
    the launch returns says whether the launcher held GPU memory at any time while the ranks ran,
    whatever process ids the GPU's driver can see (a container hides them)."""
    import atexit

    def report() -> None:
        torch = sys.modules.get("torch")
        state: dict[str, Any] = {"pid": os.getpid(), "torch_imported": torch is not None, "cuda_initialized": False}
        if torch is not None and torch.cuda.is_initialized():
            state.update(cuda_initialized=True, reserved_bytes=torch.cuda.memory_reserved())
        Path(report_path).write_text(json.dumps(state))

    atexit.register(report)  # accelerate's launch ends with sys.exit when a rank fails
    sys.argv = ["accelerate-launch", *launch_args]
    from accelerate.commands.launch import main as launch_main

    launch_main()
    return 0


class GpuProcessWatch:
    """The GPU memory NVML attributes to each process id, sampled while a phase runs (the largest
    value per pid). Where NVML is missing or sees no GPU it records why and nothing else."""

    def __init__(self, interval: float = 0.5):
        import threading

        self.interval, self.peak, self.error = interval, {}, None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> GpuProcessWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        try:
            import pynvml

            pynvml.nvmlInit()
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except Exception as error:  # no NVML library, no driver, no GPU: nothing to watch
            self.error = f"NVML unavailable: {type(error).__name__}: {error}"[:300]
            return
        try:
            while not self._stop.is_set():
                for handle in handles:
                    for process in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                        used = process.usedGpuMemory or 0  # None where the driver withholds it
                        self.peak[process.pid] = max(self.peak.get(process.pid, 0), used)
                self._stop.wait(self.interval)
        except Exception as error:
            self.error = f"NVML query failed: {type(error).__name__}: {error}"[:300]
        finally:
            try:
                pynvml.nvmlShutdown()
            except Exception:
                pass


def launcher_verdict(
    cuda: bool, launcher: dict | None, launcher_pid: int, rank_pid: int | None, watch: GpuProcessWatch | None
) -> dict[str, Any]:
    """Whether the ``accelerate launch`` process held GPU memory while the rank trained."""
    out: dict[str, Any] = {"launcher_pid": launcher_pid, "rank_pid": rank_pid}
    if launcher is not None:
        out["launcher_cuda_initialized"] = launcher.get("cuda_initialized")
    if not cuda:
        out["verdict"] = "not applicable (no CUDA device)"
        return out
    if watch is not None:
        out["nvml_bytes_by_pid"] = {str(pid): used for pid, used in sorted(watch.peak.items())}
        if watch.error:
            out["nvml"] = watch.error
    seen = watch.peak if watch is not None else {}
    problems = []
    if launcher is None:
        problems.append("the launcher wrote no report of its CUDA state")
    elif launcher.get("cuda_initialized"):
        problems.append(
            f"the accelerate launch process initialised CUDA ({launcher.get('reserved_bytes', 0) / GIB:.2f} GiB"
            " reserved by torch, plus its context)"
        )
    if seen.get(launcher_pid, 0) > 0:
        problems.append(f"NVML attributes {seen[launcher_pid] / GIB:.2f} GiB to the launcher (pid {launcher_pid})")
    if problems:
        out["verdict"] = "failed: " + "; ".join(problems)
    elif rank_pid is not None and seen.get(rank_pid, 0) > 0:
        out["verdict"] = (
            f"ok: NVML saw the rank (pid {rank_pid}) hold {seen[rank_pid] / GIB:.1f} GiB and nothing for the"
            f" launcher (pid {launcher_pid}), which never initialised CUDA"
        )
    else:
        out["verdict"] = (
            "ok: the launcher never initialised CUDA (NVML does not see this machine's process ids, so that"
            " is the whole check)"
        )
    return out


class PhaseProcesses:
    """Every process a phase starts, recorded while it runs (``psutil``, every 0.5 s), so that all
    of them can be ended: torchrun starts each rank in a session of its own, out of reach of the
    launcher's process group, and a rank left behind would hold its GPU memory into the next phase."""

    def __init__(self, process: subprocess.Popen, interval: float = 0.5):
        import threading

        self.process, self.interval, self.seen = process, interval, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        import psutil

        try:
            children = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.Error:
            return
        for child in children:
            try:
                self.seen.setdefault(child.pid, child.create_time())
            except psutil.Error:
                continue

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def stop(self) -> list[int]:
        """End the phase's process group and every process recorded under it; the pids ended."""
        import signal

        import psutil

        self._sample()
        self._stop.set()
        self._thread.join(timeout=5)
        if self.process.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):  # the launcher first: it ends its ranks itself
                try:
                    os.killpg(self.process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.process.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    continue
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        ended = []
        for pid, created in self.seen.items():
            try:
                left = psutil.Process(pid)
                if left.create_time() != created:
                    continue  # the pid was reused by a process this phase did not start
                left.kill()
                ended.append(pid)
            except psutil.Error:
                continue
        return ended


def _launch(phase: str, spec_path: Path, out: Path, log: Path, limit: float, cuda: bool = False) -> dict[str, Any]:
    script = str(Path(__file__).resolve())
    child = ["--_phase", phase, "--_spec", str(spec_path), "--_out", str(out)]
    launcher_report = out.with_suffix(".launcher.json")
    launcher_report.unlink(missing_ok=True)
    if phase in LAUNCHED:  # ZeRO-3 on one rank, as accelerate launches it
        with socket.socket() as sock:  # a free rendezvous port: another launch may hold accelerate's default
            sock.bind(("", 0))
            port = str(sock.getsockname()[1])
        launch_args = [
            "--config_file", str(ZERO3), "--num_processes", "1", "--main_process_port", port, script, *child,
        ]  # fmt: skip
        command = [sys.executable, script, "--_launcher", str(launcher_report), "--", *launch_args]
    else:
        command = [sys.executable, script, *child]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "WANDB_MODE": "offline"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    started = time.perf_counter()
    watch = GpuProcessWatch() if (cuda and phase in LAUNCHED) else None
    with log.open("w") as handle:
        # its own process group, so that a phase over its limit is ended with every process it started
        process = subprocess.Popen(command, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        processes = PhaseProcesses(process)
        try:
            if watch is not None:
                with watch:
                    code = process.wait(timeout=limit)
            else:
                code = process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            processes.stop()
            return {"status": "failed", "error": f"over its {limit:.0f} s limit", "wall_seconds": limit}
        finally:
            left_behind = processes.stop()  # the launcher may be gone and a rank of it still hold the GPU
    result = json.loads(out.read_text()) if out.is_file() else {}
    if left_behind:
        result["ended_after_the_phase"] = left_behind
    if code != 0 and result.get("status") != "failed":
        tail = log.read_text(errors="replace").splitlines()[-5:]
        result = {"status": "failed", "error": f"exit status {code}: " + " | ".join(tail)[-600:]}
    if phase in LAUNCHED:
        launcher = json.loads(launcher_report.read_text()) if launcher_report.is_file() else None
        verdict = launcher_verdict(cuda, launcher, process.pid, result.get("pid"), watch)
        result["launcher_gpu"] = verdict
        if verdict["verdict"].startswith("failed") and result.get("status") == "ok":
            result.update(status="failed", error="launcher check " + verdict["verdict"])
    result.setdefault("wall_seconds", time.perf_counter() - started)
    return result


def _gib(value: Any) -> str:
    return f"{value / GIB:.1f}" if isinstance(value, (int, float)) else "-"


def table(results: dict[str, dict]) -> str:
    lines = [
        "| phase | status | phase s | step s | peak GPU GiB | peak RSS GiB | reward mix share | notes |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for phase, result in results.items():
        seconds = result.get("seconds", result.get("wall_seconds"))
        wall = result.get("wall_seconds")
        wall_text = f"{wall:.1f}" if isinstance(wall, (int, float)) else "-"
        share = "-"
        if result.get("reward_seconds") is not None and result.get("seconds"):
            share = f"{100 * result['reward_seconds'] / result['seconds']:.1f}%"
        notes = result.get("error") or result.get("skipped") or ""
        if not notes and phase == "versions":
            packages = result.get("packages", {})
            shown = [*DISTRIBUTIONS[:9], "pyarrow"]  # the rest are in the JSON
            notes = ", ".join(f"{k} {packages[k]}" for k in shown if packages.get(k))
            unmet = result.get("unmet_requirements") or []
            notes += f"; {len(unmet)} declared requirement(s) unmet (JSON)" if unmet else ""
            notes += f"; device {result.get('device')}"
        elif not notes and phase in ("grpo_zero3", "grpo_full", "ppo"):
            notes = f"{result.get('trained')}, {result.get('completions')} completions, {result.get('generation')}" + (
                f", ZeRO-{result['zero_stage']}" if result.get("zero_stage") else ""
            )
            if result.get("launcher_gpu"):
                notes += f"; launcher GPU memory: {result['launcher_gpu']['verdict'].split(':')[0]}"
        elif not notes and phase == "trace":
            notes = f"{result.get('tagger')}, {result.get('completions')} solutions"
        lines.append(
            f"| {phase} | {result.get('status')} | {wall_text} | {seconds:.1f} | {_gib(result.get('peak_gpu_bytes'))} "
            f"| {_gib(result.get('peak_rss_bytes'))} | {share} | {str(notes).replace('|', '/')[:300]} |"
            if isinstance(seconds, (int, float))
            else f"| {phase} | {result.get('status')} | - | - | - | - | - | {str(notes).replace('|', '/')[:300]} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="Tiny shapes on CPU (the CI test).")
    parser.add_argument("--json", type=Path, default=None, help="Write every number here.")
    parser.add_argument("--logs", type=Path, default=None, help="Keep each phase's log in this folder.")
    parser.add_argument(
        "--phases", default=",".join(PHASES), help=f"Comma-separated subset of {', '.join(PHASES)} (build is added)."
    )
    parser.add_argument(
        "--deadline",
        type=float,
        default=None,
        help="Seconds for the whole run: each phase's limit is cut to what is left, and a phase that "
        "cannot start fails, so the JSON is written before an outer time limit ends the command.",
    )
    parser.add_argument(
        "--require-all", action="store_true", help="A skipped phase fails the run (the GPU machine's call)."
    )
    parser.add_argument("--_phase", help=argparse.SUPPRESS)
    parser.add_argument("--_spec", help=argparse.SUPPRESS)
    parser.add_argument("--_out", help=argparse.SUPPRESS)
    parser.add_argument("--_launcher", help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--_launcher"]:  # --_launcher REPORT -- ACCELERATE-LAUNCH-ARGS
        if len(argv) < 3 or argv[2] != "--":
            parser.error("--_launcher REPORT -- ARGS")
        return run_launcher(argv[1], argv[3:])
    args = parser.parse_args(argv)
    if args._phase:
        return run_child(args._phase, args._spec, args._out)
    if args.deadline is not None and not (0 < args.deadline < float("inf")):
        parser.error(f"--deadline: {args.deadline} is not a positive number of seconds")

    import torch

    cuda = torch.cuda.is_available()
    if not cuda and not args.tiny:
        parser.error("no CUDA GPU here: run with --tiny (tiny shapes on CPU), or on the GPU machine")
    vllm = importlib.util.find_spec("vllm") is not None
    try:
        data = str(real_shapes.GSM8K_TRAIN) if real_shapes.GSM8K_TRAIN.is_file() else "synthetic"
    except OSError:
        data = "synthetic"
    spec: dict[str, Any] = {
        "device": "cuda" if cuda else "cpu",
        "policy_shape": "tiny" if args.tiny else "7b",
        "full_shape": "tiny" if args.tiny else "1.5b",
        "reward_models": "tiny" if args.tiny else "real",
        "generation": "vllm" if (cuda and vllm) else "transformers",
        "data": data,
    }
    if args.tiny:  # a CI test on 2 busy cores: short completions, small batches
        spec["max_completion_length"] = 16
        small = ["trainer.per_device_train_batch_size=4", "trainer.gradient_accumulation_steps=1"]
        spec["grpo_overrides"] = [
            *small,
            "trainer.num_generations=4",
            "trainer.vllm_importance_sampling_correction=false",
        ]
        spec["ppo_overrides"] = [*small, "trainer.gradient_checkpointing=false"]
    wanted = [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = set(wanted) - set(PHASES)
    if unknown:
        parser.error(f"--phases: unknown {', '.join(sorted(unknown))}; choose from {', '.join(PHASES)}")
    if any(p not in ("versions", "build") for p in wanted) and "build" not in wanted:
        wanted.insert(1 if "versions" in wanted else 0, "build")
    limits = LIMITS["cpu" if args.tiny else "gpu"]
    results: dict[str, dict] = {}
    started = time.perf_counter()

    def write_json() -> None:  # after every phase: a run cut short from outside keeps what it did
        if args.json:
            payload = {"spec": spec, "phases": results, "total_seconds": time.perf_counter() - started}
            args.json.write_text(json.dumps(payload, indent=1, default=str))

    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        logs = args.logs or work
        logs.mkdir(parents=True, exist_ok=True)
        spec_path = work / "spec.json"
        for phase in PHASES:
            if phase not in wanted:
                continue
            missing = _missing(NEEDS[phase])
            if phase in ("grpo_zero3", "grpo_full", "ppo", "trace") and results.get("build", {}).get("status") != "ok":
                results[phase] = {"status": "skipped", "skipped": "the models were not built"}
            elif missing:
                results[phase] = {"status": "skipped", "skipped": f"needs {', '.join(missing)} (not installed)"}
            else:
                limit = limits.get(phase, 60)
                left = None if args.deadline is None else args.deadline - (time.perf_counter() - started)
                if left is not None and left < min(limit, MIN_PHASE_SECONDS):
                    results[phase] = {
                        "status": "failed",
                        "error": f"not started: {max(left, 0):.0f} s left of --deadline {args.deadline:.0f} s",
                    }
                else:
                    limit = limit if left is None else min(limit, left)
                    spec_path.write_text(json.dumps(spec))
                    print(f"gpu_acceptance: {phase} ...", flush=True)
                    results[phase] = _launch(
                        phase, spec_path, work / f"{phase}.json", logs / f"{phase}.log", limit, cuda=cuda
                    )
                    if phase == "build" and results[phase].get("status") == "ok":
                        spec["models"] = results[phase]["models"]
            status = results[phase]["status"]
            note = results[phase].get("error") or results[phase].get("skipped") or ""
            print(f"gpu_acceptance: {phase}: {status}{' - ' + note if note else ''}", flush=True)
            write_json()
        if phase_vllm_note := (None if vllm else "vLLM not installed: generation through transformers"):
            results.setdefault("versions", {})["vllm_note"] = phase_vllm_note
    total = time.perf_counter() - started
    report = table(results)
    print(report)
    print(f"total {total:.0f} s on {results.get('versions', {}).get('device', spec['device'])}")
    write_json()
    failed = [p for p, r in results.items() if r.get("status") == "failed"]
    if args.require_all:
        failed += [p for p, r in results.items() if r.get("status") == "skipped"]
    if failed:
        print(f"gpu_acceptance: FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
